package clusterlink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestWiringCentralDNS: the MC-side names in one shared zone of a hub
// subscription (an Azure landing zone's central DNS), written with the
// hub's own identity, whose principal may touch nothing else. The WC's API
// name resolves from the MC's network, and every request on the hub zone
// is the hub principal's.
func TestWiringCentralDNS(t *testing.T) {
	const (
		hubSub    = "33333333-3333-3333-3333-333333333333"
		hubRG     = "dns-hub-rg"
		hubClient = "hub-dns-writer"
	)
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	if err := w.Sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: hubSub, Name: hubRG, Location: "westeurope"}}}); err != nil {
		t.Fatal(err)
	}
	w.Sim.AddPrincipal(azuresim.Principal{TenantID: testworld.TenantID, ClientID: hubClient, ClientSecret: "hub-secret", Scopes: []string{"/subscriptions/" + hubSub}})
	if err := w.CreateIdentity(ctx, sandbox.Identity{Namespace: testworld.IdentityNS, Name: "hub-dns", SecretName: "hub-dns-secret", //nolint:gosec // G101: azuresim's test principal
		TenantID: testworld.TenantID, ClientID: hubClient, ClientSecret: "hub-secret"}); err != nil {
		t.Fatal(err)
	}
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1,
			MCZone: "{{.BaseDomain}}", MCRecords: []string{"api.{{.Cluster}}"},
			MCZoneSubscription: hubSub, MCZoneResourceGroup: hubRG, MCZoneIdentity: &capz.ObjectRef{Namespace: testworld.IdentityNS, Name: "hub-dns"}}
	})
	u := wired(t, w, "wc1", true, true)
	dnsReady(t, w, "wc1")
	resolves(t, w, vnetID(mcSub, "mc-rg", "mc-vnet"), "api.wc1."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	if !zoneExists(t, w, hubSub, hubRG, baseDomain) {
		t.Errorf("no zone %s in the hub subscription", baseDomain)
	}
	if zoneExists(t, w, mcSub, "mc-rg", baseDomain) {
		t.Errorf("a zone %s in the management cluster's resource group", baseDomain)
	}
	c := w.Sim.Counters()
	for _, x := range []struct {
		typ  string
		want int
	}{{"Microsoft.Network/privateDnsZones", 1}, {"Microsoft.Network/privateDnsZones/virtualNetworkLinks", 1}, {"Microsoft.Network/privateDnsZones/A", 1}} {
		if n := c.SumFor(hubClient, "PUT", x.typ, 200, 299); n != x.want {
			t.Errorf("the hub principal made %d successful PUTs of %s, want %d (%s)", n, x.typ, x.want, fmt.Sprint(c.Requests))
		}
	}
}

// TestWiringZoneLimit: with a zone per workload cluster, the operator
// warns near Azure's limit of zones per subscription and per linked
// network, and gives a cluster beyond it no zone (a Warning,
// GSDNSZoneReady Unknown with DNSZoneLimit) instead of letting Azure
// refuse it; the clusters within the limit are wired and resolve. The
// count is of the clusters' records: a restarted operator for which the
// clusters holding zones are paused (clusterctl move pauses them all),
// and so never reconciled, still counts their zones.
func TestWiringZoneLimit(t *testing.T) {
	// azuresim links two zones to a network, and refuses a third.
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}},
		Limits:  azuresim.Limits{ZonesPerVirtualNetwork: 2}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21))
	withLimit := func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1, ZoneLimit: 2}
	}
	stop := operator(t, w, withLimit)
	mcVNet := vnetID(mcSub, "mc-rg", "mc-vnet")
	for _, name := range []string{"wc1", "wc2"} {
		u := wired(t, w, name, true, true)
		dnsReady(t, w, name)
		resolves(t, w, mcVNet, "api."+name+"."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	}
	// The warning goes on the cluster whose zone is the second (90 % of
	// two): wc1 or wc2, whichever was admitted last.
	testworld.Eventually(t, testworld.Timeout, "event "+wiringdns.ReasonDNSZoneLimitNear+" on wc1 or wc2", func(ctx context.Context) (bool, string) {
		var seen []string
		for _, name := range []string{"wc1", "wc2"} {
			ok, reasons := w.HasEvent(ctx, types.NamespacedName{Namespace: wcNS, Name: name}, wiringdns.ReasonDNSZoneLimitNear)
			if ok {
				return true, ""
			}
			seen = append(seen, name+": "+strings.Join(reasons, ","))
		}
		return false, strings.Join(seen, "; ")
	})
	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wired(t, w, "wc3", true, true)
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc3"}, wiringdns.ReasonDNSZoneLimit)
	if zoneExists(t, w, mcSub, "mc-rg", "wc3."+baseDomain) {
		t.Error("a zone beyond the limit was created")
	}
	dnsLimited(t, w, "wc3")

	// A restart with wc1 and wc2 paused: the new process never reconciles
	// them, and still counts their zones; wc4, new, gets none either.
	stop()
	for _, name := range []string{"wc1", "wc2"} {
		mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: name}, `{"metadata":{"annotations":{"`+capz.PausedAnnotation+`":""}}}`)
	}
	create(t, w, testenv.SchemaFork, wcCluster("wc4", 23))
	operator(t, w, withLimit)
	wired(t, w, "wc4", true, true)
	dnsLimited(t, w, "wc4")
	for _, name := range []string{"wc3", "wc4"} {
		if zoneExists(t, w, mcSub, "mc-rg", name+"."+baseDomain) {
			t.Errorf("a zone beyond the limit was created for %s", name)
		}
	}
	if n := w.Sim.Counters().Errors["ZonesPerVirtualNetworkLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d links of a zone to the management cluster's network", n)
	}
}

