package clusterlink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestLaterTenantDoesNotTakeOverMCEndpoint: two tenants each have a
// cluster wc1 with a link wc1-api-privatelink, in their own subscriptions.
// The MC's endpoint entry wc1-api-privatelink-privateendpoint (entry names
// carry no namespace) belongs to the one wired first, org-b's; org-a's,
// created later though it sorts first, is told the name is held and is
// never given the holder's endpoint or its address.
func TestLaterTenantDoesNotTakeOverMCEndpoint(t *testing.T) {
	schema := testenv.SchemaFork
	w, holderService := holderWorld(t, schema)
	var holderIP string
	testworld.Eventually(t, testworld.Timeout, "org-b/wc1 wired", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, "org-b", "wc1")
		if err != nil {
			return false, err.Error()
		}
		holderIP = u.GetAnnotations()[apiAnn]
		target, _ := mcEntryTarget(ctx, w)
		return holderIP != "" && strings.EqualFold(target, holderService), testworld.Describe(u) + " entry -> " + target
	})

	create(t, w, schema, laterClaimant())
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, clusterlink.ReasonNameConflict)
	// A later pass of the MC (any WC's change) must not move it either.
	create(t, w, schema, wcCluster("wc2", 40))
	testworld.Eventually(t, testworld.Timeout, "org-a/wc2 wired", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc2")
		if err != nil {
			return false, err.Error()
		}
		return u.GetAnnotations()[apiAnn] != "", testworld.Describe(u)
	})

	checkNotTakenOver(t, w, holderService, holderIP)
}

// TestNameIsFreeOnceAzureDeletedTheEndpoint: org-b/wc1 holds the MC's
// entry wc1-api-privatelink-privateendpoint; org-a/wc1 (another
// subscription, the same link name) waits for it. org-b/wc1 is deleted and
// its entry goes, but Azure keeps the endpoint a while (CAPZ's delete is
// refused here). Azure never moves an endpoint to another service
// (CannotChangePrivateLinkConnectionOnPrivateEndpoint), so org-a/wc1 gets
// the entry only once Azure no longer has the endpoint: before, it got
// the entry at once, CAPZ's PUT asked Azure to re-target org-b's endpoint,
// and org-a/wc1 was never wired (make simulate, seed 3, saw azuresim allow
// the re-target before it modelled Azure's refusal).
func TestNameIsFreeOnceAzureDeletedTheEndpoint(t *testing.T) {
	const name = wc1MCEntry
	schema := testenv.SchemaFork
	w, holderService := holderWorld(t, schema)
	testworld.Eventually(t, testworld.Timeout, "org-b/wc1's endpoint in Azure", func(ctx context.Context) (bool, string) {
		target, _ := mcEntryTarget(ctx, w)
		return strings.EqualFold(target, holderService) && mcEndpointTarget(w, name) != "", "entry -> " + target
	})
	create(t, w, schema, laterClaimant())
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, clusterlink.ReasonNameConflict)

	keep, err := w.Sim.AddFault(azuresim.Fault{Method: "DELETE", PathRegex: `(?i)/privateEndpoints/` + name + `$`,
		Status: 409, Code: "AnotherOperationInProgress", Message: "held by the test"})
	if err != nil {
		t.Fatal(err)
	}
	deleteCluster(t, w, "org-b", "wc1")
	// The MC's passes after the entry went: wc2 wired is one at least.
	create(t, w, schema, wcCluster("wc2", 40))
	wired(t, w, "wc2", true, true)
	testworld.Eventually(t, testworld.Timeout, "org-a/wc1 waits for the name", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		c := condition(u, "GSPrivateLinksReady")
		return c != nil && c["reason"] == clusterlink.ReasonEndpointTargetMismatch, testworld.Describe(u)
	})
	if target, _ := mcEntryTarget(context.Background(), w); target != "" {
		t.Errorf("the MC has an entry %s (to %s) while Azure still has org-b's endpoint of that name", name, target)
	}
	if got := mcEndpointTarget(w, name); !strings.EqualFold(got, holderService) {
		t.Errorf("Azure's endpoint %s connects to %q, want org-b's service still", name, got)
	}

	w.Sim.RemoveFault(keep)
	laterService := clusterlink.PrivateLinkServiceID(otherSub, "wc1-rg", "wc1-api-privatelink")
	testworld.Eventually(t, testworld.Timeout, "org-a/wc1 wired through the name", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		target, _ := mcEntryTarget(ctx, w)
		return strings.EqualFold(target, laterService) && u.GetAnnotations()[apiAnn] != "", testworld.Describe(u) + " entry -> " + target
	})
	if n := w.Sim.Counters().Errors["CannotChangePrivateLinkConnectionOnPrivateEndpoint"]; n != 0 {
		t.Errorf("Azure refused %d re-targets of an endpoint", n)
	}
}

