package clusterlink_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const baseDomain = "example.internal"

func vnetID(sub, rg, name string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/" + name
}

// TestWiringDNS runs the DNS mode: the WC's API name resolves from the MC's
// network to the MC-side endpoint, the MC's ingress names from the WC's
// network to the WC-side endpoint, and neither from elsewhere; a record
// set someone else wrote is left byte for byte and reported; a deleted WC
// takes its records and zones along; with the mode turned off, records
// stay with whoever owns them.
func TestWiringDNS(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	mcVNet := vnetID(mcSub, "mc-rg", "mc-vnet")
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21), wcCluster("wc3", 22), wcCluster("wc4", 23))

	// Someone else's record in wc2's zone, before the operator starts (once
	// CAPZ has made the MC's resource group).
	zones := w.DNS(t, mcSub)
	testworld.Eventually(t, testworld.Timeout, "someone else's zone wc2."+baseDomain, func(ctx context.Context) (bool, string) {
		poller, err := zones.NewPrivateZonesClient().BeginCreateOrUpdate(ctx, "mc-rg", "wc2."+baseDomain, armprivatedns.PrivateZone{Location: new("global")}, nil)
		if err != nil {
			return false, err.Error()
		}
		_, err = poller.PollUntilDone(ctx, nil)
		return err == nil, fmt.Sprint(err)
	})
	foreign := armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new("192.0.2.1")}}}}
	if _, err := zones.NewRecordSetsClient().CreateOrUpdate(ctx, "mc-rg", "wc2."+baseDomain, armprivatedns.RecordTypeA, "api", foreign, nil); err != nil {
		t.Fatal(err)
	}

	// Owner values of earlier versions ("<ns>/<name>", no kind): wc1's is
	// taken over; wc4's is not, since an AzurePrivateEndpoint org-a/wc4
	// exists and could have written it.
	legacy := func(zone, owner, ip string) {
		t.Helper()
		testworld.Eventually(t, testworld.Timeout, "zone "+zone, func(ctx context.Context) (bool, string) {
			poller, err := zones.NewPrivateZonesClient().BeginCreateOrUpdate(ctx, "mc-rg", zone, armprivatedns.PrivateZone{Location: new("global")}, nil)
			if err != nil {
				return false, err.Error()
			}
			_, err = poller.PollUntilDone(ctx, nil)
			return err == nil, fmt.Sprint(err)
		})
		if _, err := zones.NewRecordSetsClient().CreateOrUpdate(ctx, "mc-rg", zone, armprivatedns.RecordTypeA, "api", armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{
			TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new(ip)}}, Metadata: map[string]*string{dns.OwnerMetadata: new(owner)}}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	legacy("wc1."+baseDomain, wcNS+"/wc1", "192.0.2.9")
	legacy("wc4."+baseDomain, wcNS+"/wc4", "192.0.2.4")
	if err := w.Client.Create(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: wcNS, Name: "wc4"}, Spec: v1alpha1.AzurePrivateEndpointSpec{
		SubscriptionID: wcSub, ResourceGroup: "wc4-rg", Location: "westeurope", SubnetID: vnetID(wcSub, "wc4-rg", "wc4-vnet") + "/subnets/wc4-nodes",
		IdentityRef:          &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS},
		PrivateLinkServiceID: clusterlink.PrivateLinkServiceID(mcSub, "mc-rg", "mc-ingress-privatelink"),
	}}); err != nil {
		t.Fatal(err)
	}

	stop := operator(t, w, func(o *clusterlink.Options) {
		// A check every 500 ms for five clusters is far beyond the default
		// Private DNS budget, which would only slow the test down.
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1}
	})
	for _, name := range []string{"wc1", "wc3"} {
		u := wired(t, w, name, true, true)
		dnsReady(t, w, name)
		wcVNet := vnetID(wcSub, name+"-rg", name+"-vnet")
		resolves(t, w, mcVNet, "api."+name+"."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[apiAnn])
		resolves(t, w, wcVNet, "grafana.mc."+baseDomain, azuresim.ResolveOK, u.GetAnnotations()[ingAnn])
		resolves(t, w, wcVNet, "api."+name+"."+baseDomain, azuresim.ResolveNotPrivate, "")
		resolves(t, w, mcVNet, "grafana.mc."+baseDomain, azuresim.ResolveNotPrivate, "")
	}
	if got := recordOwnerOf(t, zones, "wc1."+baseDomain); got != dns.KindAzureCluster+":"+wcNS+"/wc1" {
		t.Errorf("wc1's record carries owner %q after the take-over", got)
	}
	wired(t, w, "wc4", true, true)
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc4"}, wiringdns.ReasonDNSRecordNotOwned)
	resolves(t, w, mcVNet, "api.wc4."+baseDomain, azuresim.ResolveOK, "192.0.2.4")
	if got := recordOwnerOf(t, zones, "wc4."+baseDomain); got != wcNS+"/wc4" {
		t.Errorf("the record an AzurePrivateEndpoint of wc4's name may have written carries owner %q", got)
	}
	wired(t, w, "wc2", true, true)
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"}, wiringdns.ReasonDNSRecordNotOwned)
	resolves(t, w, mcVNet, "api.wc2."+baseDomain, azuresim.ResolveOK, "192.0.2.1")
	rs, err := zones.NewRecordSetsClient().Get(ctx, "mc-rg", "wc2."+baseDomain, armprivatedns.RecordTypeA, "api", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := dns.RecordOwner(&rs.RecordSet); got != "" || *rs.Properties.TTL != 60 || len(rs.Properties.ARecords) != 1 {
		t.Errorf("the foreign record set was changed: owner %q, TTL %d, %d records", got, *rs.Properties.TTL, len(rs.Properties.ARecords))
	}
	if u, _ := w.Get(ctx, wcNS, "wc2"); conditionTrue(u, clusterlink.ConditionGSDNSZoneReady) {
		t.Error("wc2 has GSDNSZoneReady while its API name is someone else's")
	}

	// A deleted WC takes its records, links and zones along.
	u, _ := w.Get(ctx, wcNS, "wc3")
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc3 released and its zones gone", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, wcNS, "wc3")
		mcZone := zoneExists(t, w, mcSub, "mc-rg", "wc3."+baseDomain)
		wcZone := zoneExists(t, w, wcSub, "wc3-rg", "mc."+baseDomain)
		return err != nil && !mcZone && !wcZone, fmt.Sprintf("wc3 get: %v, MC-side zone %v, WC-side zone %v", err, mcZone, wcZone)
	})
	resolves(t, w, mcVNet, "api.wc3."+baseDomain, azuresim.ResolveNotPrivate, "")

	// The mode off: the operator leaves DNS alone, even when a WC goes.
	stop()
	operator(t, w)
	ip := wired(t, w, "wc1", true, true).GetAnnotations()[apiAnn]
	u, _ = w.Get(ctx, wcNS, "wc1")
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1 released", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, wcNS, "wc1")
		return err != nil, fmt.Sprint(err)
	})
	resolves(t, w, mcVNet, "api.wc1."+baseDomain, azuresim.ResolveOK, ip)
}

