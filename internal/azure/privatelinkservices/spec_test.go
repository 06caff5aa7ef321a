package privatelinkservices

import (
	"net/netip"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"
)

const (
	feID  = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/loadBalancers/lb/frontendIPConfigurations/fe"
	natID = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nat"
	other = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/other"
)

func desired() Desired {
	return Desired{Name: "pls", Location: "westeurope", FrontendID: feID, NATSubnetID: natID, NATCount: 2,
		Visibility: []string{"a", "b"}, AutoApproval: []string{"a"}, FQDNs: []string{"api.example.com"}, Owner: "ns/pls"}
}

// directConnect makes the desired service a Direct Connect one.
func directConnect(d *Desired) { d.FrontendID, d.DestinationIP = "", "10.0.0.9" }

// observedAs is what Azure returns after a PUT of the body: dynamic
// addresses filled in.
func observedAs(d Desired) *armnetwork.PrivateLinkService {
	b := Body(d, nil)
	for i, c := range b.Properties.IPConfigurations {
		if c.Properties.PrivateIPAddress == nil {
			c.Properties.PrivateIPAddress = new("10.1.0." + string(rune('4'+i)))
		}
	}
	return &b
}

func TestDiff(t *testing.T) {
	cases := []struct {
		reason string
		// base changes the desired service Azure was given.
		base    func(*Desired)
		mutate  func(*armnetwork.PrivateLinkService)
		desired func(*Desired)
		absent  bool
		want    []string
	}{
		{reason: "what Azure returns for our body is up to date"},
		{reason: "nothing observed: create", absent: true, want: []string{"service"}},
		{reason: "visibility compares as a case-insensitive set",
			mutate: func(p *armnetwork.PrivateLinkService) {
				p.Properties.Visibility.Subscriptions = []*string{new("B"), new("a"), new("a")}
			}},
		{reason: "a visibility change is an update",
			desired: func(d *Desired) { d.Visibility = []string{"a"} }, want: []string{"visibility"}},
		{reason: "auto-approval, proxy protocol and FQDNs are ours",
			desired: func(d *Desired) { d.AutoApproval = nil; d.ProxyProtocol = true; d.FQDNs = nil },
			want:    []string{"autoApproval", "enableProxyProtocol", "fqdns"}},
		{reason: "a NAT configuration removed out of band",
			mutate: func(p *armnetwork.PrivateLinkService) {
				p.Properties.IPConfigurations = p.Properties.IPConfigurations[:1]
			},
			want: []string{"natIPConfigurations"}},
		{reason: "a dynamic address Azure chose is not a difference",
			mutate: func(p *armnetwork.PrivateLinkService) {
				p.Properties.IPConfigurations[1].Properties.PrivateIPAddress = new("10.1.0.99")
			}},
		{reason: "a static address that differs is",
			desired: func(d *Desired) { d.NATCount = 2; d.StaticIPs = []string{"10.1.0.4", "10.1.0.20"} },
			want:    []string{"natIPConfigurations"}},
		{reason: "our owner tag missing (adopting): tags",
			mutate: func(p *armnetwork.PrivateLinkService) { delete(p.Tags, OwnerTag) }, want: []string{"tags"}},
		{reason: "other tags are not ours to compare",
			mutate: func(p *armnetwork.PrivateLinkService) { p.Tags["team"] = new("x") }},
		{reason: "a different frontend is reported as such",
			mutate: func(p *armnetwork.PrivateLinkService) {
				p.Properties.LoadBalancerFrontendIPConfigurations[0].ID = new(feID + "2")
			},
			want: []string{"frontend"}},
		{reason: "a Direct Connect service as Azure returns it is up to date",
			base: directConnect},
		{reason: "a Direct Connect service with another destination is bound elsewhere",
			base:   directConnect,
			mutate: func(p *armnetwork.PrivateLinkService) { p.Properties.DestinationIPAddress = new("10.0.0.10") },
			want:   []string{"frontend"}},
		{reason: "a service behind a load balancer is not the Direct Connect one asked for",
			desired: directConnect, want: []string{"frontend"}},
		{reason: "access mode unset in the spec is Default: a Restricted service is opened again",
			mutate: func(p *armnetwork.PrivateLinkService) { p.Properties.AccessMode = new(armnetwork.AccessModeRestricted) }, want: []string{"accessMode"}},
		{reason: "access mode unset in the spec, Azure says Default: the same",
			mutate: func(p *armnetwork.PrivateLinkService) { p.Properties.AccessMode = new(armnetwork.AccessModeDefault) }},
		{reason: "access mode Restricted asked for, Azure reports none (its default)",
			desired: func(d *Desired) { d.AccessMode = "Restricted" }, want: []string{"accessMode"}},
		{reason: "access mode Default asked for and Azure reports none: the same",
			desired: func(d *Desired) { d.AccessMode = "Default" }},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			d := desired()
			if c.base != nil {
				c.base(&d)
			}
			obs := observedAs(d)
			if c.absent {
				obs = nil
			}
			if c.mutate != nil {
				c.mutate(obs)
			}
			if c.desired != nil {
				c.desired(&d)
			}
			if diff := cmp.Diff(c.want, Diff(d, obs)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.reason, diff)
			}
		})
	}
}

