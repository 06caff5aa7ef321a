package clusterlink

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func prefixed(name string) string { return DefaultAnnotationPrefix + "/" + name }

// TestDNSHeld: what DNS mode records on a cluster, read back. Unknown
// holds every step back; a heal waits until the records no longer hold the
// endpoint's address, a switch until they hold the new one. A cluster
// without the record had no DNS unless its GSDNSZoneReady says otherwise
// (an operator from before the record).
func TestDNSHeld(t *testing.T) {
	for _, c := range []struct {
		name        string
		annotation  *string
		condition   bool
		ip          string
		heal, holds bool
		caughtUp    bool
		mayHold     bool
	}{
		{name: "never recorded, never ready: nothing", ip: "10.0.0.4", heal: true, holds: true, caughtUp: true},
		{name: "never recorded but ready once: unknown", condition: true, ip: "10.0.0.4", mayHold: false},
		{name: "still holds the broken endpoint's address", annotation: new("mc=10.0.0.4,wc=-"), ip: "10.0.0.4", holds: true, caughtUp: true, mayHold: true},
		{name: "records removed", annotation: new("mc=,wc=-"), ip: "10.0.0.4", heal: true, caughtUp: true},
		{name: "records hold the next endpoint's address", annotation: new("mc=10.0.0.5,wc=-"), ip: "10.0.0.4", heal: true, mayHold: true},
		{name: "no records on that side", annotation: new("mc=-,wc=-"), ip: "10.0.0.4", heal: true, holds: true, caughtUp: true},
		{name: "a write under way", annotation: new("mc=?,wc=-"), ip: "10.0.0.4", mayHold: true},
		{name: "moving from the broken endpoint's address to the next", annotation: new("mc=10.0.0.4|10.0.0.5,wc=-"), ip: "10.0.0.4", mayHold: true},
		{name: "moving: neither address is known to be the only one", annotation: new("mc=10.0.0.4|10.0.0.5,wc=-"), ip: "10.0.0.5", mayHold: true},
		{name: "moving: a third address may go", annotation: new("mc=10.0.0.4|10.0.0.5,wc=-"), ip: "10.0.0.6", heal: true, mayHold: true},
		{name: "an address unknown to the wiring", annotation: new("mc=10.0.0.5,wc=-"), ip: "", mayHold: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := DNSHeldOf(heldCluster(c.annotation, c.condition), (&Options{AnnotationPrefix: DefaultAnnotationPrefix}).Annotation)
			got := [4]bool{h.allowsDelete(DirectionMCToWC, c.ip), h.holds(DirectionMCToWC, c.ip), h.caughtUp(c.ip), h.MayHold()}
			if want := [4]bool{c.heal, c.holds, c.caughtUp, c.mayHold}; got != want {
				t.Errorf("allowsDelete, holds, caughtUp, mayHold = %v, want %v", got, want)
			}
			if c.annotation != nil && *c.annotation != "" && h.String() != *c.annotation {
				t.Errorf("String() = %q, want %q back", h.String(), *c.annotation)
			}
		})
	}
	if h := parseDNSHeld("mc=,wc=,released"); !h.Released || h.String() != "mc=,wc=,released" {
		t.Errorf("released: %+v %q", h, h.String())
	}
}

