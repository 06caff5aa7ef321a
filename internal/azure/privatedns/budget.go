package privatedns

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// Azure Private DNS limits each subscription (per region) far below ARM:
// 500 reads in 5 minutes, and Microsoft.Network's 1,000 writes in 5
// minutes. ARM's rate-limit headers do not show them, so the operator
// keeps its own count.
const (
	AzureReadsPer5m  = 500
	AzureWritesPer5m = 1000
	budgetWindow     = 5 * time.Minute
	// budgetMargin keeps a request in the log a little longer than the
	// window: the operator counts a request when it sends it, Azure when
	// it arrives, and at the window's edge the two fall apart (the DNS
	// benchmark measured 801 writes in Azure's busiest 5 minutes against
	// a budget of 800).
	budgetMargin = 2 * time.Second
)

var budgetWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_private_dns_requests_deferred_total",
	Help: "Private DNS requests, and AzurePrivateEndpoint's private endpoint writes, not sent, and retried later, to keep a subscription within its budget (--private-dns-max-reads-per-5m, --private-dns-max-writes-per-5m).",
}, []string{"class"})

func init() { metrics.Registry.MustRegister(budgetWaits) }

// Budget keeps each subscription's Private DNS requests within a number of
// reads and of writes in any 5-minute window, as Azure counts them: a log
// of each subscription's requests of the last 5 minutes per class. A
// request is sent while the log holds fewer than the budget, so a burst
// may spend the whole budget at once (what Azure allows) and no window
// ever holds more. One Budget serves every Private DNS writer of the
// process: Azure counts a subscription's requests together, whichever
// controller or identity sends them.
type Budget struct {
	Reads, Writes int
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu   sync.Mutex
	logs map[string][]time.Time
}

// Take takes a read or a write of a subscription's budget; a positive wait
// means none is left for that long. A budget of 0 is no limit.
func (b *Budget) Take(subscription string, write bool) time.Duration {
	if b == nil {
		return 0
	}
	limit, class := b.Reads, "reads"
	if write {
		limit, class = b.Writes, "writes"
	}
	if limit <= 0 {
		return 0
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logs == nil {
		b.logs = map[string][]time.Time{}
	}
	k := strings.ToLower(subscription) + "|" + class
	log := b.logs[k]
	i := 0
	for i < len(log) && now.Sub(log[i]) >= budgetWindow+budgetMargin {
		i++
	}
	log = log[i:]
	if len(log) >= limit {
		b.logs[k] = log
		budgetWaits.WithLabelValues(class).Inc()
		return log[0].Add(budgetWindow + budgetMargin).Sub(now)
	}
	b.logs[k] = append(log, now)
	return 0
}

// Paced wraps an API so that every request first takes from the budget of
// its subscription; without a token it is not sent, and the error is a
// transient one with the wait (the caller requeues).
func (b *Budget) Paced(api API, subscription string) API {
	return pacedAPI{api: api, budget: b, sub: subscription}
}

type pacedAPI struct {
	api    API
	budget *Budget
	sub    string
}

func (p pacedAPI) take(write bool) error { return p.budget.Wait(p.sub, write, "Private DNS") }

// Wait takes a read or a write of a subscription's budget, or returns the
// transient error, with the wait, that a controller requeues on; what
// names the requests in its message. Azure counts a subscription's
// Microsoft.Network writes together, 1,000 in 5 minutes, Private DNS and
// private endpoints alike: an endpoint write takes from the same budget.
func (b *Budget) Wait(subscription string, write bool, what string) error {
	wait := b.Take(subscription, write)
	if wait <= 0 {
		return nil
	}
	class := "reads"
	if write {
		class = "writes"
	}
	return &azure.ClassifiedError{Classification: azure.Classification{
		Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: wait,
		Message: fmt.Sprintf("holding back %s %s for %s: subscription %s is at its budget of the 5-minute window", what, class, wait.Round(time.Millisecond), subscription),
	}}
}

func (p pacedAPI) Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Zone(ctx, rg, zone)
}

// ZoneCount takes one read of the budget for the list, whatever its pages.
func (p pacedAPI) ZoneCount(ctx context.Context) (int, error) {
	if err := p.take(false); err != nil {
		return 0, err
	}
	return p.api.ZoneCount(ctx)
}

func (p pacedAPI) PutZone(ctx context.Context, rg, zone, etag string, body armprivatedns.PrivateZone) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutZone(ctx, rg, zone, etag, body)
}

func (p pacedAPI) DeleteZone(ctx context.Context, rg, zone string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteZone(ctx, rg, zone)
}

func (p pacedAPI) Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Links(ctx, rg, zone)
}

func (p pacedAPI) PutLink(ctx context.Context, rg, zone, name, etag string, body armprivatedns.VirtualNetworkLink) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutLink(ctx, rg, zone, name, etag, body)
}

func (p pacedAPI) DeleteLink(ctx context.Context, rg, zone, name string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteLink(ctx, rg, zone, name)
}

func (p pacedAPI) Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Record(ctx, rg, zone, rel)
}

func (p pacedAPI) Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Records(ctx, rg, zone)
}

func (p pacedAPI) PutRecord(ctx context.Context, rg, zone, rel, etag string, body armprivatedns.RecordSet) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutRecord(ctx, rg, zone, rel, etag, body)
}

func (p pacedAPI) DeleteRecord(ctx context.Context, rg, zone, rel, etag string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteRecord(ctx, rg, zone, rel, etag)
}