// mcEndpointTarget is the service Azure's endpoint of that name in the MC's
// resource group connects to ("" when Azure has none).
func mcEndpointTarget(w *testworld.World, name string) string {
	for _, e := range w.Sim.Endpoints() {
		if strings.EqualFold(e.Name, name) && strings.Contains(strings.ToLower(e.ID), "/resourcegroups/mc-rg/") {
			return e.PrivateLinkService
		}
	}
	return ""
}

// checkNotTakenOver checks that the MC's entry of wc1 still targets the
// holder's service, that org-b/wc1 keeps its address, and that org-a/wc1
// got none and was told nothing of org-b.
func checkNotTakenOver(t *testing.T, w *testworld.World, holderService, holderIP string) {
	t.Helper()
	ctx := context.Background()
	if target, err := mcEntryTarget(ctx, w); err != nil || !strings.EqualFold(target, holderService) {
		t.Errorf("the MC's entry was re-targeted to %q (%v); it is org-b/wc1's, %s", target, err, holderService)
	}
	u, err := w.Get(ctx, "org-b", "wc1")
	if err != nil || u.GetAnnotations()[apiAnn] != holderIP {
		t.Errorf("org-b/wc1's address changed: %v (%v), was %s", u.GetAnnotations()[apiAnn], err, holderIP)
	}
	u, err = w.Get(ctx, wcNS, "wc1")
	if err != nil {
		t.Fatal(err)
	}
	if ip, ok := u.GetAnnotations()[apiAnn]; ok {
		t.Errorf("org-a/wc1 was given an address (%s) of an endpoint that is not its own", ip)
	}
	for _, e := range w.Events(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1"}) {
		if strings.Contains(e.Note, "org-b") {
			t.Errorf("org-a/wc1 was told about another tenant's cluster: %s: %s", e.Reason, e.Note)
		}
	}
}

// otherSub is the subscription of a later tenant's cluster.
const otherSub = "33333333-3333-3333-3333-333333333333"

// holderWorld starts a world in which org-b/wc1 (link wc1-api-privatelink)
// is the first to need the MC's entry wc1MCEntry, and the operator; it
// returns the world and org-b/wc1's service.
func holderWorld(t *testing.T, schema testenv.Schema) (*testworld.World, string) {
	t.Helper()
	w := world(t, schema, capzsim.Fork, false)
	w.Namespace(t, "org-b")
	holder := wcCluster("wc1", 20)
	holder.Namespace = "org-b"
	create(t, w, schema, mcCluster(true), holder)
	operator(t, w)
	return w, clusterlink.PrivateLinkServiceID(wcSub, "wc1-rg", "wc1-api-privatelink")
}

// laterClaimant is org-a/wc1, in otherSub, with the link name of org-b/wc1.
func laterClaimant() testworld.Cluster {
	later := wcCluster("wc1", 30)
	later.Subscription = otherSub
	later.PrivateLinks[0].AllowedSubscriptions = []string{mcSub}
	return later
}

// wc1MCEntry is the name of the MC's entry for a cluster wc1's link.
const wc1MCEntry = "wc1-api-privatelink-privateendpoint"

