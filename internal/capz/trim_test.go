package capz_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// readFixture is a workload cluster's AzureCluster as the benchmark's world
// leaves it once wired (CAPZ's webhooks defaulted it, capzsim wrote its
// subnet IDs and condition, the operator its entry, annotations and
// finalizer), managedFields included.
func readFixture(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("testdata/azurecluster-wc.json")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// sameReads fails t when a reader of the operator reads a differently from
// b: the view with its errors, what a manager owns, the endpoint owners.
func sameReads(t *testing.T, a, b *unstructured.Unstructured) {
	t.Helper()
	va, ea := capz.FromUnstructured(a)
	vb, eb := capz.FromUnstructured(b)
	if diff := cmp.Diff(va, vb); diff != "" {
		t.Errorf("view differs (-whole +trimmed):\n%s", diff)
	}
	if diff := cmp.Diff(ea.ToAggregate(), eb.ToAggregate()); diff != "" {
		t.Errorf("view errors differ (-whole +trimmed):\n%s", diff)
	}
	if diff := cmp.Diff(capz.CurrentOwned(a, va, capz.FieldManager), capz.CurrentOwned(b, vb, capz.FieldManager)); diff != "" {
		t.Errorf("owned fields differ (-whole +trimmed):\n%s", diff)
	}
	if diff := cmp.Diff(capz.EndpointOwners(a), capz.EndpointOwners(b)); diff != "" {
		t.Errorf("endpoint owners differ (-whole +trimmed):\n%s", diff)
	}
	// What other readers read as it is: cpgate (the load balancer's type,
	// the conditions it gates on), identityguard and providerconfig (the
	// identity, the subscription), the conditions the operator writes in
	// each form it finds (clusterlink conditions.go), and metadata.
	if diff := cmp.Diff(managedFields(a), managedFields(b)); diff != "" {
		t.Errorf("managedFields differ (-whole +cached):\n%s", diff)
	}
	for _, p := range [][]string{
		{"metadata", "name"}, {"metadata", "namespace"}, {"metadata", "uid"}, {"metadata", "generation"}, {"metadata", "resourceVersion"},
		{"metadata", "annotations"}, {"metadata", "labels"}, {"metadata", "finalizers"}, {"metadata", "ownerReferences"},
		{"metadata", "deletionTimestamp"}, {"spec", "networkSpec", "apiServerLB", "type"}, {"spec", "identityRef"}, {"spec", "subscriptionID"},
		{"status", "conditions"}, {"status", "v1beta2", "conditions"}, {"status", "deprecated", "v1beta1", "conditions"},
	} {
		va, fa, _ := unstructured.NestedFieldNoCopy(a.Object, p...)
		vb, fb, _ := unstructured.NestedFieldNoCopy(b.Object, p...)
		if fa != fb || !cmp.Equal(va, vb) {
			t.Errorf("%s reads %v (found %v) on the whole object, %v (found %v) trimmed", strings.Join(p, "."), va, fa, vb, fb)
		}
	}
	_, fa, _ := unstructured.NestedFieldNoCopy(a.Object, "status", "v1beta2")
	_, fb, _ := unstructured.NestedFieldNoCopy(b.Object, "status", "v1beta2")
	if fa != fb {
		t.Errorf("status.v1beta2 (which condition forms the operator writes) found %v whole, %v trimmed", fa, fb)
	}
}

// managedFields are what the operator reads of u's managedFields
// (capz.ManagedFields): manager, operation, subresource, fields.
func managedFields(u *unstructured.Unstructured) []string {
	var out []string
	for _, e := range capz.ManagedFields(u) {
		fields := ""
		if e.FieldsV1 != nil {
			fields = e.FieldsV1.GetRawString()
		}
		out = append(out, strings.Join([]string{e.Manager, string(e.Operation), e.Subresource, fields}, " "))
	}
	return out
}

// cached is u as the operator's cache keeps an AzureCluster: trimmed, its
// managedFields as text (what clusterlink.TrimCached does, all managers
// kept).
func cached(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := capz.TrimAzureCluster(u.DeepCopy())
	capz.CacheManagedFields(c, capz.ManagedFields(c))
	return c
}

// TestTrimAzureCluster: the cache's copy of an AzureCluster keeps what
// every reader reads, and of the network only that.
func TestTrimAzureCluster(t *testing.T) {
	whole := readFixture(t)
	trimmed := capz.TrimAzureCluster(whole.DeepCopy())
	sameReads(t, whole, trimmed)

	for _, kept := range [][]string{
		{"metadata", "managedFields"}, {"metadata", "finalizers"}, {"metadata", "annotations"},
		{"spec", "identityRef"}, {"spec", "subscriptionID"}, {"status", "conditions"},
	} {
		a, _, _ := unstructured.NestedFieldNoCopy(whole.Object, kept...)
		b, _, _ := unstructured.NestedFieldNoCopy(trimmed.Object, kept...)
		if a == nil || !cmp.Equal(a, b) {
			t.Errorf("%s: not kept as it was", strings.Join(kept, "."))
		}
	}
	for _, gone := range [][]string{
		{"spec", "networkSpec", "vnet"}, {"spec", "controlPlaneEndpoint"}, {"spec", "bastionSpec"},
		{"spec", "networkSpec", "apiServerLB", "backendPool"}, {"spec", "networkSpec", "apiServerLB", "sku"},
	} {
		if _, found, _ := unstructured.NestedFieldNoCopy(trimmed.Object, gone...); found {
			t.Errorf("%s: kept, though no reader reads it", strings.Join(gone, "."))
		}
	}
	subnets, _, _ := unstructured.NestedSlice(trimmed.Object, "spec", "networkSpec", "subnets")
	if len(subnets) != 2 {
		t.Fatalf("subnets: %d kept, want both (patches address them by index)", len(subnets))
	}
	for _, s := range subnets {
		for _, gone := range []string{"cidrBlocks", "securityGroup", "routeTable", "natGateway"} {
			if _, found := s.(map[string]any)[gone]; found {
				t.Errorf("subnet %v: %s kept", s.(map[string]any)["name"], gone)
			}
		}
	}

	// Trimming is idempotent: trimming it again changes nothing.
	again := capz.TrimAzureCluster(trimmed.DeepCopy())
	if diff := cmp.Diff(trimmed.Object, again.Object); diff != "" {
		t.Errorf("a second trim changed the object (-first +second):\n%s", diff)
	}
}

// TestCachedManagedFields: the cache keeps managedFields as text, in
// place of metadata.managedFields, and they read the same.
func TestCachedManagedFields(t *testing.T) {
	whole := readFixture(t)
	sameReads(t, whole, cached(whole))
	if len(managedFields(cached(whole))) != 5 {
		t.Errorf("cached managedFields: %q, want the fixture's 5 entries", managedFields(cached(whole)))
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(cached(whole).Object, "metadata", "managedFields"); found {
		t.Error("the cached object still has metadata.managedFields beside the text form")
	}
	if err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		_ = cached(whole).DeepCopy() // the cache copies what it hands out
		return nil
	}(); err != nil {
		t.Errorf("the cached form cannot be copied as an unstructured object: %v", err)
	}
}

// TestTrimAzureClusterKeepsMalformedFields: a field of the wrong type stays
// as it is, so the view reports it on the cache's copy too.
func TestTrimAzureClusterKeepsMalformedFields(t *testing.T) {
	for name, raw := range map[string]string{
		"subnets not a list":          `{"spec":{"networkSpec":{"subnets":{"name":"x","cidrBlocks":["10.0.0.0/24"]}}}}`,
		"subnet not an object":        `{"spec":{"networkSpec":{"subnets":["x",{"name":"n","privateEndpoints":7}]}}}`,
		"spec not an object":          `{"spec":"x"}`,
		"privateLinks not a list":     `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":"x","type":3}}}}`,
		"frontend not an object":      `{"spec":{"networkSpec":{"apiServerLB":{"frontendIPs":[7,{"name":9}]}}}}`,
		"conditions not a list":       `{"status":{"conditions":{"type":"PrivateLinksReady"},"v1beta2":{"conditions":[null]}}}`,
		"identityRef not an object":   `{"spec":{"identityRef":"id","subscriptionID":["s"]}}`,
		"deprecated conditions in v2": `{"status":{"deprecated":{"v1beta1":{"conditions":[{"type":"PrivateLinksReady","status":"True"}]}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(raw), &u.Object); err != nil {
				t.Fatal(err)
			}
			sameReads(t, u, capz.TrimAzureCluster(u.DeepCopy()))
			sameReads(t, u, cached(u))
		})
	}
}

// TestManagedFieldsReadThroughCapz: the operator's cache keeps an
// AzureCluster's managedFields as text (CacheManagedFields), where
// GetManagedFields finds none; a reader that asked it would take every
// entry for no one's. Only the transform, which works on the API server's
// objects, and the sandbox, which moves them, may ask it.
func TestManagedFieldsReadThroughCapz(t *testing.T) {
	allowed := map[string]bool{
		"internal/capz/managedfields.go":                   true, // ManagedFields' fallback
		"internal/controller/clusterlink/managedfields.go": true, // the cache transform, before CacheManagedFields
		"internal/sandbox/move.go":                         true, // objects read from the API server
	}
	repo := os.DirFS("../..")
	for _, dir := range []string{"internal", "cmd"} {
		err := fs.WalkDir(repo, dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			raw, err := fs.ReadFile(repo, path)
			if err != nil {
				return err
			}
			if strings.Contains(string(raw), ".GetManagedFields()") && !allowed[path] {
				t.Errorf("%s reads managedFields with GetManagedFields: read them with capz.ManagedFields", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
