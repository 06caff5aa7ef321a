package clusterlink_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestOrphanThroughASO: upstream CAPZ v1.23 makes endpoints through ASO
// and leaves the ASO object of an entry the operator removed. The operator
// deletes that ASO object (ASO then deletes the endpoint), never the Azure
// endpoint while its ASO object lives.
func TestOrphanThroughASO(t *testing.T) {
	// The WC opts out: the operator removes the MC's entry; CAPZ v1.23
	// keeps the ASO object, so the operator deletes it.
	w := optedOut(t, testenv.SchemaUpstream)
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the orphan's ASO object and endpoint gone", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: asoPE}, asoEndpoint())
		_, azErr := pes.Get(ctx, "mc-rg", asoPE, nil)
		return apierrors.IsNotFound(err) && azErr != nil, fmt.Sprint(err, azErr)
	})
	waitEvent(t, w, mcKey, clusterlink.ReasonOrphanDeleted)
	noOperatorDeletes(t, w)
}

// TestNoAzureDeleteBehindLiveASO: a CAPZ the operator takes for one that
// deletes what leaves spec (the fork's schema: cleanup in Azure) but that
// keeps ASO objects: the operator leaves an endpoint alone while its ASO
// object lives, since ASO would make it again.
func TestNoAzureDeleteBehindLiveASO(t *testing.T) {
	w := optedOut(t, testenv.SchemaFork)
	testworld.Eventually(t, testworld.Timeout, "the MC entry removed", func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		return len(names) == 0, fmt.Sprint(names)
	})
	// Four MC reconciles after the removal, each nudged by a change of the
	// MC and at least one write delay (300 ms, the sweep interval) apart:
	// the cleaner sweeps in each, and two sweeps that far apart delete an
	// orphan it may delete.
	nudges, last := 0, reconciles(t, "management-cluster")
	testworld.Eventually(t, testworld.Timeout, "four sweeps of the MC", func(context.Context) (bool, string) {
		if now := reconciles(t, "management-cluster"); now > last || nudges == 0 {
			last = now
			nudges++
			mergePatch(t, w, mcKey, fmt.Sprintf(`{"metadata":{"annotations":{"test.giantswarm.io/nudge":"%d"}}}`, nudges))
		}
		return nudges > 4, fmt.Sprint(nudges, " nudges")
	})
	if _, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(context.Background(), "mc-rg", asoPE, nil); err != nil {
		t.Errorf("the endpoint behind a live ASO object was deleted: %v", err)
	}
	noOperatorDeletes(t, w)
}

// asoPE is the MC's endpoint to wc1's managed service.
const asoPE = "wc1-api-privatelink-privateendpoint"

// optedOut wires wc1 through a managed private link service in a world
// whose capzsim is upstream CAPZ v1.23 (ASO objects kept when removed from
// spec) under the given schema, and opts wc1 out, so that the operator
// removes the MC's endpoint entry.
func optedOut(t *testing.T, schema testenv.Schema) *testworld.World {
	t.Helper()
	w, _, _ := managedWorld(t, schema)
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"},
		`{"metadata":{"annotations":{"`+clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.ManageAnnotation+`":"false"}}}`)
	return w
}

func asoEndpoint() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
	return u
}

// noOperatorDeletes checks that the operator's principal never asked Azure
// to delete a private endpoint: with ASO objects behind them, only ASO
// (CAPZ's principal here) deletes.
func noOperatorDeletes(t *testing.T, w *testworld.World) {
	t.Helper()
	if n := w.Sim.Counters().SumFor(testworld.OperatorClient, http.MethodDelete, "Microsoft.Network/privateEndpoints", 0, 999); n != 0 {
		t.Errorf("the operator sent %d DELETE requests for private endpoints", n)
	}
}