// mcEntryTarget is the private link service the MC's entry wc1MCEntry
// targets ("" without such an entry).
func mcEntryTarget(ctx context.Context, w *testworld.World) (string, error) {
	u, err := w.Get(ctx, mcNS, "mc")
	if err != nil {
		return "", err
	}
	view, _ := capz.FromUnstructured(u)
	for _, s := range view.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if pe.Name == wc1MCEntry && len(pe.Connections) > 0 {
				return pe.Connections[0].PrivateLinkServiceID, nil
			}
		}
	}
	return "", nil
}

// TestSameNamedClusterDoesNotWriteIntoHoldersZone: in DNS mode the MC-side
// zone of the default layout is named after the cluster alone
// (wc1.<base>), a name two tenants' clusters share. org-b/wc1 made it; it
// withdraws its link (its entry and record go, its zone stays while it
// exists), and org-a/wc1, which waited for the name (GSPrivateLinksReady
// Unknown: the name is held, or its endpoint is someone else's), takes it. org-a/wc1 writes
// nothing into org-b's zone (DNSZoneHeld, GSDNSZoneReady Unknown, told
// nothing of org-b); once org-b/wc1 is deleted, its zone goes and
// org-a/wc1 makes its own; once org-a/wc1 is deleted too, no zone is left.
// Before, org-a's record went into org-b's zone, which nobody deleted.
func TestSameNamedClusterDoesNotWriteIntoHoldersZone(t *testing.T) {
	schema := testenv.SchemaFork
	w := world(t, schema, capzsim.Fork, false)
	ctx := context.Background()
	mcVNet := vnetID(mcSub, "mc-rg", "mc-vnet")
	zone := "wc1." + baseDomain
	w.Namespace(t, "org-b")
	holder := wcCluster("wc1", 20)
	holder.Namespace = "org-b"
	create(t, w, schema, mcCluster(true), holder)
	operator(t, w, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1}
		o.TerminalRecheck = 2 * time.Second
	})
	testworld.Eventually(t, testworld.Timeout, "org-b/wc1's record", func(context.Context) (bool, string) {
		r := w.Sim.Resolve(mcVNet, "api."+zone)
		return r.Status == azuresim.ResolveOK, fmt.Sprintf("%+v", r)
	})
	// org-a/wc1 comes while org-b/wc1 holds the MC's entry name: its
	// condition says why it waits, without naming org-b's cluster, and
	// without making CAPZ's Ready False (Unknown, not False).
	later := wcCluster("wc1", 30)
	later.ResourceGroup = "org-a-wc1-rg" // its own group in the subscription the MC's ingress approves
	create(t, w, schema, later)
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	testworld.Eventually(t, testworld.Timeout, "org-a/wc1's GSPrivateLinksReady says why", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		// The MC reconcile says the name is held; the wiring sees the
		// endpoint of that name connected to another service.
		c := condition(u, clusterlink.ConditionGSPrivateLinksReady)
		return c["status"] == "Unknown" && (c["reason"] == clusterlink.ReasonNameConflict || c["reason"] == clusterlink.ReasonEndpointTargetMismatch), fmt.Sprint(c)
	})
	if u, _ := w.Get(ctx, wcNS, "wc1"); strings.Contains(fmt.Sprint(condition(u, clusterlink.ConditionGSPrivateLinksReady)["message"]), "org-b") {
		t.Errorf("org-a/wc1's condition names another tenant's cluster: %v", condition(u, clusterlink.ConditionGSPrivateLinksReady))
	}

	mergePatch(t, w, types.NamespacedName{Namespace: "org-b", Name: "wc1"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	u := wired(t, w, "wc1", true, true) // the name is free once org-b's entry is gone
	waitEvent(t, w, key, wiringdns.ReasonDNSZoneHeld)
	dnsZoneUnknown(t, w, wiringdns.ReasonDNSZoneHeld, "org-b")
	if r := w.Sim.Resolve(mcVNet, "api."+zone); r.Status == azuresim.ResolveOK {
		t.Errorf("org-a/wc1 wrote into org-b/wc1's zone: %+v", r)
	}
	for _, e := range w.Events(ctx, key) {
		if strings.Contains(e.Note, "org-b") {
			t.Errorf("org-a/wc1 was told about another tenant's cluster: %s: %s", e.Reason, e.Note)
		}
	}

	deleteCluster(t, w, "org-b", "wc1")
	resolves(t, w, mcVNet, "api."+zone, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	dnsReady(t, w, "wc1")
	deleteCluster(t, w, wcNS, "wc1")
	testworld.Eventually(t, testworld.Timeout, "no zone left", func(context.Context) (bool, string) {
		left := w.Sim.Resources("Microsoft.Network/privateDnsZones")
		return len(left) == 0, fmt.Sprint(left)
	})
}

// TestPrivateClusterNamedLikeAnEarlierPublicOne: a public wc1 (another
// tenant's) exists; a private wc1 comes later. Its MC-side zone,
// wc1.<base>, would shadow the public cluster's domain in the MC's network:
// it is wired, but gets no MC-side zone, and its GSDNSZoneReady says why
// without naming the other tenant.
func TestPrivateClusterNamedLikeAnEarlierPublicOne(t *testing.T) {
	schema := testenv.SchemaFork
	w := world(t, schema, capzsim.Fork, false)
	// A namespace that sorts before org-a: should both be created in one
	// second, the public one still comes first.
	w.Namespace(t, "org-0")
	public := wcCluster("wc1", 30)
	public.Namespace, public.Private, public.PrivateLinks = "org-0", false, nil
	public.ResourceGroup = "org-0-wc1-rg" // its own group: its endpoint to the MC's ingress is named like org-a/wc1's
	create(t, w, schema, mcCluster(true), public)
	create(t, w, schema, wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1}
		// No recheck within the test: only an event brings the refused
		// cluster back.
		o.TerminalRecheck, o.DriftCheck = time.Hour, time.Hour
	})
	wired(t, w, "wc1", true, true)
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	waitEvent(t, w, key, wiringdns.ReasonDNSNameReserved)
	dnsZoneUnknown(t, w, wiringdns.ReasonDNSNameReserved, "org-0")
	for _, z := range w.Sim.Resources("Microsoft.Network/privateDnsZones") {
		if strings.HasSuffix(strings.ToLower(z.ID), "/privatednszones/wc1."+baseDomain) {
			t.Errorf("a zone shadows the public cluster's domain in the MC's network: %s", z.ID)
		}
	}

	// Once the public namesake is gone the name is free: the private
	// cluster gets its DNS at once (its rechecks are minutes away: the
	// namesake's deletion wakes it).
	deleteCluster(t, w, "org-0", "wc1")
	testworld.Eventually(t, testworld.Timeout, "org-a/wc1's DNS after its public namesake went", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		return conditionTrue(u, clusterlink.ConditionGSDNSZoneReady), fmt.Sprint(condition(u, clusterlink.ConditionGSDNSZoneReady))
	})
}

// dnsZoneUnknown waits until org-a/wc1's GSDNSZoneReady is Unknown with
// reason, its message not naming otherTenant.
func dnsZoneUnknown(t *testing.T, w *testworld.World, reason, otherTenant string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "GSDNSZoneReady Unknown with "+reason, func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		c := condition(u, clusterlink.ConditionGSDNSZoneReady)
		return c["status"] == "Unknown" && c["reason"] == reason && !strings.Contains(fmt.Sprint(c["message"]), otherTenant), fmt.Sprint(c)
	})
}

// deleteCluster deletes an AzureCluster and waits until it is gone.
func deleteCluster(t *testing.T, w *testworld.World, ns, name string) {
	t.Helper()
	ctx := context.Background()
	u, err := w.Get(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, ns+"/"+name+" gone", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, ns, name)
		if err != nil {
			return true, ""
		}
		return false, testworld.Describe(u)
	})
}

// condition is a condition of an object ({} without it).
func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return map[string]any{}
}
