package wiringdns

import (
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
)

// FuzzDNSNames: whatever a tenant puts in a workload cluster's name,
// namespace and base-domain annotation, DNS name derivation never panics,
// never yields a zone the guard refuses, and an MC-side zone (in the
// management cluster's network) is always under the operator's base domain
// or under one it allows.
func FuzzDNSNames(f *testing.F) {
	f.Add("wc1", "org-a", "", "example.com")
	f.Add("management", "org-a", "azure.com", "example.com")
	f.Add("login", "org-a", "microsoftonline.com", "tenants.example.com")
	f.Add("x", "y", "a.tenants.example.com.", "example.com")
	f.Add("privatelink", "n", "blob.core.windows.net", "")
	f.Add("{{.Cluster}}", "n", "..", "EXAMPLE.com")
	allowed := []string{"tenants.example.com"}
	f.Fuzz(func(t *testing.T, name, namespace, baseDomain, configured string) {
		cfg := clusterlink.DNSConfig{BaseDomain: configured, AllowedBaseDomains: allowed}
		cfg.SetDefaults()
		prefix := func(n string) string { return clusterlink.DefaultAnnotationPrefix + "/" + n }
		w := wc(name, func(a *capz.AzureCluster) {
			a.Namespace = namespace
			a.Annotations = map[string]string{prefix(clusterlink.BaseDomainAnnotation): baseDomain}
		})
		sets, _ := DesiredDNS(mc(), w, cfg, []clusterlink.Endpoint{{Subnet: "mc-nodes"}}, []clusterlink.Endpoint{{Subnet: "nodes"}}, nil, prefix, true)
		for _, s := range sets {
			if err := cfg.Guard.Check(s.Zone.Name); err != nil {
				t.Fatalf("derived a refused zone %q: %v", s.Zone.Name, err)
			}
			if s.Side != clusterlink.DNSSideMC {
				continue
			}
			bases := append([]string{strings.ToLower(strings.TrimSuffix(configured, "."))}, allowed...)
			if !dnsguard.Under(s.Zone.Name, bases) {
				t.Fatalf("MC-side zone %q is under neither the configured base domain %q nor an allowed one", s.Zone.Name, configured)
			}
		}
	})
}