// reconciles is how many reconciles a controller of this test process has
// run.
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestDeletedASOObjectIsNotNews: the MC's endpoint to wc1 is deleted in
// Azure behind its ASO object, and the operator withdraws its address at
// the next drift check. Then the ASO object is deleted (and the MC nudged,
// so that CAPZ makes it again): ASO finds nothing
// to delete, removes its finalizer in that one pass, and the object leaves
// with its status as it was — Ready, with the old endpoint's address. The
// operator must not take a deleted object's status for news of the
// endpoint: the API server annotation never holds an address no endpoint
// of the MC holds, and it comes back with the endpoint CAPZ and ASO make
// again. (Found by the differential suite, make test-capz: capzsim's ASO
// stand-in kept a deleting object Ready, and the operator learned from
// the deleted object and published an address nobody held.)
func TestDeletedASOObjectIsNotNews(t *testing.T) {
	w, _, _ := managedWorld(t, testenv.SchemaUpstream, func(o *clusterlink.Options) { o.DriftCheck = time.Second })
	ctx := context.Background()
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	id := "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateEndpoints/" + asoPE
	if err := w.Sim.Delete(id); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "the address of the deleted endpoint withdrawn", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		return u.GetAnnotations()[apiAnn] == "", testworld.Describe(u)
	})
	l := watchWC(t, w, key)
	stale := testworld.Watch(t, func() string {
		l.mu.Lock()
		ip := ""
		if n := len(l.states); n > 0 {
			ip = l.states[n-1].api
		}
		l.mu.Unlock()
		if ip == "" {
			return ""
		}
		for _, e := range w.Sim.Endpoints() {
			if e.IP == ip && e.ConnectionState == "Approved" && strings.Contains(e.ID, "/resourceGroups/mc-rg/") {
				return ""
			}
		}
		return ip
	})
	obj := asoEndpoint()
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: asoPE}, obj); err != nil {
		t.Fatal(err)
	}
	if !capz.ReadASO(obj).Ready {
		t.Fatalf("the ASO object is not Ready before it is deleted: %+v", capz.ReadASO(obj))
	}
	if err := w.Client.Delete(ctx, obj); err != nil {
		t.Fatal(err)
	}
	// CAPZ watches no ASO object: a change of the MC has it make the
	// object again now, not at its sync period.
	mergePatch(t, w, mcKey, `{"metadata":{"annotations":{"test.giantswarm.io/nudge":"1"}}}`)
	testworld.Eventually(t, testworld.Timeout, "wc1's annotation on the endpoint made again", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		ip := u.GetAnnotations()[apiAnn]
		return ip != "" && ip == azureIPIfAny(t, w, mcSub, "mc-rg", asoPE), testworld.Describe(u)
	})
	if v := stale(); len(v) > 0 {
		t.Errorf("the API server annotation held an address no endpoint of the MC held (%d times): %v", len(v), slices.Compact(v))
	}
}

// TestHealsThroughASO: on upstream CAPZ v1.23 the WC's endpoint to the MC
// is an ASO object's. The owner of the MC's ingress removes its
// connection; the heal deletes the ASO object (ASO deletes the endpoint),
// CAPZ makes the object again and ASO the endpoint, and the annotation
// follows — all well within CAPZ's sync period (10 min) and ASO's (15
// min), which are the bound when the endpoint is deleted behind a live
// object. The operator itself never deletes an endpoint in Azure.
func TestHealsThroughASO(t *testing.T) {
	w, _, _ := managedWorld(t, testenv.SchemaUpstream, func(o *clusterlink.Options) { o.Heal.DisconnectedAfter = time.Second })
	const name = "wc1-to-mc-privatelink-privateendpoint"
	before := endpointInstance(t, w, wcSub, "wc1-rg", name)

	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{
		PrivateLinkServiceID: clusterlink.PrivateLinkServiceID(mcSub, "mc-rg", "mc-ingress-privatelink"),
		PrivateEndpointID:    "/subscriptions/" + wcSub + "/resourceGroups/wc1-rg/providers/Microsoft.Network/privateEndpoints/" + name, Remove: true,
	}); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	waitEvent(t, w, key, clusterlink.ReasonEndpointHealed)
	healed := time.Now()
	testworld.Eventually(t, testworld.Timeout, "wc1's endpoint made again through ASO, approved and annotated", func(ctx context.Context) (bool, string) {
		pe, err := w.Network(t, wcSub).NewPrivateEndpointsClient().Get(ctx, "wc1-rg", name, nil)
		if err != nil {
			return false, err.Error()
		}
		u, _ := w.Get(ctx, wcNS, "wc1")
		ip := u.GetAnnotations()[ingAnn]
		obj := asoEndpoint()
		err = w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: name}, obj)
		return connectionStatus(pe.PrivateEndpoint) == "Approved" && endpointInstance(t, w, wcSub, "wc1-rg", name) != before &&
				ip != "" && ip == azureIP(t, w, wcSub, "wc1-rg", name) && err == nil && capz.ReadASO(obj).Ready,
			fmt.Sprintf("connection %s, annotation %q, ASO object %v %+v", connectionStatus(pe.PrivateEndpoint), ip, err, capz.ReadASO(obj))
	})
	// In this world CAPZ requeues after 200 ms, not 20 s: the figure is
	// the operator's and ASO's share of the bound (docs/operations.md).
	t.Logf("healed to annotated again: %s", time.Since(healed).Round(time.Millisecond))
	noOperatorDeletes(t, w)
}

