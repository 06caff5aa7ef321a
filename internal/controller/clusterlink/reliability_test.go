package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestFlapsAndCollisions: a working endpoint survives CAPZ reporting the
// WC's private links not ready; a user's entry that has the operator's
// name is left exactly as it is, with PrivateEndpointNameTaken on the WC
// and the MC, and every other WC keeps working.
func TestFlapsAndCollisions(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	mc := mcCluster(true).Object(testenv.SchemaFork)
	// The user's entry has the name the operator would give wc2's link,
	// and points at the MC's own ingress.
	subnets, _, _ := unstructured.NestedSlice(mc.Object, "spec", "networkSpec", "subnets")
	userEntry := map[string]any{
		"name": "wc2-api-privatelink-privateendpoint",
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "users-connection",
			"privateLinkServiceID": "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateLinkServices/mc-ingress-privatelink",
			"requestMessage":       "the user's own",
		}},
	}
	subnets[1].(map[string]any)["privateEndpoints"] = []any{userEntry}
	_ = unstructured.SetNestedSlice(mc.Object, subnets, "spec", "networkSpec", "subnets")
	if err := w.Client.Create(ctx, mc, client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
	create(t, w, testenv.SchemaFork, wcCluster("wc1", 20), wcCluster("wc2", 21))
	operator(t, w)

	u1 := wired(t, w, "wc1", true, true)
	apiIP := u1.GetAnnotations()[apiAnn]
	wc2 := types.NamespacedName{Namespace: wcNS, Name: "wc2"}
	waitEvent(t, w, wc2, clusterlink.ReasonPrivateEndpointNameTaken)
	waitEvent(t, w, mcKey, clusterlink.ReasonPrivateEndpointNameTaken)
	// wc2's only link gives the MC no endpoint: it says why, not True,
	// while its endpoint to the MC's ingress is wired.
	limited(t, w, "wc2", clusterlink.ReasonPrivateEndpointNameTaken)
	u2 := annotatedOnly(t, w, "wc2", ingAnn)
	if _, ok := u2.GetAnnotations()[apiAnn]; ok {
		t.Errorf("wc2 was annotated from the user's endpoint: %s", testworld.Describe(u2))
	}
	checkUserEntry(t, w, userEntry)

	// CAPZ reports wc1's links broken (a transient error, an update).
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"},
		`{"metadata":{"annotations":{"`+capzsim.BrokenLinksAnnotation+`":"true"}}}`)
	testworld.Eventually(t, testworld.Timeout, "wc1's PrivateLinksReady False", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		return !conditionTrue(u, "PrivateLinksReady") && u.GetAnnotations()[capzsim.BrokenLinksAnnotation] == "true", testworld.Describe(u)
	})
	// A new WC needs an MC write: that write is computed while wc1's links
	// are not ready, and must keep wc1's endpoint.
	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wired(t, w, "wc3", true, true)
	if names := endpointNames(t, w, mcKey); !slices.Contains(names, "wc1-api-privatelink-privateendpoint") {
		t.Fatalf("a PrivateLinksReady flap removed wc1's endpoint from the MC: %v", names)
	}
	u1, _ = w.Get(ctx, wcNS, "wc1")
	if got := u1.GetAnnotations()[apiAnn]; got != apiIP {
		t.Errorf("during the flap wc1's %s = %q, want the unchanged %s", apiAnn, got, apiIP)
	}
	if got := azureIP(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != apiIP {
		t.Errorf("wc1's endpoint in Azure has IP %s, was %s: it was recreated", got, apiIP)
	}
	checkUserEntry(t, w, userEntry)
}

// checkUserEntry: the user's entry in the MC is exactly as they wrote it.
func checkUserEntry(t *testing.T, w *testworld.World, want map[string]any) {
	t.Helper()
	u, err := w.Get(context.Background(), mcNS, "mc")
	if err != nil {
		t.Fatal(err)
	}
	subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
	for _, s := range subnets {
		pes, _ := s.(map[string]any)["privateEndpoints"].([]any)
		for _, pe := range pes {
			m := pe.(map[string]any)
			if m["name"] != want["name"] {
				continue
			}
			got := map[string]any{"name": m["name"], "privateLinkServiceConnections": m["privateLinkServiceConnections"]}
			if fmt.Sprint(got) != fmt.Sprint(want) || m["manualApproval"] != nil {
				t.Errorf("the user's entry changed:\n got %v\nwant %v", m, want)
			}
			return
		}
	}
	t.Errorf("the user's entry %v is gone", want["name"])
}

