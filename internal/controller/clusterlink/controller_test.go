package clusterlink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestWiresBothDirections: a private MC and a private WC are wired both
// ways; a user's own endpoint and CAPZ's concurrent writes survive; a
// removed link removes its endpoint and annotation; a deleted WC leaves no
// endpoint in the MC and is released. On the fork overlay and on CAPZ v1.27
// (private links and endpoints through ASO).
func TestWiresBothDirections(t *testing.T) {
	for _, schema := range []testenv.Schema{testenv.SchemaFork, testenv.SchemaV127} {
		t.Run(string(schema), func(t *testing.T) { testWiresBothDirections(t, schema) })
	}
}

func testWiresBothDirections(t *testing.T, schema testenv.Schema) {
	w := world(t, schema, sandbox.ModeOf(schema), false)
	ctx := context.Background()
	mc := mcCluster(true).Object(schema)
	addUserEndpoint(mc)
	if err := w.Client.Create(ctx, mc, client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
	create(t, w, schema, wcCluster("wc1", 20))
	operator(t, w)

	u := wired(t, w, "wc1", true, true)
	if got, want := u.GetAnnotations()[apiAnn], azureIP(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want the MC endpoint's IP %s", apiAnn, got, want)
	}
	if got, want := u.GetAnnotations()[ingAnn], azureIP(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want the WC endpoint's IP %s", ingAnn, got, want)
	}
	if !slices.Contains(u.GetFinalizers(), clusterlink.Finalizer) {
		t.Errorf("finalizer %s missing: %v", clusterlink.Finalizer, u.GetFinalizers())
	}
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, clusterlink.ReasonEndpointReady)
	checkMC(t, w, []string{"users-own-privateendpoint", "wc1-api-privatelink-privateendpoint"})
	mcSays(t, w, "True", clusterlink.ReasonEndpointEntriesWritten, "holds a private endpoint entry for every private link")

	// The WC's owner removes the link: its endpoint and annotation go.
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	testworld.Eventually(t, testworld.Timeout, "the link's endpoint and annotation removed", func(ctx context.Context) (bool, string) {
		u, _ := w.Get(ctx, wcNS, "wc1")
		_, api := u.GetAnnotations()[apiAnn]
		_, ing := u.GetAnnotations()[ingAnn]
		names := endpointNames(t, w, mcKey)
		return !api && ing && !slices.Contains(names, "wc1-api-privatelink-privateendpoint"), fmt.Sprint(testworld.Describe(u), names)
	})

	// The WC is deleted: released, and the MC keeps only the user's endpoint.
	u, _ = w.Get(ctx, wcNS, "wc1")
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1 released and gone", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, wcNS, "wc1")
		return err != nil, fmt.Sprint(err)
	})
	checkMC(t, w, []string{"users-own-privateendpoint"})
}

// addUserEndpoint gives the MC an endpoint of the user's own, to the MC's
// ingress private link service.
func addUserEndpoint(mc *unstructured.Unstructured) {
	subnets, _, _ := unstructured.NestedSlice(mc.Object, "spec", "networkSpec", "subnets")
	nodes := subnets[1].(map[string]any)
	nodes["privateEndpoints"] = []any{map[string]any{
		"name": "users-own-privateendpoint",
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "users-own-connection",
			"privateLinkServiceID": "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateLinkServices/mc-ingress-privatelink",
		}},
	}}
	_ = unstructured.SetNestedSlice(mc.Object, subnets, "spec", "networkSpec", "subnets")
}

// checkMC checks the MC's endpoint entries and that CAPZ's writes (subnet
// IDs) survived the operator's.
func checkMC(t *testing.T, w *testworld.World, want []string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("the MC holding %v", want), func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		slices.Sort(names)
		return slices.Equal(names, want), fmt.Sprint(names)
	})
	u, _ := w.Get(context.Background(), mcNS, "mc")
	view, _ := capz.FromUnstructured(u)
	for _, s := range view.Subnets {
		if s.ID == "" {
			t.Errorf("CAPZ's subnet ID of %s was lost", s.Name)
		}
	}
}

