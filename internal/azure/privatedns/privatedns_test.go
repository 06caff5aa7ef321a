package privatedns

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"
)

func TestNames(t *testing.T) {
	vnet := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/c-vnet"
	if a, b := LinkName(vnet), LinkName(strings.ToUpper(vnet)); a != b || !strings.HasPrefix(a, "c-vnet-") {
		t.Errorf("link names differ by case or lose the network's name: %s %s", a, b)
	}
	if LinkName(vnet) == LinkName(strings.Replace(vnet, "/rg/", "/rg2/", 1)) {
		t.Error("two networks of one name in two resource groups get one link name")
	}
	if n := LinkName("/x/" + strings.Repeat("v", 80)); len(n) > 80 {
		t.Errorf("link name of %d characters; Azure allows 80", len(n))
	}
	for _, c := range []struct{ rel, fqdn string }{{"api", "api.wc1.internal"}, {"*.apps", "*.apps.wc1.internal"}, {"@", "wc1.internal"}} {
		if got := FQDN(c.rel, "wc1.internal"); got != c.fqdn {
			t.Errorf("FQDN(%s) = %s, want %s", c.rel, got, c.fqdn)
		}
		if got := RelativeName(c.fqdn, "wc1.internal"); got != c.rel {
			t.Errorf("RelativeName(%s) = %s, want %s", c.fqdn, got, c.rel)
		}
	}
	z := Zone{Subscription: "s", ResourceGroup: "rg", Name: "wc1.internal"}
	back, ok := ZoneFromID(z.ID())
	if !ok || back != z {
		t.Errorf("ZoneFromID(%s) = %+v %v", z.ID(), back, ok)
	}
	if _, ok := ZoneFromID("/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v"); ok {
		t.Error("a virtual network ID read as a zone")
	}
	a := Owner{Kind: KindAzurePrivateEndpoint, Namespace: "ns", Name: "a"}
	if z.Owner(a) != a.Value() || (Zone{Shared: true}).Owner(a) != "shared:AzurePrivateEndpoint" {
		t.Error("owner values")
	}
}

func TestRecords(t *testing.T) {
	observed := &armprivatedns.RecordSet{Etag: new("e1"), Properties: &armprivatedns.RecordSetProperties{
		TTL: new(int64(300)), Metadata: map[string]*string{"team": new("x"), OwnerMetadata: new("ns/a")},
		ARecords: []*armprivatedns.ARecord{{IPv4Address: new("10.0.0.5")}},
	}}
	cases := []struct {
		name  string
		ips   []string
		ttl   int64
		owner string
		want  bool
	}{
		{"same", []string{"10.0.0.5"}, 300, "ns/a", true},
		{"new address", []string{"10.0.0.6"}, 300, "ns/a", false},
		{"another TTL", []string{"10.0.0.5"}, 60, "ns/a", false},
		{"another owner", []string{"10.0.0.5"}, 300, "ns/b", false},
		{"an extra address", []string{"10.0.0.5", "10.0.0.7"}, 300, "ns/a", false},
	}
	for _, c := range cases {
		if got := RecordMatches(observed, c.ips, c.ttl, c.owner); got != c.want {
			t.Errorf("%s: RecordMatches = %v", c.name, got)
		}
	}
	if RecordMatches(nil, []string{"10.0.0.5"}, 300, "ns/a") {
		t.Error("a missing record set matches")
	}
	b := RecordBody(observed, []string{"10.0.0.6"}, 60, "ns/a")
	if ptr.Deref(b.Properties.Metadata["team"], "") != "x" || RecordOwner(&b) != "ns/a" || *b.Properties.TTL != 60 || *b.Properties.ARecords[0].IPv4Address != "10.0.0.6" {
		t.Errorf("record body: %+v", b.Properties)
	}
	if RecordOwner(&armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{}}) != "" {
		t.Error("a record set without metadata has an owner")
	}
	zb := ZoneBody(&armprivatedns.PrivateZone{Tags: map[string]*string{"cost": new("c")}}, SharedOwner, nil)
	if *zb.Location != "global" || TagOwner(zb.Tags) != SharedOwner || ptr.Deref(zb.Tags["cost"], "") != "c" {
		t.Errorf("zone body: %+v", zb)
	}
	lb := LinkBody("/v", "ns/a", nil)
	if LinkedVNet(&lb) != "/v" || *lb.Properties.RegistrationEnabled || TagOwner(lb.Tags) != "ns/a" {
		t.Errorf("link body: %+v", lb)
	}
}

func TestOwnerClaim(t *testing.T) {
	ape := Owner{Kind: KindAzurePrivateEndpoint, Namespace: "org-x", Name: "wc1"}
	wc := Owner{Kind: KindAzureCluster, Namespace: "org-x", Name: "wc1"}
	if ape.Value() != "AzurePrivateEndpoint:org-x/wc1" || wc.Value() != "AzureCluster:org-x/wc1" || ape.Legacy() != "org-x/wc1" {
		t.Fatalf("values %q %q %q", ape.Value(), wc.Value(), ape.Legacy())
	}
	for _, c := range []struct {
		reason    string
		o         Owner
		value     string
		otherKind bool
		want      bool
	}{
		{"its own value", ape, "AzurePrivateEndpoint:org-x/wc1", true, true},
		{"the other kind's value", ape, "AzureCluster:org-x/wc1", false, false},
		{"the other kind's value, from its side", wc, "AzurePrivateEndpoint:org-x/wc1", false, false},
		{"earlier versions' value, nobody else of that name", ape, "org-x/wc1", false, true},
		{"earlier versions' value, a cluster of that name", ape, "org-x/wc1", true, false},
		{"earlier versions' value, an endpoint object of that name", wc, "org-x/wc1", true, false},
		{"another object's earlier value", ape, "org-x/wc2", false, false},
		{"shared", ape, SharedOwner, false, false},
		{"none", ape, "", false, false},
	} {
		if got := c.o.Claim(c.value, c.otherKind); got != c.want {
			t.Errorf("%s: Claim(%q, %v) = %v", c.reason, c.value, c.otherKind, got)
		}
	}
}

