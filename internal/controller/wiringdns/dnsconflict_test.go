package wiringdns

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

func TestWCSideConflict(t *testing.T) {
	prefix := func(n string) string { return clusterlink.DefaultAnnotationPrefix + "/" + n }
	cfg := clusterlink.DNSConfig{BaseDomain: "example.com"}
	cfg.SetDefaults()
	perCluster := cfg
	perCluster.WCZone = "{{.Cluster}}.{{.ManagementCluster}}.{{.BaseDomain}}"
	perNamespace := cfg
	perNamespace.WCZone = "{{.ManagementCluster}}.{{.Namespace}}.{{.BaseDomain}}"
	t0 := time.Unix(1_700_000_000, 0)
	inGroup := func(name, ns string) *capz.AzureCluster {
		return wc(name, func(a *capz.AzureCluster) { a.ResourceGroup, a.Namespace = "shared-rg", ns })
	}
	peer := func(name, ns string, created time.Time) Peer {
		return Peer{Key: ns + "/" + name, Created: created, Cluster: inGroup(name, ns)}
	}
	for _, c := range []struct {
		reason  string
		cfg     clusterlink.DNSConfig
		wc      *capz.AzureCluster
		created time.Time
		peers   []Peer
		want    string // the peer the problem names; "" for none
	}{
		{reason: "alone in its group", cfg: cfg, wc: inGroup("wc2", "org-a"), created: t0},
		{reason: "a peer made earlier holds the names", cfg: cfg, wc: inGroup("wc2", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-a", t0.Add(-time.Hour))}, want: "org-a/wc1"},
		{reason: "the first of several", cfg: cfg, wc: inGroup("wc3", "org-a"), created: t0,
			peers: []Peer{peer("wc2", "org-a", t0.Add(-time.Minute)), peer("wc1", "org-b", t0.Add(-time.Hour))}, want: "org-b/wc1"},
		{reason: "this cluster came first", cfg: cfg, wc: inGroup("wc1", "org-a"), created: t0,
			peers: []Peer{peer("wc2", "org-a", t0.Add(time.Minute))}},
		{reason: "same second: the first by name", cfg: cfg, wc: inGroup("wc2", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-a", t0)}, want: "org-a/wc1"},
		{reason: "same second, this one first by name", cfg: cfg, wc: inGroup("wc1", "org-a"), created: t0,
			peers: []Peer{peer("wc2", "org-a", t0)}},
		{reason: "itself among the peers", cfg: cfg, wc: inGroup("wc1", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-a", t0.Add(-time.Hour))}},
		{reason: "a zone per cluster never collides", cfg: perCluster, wc: inGroup("wc2", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-a", t0.Add(-time.Hour))}},
		{reason: "a zone per namespace: another namespace does not collide", cfg: perNamespace, wc: inGroup("wc2", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-b", t0.Add(-time.Hour))}},
		{reason: "a zone per namespace: the same namespace does", cfg: perNamespace, wc: inGroup("wc2", "org-a"), created: t0,
			peers: []Peer{peer("wc1", "org-a", t0.Add(-time.Hour))}, want: "org-a/wc1"},
	} {
		t.Run(c.reason, func(t *testing.T) {
			p := WCSideConflict(mc(), c.wc, c.created, c.peers, c.cfg, prefix)
			switch {
			case c.want == "" && p != nil:
				t.Errorf("unexpected problem: %+v", p)
			case c.want != "" && p == nil:
				t.Errorf("no problem, want one naming %s", c.want)
			case c.want != "" && (p.Reason != ReasonDNSRecordConflict || p.Cluster != key(c.wc) || !strings.Contains(p.Message, "workload cluster "+c.want+"'s") ||
				!strings.Contains(p.Message, "shared-rg")):
				t.Errorf("problem %+v does not name %s and the group", p, c.want)
			}
		})
	}
}

// TestPublicNamesakes: a public cluster's domain is reserved against a
// private namesake that came after it, and only then; DesiredDNS then
// writes no MC-side DNS for the private one (and takes back what an
// earlier pass wrote).
func TestPublicNamesakes(t *testing.T) {
	prefix := func(n string) string { return clusterlink.DefaultAnnotationPrefix + "/" + n }
	cfg := clusterlink.DNSConfig{BaseDomain: "example.com"}
	cfg.SetDefaults()
	t0 := time.Unix(1_700_000_000, 0)
	private := wc("wc1", func(a *capz.AzureCluster) { a.Namespace, a.APIServerLBType = "org-a", "Internal" })
	self := Peer{Key: "org-a/wc1", Created: t0}
	namesake := func(ns, lbType string, created time.Time, mutate ...func(*capz.AzureCluster)) Peer {
		c := wc("wc1", func(a *capz.AzureCluster) { a.Namespace, a.APIServerLBType = ns, lbType })
		for _, m := range mutate {
			m(c)
		}
		return Peer{Key: ns + "/wc1", Created: created, Cluster: c}
	}
	otherBase := func(a *capz.AzureCluster) {
		a.Annotations = map[string]string{prefix(clusterlink.BaseDomainAnnotation): "Other.Example.ORG."}
	}
	for _, c := range []struct {
		reason string
		peers  []Peer
		want   []string
	}{
		{reason: "none"},
		{reason: "a public namesake that came first", peers: []Peer{namesake("org-b", "Public", t0.Add(-time.Hour))}, want: []string{"wc1.example.com"}},
		{reason: "CAPZ's default type is Public", peers: []Peer{namesake("org-b", "", t0.Add(-time.Hour))}, want: []string{"wc1.example.com"}},
		{reason: "a public namesake that came later keeps nothing from the first", peers: []Peer{namesake("org-b", "Public", t0.Add(time.Hour))}},
		{reason: "same second: first by namespace/name", peers: []Peer{namesake("org-0", "Public", t0), namesake("org-z", "Public", t0)}, want: []string{"wc1.example.com"}},
		{reason: "a private namesake is DNSZoneHeld's, not this", peers: []Peer{namesake("org-b", "Internal", t0.Add(-time.Hour))}},
		{reason: "itself", peers: []Peer{{Key: "org-a/wc1", Created: t0.Add(-time.Hour), Cluster: private}}},
		{reason: "its own base domain", peers: []Peer{namesake("org-b", "Public", t0.Add(-time.Hour), otherBase)}, want: []string{"wc1.other.example.org"}},
	} {
		t.Run(c.reason, func(t *testing.T) {
			got := PublicNamesakes(private, self, c.peers, cfg, prefix)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	toWC := []clusterlink.Endpoint{{Subnet: "mc-nodes", Direction: clusterlink.DirectionMCToWC}}
	ann := map[string]string{prefix(clusterlink.AnnotationAPIServerIP): "10.0.0.9"}
	sets, problems := DesiredDNS(mc(), private, cfg, toWC, nil, ann, prefix, false, "wc1.example.com")
	if len(sets) != 0 || len(problems) != 1 || problems[0].Reason != ReasonDNSNameReserved || strings.Contains(problems[0].Message, "org-b") {
		t.Errorf("a new private namesake: sets %+v, problems %+v; want none and one %s that names no other tenant", sets, problems, ReasonDNSNameReserved)
	}
	sets, _ = DesiredDNS(mc(), private, cfg, toWC, nil, ann, prefix, true, "wc1.example.com")
	if i := slices.IndexFunc(sets, func(s DNSSet) bool { return s.Side == clusterlink.DNSSideMC }); i < 0 || !sets[i].Refused || sets[i].IP != "" {
		t.Errorf("records an earlier pass wrote: %+v, want a refused MC-side set without address (they go)", sets)
	}
	if sets, problems := DesiredDNS(mc(), private, cfg, toWC, nil, ann, prefix, false); len(problems) != 0 || len(sets) != 1 || sets[0].IP != "10.0.0.9" {
		t.Errorf("without a public namesake: %+v %+v", sets, problems)
	}
}
