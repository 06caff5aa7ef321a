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
)

// linksPerZoneExceeded is azuresim's code beyond its links per zone (the
// emulator's own: internal/azuresim/limits.go).
const linksPerZoneExceeded = "VirtualNetworkLinksPerZoneLimitExceeded"

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