// TestManualApprovalAndProblems runs the situations a user must act on in
// one world: approval, a subscription not allowed, an invalid spec (no
// subscription ID), a
// paused cluster and an identity not allowed in the namespace.
func TestManualApprovalAndProblems(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	manual := wcCluster("wc-manual", 21)
	manual.PrivateLinks[0].AutoApprovedSubscriptions = nil
	notAllowed := wcCluster("wc-notallowed", 22)
	notAllowed.PrivateLinks[0].AllowedSubscriptions = []string{"33333333-3333-3333-3333-333333333333"}
	// An invalid spec CAPZ accepts: no subscriptionID (CAPZ then uses its
	// own environment's), so the operator cannot build the link's ID. A
	// misspelt apiServerLB.type, the case this was before, is refused by
	// CAPZ's webhook; desired_test covers it.
	badLB := wcCluster("wc-badlb", 23)
	badLB.Subscription = ""
	pausedObj := wcCluster("wc-paused", 24).Object(testenv.SchemaFork)
	pausedObj.SetAnnotations(map[string]string{capz.PausedAnnotation: "true"})
	create(t, w, testenv.SchemaFork, mcCluster(true), manual, notAllowed, badLB)
	if err := w.Client.Create(ctx, pausedObj, client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
	operator(t, w)

	key := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: wcNS, Name: n} }
	waitEvent(t, w, key("wc-manual"), clusterlink.ReasonEndpointPending)
	if _, ok := getAnnotations(t, w, "wc-manual")[apiAnn]; ok {
		t.Error("a pending endpoint's IP was annotated")
	}
	// The WC's owner approves the MC's connection. While CAPZ first writes
	// the MC's subnet IDs it can replace the operator's entries (the merge
	// patch hazard), so the endpoint may be recreated with a new pending
	// connection: approve until the approval sticks.
	pls := "/subscriptions/" + wcSub + "/resourceGroups/wc-manual-rg/providers/Microsoft.Network/privateLinkServices/wc-manual-api-privatelink"
	pe := "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateEndpoints/wc-manual-api-privatelink-privateendpoint"
	testworld.Eventually(t, testworld.Timeout, "the approved endpoint's IP annotated", func(context.Context) (bool, string) {
		err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: pls, PrivateEndpointID: pe, Status: "Approved"})
		_, annotated := getAnnotations(t, w, "wc-manual")[apiAnn]
		return annotated, fmt.Sprint(err)
	})
	wired(t, w, "wc-manual", true, true)

	waitEvent(t, w, key("wc-notallowed"), clusterlink.ReasonSubscriptionNotAllowed)
	// The MC cannot reach its API server: not True, although its endpoint
	// to the MC's ingress may be ready.
	limited(t, w, "wc-notallowed", clusterlink.ReasonSubscriptionNotAllowed)
	waitEvent(t, w, key("wc-badlb"), clusterlink.ReasonInvalidSpec)
	names := endpointNames(t, w, mcKey)
	for _, n := range names {
		if strings.HasPrefix(n, "wc-notallowed") || strings.HasPrefix(n, "wc-badlb") {
			t.Errorf("the MC got endpoint %s for a cluster it must not wire", n)
		}
	}
	// wc-manual converged while wc-paused was there all along: untouched.
	u, _ := w.Get(ctx, wcNS, "wc-paused")
	if slices.Contains(u.GetFinalizers(), clusterlink.Finalizer) {
		t.Errorf("a paused cluster was changed: %s", testworld.Describe(u))
	}
	mergePatch(t, w, key("wc-paused"), `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":null}}}`)
	wired(t, w, "wc-paused", true, true)

	identityNotAllowed(t, w)
}

// identityNotAllowed: a WC whose identity does not allow its namespace.
func identityNotAllowed(t *testing.T, w *testworld.World) {
	t.Helper()
	ctx := context.Background()
	id := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"type": "ServicePrincipal", "tenantID": testworld.TenantID, "clientID": testworld.OperatorClient,
		"clientSecret":      map[string]any{"name": testworld.IdentitySecret, "namespace": testworld.IdentityNS},
		"allowedNamespaces": map[string]any{"list": []any{"somewhere-else"}},
	}}}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	id.SetNamespace(testworld.IdentityNS)
	id.SetName("restricted")
	if err := w.Client.Create(ctx, id); err != nil {
		t.Fatal(err)
	}
	obj := wcCluster("wc-denied", 25).Object(testenv.SchemaFork)
	_ = unstructured.SetNestedField(obj.Object, "restricted", "spec", "identityRef", "name")
	if err := w.Client.Create(ctx, obj, client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc-denied"}, "IdentityNotAllowedInNamespace")
}

func getAnnotations(t *testing.T, w *testworld.World, name string) map[string]string {
	t.Helper()
	u, err := w.Get(context.Background(), wcNS, name)
	if err != nil {
		t.Fatal(err)
	}
	return u.GetAnnotations()
}

