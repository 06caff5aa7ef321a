package privateendpoint_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// linksPerZoneExceeded is azuresim's code beyond its links per zone (the
// emulator's own: internal/azuresim/limits.go).
const linksPerZoneExceeded = "VirtualNetworkLinksPerZoneLimitExceeded"

// recordSetsPerZoneExceeded is azuresim's code beyond its record sets per
// zone.
const recordSetsPerZoneExceeded = "RecordSetsPerZoneLimitExceeded"

// zonesPerSubscriptionExceeded is azuresim's code beyond its private DNS
// zones per subscription.
const zonesPerSubscriptionExceeded = "PrivateDnsZonesPerSubscriptionLimitExceeded"

// TestZoneLinkLimit: a shared zone takes one link (azuresim refuses a
// second, as Azure does beyond its 1,000) and the operator's limit is one.
// The first object links the zone to its network and gets the Warning
// PrivateDNSZoneLinkLimitNear; an object that needs another network says
// PrivateDNSZoneLinkLimit on DNSReady and Azure is never sent the link it
// would refuse, while its endpoint is made; an object in the linked
// network uses the link there. Once the objects of the first network are
// gone, and their link with them, the waiting object's network is linked.
func TestZoneLinkLimit(t *testing.T) {
	w, svc, _ := limitedWorld(t, privateendpoint.Options{ZoneLinkLimit: 1, TerminalRecheck: 2 * time.Second},
		azuresim.Limits{VirtualNetworkLinksPerZone: 1})
	ctx := context.Background()
	shared := func(name string, nets ...string) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "links.internal", ZoneMode: v1alpha1.ZoneModeShared, Records: []string{"api." + name}, VirtualNetworkLinks: nets}
		return o
	}
	create(t, w, shared("first"))
	ready(t, w, "first")
	hasEvent(t, w, "first", privateendpoint.ReasonZoneLinkLimitNear)

	create(t, w, shared("elsewhere", pVNet))
	got := waitCondition(t, w, "elsewhere", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonZoneLinkLimit)
	if msg := message(got, v1alpha1.ConditionDNSReady); !strings.Contains(msg, "p-vnet") || !strings.Contains(msg, "1 links") {
		t.Errorf("the condition does not say which network and how many links: %s", msg)
	}
	hasEvent(t, w, "elsewhere", privateendpoint.ReasonZoneLinkLimit)
	waitCondition(t, w, "elsewhere", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionTrue, "")

	create(t, w, shared("beside"))
	ready(t, w, "beside")
	if n := w.Sim.Counters().Errors[linksPerZoneExceeded]; n != 0 {
		t.Errorf("Azure refused %d links: the limit let them through", n)
	}
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "/privateDnsZones/links.internal/"); len(links) != 1 {
		t.Errorf("the zone's links: %v, want the first network's only", links)
	}

	for _, name := range []string{"first", "beside"} {
		if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, w, name)
	}
	waitCondition(t, w, "elsewhere", v1alpha1.ConditionDNSReady, metav1.ConditionTrue, "")
	resolves(t, w, pVNet, "api.elsewhere.links.internal", azuresim.ResolveOK, endpoint(w, "elsewhere").IP)
}

// zonesPerNetworkExceeded is azuresim's code beyond its private DNS zones
// linked to one network.
const zonesPerNetworkExceeded = "ZonesPerVirtualNetworkLimitExceeded"

// TestNetworkZoneLimit: the consumer network takes one linked zone
// (azuresim refuses a second, as Azure does beyond its 1,000) and the
// operator's limit is one. The first object links its shared zone to the
// network and gets the Warning PrivateDNSNetworkZoneLimitNear; an object
// with a zone of its own in that network says PrivateDNSNetworkZoneLimit
// on DNSReady (its endpoint is made) and Azure is never sent the link it
// would refuse; an object on the linked zone uses the link there. Once the
// shared zone's objects are gone, and its link with them, the waiting
// object's zone is linked.
func TestNetworkZoneLimit(t *testing.T) {
	w, svc, _ := limitedWorld(t, privateendpoint.Options{NetworkZoneLimit: 1, TerminalRecheck: 2 * time.Second},
		azuresim.Limits{ZonesPerVirtualNetwork: 1})
	ctx := context.Background()
	withZone := func(name, zone string, mode v1alpha1.ZoneMode) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: zone, ZoneMode: mode, Records: []string{"api." + name}}
		return o
	}
	create(t, w, withZone("first", "net.internal", v1alpha1.ZoneModeShared))
	ready(t, w, "first")
	hasEvent(t, w, "first", privateendpoint.ReasonNetworkZoneLimitNear)

	create(t, w, withZone("own", "own.internal", v1alpha1.ZoneModeOwned))
	got := waitCondition(t, w, "own", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonNetworkZoneLimit)
	if msg := message(got, v1alpha1.ConditionDNSReady); !strings.Contains(msg, "c-vnet") || !strings.Contains(msg, "linked to 1 private DNS zones") {
		t.Errorf("the condition does not say which network and how many zones: %s", msg)
	}
	hasEvent(t, w, "own", privateendpoint.ReasonNetworkZoneLimit)
	waitCondition(t, w, "own", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionTrue, "")

	create(t, w, withZone("beside", "net.internal", v1alpha1.ZoneModeShared))
	ready(t, w, "beside")
	if n := w.Sim.Counters().Errors[zonesPerNetworkExceeded]; n != 0 {
		t.Errorf("Azure refused %d links: the limit let them through", n)
	}
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "/privateDnsZones/own.internal/"); len(links) != 0 {
		t.Errorf("own.internal's links: %v, want none", links)
	}

	for _, name := range []string{"first", "beside"} {
		if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, w, name)
	}
	waitCondition(t, w, "own", v1alpha1.ConditionDNSReady, metav1.ConditionTrue, "")
	resolves(t, w, cVNet, "api.own.own.internal", azuresim.ResolveOK, endpoint(w, "own").IP)
	if n := w.Sim.Counters().Errors[zonesPerNetworkExceeded]; n != 0 {
		t.Errorf("Azure refused %d links", n)
	}
}

