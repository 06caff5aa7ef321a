package clusterlink

import (
	"strings"
	"testing"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestWCSideConflict(t *testing.T) {
	prefix := func(n string) string { return DefaultAnnotationPrefix + "/" + n }
	cfg := DNSConfig{BaseDomain: "example.com"}
	cfg.setDefaults()
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
		cfg     DNSConfig
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
