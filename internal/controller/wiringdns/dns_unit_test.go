package wiringdns

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
)

func TestDesiredDNS(t *testing.T) {
	withIDs := func(a *capz.AzureCluster) {
		for i := range a.Subnets {
			a.Subnets[i].ID = "/subscriptions/" + a.SubscriptionID + "/resourceGroups/" + a.ResourceGroup + "/providers/Microsoft.Network/virtualNetworks/" + a.Name + "-vnet/subnets/" + a.Subnets[i].Name
		}
	}
	m, w := mc(withIDs), wc("wc1", withIDs)
	toWC := []clusterlink.Endpoint{{Subnet: "mc-nodes"}}
	toMC := []clusterlink.Endpoint{{Subnet: "nodes"}}
	prefix := func(n string) string { return clusterlink.DefaultAnnotationPrefix + "/" + n }
	ann := map[string]string{prefix(clusterlink.AnnotationAPIServerIP): "10.0.1.4", prefix(clusterlink.AnnotationMCIngressIP): "10.1.1.4"}
	cfg := clusterlink.DNSConfig{BaseDomain: "example.com"}
	cfg.SetDefaults()
	mcSide := DNSSet{Side: clusterlink.DNSSideMC, Holder: m, Records: []string{"api"}, Owner: "org-a/wc1", IP: "10.0.1.4",
		VNet: "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/virtualNetworks/mc-vnet",
		Zone: dns.Zone{Subscription: mcSub, ResourceGroup: "mc-rg", Name: "wc1.example.com"}}
	wcSide := DNSSet{Side: clusterlink.DNSSideWC, Holder: w, Records: []string{"*"}, Owner: "org-a/wc1", IP: "10.1.1.4",
		VNet: "/subscriptions/" + wcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/virtualNetworks/wc1-vnet",
		Zone: dns.Zone{Subscription: wcSub, ResourceGroup: "wc1-resources", Name: "mc.example.com", Shared: true}}
	without := func(s DNSSet) DNSSet { s.IP, s.VNet = "", ""; return s }
	// withBase gives a WC the base-domain annotation; refusedBase is the
	// problem when that annotation is outside the allow-list.
	withBase := func(name, base string) *capz.AzureCluster {
		return wc(name, withIDs, func(a *capz.AzureCluster) {
			a.Annotations = map[string]string{prefix(clusterlink.BaseDomainAnnotation): base}
		})
	}
	refusedBase := func(name, base string) clusterlink.Problem {
		return clusterlink.Problem{Cluster: "org-a/" + name, Reason: ReasonDNSNameRefused, Message: `the annotation ` + prefix(clusterlink.BaseDomainAnnotation) + `="` + base +
			`" names a zone in the management cluster's network but is not under a base domain the operator allows (--wiring-dns-allowed-base-domains): no mc-side DNS is written for it`}
	}
	reservedName := func(name, fqdn string) clusterlink.Problem {
		return clusterlink.Problem{Cluster: "org-a/" + name, Reason: ReasonDNSNameReserved, Message: "the mc-side name " + fqdn +
			" would shadow mc.example.com, the management cluster's own domain, which is reserved in its network: no mc-side DNS is written for this cluster; rename the cluster, or use an mc-side zone template that cannot give this name (--wiring-dns-mc-zone)"}
	}
	cases := []struct {
		reason       string
		cfg          func(*clusterlink.DNSConfig)
		mc, wc       *capz.AzureCluster
		toWC, toMC   []clusterlink.Endpoint
		ann          map[string]string
		hadDNS       bool
		want         []DNSSet
		wantProblems []clusterlink.Problem
	}{
		{reason: "both directions, default names", toWC: toWC, toMC: toMC, ann: ann, want: []DNSSet{mcSide, wcSide}},
		{reason: "not approved yet: the sets are there without IP, so nothing is written", toWC: toWC, toMC: toMC,
			want: []DNSSet{func() DNSSet { s := mcSide; s.IP = ""; return s }(), func() DNSSet { s := wcSide; s.IP = ""; return s }()}},
		{reason: "a public WC never had DNS: nothing to do", toMC: toMC, ann: ann, want: []DNSSet{wcSide}},
		{reason: "the WC's endpoint went after DNS was written: its records go", toMC: toMC, ann: ann, hadDNS: true, want: []DNSSet{without(mcSide), wcSide}},
		{
			reason: "a shared zone by template, and the WC's own base domain",
			cfg: func(c *clusterlink.DNSConfig) {
				c.MCZone, c.MCRecords = "{{.BaseDomain}}", []string{"api.{{.Cluster}}"}
				c.AllowedBaseDomains = []string{"example.org"}
			},
			wc: wc("wc1", withIDs, func(a *capz.AzureCluster) {
				a.Annotations = map[string]string{prefix(clusterlink.BaseDomainAnnotation): "Team.Example.org."}
			}),
			toWC: toWC, ann: ann,
			want: []DNSSet{func() DNSSet {
				s := mcSide
				s.Zone.Name, s.Zone.Shared, s.Records = "team.example.org", true, []string{"api.wc1"}
				return s
			}()},
		},
		{
			reason: "a tenant's base domain outside the allow-list (none by default) is refused: it names a zone in the MC's network",
			wc:     withBase("management", "azure.com"),
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{refusedBase("management", "azure.com")},
		},
		{
			reason: "a base domain that merely ends like an allowed one is refused",
			cfg:    func(c *clusterlink.DNSConfig) { c.AllowedBaseDomains = []string{"example.org"} },
			wc:     withBase("wc1", "evilexample.org"),
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{refusedBase("wc1", "evilexample.org")},
		},
		{
			reason: "an allow-list that admits Azure's domain still never makes management.azure.com: the guard refuses it",
			cfg:    func(c *clusterlink.DNSConfig) { c.AllowedBaseDomains = []string{"com"} },
			wc:     withBase("management", "azure.com"),
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{{Cluster: "org-a/management", Reason: ReasonDNSNameRefused, Message: "the mc-side zone is refused: zone management.azure.com would shadow azure.com, a protected domain (Azure's own, or --dns-denied-zones)"}},
		},
		{
			reason: "the operator's own base domain is checked too (login + microsoftonline.com)",
			cfg:    func(c *clusterlink.DNSConfig) { c.BaseDomain = "microsoftonline.com" },
			wc:     wc("login", withIDs),
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{{Cluster: "org-a/login", Reason: ReasonDNSNameRefused, Message: "the mc-side zone is refused: zone login.microsoftonline.com would shadow microsoftonline.com, a protected domain (Azure's own, or --dns-denied-zones)"}},
		},
		{
			reason: "a configured deny list on both sides",
			cfg:    func(c *clusterlink.DNSConfig) { c.Guard = dnsguard.New([]string{"example.com"}) },
			toWC:   toWC, toMC: toMC, ann: ann,
			wantProblems: []clusterlink.Problem{
				{Cluster: "org-a/wc1", Reason: ReasonDNSNameRefused, Message: "the mc-side zone is refused: zone wc1.example.com would shadow example.com, a protected domain (Azure's own, or --dns-denied-zones)"},
				{Cluster: "org-a/wc1", Reason: ReasonDNSNameRefused, Message: "the wc-side zone is refused: zone mc.example.com would shadow example.com, a protected domain (Azure's own, or --dns-denied-zones)"},
			},
		},
		{
			reason: "a tenant's cluster named like the MC: its zone would be the MC's own domain in the MC's network, refused",
			wc:     wc("mc", withIDs),
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{reservedName("mc", "mc.example.com")},
		},
		{
			reason: "the same after an earlier release wrote it: the set is refused, so its records go",
			wc:     wc("mc", withIDs),
			toWC:   toWC, ann: ann, hadDNS: true,
			want: []DNSSet{func() DNSSet {
				s := mcSide
				s.Owner, s.Zone.Name, s.IP, s.Refused = "org-a/mc", "mc.example.com", "", true
				return s
			}(), func() DNSSet {
				// No endpoint to the MC: what it may have written goes.
				s := without(wcSide)
				s.Owner, s.Zone.ResourceGroup = "org-a/mc", "mc-resources"
				return s
			}()},
			wantProblems: []clusterlink.Problem{reservedName("mc", "mc.example.com")},
		},
		{
			reason: "one shared zone: the record api.mc would shadow the MC's api, refused; the zone above is the layout's",
			cfg: func(c *clusterlink.DNSConfig) {
				c.MCZone, c.MCRecords = "{{.BaseDomain}}", []string{"api.{{.Cluster}}"}
			},
			wc:   wc("mc", withIDs),
			toWC: toWC, ann: ann,
			wantProblems: []clusterlink.Problem{reservedName("mc", "api.mc.example.com")},
		},
		{
			reason: "a template that puts clusters under the MC's domain: every WC is refused",
			cfg:    func(c *clusterlink.DNSConfig) { c.MCZone = "{{.Cluster}}.{{.ManagementCluster}}.{{.BaseDomain}}" },
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{reservedName("wc1", "wc1.mc.example.com")},
		},
		{
			reason: "a WC whose name only ends like the MC's is not refused",
			wc:     wc("xmc", withIDs),
			toWC:   toWC, ann: ann,
			want: []DNSSet{func() DNSSet {
				s := mcSide
				s.Owner, s.Zone.Name = "org-a/xmc", "xmc.example.com"
				return s
			}()},
		},
		{
			reason: "no base domain: a problem, not a one-label zone",
			cfg:    func(c *clusterlink.DNSConfig) { c.BaseDomain = "" },
			toWC:   toWC, ann: ann,
			wantProblems: []clusterlink.Problem{{Cluster: "org-a/wc1", Reason: ReasonInvalidDNS, Message: `the mc-side DNS names cannot be built: zone "wc1" needs two labels or more (is --wiring-dns-base-domain set?)`}},
		},
		{
			reason: "CAPZ has not written the subnet IDs: no network yet",
			mc:     mc(), toWC: toWC, ann: ann,
			want: []DNSSet{func() DNSSet { s := mcSide; s.VNet, s.Holder = "", mc(); return s }()},
		},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			cf := cfg
			if c.cfg != nil {
				c.cfg(&cf)
			}
			mcv, wcv := m, w
			if c.mc != nil {
				mcv = c.mc
			}
			if c.wc != nil {
				wcv = c.wc
			}
			got, problems := DesiredDNS(mcv, wcv, cf, c.toWC, c.toMC, c.ann, prefix, c.hadDNS)
			if diff := cmp.Diff(c.want, got, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(DNSSet{}, "Holder")); diff != "" {
				t.Errorf("sets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantProblems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDNSTemplates(t *testing.T) {
	if err := ParseDNSTemplates(clusterlink.DefaultMCZoneTemplate, clusterlink.DefaultWCZoneTemplate, "api.{{.Namespace}}"); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	for _, bad := range []string{"{{.Clustr}}", "{{.Cluster"} {
		if err := ParseDNSTemplates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestParseSummary: GSDNSZoneReady's True message reads back into what it
// was written from (kubectl apeo explain relies on it), and any other
// message is refused.
func TestParseSummary(t *testing.T) {
	sets := []DNSSet{
		{Zone: dns.Zone{Name: "wc1.example.com"}, Records: []string{"api", "*.apps"}, IP: "10.0.1.4", VNet: "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/virtualNetworks/mc-vnet"},
		{Zone: dns.Zone{Name: "mc.example.com"}, Records: []string{"*.apps"}, IP: "10.1.1.4", VNet: "/subscriptions/s/resourceGroups/wc1/providers/Microsoft.Network/virtualNetworks/wc1-vnet"},
	}
	got, ok := ParseSummary(dnsSummary(sets))
	want := []SummaryEntry{
		{FQDNs: []string{"api.wc1.example.com", "*.apps.wc1.example.com"}, IP: "10.0.1.4", VNet: "mc-vnet"},
		{FQDNs: []string{"*.apps.mc.example.com"}, IP: "10.1.1.4", VNet: "wc1-vnet"},
	}
	if !ok || !cmp.Equal(got, want) {
		t.Errorf("ParseSummary(dnsSummary) = %v, %v; diff (-want +got):\n%s", got, ok, cmp.Diff(want, got))
	}
	for _, msg := range []string{"", "waiting for the endpoint", reasonDNSZoneReadyMessage + ": api.x -> ", reasonDNSZoneReadyMessage + ": api.x 10.0.0.1"} {
		if got, ok := ParseSummary(msg); ok {
			t.Errorf("ParseSummary(%q) = %v, true; want refused", msg, got)
		}
	}
}
