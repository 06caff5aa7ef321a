package privateendpoint_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestHeldBackWritesReadNothing: while the subscription's write budget is
// spent, an object whose next step is a write — the create of an endpoint
// it has never seen, the delete of one it has — does not read the
// endpoint either: at N = 3,000 the objects waiting for the budget read
// theirs 5.4 times each, every waiter at every place that freed. Once the
// window has room, each goes on.
func TestHeldBackWritesReadNothing(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	budget := &privatedns.Budget{Writes: 1, Now: func() time.Time { return time.Unix(0, clock.Load()) }}
	w, svc, _ := world(t, privateendpoint.Options{DriftInterval: time.Hour, DNSEngine: &dnsengine.Engine{Budget: budget}})
	noDNS := func(name string) *v1alpha1.AzurePrivateEndpoint {
		obj := ape(name, svc.Status.ResourceID)
		obj.Spec.DNS = nil
		return obj
	}
	create(t, w, noDNS("first"))
	ready(t, w, "first")

	w.Sim.ResetCounters()
	held := []string{"held-1", "held-2", "held-3"}
	for _, name := range held {
		create(t, w, noDNS(name))
	}
	for _, name := range held {
		waitCondition(t, w, name, v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionUnknown, "Throttled")
	}
	endpointRequests := func(method string) int {
		return w.Sim.Counters().Sum(method, "Microsoft.Network/privateEndpoints", 0, 999)
	}
	if n := endpointRequests("GET"); n != 0 {
		t.Errorf("%d endpoint reads for 3 creates the budget holds back, want 0", n)
	}
	if n := endpointRequests("PUT"); n != 0 {
		t.Errorf("%d endpoint writes over a spent budget, want 0", n)
	}

	// The delete of an endpoint the object has seen: held back the same.
	before := deferredWrites(t)
	ctx := context.Background()
	first := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(ctx, key("first"), first); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "the delete is held back", func(context.Context) (bool, string) {
		return deferredWrites(t) > before, "no write deferred yet"
	})
	if n := endpointRequests("GET"); n != 0 {
		t.Errorf("%d endpoint reads for a delete the budget holds back, want 0", n)
	}
	if endpoint(w, "first") == nil {
		t.Fatal("the endpoint was deleted over a spent budget")
	}

	// A window later the delete goes, then a create.
	clock.Add(int64(6 * time.Minute))
	touch(t, w, "first")
	waitGone(t, w, "first")
	if endpoint(w, "first") != nil {
		t.Error("the endpoint is still in Azure")
	}
	clock.Add(int64(6 * time.Minute))
	touch(t, w, "held-1")
	ready(t, w, "held-1")
}

// deferredWrites is the process's count of writes the budget held back.
func deferredWrites(t *testing.T) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "azure_private_endpoint_operator_private_dns_requests_deferred_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == "writes" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
