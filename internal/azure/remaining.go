package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// RemainingHeader is where a resource provider that overrides ARM's
// default limits tells how many requests a subscription has left in the
// provider's window ("Understand how Azure Resource Manager throttles
// requests": x-ms-ratelimit-remaining-subscription-resource-requests,
// "Subscription scoped resource type requests remaining", returned
// instead of ARM's reads or writes header). Private DNS is such a
// provider: in ASO's recordings (Test_Networking_PrivateDnsZone_CRUD) its
// reads, operation polls included, count down from the 500 of its read
// window (499, 498), and its writes from about 12,000.
const RemainingHeader = "x-ms-ratelimit-remaining-subscription-resource-requests"

type remainingKey struct{}

// WithRemaining returns a context whose ARM requests report, to observe,
// the count of RemainingHeader of every answer that carries it: Azure's
// own view of the window, which outlives the process's (a restarted
// operator starts with an empty count while Azure's window still holds
// the last minutes).
func WithRemaining(ctx context.Context, observe func(remaining int)) context.Context {
	return context.WithValue(ctx, remainingKey{}, observe)
}

// remainingPolicy hands RemainingHeader to the observer of the request's
// context. It is a per-call policy: it sees the answer azcore's retries
// settled on.
type remainingPolicy struct{}

func (remainingPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if resp == nil {
		return resp, err
	}
	observe, ok := req.Raw().Context().Value(remainingKey{}).(func(int))
	if !ok {
		return resp, err
	}
	if n, ok := remaining(resp.Header); ok {
		observe(n)
	}
	return resp, err
}

// remaining reads RemainingHeader: a count, never negative.
func remaining(h http.Header) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get(RemainingHeader)))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