// TestHealWaitsForPausedASO: CAPZ pauses the ASO objects of a paused
// cluster (clusterctl move pauses them all). With the MC paused, the owner
// of wc1's service removes the MC endpoint's connection: the heal waits,
// says so, and nothing is deleted — not the ASO object, not the endpoint in
// Azure (before, the heal went around the paused object to Azure). Once
// CAPZ resumes the object, the heal goes through ASO as usual.
func TestHealWaitsForPausedASO(t *testing.T) {
	w, _, _ := managedWorld(t, testenv.SchemaUpstream, func(o *clusterlink.Options) { o.Heal.DisconnectedAfter = time.Second })
	ctx := context.Background()
	before := endpointInstance(t, w, mcSub, "mc-rg", asoPE)
	pe, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(ctx, "mc-rg", asoPE, nil)
	if err != nil {
		t.Fatal(err)
	}
	plsID := *pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID
	asoKey := types.NamespacedName{Namespace: mcNS, Name: asoPE}

	mergePatch(t, w, mcKey, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":""}}}`)
	testworld.Eventually(t, testworld.Timeout, "CAPZ paused the MC's ASO object", func(ctx context.Context) (bool, string) {
		obj := asoEndpoint()
		if err := w.Client.Get(ctx, asoKey, obj); err != nil {
			return false, err.Error()
		}
		_, paused := obj.GetAnnotations()[capz.PrePauseReconcilePolicyAnnotation]
		return paused, fmt.Sprint(obj.GetAnnotations())
	})
	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: plsID, PrivateEndpointID: *pe.ID, Remove: true}); err != nil {
		t.Fatal(err)
	}
	wcKey := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	waitEvent(t, w, wcKey, clusterlink.ReasonHealWaitsForPause)
	if now := endpointInstance(t, w, mcSub, "mc-rg", asoPE); now != before {
		t.Errorf("the endpoint behind a paused ASO object was deleted (instance %s, was %s)", now, before)
	}
	obj := asoEndpoint()
	if err := w.Client.Get(ctx, asoKey, obj); err != nil || obj.GetDeletionTimestamp() != nil {
		t.Errorf("the paused ASO object was deleted: %v %v", err, obj.GetDeletionTimestamp())
	}
	if ok, _ := w.HasEvent(ctx, wcKey, clusterlink.ReasonEndpointHealed); ok {
		t.Error("healed behind the pause")
	}

	mergePatch(t, w, mcKey, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":null}}}`)
	waitEvent(t, w, wcKey, clusterlink.ReasonEndpointHealed)
	testworld.Eventually(t, testworld.Timeout, "the MC's endpoint made again through ASO and approved", func(ctx context.Context) (bool, string) {
		pe, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(ctx, "mc-rg", asoPE, nil)
		if err != nil {
			return false, err.Error()
		}
		return connectionStatus(pe.PrivateEndpoint) == "Approved" && endpointInstance(t, w, mcSub, "mc-rg", asoPE) != before, connectionStatus(pe.PrivateEndpoint)
	})
	noOperatorDeletes(t, w)
}
