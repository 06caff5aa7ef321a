package clusterlink

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// samples returns the JSON of every object of a kind in config/samples,
// the seeds of the fuzz targets.
func samples(f *testing.F, kind string) [][]byte {
	f.Helper()
	files, err := filepath.Glob("../../../config/samples/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no samples: %v", err)
	}
	var out [][]byte
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---") {
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil || !strings.Contains(string(j), `"kind":"`+kind+`"`) {
				continue
			}
			out = append(out, j)
		}
	}
	return out
}

func object(raw []byte) (*unstructured.Unstructured, bool) {
	m := map[string]any{}
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return &unstructured.Unstructured{Object: m}, true
}

// FuzzDesired reads two AzureClusters of any shape (an MC and a WC) and runs
// every desired-state decision on them. Nothing may panic, and no list the
// operator would apply may hold a name twice.
func FuzzDesired(f *testing.F) {
	clusters := samples(f, "AzureCluster")
	for _, mc := range clusters {
		for _, wc := range clusters {
			f.Add(mc, wc, true)
		}
	}
	f.Add([]byte(`{"spec":{"networkSpec":{"subnets":[null,{"name":7}],"apiServerLB":{"type":"Internal","privateLinks":[{},{"name":""}]}}}}`), []byte(`{}`), false)
	f.Fuzz(func(t *testing.T, mcRaw, wcRaw []byte, ready bool) {
		mcU, ok1 := object(mcRaw)
		wcU, ok2 := object(wcRaw)
		if !ok1 || !ok2 {
			return
		}
		mc, _ := capz.FromUnstructured(mcU)
		wc, _ := capz.FromUnstructured(wcU)
		wc.PrivateLinksReady = ready
		if wc.Namespace == mc.Namespace && wc.Name == mc.Name {
			wc.Name += "-wc"
		}
		other := *wc
		other.Name += "-other"
		cfg := Config{MCLinkNames: []string{"a", "b", "a"}}
		existing := Held{}
		for _, s := range mc.Subnets {
			for _, pe := range s.PrivateEndpoints {
				existing[pe.Name] = ""
				if len(pe.Connections) > 0 {
					existing[pe.Name] = strings.ToLower(pe.Connections[0].PrivateLinkServiceID)
				}
			}
		}
		toMC, _ := WCToMC(mc, wc, cfg)
		checkUnique(t, "WCToMC", groupBySubnet(toMC))
		desired, _ := DesiredMC(mc, []*capz.AzureCluster{wc, &other}, cfg, existing)
		want := groupBySubnet(desired)
		checkUnique(t, "DesiredMC", want)
		current := capz.CurrentOwned(mcU, mc, capz.FieldManager)
		checkUnique(t, "CarryHeld", CarryHeld(want, current.Endpoints, []*capz.AzureCluster{wc, &other}))
		owners := capz.EndpointOwners(mcU)
		kept, _ := SkipTaken(desired, TakenNames(mc, owners, OlderInMC(DefaultAdoptFieldManagers)), "mc")
		checkUnique(t, "SkipTaken", groupBySubnet(kept))
		_ = StaleEntries(mc, owners, OlderInMC(DefaultAdoptFieldManagers), names(want), isMCEndpointName)
		_ = HoldsEndpointsOf(current.Endpoints, wc)
		_ = WithoutEndpointsOf(current.Endpoints, []*capz.AzureCluster{wc})
		_ = capz.Owned{Endpoints: want}.ApplyConfiguration(mc.Namespace, mc.Name, "")
		_ = ManagesLink(wc, Options{ManagedLinks: ManagedLinks{PrivateLinkServices: true}})
		_ = DesiredManagedLink(mc, wc, "uid", DefaultAnnotationPrefix)
	})
}

func checkUnique(t *testing.T, what string, eps map[string][]capz.PrivateEndpoint) {
	t.Helper()
	seen := map[string]bool{}
	for _, list := range eps {
		for _, ep := range list {
			if seen[ep.Name] {
				t.Fatalf("%s: endpoint %q twice: %v", what, ep.Name, eps)
			}
			seen[ep.Name] = true
		}
	}
}

// FuzzIdentity reads AzureClusterIdentity objects of any shape: parsing
// and the namespace check may refuse, never panic.
func FuzzIdentity(f *testing.F) {
	for _, s := range samples(f, "AzureClusterIdentity") {
		f.Add(s, "org-a", "team=a")
	}
	f.Add([]byte(`{"spec":{"type":"ServicePrincipal","allowedNamespaces":{"list":[null,3],"selector":{"matchExpressions":[{"key":"","operator":"Bogus"}]}}}}`), "", "=")
	f.Fuzz(func(_ *testing.T, raw []byte, ns, label string) {
		u, ok := object(raw)
		if !ok {
			return
		}
		id, err := azure.ParseIdentity(u)
		if err != nil {
			return
		}
		k, v, _ := strings.Cut(label, "=")
		_, _ = id.AllowedIn(ns, map[string]string{k: v})
		_ = id.NeedsSecret()
		_ = id.SecretRef()
		_ = id.UsesSelector()
	})
}