// TestUpstreamCAPZ: on upstream CAPZ (no privateLinks field) WCs still
// reach a private MC's ingress; a WC created before the MC waits for it.
func TestUpstreamCAPZ(t *testing.T) {
	w := world(t, testenv.SchemaUpstream, capzsim.Upstream, false)
	create(t, w, testenv.SchemaUpstream, wcCluster("wc1", 20))
	operator(t, w)
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, clusterlink.ReasonManagementClusterNotFound)
	create(t, w, testenv.SchemaUpstream, mcCluster(true))
	u := wired(t, w, "wc1", false, true)
	if got, want := u.GetAnnotations()[ingAnn], azureIP(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want %s", ingAnn, got, want)
	}
	if names := endpointNames(t, w, mcKey); len(names) != 0 {
		t.Errorf("upstream CAPZ WCs have no private links, yet the MC got endpoints %v", names)
	}

	// The MC disappears as during clusterctl move: paused first (CAPZ
	// stands still), then deleted without its finalizers, so nothing is
	// torn down in Azure. The WC keeps its endpoint and annotation. (A
	// deletion with CAPZ running deletes the MC's resource group and its
	// ingress service: then the annotation rightly goes.)
	ctx := context.Background()
	mcObj, _ := w.Get(ctx, mcNS, "mc")
	if err := w.Client.Patch(ctx, mcObj, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":"true"}}}`))); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Patch(ctx, mcObj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, mcObj); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	testworld.Eventually(t, testworld.Timeout, "the operator seeing the MC missing again", func(ctx context.Context) (bool, string) {
		n := 0
		for _, e := range w.Events(ctx, key) {
			if e.Reason == clusterlink.ReasonManagementClusterNotFound {
				n++
				if e.Series != nil {
					n += int(e.Series.Count) - 1
				}
			}
		}
		return n >= 2, fmt.Sprint(n)
	})
	if names := endpointNames(t, w, key); !slices.Contains(names, "wc1-to-mc-privatelink-privateendpoint") {
		t.Errorf("the WC lost its endpoint while the MC was missing: %v", names)
	}
	if _, ok := getAnnotations(t, w, "wc1")[ingAnn]; !ok {
		t.Error("the WC lost its annotation while the MC was missing")
	}
}

// TestPublicMCWithProposalSpelling: a public MC needs no ingress endpoint in
// its WCs; CAPZ v1.27's natIPConfigurations spelling is read (capzsim in fork mode).
func TestPublicMCWithProposalSpelling(t *testing.T) {
	w := world(t, testenv.SchemaV127, capzsim.Fork, false)
	create(t, w, testenv.SchemaV127, mcCluster(false), wcCluster("wc1", 20))
	operator(t, w)
	wired(t, w, "wc1", true, false)
	if names := endpointNames(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}); len(names) != 0 {
		t.Errorf("a WC of a public MC got endpoints %v", names)
	}
}

// TestOrphanedEndpointIsDeleted: when CAPZ leaves an endpoint in Azure that
// the operator removed from spec (upstream CAPZ does), the operator deletes
// it.
func TestOrphanedEndpointIsDeleted(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, true)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w)
	wired(t, w, "wc1", true, true)
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the orphaned endpoint deleted in Azure", func(ctx context.Context) (bool, string) {
		_, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		return err != nil && strings.Contains(err.Error(), "ResourceNotFound"), fmt.Sprint(err)
	})
	waitEvent(t, w, mcKey, clusterlink.ReasonOrphanDeleted)
}

// TestManyWorkloadClustersFewMCWrites starts the operator on 20 WCs whose
// private links are all ready: their events must collapse into one or two
// MC writes, not 20. (The operator starts after capzsim finished, so the
// count does not depend on how fast capzsim is on a loaded machine; the
// scale benchmark measures the dynamic case.)
func TestManyWorkloadClustersFewMCWrites(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	before := counter(t, "azure_private_endpoint_operator_management_cluster_writes_total")
	create(t, w, testenv.SchemaFork, mcCluster(true))
	var wcs []testworld.Cluster
	for i := range 20 {
		wcs = append(wcs, wcCluster(fmt.Sprintf("wc%02d", i), 20+i))
	}
	create(t, w, testenv.SchemaFork, wcs...)
	for _, c := range wcs {
		testworld.Eventually(t, testworld.Timeout, c.Name+" private links ready", func(ctx context.Context) (bool, string) {
			u, err := w.Get(ctx, wcNS, c.Name)
			if err != nil {
				return false, err.Error()
			}
			return conditionTrue(u, "PrivateLinksReady"), testworld.Describe(u)
		})
	}
	w.Sim.ResetCounters()
	operator(t, w)
	for _, c := range wcs {
		wired(t, w, c.Name, true, true)
	}
	writes := counter(t, "azure_private_endpoint_operator_management_cluster_writes_total") - before
	sim := w.Sim.Counters()
	t.Logf("20 WCs: %v writes to the MC; operator ARM requests %d, capzsim ARM requests %d, token requests %d, 429s %d",
		writes, sim.ByPrincipal[testworld.OperatorClient], sim.ByPrincipal[testworld.CAPZClientID], sim.Tokens, sim.Throttled)
	// At most three writes of the entries, and one of the MC's condition
	// (GSWorkloadClusterEndpointsReady, True from the first pass on).
	if writes > 4 {
		t.Errorf("20 WCs caused %v writes to the MC; want at most 4", writes)
	}
	if writes < 1 {
		t.Errorf("the MC was never written")
	}
}