func dnsReady(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+" GSDNSZoneReady", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		return conditionTrue(u, clusterlink.ConditionGSDNSZoneReady), testworld.Describe(u)
	})
}

func resolves(t *testing.T, w *testworld.World, vnet, name, status, ip string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%s from %s: %s %s", name, vnet, status, ip), func(context.Context) (bool, string) {
		r := w.Sim.Resolve(vnet, name)
		return r.Status == status && (ip == "" || len(r.Addresses) == 1 && r.Addresses[0] == ip), fmt.Sprintf("%+v", r)
	})
}

func zoneExists(t *testing.T, w *testworld.World, sub, rg, zone string) bool {
	t.Helper()
	_, err := w.DNS(t, sub).NewPrivateZonesClient().Get(context.Background(), rg, zone, nil)
	return err == nil
}

// TestWiringDNSSharedResourceGroup: two WCs in one resource group have one
// WC-side zone, and one record cannot hold both endpoints' addresses. The
// first keeps the names; the second is refused up front with an Event
// naming the first and writes nothing (which cluster comes first is
// TestWCSideConflict's).
func TestWiringDNSSharedResourceGroup(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	shared := func(c testworld.Cluster) testworld.Cluster {
		c.ResourceGroup = "shared-rg"
		return c
	}
	create(t, w, testenv.SchemaFork, mcCluster(true), shared(wcCluster("wc1", 20)))
	create(t, w, testenv.SchemaFork, shared(wcCluster("wc2", 21)))
	operator(t, w, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6}
		o.TerminalRecheck = time.Second
	})
	ip1 := wired(t, w, "wc1", true, true).GetAnnotations()[ingAnn]
	dnsReady(t, w, "wc1")
	wired(t, w, "wc2", true, true)
	key2 := types.NamespacedName{Namespace: wcNS, Name: "wc2"}
	waitEvent(t, w, key2, wiringdns.ReasonDNSRecordConflict)
	vnet1, vnet2 := vnetID(wcSub, "shared-rg", "wc1-vnet"), vnetID(wcSub, "shared-rg", "wc2-vnet")
	resolves(t, w, vnet1, "grafana.mc."+baseDomain, azuresim.ResolveOK, ip1)
	resolves(t, w, vnet2, "grafana.mc."+baseDomain, azuresim.ResolveNotPrivate, "")
	if ok, _ := w.HasEvent(ctx, key2, wiringdns.ReasonDNSRecordNotOwned); ok {
		t.Error("wc2 tried to write wc1's record set")
	}
}

func recordOwnerOf(t *testing.T, zones *armprivatedns.ClientFactory, zone string) string {
	t.Helper()
	rs, err := zones.NewRecordSetsClient().Get(context.Background(), "mc-rg", zone, armprivatedns.RecordTypeA, "api", nil)
	if err != nil {
		t.Fatal(err)
	}
	return dns.RecordOwner(&rs.RecordSet)
}