// TestDNSPass: what a pass records before writing Azure and after. A side
// that gains an address from none says so before (one write, none after);
// one that moves says either address until the write is done; one that
// loses its address keeps saying it until it is gone; a failed write
// leaves what before said.
func TestDNSPass(t *testing.T) {
	set := func(side DNSSide, ip string) DNSWrite { return DNSWrite{Side: side, IP: ip} }
	for _, c := range []struct {
		reason, held  string
		sets          []DNSWrite
		ok            bool
		before, after string
	}{
		{"first address", "mc=-,wc=-", []DNSWrite{set(DNSSideMC, "10.0.0.4"), set(DNSSideWC, "10.1.0.4")}, true, "mc=10.0.0.4,wc=10.1.0.4", "mc=10.0.0.4,wc=10.1.0.4"},
		{"a move", "mc=10.0.0.4,wc=10.1.0.4", []DNSWrite{set(DNSSideMC, "10.0.0.5"), set(DNSSideWC, "10.1.0.4")}, true, "mc=10.0.0.4|10.0.0.5,wc=10.1.0.4", "mc=10.0.0.5,wc=10.1.0.4"},
		{"a move that failed", "mc=10.0.0.4,wc=10.1.0.4", []DNSWrite{set(DNSSideMC, "10.0.0.5"), set(DNSSideWC, "10.1.0.4")}, false, "mc=10.0.0.4|10.0.0.5,wc=10.1.0.4", "mc=10.0.0.4|10.0.0.5,wc=10.1.0.4"},
		{"a removal", "mc=10.0.0.4,wc=-", []DNSWrite{set(DNSSideMC, "")}, true, "mc=10.0.0.4,wc=-", "mc=,wc=-"},
		{"not approved yet: skipped", "mc=-,wc=-", []DNSWrite{set(DNSSideMC, "")}, true, "mc=-,wc=-", "mc=-,wc=-"},
		{"unknown stays unknown until written", "mc=?,wc=-", []DNSWrite{set(DNSSideMC, "10.0.0.4")}, false, "mc=?,wc=-", "mc=?,wc=-"},
		{"a side without a set that may hold an address keeps saying so", "mc=10.0.0.4,wc=-", nil, true, "mc=10.0.0.4,wc=-", "mc=10.0.0.4,wc=-"},
		{"the MC side's own zone is kept while its records go", "mc=10.0.0.4,wc=-,mczone=own", []DNSWrite{set(DNSSideMC, "")}, true, "mc=10.0.0.4,wc=-,mczone=own", "mc=,wc=-,mczone=own"},
		{"an unknown zone token is dropped", "mc=-,wc=-,mczone=maybe", nil, true, "mc=-,wc=-", "mc=-,wc=-"},
	} {
		p := NewDNSPass(parseDNSHeld(c.held), c.sets)
		if p.before.String() != c.before {
			t.Errorf("%s: before = %q, want %q", c.reason, p.before.String(), c.before)
		}
		for _, s := range c.sets {
			if p.Skip(s) {
				p.Skipped(s)
				continue
			}
			p.Done(s, c.ok)
		}
		if p.after.String() != c.after {
			t.Errorf("%s: after = %q, want %q", c.reason, p.after.String(), c.after)
		}
	}
	// OwnMCZone is recorded before Azure is written, and after.
	p := NewDNSPass(parseDNSHeld("mc=-,wc=-"), []DNSWrite{set(DNSSideMC, "10.0.0.4")})
	p.OwnMCZone()
	if got, want := p.Before().String(), "mc=10.0.0.4,wc=-,mczone=own"; got != want {
		t.Errorf("before with the zone = %q, want %q", got, want)
	}
	p.Done(set(DNSSideMC, "10.0.0.4"), true)
	if got, want := p.After().String(), "mc=10.0.0.4,wc=-,mczone=own"; got != want {
		t.Errorf("after with the zone = %q, want %q", got, want)
	}
}

// heldCluster is a WC with the DNS state annotation (nil: none) and,
// when ready, GSDNSZoneReady True.
func heldCluster(annotation *string, ready bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if annotation != nil {
		u.SetAnnotations(map[string]string{prefixed(AnnotationPrivateDNS): *annotation})
	}
	if ready {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": ConditionGSDNSZoneReady, "status": "True"}}, "status", "conditions")
	}
	return u
}