func counter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

// TestWaitingStates: links CAPZ has not made ready yet, and an endpoint
// still being provisioned (no IP), are reported and waited for.
func TestWaitingStates(t *testing.T) {
	// Upstream capzsim with the fork schema: links declared, never ready.
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Upstream, Latency: 1500 * time.Millisecond,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w)
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	waitEvent(t, w, key, clusterlink.ReasonWaitingForPrivateLinks)
	waitEvent(t, w, key, clusterlink.ReasonEndpointProvisioning)
	wired(t, w, "wc1", false, true)
	if names := endpointNames(t, w, mcKey); len(names) != 0 {
		t.Errorf("the MC got endpoints %v for links that are not ready", names)
	}
}

// olderOperator is the field manager the older operator's writes carry:
// its image runs /manager and sets no field owner.
const olderOperator = "manager"

// wc1Entry is an MC endpoint entry with one connection to a private link
// service in wc1's resource group.
func wc1Entry(name, connection, service string) map[string]any {
	return map[string]any{
		"name": name,
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 connection,
			"privateLinkServiceID": "/subscriptions/" + wcSub + "/resourceGroups/wc1-rg/providers/Microsoft.Network/privateLinkServices/" + service,
		}},
	}
}

// TestUpgradeFromOlderOperator: entries, annotations and the finalizer an
// older operator wrote with Update are taken over: a stale MC entry for a
// link the WC no longer has is removed, and so is a stale annotation.
func TestUpgradeFromOlderOperator(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	mc := mcCluster(true).Object(testenv.SchemaFork)
	subnets, _, _ := unstructured.NestedSlice(mc.Object, "spec", "networkSpec", "subnets")
	subnets[1].(map[string]any)["privateEndpoints"] = []any{
		wc1Entry("wc1-old-privatelink-privateendpoint", "wc1-old-privatelink-connection", "wc1-old-privatelink"),
		// Another controller that runs as /manager (CAPI, CAPZ, any
		// kubebuilder scaffold) wrote this one: named like the operator's,
		// in wc1's resource group, but not with the older operator's
		// connection name. It is not the older operator's to remove.
		wc1Entry("wc1-db-privateendpoint", "db", "wc1-db"),
	}
	_ = unstructured.SetNestedSlice(mc.Object, subnets, "spec", "networkSpec", "subnets")
	if err := w.Client.Create(ctx, mc, client.FieldOwner(olderOperator)); err != nil {
		t.Fatal(err)
	}
	// CAPZ wrote the subnets back from a read older than the removal of
	// two entries (CAPI's patch helper: a merge patch of the whole list):
	// one of the operator's shape, one a user had made. CAPZ alone holds
	// them now; the first is the operator's to remove, the second is not.
	// capzsim's own write of the subnets' IDs does the same, once: it is
	// waited for, and the write back carries the IDs, so that capzsim's
	// write, from a read older than this one, does not remove them again
	// (the test failed 1 run in 5 so).
	testworld.Eventually(t, testworld.Timeout, "capzsim wrote the subnets' IDs", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, mcNS, "mc")
		if err != nil {
			return false, err.Error()
		}
		subnets, _, _ = unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
		for _, sn := range subnets {
			if id, _ := sn.(map[string]any)["id"].(string); id == "" {
				return false, "a subnet without an ID"
			}
		}
		return true, ""
	})
	writtenBack := slices.Clone(subnets)
	nodes := maps.Clone(writtenBack[1].(map[string]any))
	nodes["privateEndpoints"] = append(slices.Clone(nodes["privateEndpoints"].([]any)),
		wc1Entry("wc1-gone-privatelink-privateendpoint", "wc1-gone-privatelink-connection", "wc1-gone-privatelink"),
		wc1Entry("wc1-users-privateendpoint", "users", "wc1-users"))
	writtenBack[1] = nodes
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"networkSpec": map[string]any{"subnets": writtenBack}}})
	if err := w.Client.Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(capzsim.FieldManager)); err != nil {
		t.Fatal(err)
	}
	wc := wcCluster("wc1", 20)
	wc.Private = false // public: the older operator's API server annotation must go
	wc.PrivateLinks = nil
	obj := wc.Object(testenv.SchemaFork)
	obj.SetFinalizers([]string{clusterlink.Finalizer})
	obj.SetAnnotations(map[string]string{apiAnn: "10.10.1.99"})
	if err := w.Client.Create(ctx, obj, client.FieldOwner(olderOperator)); err != nil {
		t.Fatal(err)
	}
	operator(t, w)
	u := wired(t, w, "wc1", false, true)
	testworld.Eventually(t, testworld.Timeout, "the older operator's stale MC entry and the one CAPZ wrote back removed", func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		return !slices.Contains(names, "wc1-old-privatelink-privateendpoint") && !slices.Contains(names, "wc1-gone-privatelink-privateendpoint"), fmt.Sprint(names)
	})
	names := endpointNames(t, w, mcKey)
	if !slices.Contains(names, "wc1-db-privateendpoint") {
		t.Error("another /manager's entry was removed as if it were the older operator's")
	}
	if !slices.Contains(names, "wc1-users-privateendpoint") {
		t.Error("an entry CAPZ wrote back that is not of the operator's shape was removed")
	}
	// Deleting releases the finalizer the older operator had added.
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1 released", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return true, ""
		}
		return false, testworld.Describe(u)
	})
}