// dnsLimited waits until a WC's GSDNSZoneReady is Unknown with
// DNSZoneLimit.
func dnsLimited(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	dnsWaitsWith(t, w, name, wiringdns.ReasonDNSZoneLimit)
}

// dnsWaitsWith waits until a WC's GSDNSZoneReady is Unknown with reason,
// and returns its message.
func dnsWaitsWith(t *testing.T, w *testworld.World, name, reason string) string {
	t.Helper()
	var msg string
	testworld.Eventually(t, testworld.Timeout, name+"'s GSDNSZoneReady says "+reason, func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		c := condition(u, clusterlink.ConditionGSDNSZoneReady)
		msg = fmt.Sprint(c["message"])
		return c["status"] == "Unknown" && c["reason"] == reason, fmt.Sprint(c)
	})
	return msg
}

// sharedZoneWorld starts a world whose azuresim enforces limits, and the
// operator in DNS mode with every WC's MC-side name in one shared zone
// (with engine, when not nil); it wires wc1 and wc2 and waits until their
// names resolve from the MC's network.
func sharedZoneWorld(t *testing.T, limits azuresim.Limits, engine *dnsengine.Engine) *testworld.World {
	t.Helper()
	w := twoWired(t, limits, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1,
			MCZone: "{{.BaseDomain}}", MCRecords: []string{"api.{{.Cluster}}"}}
		o.DNSEngine = engine
	})
	for _, name := range []string{"wc1", "wc2"} {
		u := wired(t, w, name, true, true)
		dnsReady(t, w, name)
		resolves(t, w, vnetID(mcSub, "mc-rg", "mc-vnet"), "api."+name+"."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	}
	return w
}

// TestWiringSubscriptionZoneLimit: every workload cluster's WC-side zone
// is in the WCs' subscription, which holds two private DNS zones (azuresim
// refuses a third, as Azure does beyond its 1,000; the engine's limit is
// two). The third cluster's WC-side zone is not requested: its
// GSDNSZoneReady is Unknown with DNSZoneLimit, naming the zone and the
// subscription, while its MC-side name (a shared zone) resolves.
func TestWiringSubscriptionZoneLimit(t *testing.T) {
	w := sharedZoneWorld(t, azuresim.Limits{PrivateDNSZonesPerSubscription: 2}, &dnsengine.Engine{ZoneLimit: 2, Check: 500e6})
	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	u := wired(t, w, "wc3", true, true)
	if msg := dnsWaitsWith(t, w, "wc3", wiringdns.ReasonDNSZoneLimit); !strings.Contains(msg, wcSub) || !strings.Contains(msg, "2 private DNS zones") {
		t.Errorf("the condition does not name the subscription and the count: %s", msg)
	}
	resolves(t, w, vnetID(mcSub, "mc-rg", "mc-vnet"), "api.wc3."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	if n := w.Sim.Counters().Errors["PrivateDnsZonesPerSubscriptionLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d zones: the limit let them through", n)
	}
}