// TestSharedResourceGroup: two WCs in one resource group, one paused: MC
// wiring goes on for every other cluster (no duplicate entry makes the
// apply fail), and the other one is released when deleted.
func TestSharedResourceGroup(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	shared := func(c testworld.Cluster) testworld.Cluster {
		c.ResourceGroup = "shared-rg"
		return c
	}
	create(t, w, testenv.SchemaFork, mcCluster(true), shared(wcCluster("wc1", 20)), shared(wcCluster("wc2", 21)))
	operator(t, w)
	wired(t, w, "wc1", true, true)
	wired(t, w, "wc2", true, true)

	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"}, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":"true"}}}`)
	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wired(t, w, "wc3", true, true)

	u1, _ := w.Get(ctx, wcNS, "wc1")
	if err := w.Client.Delete(ctx, u1); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1 released while wc2 of its resource group is paused", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return true, ""
		}
		return false, testworld.Describe(u) + fmt.Sprint(endpointNames(t, w, mcKey))
	})
	checkMC(t, w, []string{"wc2-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint"})
}

// TestHealsDisconnected: the owner of the MC's ingress removes a WC's
// connection (the endpoint turns Disconnected); after the grace period the
// operator deletes the endpoint in Azure, CAPZ recreates it, it connects
// again and the annotation follows.
func TestHealsDisconnected(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork, CAPZSyncPeriod: time.Second,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	ctx := context.Background()
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.Heal.DisconnectedAfter = time.Second
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: time.Hour}
	})
	wired(t, w, "wc1", true, true)
	dnsReady(t, w, "wc1")
	wcVNet := vnetID(wcSub, "wc1-rg", "wc1-vnet")
	before := endpointID(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint")

	plss := w.Network(t, mcSub).NewPrivateLinkServicesClient()
	pls, err := plss.Get(ctx, "mc-rg", "mc-ingress-privatelink", nil)
	if err != nil {
		t.Fatal(err)
	}
	// From here on, the MC's names may only ever resolve, from wc1's
	// network, to an address that an endpoint of wc1 holds: a deleted
	// endpoint's address goes back to the subnet, to whoever asks next. The
	// record's removal fails for a while, so that a heal that does not wait
	// for it deletes the endpoint under a live record.
	violations := watchName(t, w, wcVNet, "grafana.mc."+baseDomain, wcSub, "wc1-to-mc-privatelink-privateendpoint")
	fault, err := w.Sim.AddFault(azuresim.Fault{Method: "DELETE", PathRegex: `(?i)/privateDnsZones/mc\.` + strings.ReplaceAll(baseDomain, ".", `\.`) + `/A/`,
		Status: 500, Code: "InternalServerError", Message: "Injected: the record set cannot be deleted now."})
	if err != nil {
		t.Fatal(err)
	}
	// And CAPZ cannot make the endpoint again until the heal is over, so
	// that a freed address stays freed for a while.
	recreate, err := w.Sim.AddFault(azuresim.Fault{Method: "PUT", PathRegex: `(?i)/privateEndpoints/wc1-to-mc-privatelink-privateendpoint$`,
		Principal: testworld.CAPZClientID, Status: 500, Code: "InternalServerError", Message: "Injected: the endpoint cannot be made now."})
	if err != nil {
		t.Fatal(err)
	}
	var conn string
	for _, c := range pls.Properties.PrivateEndpointConnections {
		if strings.HasSuffix(strings.ToLower(ptr.Deref(c.Properties.PrivateEndpoint.ID, "")), "/wc1-to-mc-privatelink-privateendpoint") {
			conn = ptr.Deref(c.Name, "")
		}
	}
	if conn == "" {
		t.Fatalf("no connection of wc1's endpoint on the MC's ingress")
	}
	poller, err := plss.BeginDeletePrivateEndpointConnection(ctx, "mc-rg", "mc-ingress-privatelink", conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	waitEvent(t, w, key, clusterlink.ReasonEndpointDisconnected)
	// The heal waits for the records (or, without that rule, goes ahead
	// under them once the grace period is over).
	testworld.Eventually(t, testworld.Timeout, "the heal waits for DNS, or heals", func(ctx context.Context) (bool, string) {
		waits, _ := w.HasEvent(ctx, key, clusterlink.ReasonHealWaitsForDNS)
		healed, reasons := w.HasEvent(ctx, key, clusterlink.ReasonEndpointHealed)
		return (waits || healed) && faultCount(w, "InternalServerError") >= 3, strings.Join(reasons, ",")
	})
	w.Sim.RemoveFault(fault)
	waitEvent(t, w, key, clusterlink.ReasonEndpointHealed)
	w.Sim.RemoveFault(recreate)
	testworld.Eventually(t, testworld.Timeout, "wc1's endpoint recreated, approved and annotated", func(ctx context.Context) (bool, string) {
		pe, err := w.Network(t, wcSub).NewPrivateEndpointsClient().Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil)
		if err != nil {
			return false, err.Error()
		}
		state := connectionStatus(pe.PrivateEndpoint)
		u, _ := w.Get(ctx, wcNS, "wc1")
		ip := u.GetAnnotations()[ingAnn]
		return ptr.Deref(pe.ID, "") != "" && state == "Approved" && ip != "" && ip == azureIP(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"),
			fmt.Sprintf("connection %s, annotation %q", state, ip)
	})
	if after := endpointID(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"); after == "" || before == "" {
		t.Errorf("endpoint IDs before %q and after %q", before, after)
	}
	// In DNS mode the MC's names follow the healed endpoint (the DNS check
	// interval is an hour: the changed IP alone brings the write).
	resolves(t, w, wcVNet, "grafana.mc."+baseDomain, azuresim.ResolveOK, azureIP(t, w, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"))
	if v := violations(); len(v) > 0 {
		t.Errorf("the record pointed at an address no endpoint of wc1 held (%d times), first: %s", len(v), v[0])
	}
}

// faultCount is how often injected faults answered code.
func faultCount(w *testworld.World, code string) int {
	n := 0
	for _, f := range w.Sim.Counters().Faults {
		if f.Kind == code {
			n += f.Count
		}
	}
	return n
}

// watchName looks at name from vnet every 20 ms until the returned
// function is called, and records each time it resolves to an address
// that the endpoint sub/…/name does not hold in Azure (it is gone, or has
// another address).
func watchName(t *testing.T, w *testworld.World, vnet, name, sub, endpoint string) func() []string {
	t.Helper()
	return testworld.Watch(t, func() string {
		r := w.Sim.Resolve(vnet, name)
		if r.Status != azuresim.ResolveOK {
			return ""
		}
		var holder *azuresim.EndpointInfo
		for _, e := range w.Sim.Endpoints() {
			if strings.HasPrefix(strings.ToLower(e.ID), "/subscriptions/"+sub+"/") && strings.EqualFold(e.Name, endpoint) {
				holder = &e
			}
		}
		if holder == nil || len(r.Addresses) != 1 || r.Addresses[0] != holder.IP {
			return fmt.Sprintf("%v while the endpoint is %+v", r.Addresses, holder)
		}
		return ""
	})
}

func endpointID(t *testing.T, w *testworld.World, sub, rg, name string) string {
	t.Helper()
	pe, err := w.Network(t, sub).NewPrivateEndpointsClient().Get(context.Background(), rg, name, nil)
	if err != nil {
		t.Fatalf("endpoint %s/%s: %v", rg, name, err)
	}
	return ptr.Deref(pe.ID, "")
}

func connectionStatus(pe armnetwork.PrivateEndpoint) string {
	if pe.Properties == nil {
		return ""
	}
	for _, c := range slices.Concat(pe.Properties.PrivateLinkServiceConnections, pe.Properties.ManualPrivateLinkServiceConnections) {
		if c.Properties != nil && c.Properties.PrivateLinkServiceConnectionState != nil {
			return ptr.Deref(c.Properties.PrivateLinkServiceConnectionState.Status, "")
		}
	}
	return ""
}

// TestPauseAndDeletionFirst: the MC's pause holds its entries as they are;
// a WC that is malformed, or lost the watch-filter label, is still
// released when deleted.
func TestPauseAndDeletionFirst(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	labelled := func(c testworld.Cluster) *unstructured.Unstructured {
		u := c.Object(testenv.SchemaFork)
		u.SetLabels(map[string]string{clusterlink.WatchFilterLabel: "apeo"})
		return u
	}
	for _, u := range []*unstructured.Unstructured{labelled(mcCluster(true)), labelled(wcCluster("wc1", 20)), labelled(wcCluster("wc2", 21)), labelled(wcCluster("wc3", 22))} {
		if err := w.Client.Create(ctx, u, client.FieldOwner(userMgr)); err != nil {
			t.Fatal(err)
		}
	}
	operator(t, w, func(o *clusterlink.Options) { o.WatchFilter = "apeo" })
	for _, name := range []string{"wc1", "wc2", "wc3"} {
		wired(t, w, name, true, true)
	}

	// The MC is paused (clusterctl move): wc1's link goes, its entry stays.
	mergePatch(t, w, mcKey, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":"true"}}}`)
	// wc1's own reconcile has seen the link go once its API annotation is
	// removed (withdrawLinks). Then two rounds of "touch the MC, wait for a paused MC
	// reconcile": the second round's reconcile started after the first
	// round's count was read, so it saw the link gone and the pause.
	withdrawLinks(t, w, "wc1")
	for round := range 2 {
		before := counter(t, "azure_private_endpoint_operator_management_cluster_paused_reconciles_total")
		mergePatch(t, w, mcKey, fmt.Sprintf(`{"metadata":{"annotations":{"test.example.com/touch":"%d"}}}`, round))
		testworld.Eventually(t, testworld.Timeout, "a paused MC reconcile", func(context.Context) (bool, string) {
			n := counter(t, "azure_private_endpoint_operator_management_cluster_paused_reconciles_total")
			return n > before, fmt.Sprint(n)
		})
	}
	if names := endpointNames(t, w, mcKey); !slices.Contains(names, "wc1-api-privatelink-privateendpoint") {
		t.Fatalf("the paused MC lost wc1's entry: %v", names)
	}
	mergePatch(t, w, mcKey, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":null}}}`)
	checkMC(t, w, []string{"wc2-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint"})

	// wc2 becomes malformed (a private link without a name), wc3 loses the
	// watch-filter label; both are deleted and released.
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[`+
		`{"name":"wc2-api-privatelink","allowedSubscriptions":["`+mcSub+`"],"autoApprovedSubscriptions":["`+mcSub+`"]},{"name":""}]}}}}`)
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"}, clusterlink.ReasonInvalidSpec)
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc3"}, `{"metadata":{"labels":{"`+clusterlink.WatchFilterLabel+`":null}}}`)
	for _, name := range []string{"wc2", "wc3"} {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Client.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"wc2", "wc3"} {
		testworld.Eventually(t, testworld.Timeout, name+" released", func(ctx context.Context) (bool, string) {
			u, err := w.Get(ctx, wcNS, name)
			if err != nil {
				return true, ""
			}
			return false, testworld.Describe(u) + fmt.Sprint(endpointNames(t, w, mcKey))
		})
	}
}

// annotatedOnly waits until of the two IP annotations a WC has exactly
// want.
func annotatedOnly(t *testing.T, w *testworld.World, name, want string) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testworld.Eventually(t, testworld.Timeout, name+" annotated with "+want+" only", func(ctx context.Context) (bool, string) {
		var err error
		if u, err = w.Get(ctx, wcNS, name); err != nil {
			return false, err.Error()
		}
		_, api := u.GetAnnotations()[apiAnn]
		_, ing := u.GetAnnotations()[ingAnn]
		return api == (want == apiAnn) && ing == (want == ingAnn), testworld.Describe(u)
	})
	return u
}