// TestPausedByClusterAndMissingMC: the owning Cluster's spec.paused pauses
// a WC; a WC deleted while the MC is missing is released, not stuck.
func TestPausedByClusterAndMissingMC(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	cluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"paused": true}}}
	cluster.SetGroupVersionKind(capz.ClusterGVK)
	cluster.SetNamespace(wcNS)
	cluster.SetName("wc1")
	if err := w.Client.Create(ctx, cluster); err != nil {
		t.Fatalf("a minimal Cluster: %v", err)
	}
	obj := wcCluster("wc1", 20).Object(testenv.SchemaFork)
	obj.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "wc1"})
	if err := w.Client.Create(ctx, obj, client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
	create(t, w, testenv.SchemaFork, wcCluster("wc-gone", 21))
	operator(t, w)

	// No MC yet: wc-gone is told, then deleted and released.
	goneKey := types.NamespacedName{Namespace: wcNS, Name: "wc-gone"}
	waitEvent(t, w, goneKey, clusterlink.ReasonManagementClusterNotFound)
	gone, _ := w.Get(ctx, wcNS, "wc-gone")
	if err := w.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc-gone released without an MC", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, wcNS, "wc-gone")
		return err != nil, ""
	})
	// wc1 was paused all along: not even the finalizer.
	u, _ := w.Get(ctx, wcNS, "wc1")
	if slices.Contains(u.GetFinalizers(), clusterlink.Finalizer) {
		t.Errorf("a cluster paused by its Cluster was changed: %s", testworld.Describe(u))
	}
	create(t, w, testenv.SchemaFork, mcCluster(true))
	if err := w.Client.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`))); err != nil {
		t.Fatal(err)
	}
	wired(t, w, "wc1", true, true)
	// Many reconciles later, the released cluster has not been resurrected
	// by an apply (server-side apply creates missing objects).
	if _, err := w.Get(ctx, wcNS, "wc-gone"); err == nil {
		t.Error("wc-gone came back after it was deleted")
	}
	checkMetrics(t)
}

// checkMetrics reads the operator's metrics after a cluster was wired.
func checkMetrics(t *testing.T) {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case mf.GetName() == "azure_private_endpoint_operator_private_endpoints" && labels["state"] == "ready" && m.GetGauge().GetValue() >= 1:
				seen["endpoints ready: "+labels["direction"]] = true
			case mf.GetName() == "azure_private_endpoint_operator_azure_requests_total" && labels["resource_type"] == "Microsoft.Network/privateEndpoints":
				seen["azure requests"] = true
			}
		}
	}
	for _, want := range []string{"endpoints ready: mc-to-wc-api", "endpoints ready: wc-to-mc-ingress", "azure requests"} {
		if !seen[want] {
			t.Errorf("metric %q missing; saw %v", want, seen)
		}
	}
}