// TestWiringRecordSetLimit: the MC-side names of every workload cluster
// in one shared zone, which holds three record sets (azuresim refuses a
// fourth, as Azure does beyond its 25,000, the SOA record set included).
// The cluster that takes the last place gets the Warning
// DNSRecordSetLimitNear; the next gets no request Azure would refuse: its
// GSDNSZoneReady is Unknown with DNSRecordSetLimit, naming the record set.
// Once a cluster is deleted and its record released, the waiting one is
// written and resolves.
func TestWiringRecordSetLimit(t *testing.T) {
	w := sharedZoneWorld(t, azuresim.Limits{RecordSetsPerZone: 3}, nil)
	mcVNet := vnetID(mcSub, "mc-rg", "mc-vnet")
	testworld.Eventually(t, testworld.Timeout, "event "+dnsengine.ReasonRecordSetLimitNear+" on wc1 or wc2", func(ctx context.Context) (bool, string) {
		for _, name := range []string{"wc1", "wc2"} {
			if ok, _ := w.HasEvent(ctx, types.NamespacedName{Namespace: wcNS, Name: name}, dnsengine.ReasonRecordSetLimitNear); ok {
				return true, ""
			}
		}
		return false, "none"
	})

	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	u := wired(t, w, "wc3", true, true)
	if msg := dnsWaitsWith(t, w, "wc3", wiringdns.ReasonDNSRecordSetLimit); !strings.Contains(msg, "api.wc3."+baseDomain) || !strings.Contains(msg, "3 record sets") {
		t.Errorf("the condition does not name the record set and the count: %s", msg)
	}
	if r := w.Sim.Resolve(mcVNet, "api.wc3."+baseDomain); r.Status == azuresim.ResolveOK {
		t.Errorf("api.wc3 resolves beyond the zone's limit: %+v", r)
	}
	if n := w.Sim.Counters().Errors["RecordSetsPerZoneLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d record sets: the limit let them through", n)
	}

	deleteCluster(t, w, wcNS, "wc1")
	dnsReady(t, w, "wc3")
	resolves(t, w, mcVNet, "api.wc3."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	if n := w.Sim.Counters().Errors["RecordSetsPerZoneLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d record sets", n)
	}
}

// TestDNSNeverHoldsTheWiring: DNS mode is a controller of its own. With
// every Private DNS request hanging (a zone service that does not answer),
// one wiring worker still wires every workload cluster — endpoints,
// annotations, GSPrivateLinksReady — and once Private DNS answers again
// the DNS controller catches up on what the wiring published. When the
// wiring wrote DNS itself, each cluster's pass waited for Private DNS
// (three tries of 30 s) after its annotations, and the clusters behind it
// in the queue waited too.
func TestDNSNeverHoldsTheWiring(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	hang, err := w.Sim.AddFault(azuresim.Fault{PathRegex: `(?i)/providers/Microsoft\.Network/privateDnsZones/`, Latency: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"wc1", "wc2", "wc3", "wc4"}
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster(names[0], 20), wcCluster(names[1], 21), wcCluster(names[2], 22), wcCluster(names[3], 23))
	operator(t, w, func(o *clusterlink.Options) {
		o.MaxConcurrentReconciles = 1
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1}
	})
	for _, name := range names {
		wired(t, w, name, true, true)
	}
	if n := w.Sim.Counters().Faults; len(n) == 0 {
		t.Fatal("no Private DNS request was held: the test shows nothing")
	}
	for _, name := range names {
		if u, err := w.Get(ctx, wcNS, name); err != nil || conditionTrue(u, clusterlink.ConditionGSDNSZoneReady) {
			t.Fatalf("%s: GSDNSZoneReady while Private DNS does not answer (%v)", name, err)
		}
	}
	w.Sim.RemoveFault(hang)
	for _, name := range names {
		dnsReady(t, w, name)
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			t.Fatal(err)
		}
		resolves(t, w, vnetID(mcSub, "mc-rg", "mc-vnet"), "api."+name+"."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
	}
}