// TestRecordSetLimit: a shared zone holds four record sets (azuresim
// refuses a fifth, as Azure does beyond its 25,000, the SOA record set
// included). The second object's first record set takes the last place,
// with the Warning DNSRecordSetLimitNear; its second gets no request
// Azure would refuse: DNSReady False with PrivateDNSRecordSetLimit, the
// name in the message, while the name that got its place resolves. Once
// the first object is gone, and its record sets with it, the second's
// last name is written.
func TestRecordSetLimit(t *testing.T) {
	w, svc, _ := limitedWorld(t, privateendpoint.Options{TerminalRecheck: 2 * time.Second}, azuresim.Limits{RecordSetsPerZone: 4})
	ctx := context.Background()
	shared := func(name string) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "records.internal", ZoneMode: v1alpha1.ZoneModeShared, Records: []string{"api." + name, "*.apps." + name}}
		return o
	}
	create(t, w, shared("first"))
	ready(t, w, "first")
	create(t, w, shared("second"))
	got := waitCondition(t, w, "second", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonRecordSetLimit)
	if msg := message(got, v1alpha1.ConditionDNSReady); !strings.Contains(msg, "*.apps.second.records.internal") || !strings.Contains(msg, "4 record sets") {
		t.Errorf("the condition does not say which name and how many record sets: %s", msg)
	}
	hasEvent(t, w, "second", dnsengine.ReasonRecordSetLimitNear)
	resolves(t, w, cVNet, "api.second.records.internal", azuresim.ResolveOK, endpoint(w, "second").IP)
	if n := w.Sim.Counters().Errors[recordSetsPerZoneExceeded]; n != 0 {
		t.Errorf("Azure refused %d record sets: the limit let them through", n)
	}

	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "first")
	waitCondition(t, w, "second", v1alpha1.ConditionDNSReady, metav1.ConditionTrue, "")
	resolves(t, w, cVNet, "x.apps.second.records.internal", azuresim.ResolveOK, endpoint(w, "second").IP)
	if n := w.Sim.Counters().Errors[recordSetsPerZoneExceeded]; n != 0 {
		t.Errorf("Azure refused %d record sets", n)
	}
}

// TestZoneLimit: the consumer subscription holds two private DNS zones
// (azuresim refuses a third, as Azure does beyond its 1,000) and the
// engine's limit is two. Each object has a zone of its own: the second
// takes the last place, with the Warning DNSZoneLimitNear; the third
// gets no request Azure would refuse: DNSReady False with
// PrivateDNSZoneLimit while its endpoint is made. Once the first object is
// gone, and its zone with it, the third's zone is created.
func TestZoneLimit(t *testing.T) {
	w, svc, _ := limitedWorld(t, privateendpoint.Options{DNSEngine: &dnsengine.Engine{ZoneLimit: 2}, TerminalRecheck: 2 * time.Second},
		azuresim.Limits{PrivateDNSZonesPerSubscription: 2})
	ctx := context.Background()
	create(t, w, ape("one", svc.Status.ResourceID))
	ready(t, w, "one")
	create(t, w, ape("two", svc.Status.ResourceID))
	ready(t, w, "two")
	hasEvent(t, w, "two", dnsengine.ReasonZoneLimitNear)

	create(t, w, ape("three", svc.Status.ResourceID))
	got := waitCondition(t, w, "three", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonZoneLimit)
	if msg := message(got, v1alpha1.ConditionDNSReady); !strings.Contains(msg, "three.hcp.internal") || !strings.Contains(msg, "2 private DNS zones") {
		t.Errorf("the condition does not say which zone and how many: %s", msg)
	}
	waitCondition(t, w, "three", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionTrue, "")
	if n := w.Sim.Counters().Errors[zonesPerSubscriptionExceeded]; n != 0 {
		t.Errorf("Azure refused %d zones: the limit let them through", n)
	}

	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "one")
	ready(t, w, "three")
	resolves(t, w, cVNet, "api.three.hcp.internal", azuresim.ResolveOK, endpoint(w, "three").IP)
	if n := w.Sim.Counters().Errors[zonesPerSubscriptionExceeded]; n != 0 {
		t.Errorf("Azure refused %d zones", n)
	}
}