// TestPublishingOf: which of a WC's MC entries stay although DesiredMC
// drops them, because an address the cluster publishes may be theirs.
func TestPublishingOf(t *testing.T) {
	dnsOn := Options{AnnotationPrefix: DefaultAnnotationPrefix}
	dnsOn.DNS.Enabled = true
	dnsOff := Options{AnnotationPrefix: DefaultAnnotationPrefix}
	for _, c := range []struct {
		name        string
		opts        Options
		finalizer   bool
		deleting    bool
		annotations map[string]string
		want        *Publishing // Cluster is filled in
	}{
		{name: "never wired", opts: dnsOn, annotations: map[string]string{prefixed(AnnotationAPIServerIP): "10.0.0.4"}},
		{name: "publishes nothing", opts: dnsOff, finalizer: true},
		{name: "publishes one entry", opts: dnsOff, finalizer: true, annotations: map[string]string{
			prefixed(AnnotationAPIServerIP): "10.0.0.4", prefixed(AnnotationAPIServerEndpoint): "wc1-api-privatelink-privateendpoint"},
			want: &Publishing{Entry: "wc1-api-privatelink-privateendpoint"}},
		{name: "an annotation from before the entry's name: every entry", opts: dnsOff, finalizer: true, annotations: map[string]string{
			prefixed(AnnotationAPIServerIP): "10.0.0.4"}, want: &Publishing{All: true}},
		{name: "DNS not caught up with the annotation: every entry", opts: dnsOn, finalizer: true, annotations: map[string]string{
			prefixed(AnnotationPrivateDNS): "mc=10.0.0.4,wc=-"}, want: &Publishing{All: true}},
		{name: "DNS caught up, nothing published", opts: dnsOn, finalizer: true, annotations: map[string]string{
			prefixed(AnnotationPrivateDNS): "mc=,wc=-"}},
		{name: "deleted, DNS not released: every entry", opts: dnsOn, finalizer: true, deleting: true, annotations: map[string]string{
			prefixed(AnnotationAPIServerIP): "10.0.0.4", prefixed(AnnotationPrivateDNS): "mc=10.0.0.4,wc=-"}, want: &Publishing{All: true}},
		{name: "deleted, DNS released: its annotations go with it", opts: dnsOn, finalizer: true, deleting: true, annotations: map[string]string{
			prefixed(AnnotationAPIServerIP): "10.0.0.4", prefixed(AnnotationPrivateDNS): "mc=,wc=,released"}},
		{name: "deleted without DNS mode", opts: dnsOff, finalizer: true, deleting: true, annotations: map[string]string{
			prefixed(AnnotationAPIServerIP): "10.0.0.4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetAnnotations(c.annotations)
			if c.finalizer {
				u.SetFinalizers([]string{Finalizer})
			}
			view := &capz.AzureCluster{Name: "wc1", Namespace: "org-a", SubscriptionID: "sub", ResourceGroup: "wc1", Deleting: c.deleting}
			got := publishingOf(u, view, c.opts)
			if (got == nil) != (c.want == nil) {
				t.Fatalf("publishingOf = %+v, want %+v", got, c.want)
			}
			if got != nil && (got.All != c.want.All || got.Entry != c.want.Entry || got.Cluster != view) {
				t.Errorf("publishingOf = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestCarryPublished: the entries a publishing cluster may hold stay; an
// entry of another cluster, or one the cluster no longer publishes, does
// not; want is never overridden.
func TestCarryPublished(t *testing.T) {
	entry := func(name, rg string) capz.PrivateEndpoint {
		return capz.PrivateEndpoint{Name: name, Connections: []capz.PrivateLinkServiceConnection{{
			PrivateLinkServiceID: PrivateLinkServiceID("sub", rg, name[:len(name)-len("-privateendpoint")])}}}
	}
	current := map[string][]capz.PrivateEndpoint{"nodes": {
		entry("a-privateendpoint", "wc1"), entry("b-privateendpoint", "wc1"), entry("c-privateendpoint", "wc2"),
	}}
	wc1 := &capz.AzureCluster{SubscriptionID: "sub", ResourceGroup: "wc1"}
	for _, c := range []struct {
		name string
		pubs []Publishing
		want []string
	}{
		{name: "nothing published", want: nil},
		{name: "one entry published", pubs: []Publishing{{Cluster: wc1, Entry: "b-privateendpoint"}}, want: []string{"b-privateendpoint"}},
		{name: "every entry of the cluster", pubs: []Publishing{{Cluster: wc1, All: true}}, want: []string{"a-privateendpoint", "b-privateendpoint"}},
		{name: "another cluster's entry of that name is not carried", pubs: []Publishing{{Cluster: wc1, Entry: "c-privateendpoint"}}, want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CarryPublished(map[string][]capz.PrivateEndpoint{}, current, c.pubs)
			var names []string
			for _, ep := range got["nodes"] {
				names = append(names, ep.Name)
			}
			if len(names) != len(c.want) {
				t.Fatalf("carried %v, want %v", names, c.want)
			}
			for i := range names {
				if names[i] != c.want[i] {
					t.Errorf("carried %v, want %v", names, c.want)
				}
			}
		})
	}
	want := map[string][]capz.PrivateEndpoint{"nodes": {entry("a-privateendpoint", "wc3")}}
	got := CarryPublished(want, current, []Publishing{{Cluster: wc1, All: true}})
	if len(got["nodes"]) != 2 || got["nodes"][0].Connections[0].PrivateLinkServiceID != want["nodes"][0].Connections[0].PrivateLinkServiceID {
		t.Errorf("want's entry of that name was overridden: %+v", got)
	}
}

// TestWhyWaiting: GSPrivateLinksReady's reason is what keeps the cluster
// from being planned, else the first endpoint's wait; a new cluster that
// only waits for CAPZ gets no condition (a status write per cluster for a
// wait that ends by itself), one that had the condition always gets the
// current reason; a read the request budget held back changes nothing in
// a cluster that has the condition, and is the reason of one that has
// none yet.
func TestWhyWaiting(t *testing.T) {
	had := &unstructured.Unstructured{Object: map[string]any{}}
	_ = unstructured.SetNestedSlice(had.Object, []any{map[string]any{"type": ConditionGSPrivateLinksReady, "status": "True"}}, "status", "conditions")
	fresh := &unstructured.Unstructured{Object: map[string]any{}}
	conflict := []Problem{{Reason: ReasonNameConflict, Message: "held"}}
	for _, c := range []struct {
		reason   string
		u        *unstructured.Unstructured
		problems []Problem
		o        observation
		wired    int
		want     string
	}{
		{"a name conflict, first time", fresh, conflict, observation{}, 0, ReasonNameConflict},
		{"a problem comes before an endpoint's wait", fresh, conflict, observation{waitReason: ReasonEndpointPending}, 1, ReasonNameConflict},
		{"pending approval, first time", fresh, nil, observation{waitReason: ReasonEndpointPending}, 1, ReasonEndpointPending},
		{"only CAPZ's progress, first time: nothing", fresh, nil, observation{waitReason: ReasonEndpointProvisioning}, 1, ""},
		{"links not ready, first time: nothing", fresh, []Problem{{Reason: ReasonWaitingForPrivateLinks}}, observation{}, 0, ""},
		{"CAPZ's progress after the condition existed", had, nil, observation{waitReason: ReasonEndpointProvisioning}, 1, ReasonEndpointProvisioning},
		{"nothing to wire any more", had, nil, observation{}, 0, ReasonNothingToWire},
		{"nothing to wire, never had it", fresh, nil, observation{}, 0, ""},
		{"a limit that kept an endpoint back comes before another problem", fresh,
			[]Problem{{Reason: ReasonSubscriptionNotAllowed}, {Reason: ReasonServiceLimit}}, observation{}, 1, ReasonServiceLimit},
		{"the MC's limit, the other endpoints ready", had, []Problem{{Reason: ReasonEndpointLimit}}, observation{ready: true}, 1, ReasonEndpointLimit},
		{"no link allows the MC's subscription, the endpoint to the MC's ingress ready", had, []Problem{{Reason: ReasonSubscriptionNotAllowed}}, observation{ready: true}, 1, ReasonSubscriptionNotAllowed},
		{"a read held back by the request budget: the condition stays as it was", had, nil, observation{throttled: true}, 2, ""},
		{"held back, but the other direction's endpoint waits for approval", had, nil, observation{throttled: true, waitReason: ReasonEndpointPending}, 2, ReasonEndpointPending},
		{"held back, and a limit kept an endpoint back", had, []Problem{{Reason: ReasonEndpointLimit}}, observation{throttled: true}, 2, ReasonEndpointLimit},
		{"held back, first time: why it waits", fresh, nil, observation{throttled: true, throttledMessage: "budget"}, 2, ReasonAzureReadsPaced},
		{"held back, first time, and the other direction's endpoint waits for approval", fresh, nil,
			observation{throttled: true, waitReason: ReasonEndpointPending}, 2, ReasonEndpointPending},
	} {
		if got, _ := whyWaiting(c.u, c.problems, c.o, c.wired); got != c.want {
			t.Errorf("%s: reason %q, want %q", c.reason, got, c.want)
		}
	}
}

// TestHeldBack: a cluster with an endpoint kept back by a limit, or a
// private cluster whose links give the MC no endpoint (none allows its
// subscription, or each name is held by someone else), is not ready; one
// link refused among others wired, a public cluster, or a problem of
// another kind leave GSPrivateLinksReady as it was.
func TestHeldBack(t *testing.T) {
	private, public := wc("wc1"), wc("wc1", func(a *capz.AzureCluster) { a.APIServerLBType = capz.LBTypePublic; a.PrivateLinks = nil })
	one := []Endpoint{mcEndpoint(false)}
	for _, c := range []struct {
		reason   string
		wc       *capz.AzureCluster
		problems []Problem
		toWC     []Endpoint
		want     bool
	}{
		{"no link allows the MC's subscription", private, []Problem{{Reason: ReasonSubscriptionNotAllowed}}, nil, true},
		{"the only name is held for another cluster", private, []Problem{{Reason: ReasonNameConflict}}, nil, true},
		{"the only name belongs to another field manager", private, []Problem{{Reason: ReasonPrivateEndpointNameTaken}}, nil, true},
		{"one link refused, another wired", private, []Problem{{Reason: ReasonSubscriptionNotAllowed}}, one, false},
		{"links not ready yet", private, []Problem{{Reason: ReasonWaitingForPrivateLinks}}, nil, false},
		{"a public cluster", public, []Problem{{Reason: ReasonPrivateEndpointNameTaken}}, nil, false},
		{"the MC's limit kept one endpoint back, another wired", private, []Problem{{Reason: ReasonEndpointLimit}}, one, true},
		{"a full MC service kept the endpoint to the MC back", public, []Problem{{Reason: ReasonServiceLimit}}, nil, true},
	} {
		if got := heldBack(c.wc, c.problems, c.toWC); got != c.want {
			t.Errorf("%s: %v, want %v", c.reason, got, c.want)
		}
	}
}