func TestBody(t *testing.T) {
	d := desired()
	d.NATCount = 3
	d.StaticIPs = []string{"10.1.0.10"}
	obs := observedAs(desired())
	obs.Tags = map[string]*string{"team": new("x")}
	b := Body(d, obs)
	type cfg struct {
		Name, Method, Address string
		Primary               bool
	}
	var got []cfg
	for _, c := range b.Properties.IPConfigurations {
		got = append(got, cfg{ptr.Deref(c.Name, ""), string(ptr.Deref(c.Properties.PrivateIPAllocationMethod, "")), ptr.Deref(c.Properties.PrivateIPAddress, ""), ptr.Deref(c.Properties.Primary, false)})
	}
	// The primary stays as Azure has it (its static address cannot be
	// set afterwards); the others follow the spec.
	want := []cfg{{"nat-ipconfig-0", "Dynamic", "10.1.0.4", true}, {"nat-ipconfig-1", "Dynamic", "", false}, {"nat-ipconfig-2", "Dynamic", "", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NAT configurations (-want +got):\n%s", diff)
	}
	if !PrimaryLocked(d, obs) {
		t.Error("a static primary address on an existing dynamic primary is locked")
	}
	if ptr.Deref(b.Tags["team"], "") != "x" || ptr.Deref(b.Tags[OwnerTag], "") != "ns/pls" {
		t.Errorf("tags: %v", b.Tags)
	}
	fresh := Body(d, nil)
	if a := ptr.Deref(fresh.Properties.IPConfigurations[0].Properties.PrivateIPAddress, ""); a != "10.1.0.10" {
		t.Errorf("a new service gets the static primary, got %q", a)
	}
	if PrimaryLocked(desired(), obs) {
		t.Error("an unchanged primary is not locked")
	}
	moved := desired()
	moved.NATSubnetID = other
	if !PrimaryLocked(moved, obs) {
		t.Error("moving the primary to another subnet is locked")
	}
	// accessMode: sent when the spec names it, or to take a Restricted
	// service back to Default; otherwise left out, as before.
	if m := fresh.Properties.AccessMode; m != nil {
		t.Errorf("a new service without accessMode in the spec: sent %q", *m)
	}
	restricted := observedAs(desired())
	restricted.Properties.AccessMode = new(armnetwork.AccessModeRestricted)
	if m := ptr.Deref(Body(desired(), restricted).Properties.AccessMode, ""); m != armnetwork.AccessModeDefault {
		t.Errorf("accessMode removed from the spec of a Restricted service: sent %q, want Default", m)
	}
	asked := desired()
	asked.AccessMode = "Restricted"
	if m := ptr.Deref(Body(asked, nil).Properties.AccessMode, ""); m != armnetwork.AccessModeRestricted {
		t.Errorf("accessMode Restricted in the spec: sent %q", m)
	}
}

func TestNATAddressesPrimaryFirst(t *testing.T) {
	p := &armnetwork.PrivateLinkService{Properties: &armnetwork.PrivateLinkServiceProperties{IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{
		{Name: new("b"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{PrivateIPAddress: new("10.0.0.6")}},
		{Name: new("z"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{PrivateIPAddress: new("10.0.0.5"), Primary: new(true)}},
		{Name: new("a"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{PrivateIPAddress: new("10.0.0.7")}},
	}}}
	if diff := cmp.Diff([]string{"10.0.0.5", "10.0.0.7", "10.0.0.6"}, NATAddresses(p, nil)); diff != "" {
		t.Error(diff)
	}
}

// TestNATAddressesDynamic: as Azure answers for dynamic NAT IP
// configurations (no privateIPAddress; the service's network interface
// holds the addresses), the addresses come from the interface, primary
// first; without the interface there are none rather than wrong ones.
func TestNATAddressesDynamic(t *testing.T) {
	p := &armnetwork.PrivateLinkService{Properties: &armnetwork.PrivateLinkServiceProperties{
		IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{
			{Name: new("static"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{PrivateIPAddress: new("10.0.0.9"), PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic)}},
			{Name: new("config"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Primary: new(true), PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodDynamic)}},
		},
		NetworkInterfaces: []*armnetwork.Interface{{ID: new("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/pls.nic.1")}},
	}}
	if !NeedsInterfaces(p) {
		t.Fatal("a dynamic configuration without an address needs the interfaces")
	}
	if diff := cmp.Diff([]string{"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/pls.nic.1"}, InterfaceIDs(p)); diff != "" {
		t.Error(diff)
	}
	nic := &armnetwork.Interface{Properties: &armnetwork.InterfacePropertiesFormat{IPConfigurations: []*armnetwork.InterfaceIPConfiguration{
		{Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{PrivateIPAddress: new("10.0.0.9")}},
		{Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{PrivateIPAddress: new("10.0.0.5"), Primary: new(true)}},
		{Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{}},
	}}}
	if diff := cmp.Diff([]string{"10.0.0.5", "10.0.0.9"}, NATAddresses(p, []*armnetwork.Interface{nic})); diff != "" {
		t.Error(diff)
	}
	if got := NATAddresses(p, nil); len(got) != 0 {
		t.Errorf("without the interface: %v, want none", got)
	}
}

func TestOwnerOf(t *testing.T) {
	for _, c := range []struct {
		reason string
		tags   map[string]*string
		want   Ownership
	}{
		{"no tags: someone else's", nil, Untagged},
		{"our value", map[string]*string{OwnerTag: new("ns/pls")}, Ours},
		{"another object's", map[string]*string{OwnerTag: new("ns/other")}, OtherOwner},
	} {
		if got, _ := OwnerOf(&armnetwork.PrivateLinkService{Tags: c.tags}, "ns/pls"); got != c.want {
			t.Errorf("%s: got %v, want %v", c.reason, got, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	conns := []Connection{
		{Name: "mc", SubscriptionID: "a", State: StatePending},
		{Name: "stranger", SubscriptionID: "x", State: StatePending},
		{Name: "done", SubscriptionID: "a", State: StateApproved},
		{Name: "gone", SubscriptionID: "x", State: StateRejected},
	}
	cases := []struct {
		reason string
		policy Policy
		want   []Decision
	}{
		{"no policy: nothing is decided", Policy{}, nil},
		{"listed subscriptions are approved, others stay pending", Policy{Approve: []string{"A"}},
			[]Decision{{"mc", StateApproved, "approved by azure-private-endpoint-operator: subscription a is allowed"}}},
		{"others rejected, with the given description", Policy{Approve: []string{"a"}, RejectOthers: true, Description: "ask platform team"},
			[]Decision{{"mc", StateApproved, "ask platform team"}, {"stranger", StateRejected, "ask platform team"}}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, Decide(conns, c.policy)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

func TestJudgeRules(t *testing.T) {
	const peA = "/subscriptions/aaa/resourceGroups/team-a/providers/Microsoft.Network/privateEndpoints/"
	conns := []Connection{
		{Name: "one", PrivateEndpointID: peA + "db", SubscriptionID: "aaa", State: StatePending},
		{Name: "two", PrivateEndpointID: peA + "web", SubscriptionID: "aaa", State: StatePending},
		{Name: "live", PrivateEndpointID: "/subscriptions/bbb/resourceGroups/Team-B/providers/Microsoft.Network/privateEndpoints/x", SubscriptionID: "bbb", State: StateApproved},
		{Name: "refused", PrivateEndpointID: peA + "old", SubscriptionID: "aaa", State: StateRejected},
		{Name: "cut", PrivateEndpointID: peA + "cut", SubscriptionID: "aaa", State: StateDisconnected},
		{Name: "going", PrivateEndpointID: peA + "going", SubscriptionID: "aaa", State: StatePending, Deleting: true},
	}
	cases := []struct {
		reason string
		policy Policy
		want   []Verdict
	}{
		{"a named connection is approved; the first matching rule wins over a later pattern and over the lists",
			Policy{Rules: []Rule{{Name: "ONE", Reason: "ticket 42"}, {EndpointPattern: peA + "*", Reject: true}}, Approve: []string{"aaa"}},
			[]Verdict{
				{Name: "one", By: "rules[0]", Decision: DecisionApprove, Reason: "ticket 42", Write: StateApproved},
				{Name: "two", By: "rules[1]", Decision: DecisionReject, Reason: "rejected by azure-private-endpoint-operator: spec.connectionApproval.rules[1]", Write: StateRejected},
				{Name: "refused", By: "rules[1]", Decision: DecisionReject, Reason: "rejected by azure-private-endpoint-operator: spec.connectionApproval.rules[1]"},
			}},
		{"a pattern is case-insensitive and * stays within a segment; a Reject rule revokes an Approved connection",
			Policy{Rules: []Rule{{EndpointPattern: "/subscriptions/BBB/resourceGroups/team-*/providers/Microsoft.Network/privateEndpoints/*", Reject: true, Reason: "offboarded"},
				{EndpointPattern: "/subscriptions/*/resourceGroups/*/providers/Microsoft.Network/privateEndpoints", Reason: "never matches: one segment short"}}},
			[]Verdict{{Name: "live", By: "rules[0]", Decision: DecisionReject, Reason: "offboarded", Write: StateRejected}}},
		{"an Approve rule cannot approve a Rejected connection: nothing is written and the reason says why",
			Policy{Rules: []Rule{{Name: "refused"}, {Name: "cut"}, {Name: "going"}}},
			[]Verdict{{Name: "refused", By: "rules[0]", Decision: DecisionApprove, Reason: CannotApproveRejected}}},
		{"an Approve rule on an Approved connection writes nothing",
			Policy{Rules: []Rule{{Name: "live"}}},
			[]Verdict{{Name: "live", By: "rules[0]", Decision: DecisionApprove, Reason: "approved by azure-private-endpoint-operator: spec.connectionApproval.rules[0]"}}},
		{"the lists still decide Pending connections no rule names",
			Policy{Rules: []Rule{{Name: "one"}}, RejectOthers: true},
			[]Verdict{
				{Name: "one", By: "rules[0]", Decision: DecisionApprove, Reason: "approved by azure-private-endpoint-operator: spec.connectionApproval.rules[0]", Write: StateApproved},
				{Name: "two", By: "rejectOthers", Decision: DecisionReject, Reason: "rejected by azure-private-endpoint-operator: subscription aaa is not allowed", Write: StateRejected},
			}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, Judge(conns, c.policy)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

func TestConnectionsReadSubscription(t *testing.T) {
	p := &armnetwork.PrivateLinkService{Properties: &armnetwork.PrivateLinkServiceProperties{PrivateEndpointConnections: []*armnetwork.PrivateEndpointConnection{{
		Name: new("c1"),
		Properties: &armnetwork.PrivateEndpointConnectionProperties{
			PrivateEndpoint:                   &armnetwork.PrivateEndpoint{ID: new("/subscriptions/ABC/resourceGroups/r/providers/Microsoft.Network/privateEndpoints/pe")},
			LinkIdentifier:                    new("42"),
			PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{Status: new("Pending"), Description: new("please")},
		},
	}}}}
	want := []Connection{{Name: "c1", PrivateEndpointID: "/subscriptions/ABC/resourceGroups/r/providers/Microsoft.Network/privateEndpoints/pe", SubscriptionID: "abc", State: "Pending", Description: "please", LinkIdentifier: "42"}}
	if diff := cmp.Diff(want, Connections(p)); diff != "" {
		t.Error(diff)
	}
}

func TestFreePrefix(t *testing.T) {
	pfx := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, v := range s {
			out = append(out, netip.MustParsePrefix(v))
		}
		return out
	}
	cases := []struct {
		reason      string
		space, used []netip.Prefix
		bits        int
		want        string
	}{
		{"the first free aligned range of a non-10/16 space", pfx("172.20.64.0/20"), pfx("172.20.64.0/24", "172.20.65.0/25"), 28, "172.20.65.128/28"},
		{"a hole between subnets", pfx("192.168.0.0/24"), pfx("192.168.0.0/26", "192.168.0.128/26"), 26, "192.168.0.64/26"},
		{"the second address space when the first is full", pfx("10.50.0.0/24", "10.60.0.0/16"), pfx("10.50.0.0/24"), 28, "10.60.0.0/28"},
		{"no room", pfx("10.0.0.0/28"), pfx("10.0.0.0/29"), 28, ""},
		{"a prefix larger than the space never fits", pfx("10.0.0.0/24"), nil, 20, ""},
		{"IPv6 spaces are skipped", pfx("fd00::/48", "10.9.0.0/24"), nil, 29, "10.9.0.0/29"},
	}
	for _, c := range cases {
		got, ok := FreePrefix(c.space, c.used, c.bits)
		s := ""
		if ok {
			s = got.String()
		}
		if s != c.want {
			t.Errorf("%s: got %q, want %q", c.reason, s, c.want)
		}
	}
}

// TestFrontendWords: the desired and the observed frontend are described
// alike, so a FrontendChanged message compares like with like.
func TestFrontendWords(t *testing.T) {
	lb, dc, none := desired(), desired(), desired()
	dc.FrontendID, dc.DestinationIP = "", "10.0.0.9"
	none.FrontendID = ""
	for _, d := range []Desired{lb, dc, none} {
		body := Body(d, nil)
		if got, want := d.Frontend(), ObservedFrontend(&body); got != want {
			t.Errorf("Desired.Frontend() %q, ObservedFrontend of its body %q", got, want)
		}
	}
}
