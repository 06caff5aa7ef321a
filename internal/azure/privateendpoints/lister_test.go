package privateendpoints_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestListerListsAsTheSDK: the Lister, against azuresim one endpoint per
// page (so that it follows nextLink), lists what the SDK's pagers list —
// the same observations, in the same number of requests — for the
// subscription and for a resource group, and Azure's refusal reaches the
// caller as the SDK's (the Observer falls back to resource groups on a
// 403).
func TestListerListsAsTheSDK(t *testing.T) {
	sim, f, raw := simWithEndpointsPaged(t, 1)
	ctx := context.Background()
	sdk := privateendpoints.NewSDK(f)
	lean := sdk.WithLister(&privateendpoints.Lister{Client: raw, Subscription: "s1"})
	for _, tc := range []struct {
		name string
		list func(privateendpoints.SDK) ([]*armnetwork.PrivateEndpoint, error)
	}{
		{"subscription", func(s privateendpoints.SDK) ([]*armnetwork.PrivateEndpoint, error) {
			return s.ListSubscriptionPrivateEndpoints(ctx)
		}},
		{"resource group", func(s privateendpoints.SDK) ([]*armnetwork.PrivateEndpoint, error) {
			return s.ListPrivateEndpoints(ctx, "rg")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameLists(t, sim, func() ([]*armnetwork.PrivateEndpoint, error) { return tc.list(sdk) }, func() ([]*armnetwork.PrivateEndpoint, error) { return tc.list(lean) })
		})
	}
	if _, err := sim.AddFault(azuresim.Fault{Method: http.MethodGet, PathRegex: "^/subscriptions/s1/providers/Microsoft.Network/privateEndpoints$",
		Status: http.StatusForbidden, Code: "AuthorizationFailed", Message: "no"}); err != nil {
		t.Fatal(err)
	}
	_, sdkErr := sdk.ListSubscriptionPrivateEndpoints(ctx)
	_, err := lean.ListSubscriptionPrivateEndpoints(ctx)
	if c, s := azure.Classify(err), azure.Classify(sdkErr); c.StatusCode != http.StatusForbidden || c.Reason != s.Reason || c.Class != s.Class {
		t.Errorf("refused: the Lister's error %v (%+v), the SDK's %v (%+v)", err, c, sdkErr, s)
	}
}

// sameLists lists by the SDK and by the Lister and compares what each
// returned and how many pages each read.
func sameLists(t *testing.T, sim *azuresim.Server, bySDK, byLister func() ([]*armnetwork.PrivateEndpoint, error)) {
	t.Helper()
	gets := func() int { return sim.Counters().Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 200, 200) }
	start := gets()
	want, err := bySDK()
	if err != nil {
		t.Fatal(err)
	}
	byTheSDK := gets() - start
	got, err := byLister()
	if err != nil {
		t.Fatal(err)
	}
	byTheLister := gets() - start - byTheSDK
	if len(want) != 2 || byTheSDK != 2 {
		t.Fatalf("the SDK listed %d endpoints in %d pages; the test wants 2 in 2 (one per page)", len(want), byTheSDK)
	}
	if diff := cmp.Diff(observeAll(want), observeAll(got)); diff != "" {
		t.Errorf("observations (-the SDK's +the Lister's):\n%s", diff)
	}
	if byTheLister != byTheSDK {
		t.Errorf("the Lister read %d pages, the SDK %d", byTheLister, byTheSDK)
	}
}

func observeAll(pes []*armnetwork.PrivateEndpoint) map[string]privateendpoints.Observation {
	out := map[string]privateendpoints.Observation{}
	for _, pe := range pes {
		o := privateendpoints.Observe(pe, nil)
		out[o.Name] = o
	}
	return out
}