func TestLinkTo(t *testing.T) {
	vnet := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/c-vnet"
	other := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/d-vnet"
	link := func(name, vnetID string, state armprivatedns.ProvisioningState, owner string) *armprivatedns.VirtualNetworkLink {
		l := LinkBody(vnetID, owner, nil)
		l.Name = new(name)
		l.Properties.ProvisioningState = new(state)
		return &l
	}
	failedOurs := link("a-ours", vnet, armprivatedns.ProvisioningStateFailed, "AzureCluster:org-x/wc1")
	working := link("b-theirs", strings.ToUpper(vnet), armprivatedns.ProvisioningStateSucceeded, "someone")
	updating := link("c-ours", vnet, armprivatedns.ProvisioningStateUpdating, "AzureCluster:org-x/wc1")
	elsewhere := link("d", other, armprivatedns.ProvisioningStateSucceeded, "AzureCluster:org-x/wc1")
	for _, c := range []struct {
		reason  string
		links   []*armprivatedns.VirtualNetworkLink
		want    string // the link's name, "" for none
		rewrite bool   // RewriteFailedLink for the wiring's owner
	}{
		{"no link", nil, "", false},
		{"only a link to another network", []*armprivatedns.VirtualNetworkLink{elsewhere}, "", false},
		{"a working link beside a failed one (Azure keeps a duplicate, Failed): the working one, whatever the order", []*armprivatedns.VirtualNetworkLink{failedOurs, working}, "b-theirs", false},
		{"a link being made", []*armprivatedns.VirtualNetworkLink{updating, elsewhere}, "c-ours", false},
		{"only our failed link: written again", []*armprivatedns.VirtualNetworkLink{failedOurs}, "a-ours", true},
		{"only another writer's failed link: left to it", []*armprivatedns.VirtualNetworkLink{link("e", vnet, armprivatedns.ProvisioningStateFailed, "someone")}, "e", false},
	} {
		got := LinkTo(c.links, vnet)
		name := ""
		if got != nil {
			name = ptr.Deref(got.Name, "")
		}
		if name != c.want {
			t.Errorf("%s: LinkTo = %q, want %q", c.reason, name, c.want)
		}
		if r := RewriteFailedLink(got, "AzureCluster:org-x/wc1"); r != c.rewrite {
			t.Errorf("%s: RewriteFailedLink = %v, want %v", c.reason, r, c.rewrite)
		}
	}
}

// TestParseOwner reads back what Value writes and nothing else: an earlier
// version's "namespace/name", the shared value and malformed values are
// not kind-qualified owners.
func TestParseOwner(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  Owner
		ok    bool
	}{
		{value: Owner{Kind: KindAzurePrivateEndpoint, Namespace: "org-a", Name: "hc1"}.Value(), want: Owner{Kind: KindAzurePrivateEndpoint, Namespace: "org-a", Name: "hc1"}, ok: true},
		{value: Owner{Kind: KindAzureCluster, Namespace: "org-a", Name: "wc1"}.Value(), want: Owner{Kind: KindAzureCluster, Namespace: "org-a", Name: "wc1"}, ok: true},
		{value: "org-a/hc1"},
		{value: SharedOwner},
		{value: ""},
		{value: "AzurePrivateEndpoint:org-a"},
		{value: "AzurePrivateEndpoint:/hc1"},
		{value: "AzurePrivateEndpoint:org-a/"},
		{value: ":org-a/hc1"},
		{value: "AzurePrivateEndpoint:org-a/hc1/x"},
	} {
		got, ok := ParseOwner(tc.value)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseOwner(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

// TestIsShared: a kind's shared value is shared for that kind only; the
// value of earlier versions for either.
func TestIsShared(t *testing.T) {
	for _, c := range []struct {
		tag, kind string
		want      bool
	}{
		{SharedValue(KindAzureCluster), KindAzureCluster, true},
		{SharedValue(KindAzureCluster), KindAzurePrivateEndpoint, false},
		{SharedValue(KindAzurePrivateEndpoint), KindAzurePrivateEndpoint, true},
		{SharedOwner, KindAzurePrivateEndpoint, true},
		{SharedOwner, KindAzureCluster, true},
		{"AzureCluster:ns/a", KindAzureCluster, false},
		{"", KindAzureCluster, false},
	} {
		if got := IsShared(c.tag, c.kind); got != c.want {
			t.Errorf("IsShared(%q, %s) = %v, want %v", c.tag, c.kind, got, c.want)
		}
	}
	if _, ok := ParseOwner(SharedValue(KindAzureCluster)); ok {
		t.Error("a shared value parsed as an owner")
	}
}
