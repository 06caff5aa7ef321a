package capz_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// These tests prove the design's central assumption (docs/design.md, *Never clobber what others own*)
// against the real CAPZ v1.23.0 schema in a real API server: a server-side
// apply of the operator's private endpoint entries changes exactly those
// entries and nothing that the user or CAPZ wrote.

const (
	namespace    = "org-test"
	clusterName  = "mc"
	nodeSubnet   = "node-subnet"
	cpSubnet     = "control-plane-subnet"
	userManager  = "kubectl-client-side-apply"
	capzManager  = "capz-manager"
	subscription = "11111111-1111-1111-1111-111111111111"
)

func TestServerSideApplyOwnsOnlyOperatorEntries(t *testing.T) {
	for _, schema := range []testenv.Schema{testenv.SchemaUpstream, testenv.SchemaFork, testenv.SchemaV127} {
		t.Run(string(schema), func(t *testing.T) {
			env := testenv.StartT(t, testenv.Options{Schema: schema})
			ctx := context.Background()
			c := env.Client
			createNamespace(t, c)

			// A user creates the MC AzureCluster with a private endpoint of
			// their own in the node subnet.
			user := azureCluster(schema)
			if err := c.Create(ctx, user, client.FieldOwner(userManager)); err != nil {
				t.Fatalf("user create: %v", err)
			}

			// CAPZ writes subnet IDs back into spec the way it really does:
			// CAPI's patch helper sends a JSON merge patch, no optimistic lock.
			capzPatch(t, c, setSubnetIDs)
			afterCAPZ := getSpec(t, c)

			// (a)+(b): the operator adds its entry; everything else stays.
			operatorApply(t, c, privateEndpoint("wc1-api-privatelink-privateendpoint"))
			want := withPrivateEndpoints(afterCAPZ, privateEndpoint("wc1-api-privatelink-privateendpoint"))
			assertSpec(t, c, want, "after the operator added its entry")

			// A later CAPZ write that does not touch subnets, from a copy read
			// before the operator's apply, leaves the operator's entry alone.
			stale := getObject(t, c)
			operatorApply(t, c,
				privateEndpoint("wc1-api-privatelink-privateendpoint"),
				privateEndpoint("wc2-api-privatelink-privateendpoint"))
			mergePatchFrom(t, c, stale, setVNetID)
			want = withPrivateEndpoints(afterCAPZ,
				privateEndpoint("wc1-api-privatelink-privateendpoint"),
				privateEndpoint("wc2-api-privatelink-privateendpoint"))
			setVNetID(want)
			assertSpec(t, c, want, "after a CAPZ write that does not touch subnets")

			// The user edits their own endpoint; the operator's next apply
			// must not revert that.
			userEditsOwnEndpoint(t, c)
			want = getSpec(t, c)

			// (c): the operator applies without one of its entries; only that
			// entry goes.
			operatorApply(t, c, privateEndpoint("wc2-api-privatelink-privateendpoint"))
			want = withoutPrivateEndpoint(want, "wc1-api-privatelink-privateendpoint")
			assertSpec(t, c, want, "after the operator dropped one of its entries")

			// (c): the operator applies nothing; all its entries go, the
			// user's stays, and the operator owns no field any more.
			operatorApply(t, c)
			want = withoutPrivateEndpoint(want, "wc2-api-privatelink-privateendpoint")
			assertSpec(t, c, want, "after the operator applied no entry")
			assertOwnsNothing(t, c)
		})
	}
}

// TestServerSideApplyRecoversFromCAPZListReplacement documents the one way
// CAPZ can drop the operator's entry: CAPI's patch helper sends a merge patch
// without optimistic locking, so a CAPZ write that changes the subnets list
// replaces the whole list with CAPZ's (possibly stale) copy. The operator
// cannot prevent that; its level-triggered re-apply must restore the entry
// without undoing what CAPZ wrote.
func TestServerSideApplyRecoversFromCAPZListReplacement(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaFork})
	ctx := context.Background()
	c := env.Client
	createNamespace(t, c)
	if err := c.Create(ctx, azureCluster(testenv.SchemaFork), client.FieldOwner(userManager)); err != nil {
		t.Fatalf("user create: %v", err)
	}

	stale := getObject(t, c) // CAPZ reads before the operator applies.
	operatorApply(t, c, privateEndpoint("wc1-api-privatelink-privateendpoint"))
	mergePatchFrom(t, c, stale, setSubnetIDs)
	afterCAPZ := getSpec(t, c)
	for _, pe := range privateEndpoints(afterCAPZ, nodeSubnet) {
		if pe["name"] == "wc1-api-privatelink-privateendpoint" {
			t.Fatalf("expected CAPZ's list replacement to drop the operator's entry; the test no longer reproduces CAPZ's write path")
		}
	}

	operatorApply(t, c, privateEndpoint("wc1-api-privatelink-privateendpoint"))
	assertSpec(t, c, withPrivateEndpoints(afterCAPZ, privateEndpoint("wc1-api-privatelink-privateendpoint")),
		"after the operator re-applied")
}

func azureCluster(schema testenv.Schema) *unstructured.Unstructured {
	lb := map[string]any{
		"name": "mc-internal-lb",
		"type": "Internal",
		"frontendIPs": []any{
			map[string]any{"name": "mc-internal-lb-frontend", "privateIP": "10.0.0.100"},
		},
	}
	if nat := schema.NATConfigurationsField(); nat != "" {
		lb["privateLinks"] = []any{map[string]any{
			"name":                      "mc-api-privatelink",
			"lbFrontendIPConfigNames":   []any{"mc-internal-lb-frontend"},
			"allowedSubscriptions":      []any{subscription},
			"autoApprovedSubscriptions": []any{subscription},
			"enableProxyProtocol":       false,
			nat: []any{map[string]any{
				"allocationMethod": "Dynamic",
				"subnet":           cpSubnet,
			}},
		}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"location":       "westeurope",
			"resourceGroup":  "mc",
			"subscriptionID": subscription,
			"identityRef":    map[string]any{"kind": "AzureClusterIdentity", "name": "cluster-identity", "namespace": "default"},
			"networkSpec": map[string]any{
				"vnet":        map[string]any{"name": "mc-vnet", "cidrBlocks": []any{"10.0.0.0/16"}},
				"apiServerLB": lb,
				"subnets": []any{
					map[string]any{
						"name":       cpSubnet,
						"role":       "control-plane",
						"cidrBlocks": []any{"10.0.0.0/24"},
					},
					map[string]any{
						"name":       nodeSubnet,
						"role":       "node",
						"cidrBlocks": []any{"10.0.1.0/24"},
						"privateEndpoints": []any{map[string]any{
							"name":     "users-own-privateendpoint",
							"location": "westeurope",
							"privateLinkServiceConnections": []any{map[string]any{
								"name":                 "users-own-connection",
								"privateLinkServiceID": "/subscriptions/" + subscription + "/resourceGroups/shared/providers/Microsoft.Network/privateLinkServices/registry",
							}},
						}},
					},
				},
			},
		},
	}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace(namespace)
	u.SetName(clusterName)
	return u
}

func privateEndpoint(name string) map[string]any {
	return map[string]any{
		"name":           name,
		"location":       "westeurope",
		"manualApproval": false,
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 name + "-connection",
			"privateLinkServiceID": "/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/wc/providers/Microsoft.Network/privateLinkServices/" + name,
		}},
	}
}

// operatorApply applies the operator's complete desired set of entries in the
// node subnet, as the controller will: one apply configuration under the
// operator's field manager, forcing ownership of the fields it sets.
func operatorApply(t *testing.T, c client.Client, pes ...map[string]any) {
	t.Helper()
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	cfg.SetGroupVersionKind(capz.AzureClusterGVK)
	cfg.SetNamespace(namespace)
	cfg.SetName(clusterName)
	if len(pes) > 0 {
		entries := make([]any, 0, len(pes))
		for _, pe := range pes {
			entries = append(entries, pe)
		}
		cfg.Object["spec"] = map[string]any{"networkSpec": map[string]any{"subnets": []any{
			map[string]any{"name": nodeSubnet, "privateEndpoints": entries},
		}}}
	}
	err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(cfg),
		client.FieldOwner(capz.FieldManager), client.ForceOwnership)
	if err != nil {
		t.Fatalf("operator apply: %v", err)
	}
}

// capzPatch reads the object and writes a change the way CAPZ does.
func capzPatch(t *testing.T, c client.Client, mutate func(spec map[string]any)) {
	t.Helper()
	mergePatchFrom(t, c, getObject(t, c), mutate)
}

// mergePatchFrom sends a JSON merge patch computed from a copy read earlier,
// as CAPI's patch helper does for spec (no optimistic lock).
func mergePatchFrom(t *testing.T, c client.Client, before *unstructured.Unstructured, mutate func(spec map[string]any)) {
	t.Helper()
	after := before.DeepCopy()
	mutate(getSpecOf(after))
	if err := c.Patch(context.Background(), after, client.MergeFrom(before), client.FieldOwner(capzManager)); err != nil {
		t.Fatalf("CAPZ patch: %v", err)
	}
}

func createNamespace(t *testing.T, c client.Client) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": namespace},
	}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
}

func getObject(t *testing.T, c client.Client) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: clusterName}, u); err != nil {
		t.Fatalf("get AzureCluster: %v", err)
	}
	return u
}

func getSpec(t *testing.T, c client.Client) map[string]any {
	t.Helper()
	return getSpecOf(getObject(t, c))
}

func getSpecOf(u *unstructured.Unstructured) map[string]any {
	return u.Object["spec"].(map[string]any)
}

func subnets(spec map[string]any) []map[string]any {
	var out []map[string]any
	for _, s := range spec["networkSpec"].(map[string]any)["subnets"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

func privateEndpoints(spec map[string]any, subnet string) []map[string]any {
	var out []map[string]any
	for _, s := range subnets(spec) {
		if s["name"] != subnet {
			continue
		}
		pes, _ := s["privateEndpoints"].([]any)
		for _, pe := range pes {
			out = append(out, pe.(map[string]any))
		}
	}
	return out
}

// userEditsOwnEndpoint changes the user's own entry with an Update, as
// kubectl edit would.
func userEditsOwnEndpoint(t *testing.T, c client.Client) {
	t.Helper()
	u := getObject(t, c)
	for _, pe := range privateEndpoints(getSpecOf(u), nodeSubnet) {
		if pe["name"] == "users-own-privateendpoint" {
			pe["manualApproval"] = true
		}
	}
	if err := c.Update(context.Background(), u, client.FieldOwner(userManager)); err != nil {
		t.Fatalf("user update: %v", err)
	}
}

func assertOwnsNothing(t *testing.T, c client.Client) {
	t.Helper()
	for _, mf := range getObject(t, c).GetManagedFields() {
		if mf.Manager == capz.FieldManager {
			t.Errorf("operator still owns fields after applying nothing: %s", mf.FieldsV1.String())
		}
	}
}

// setSubnetIDs writes subnet IDs into spec, as CAPZ does after creating them.
func setSubnetIDs(spec map[string]any) {
	for _, s := range subnets(spec) {
		s["id"] = subnetID(s["name"].(string))
	}
}

func subnetID(name string) string {
	return "/subscriptions/" + subscription + "/resourceGroups/mc/providers/Microsoft.Network/virtualNetworks/mc-vnet/subnets/" + name
}

func setVNetID(spec map[string]any) {
	vnet := spec["networkSpec"].(map[string]any)["vnet"].(map[string]any)
	vnet["id"] = "/subscriptions/" + subscription + "/resourceGroups/mc/providers/Microsoft.Network/virtualNetworks/mc-vnet"
}

// withPrivateEndpoints returns a copy of spec with pes added to the node
// subnet.
func withPrivateEndpoints(spec map[string]any, pes ...map[string]any) map[string]any {
	out := runtimeDeepCopy(spec)
	for _, s := range subnets(out) {
		if s["name"] != nodeSubnet {
			continue
		}
		list, _ := s["privateEndpoints"].([]any)
		for _, pe := range pes {
			list = append(list, runtimeDeepCopy(pe))
		}
		s["privateEndpoints"] = list
	}
	return out
}

// withoutPrivateEndpoint returns a copy of spec without the named entry.
func withoutPrivateEndpoint(spec map[string]any, name string) map[string]any {
	out := runtimeDeepCopy(spec)
	for _, s := range subnets(out) {
		list, _ := s["privateEndpoints"].([]any)
		kept := []any{}
		for _, pe := range list {
			if pe.(map[string]any)["name"] != name {
				kept = append(kept, pe)
			}
		}
		if _, had := s["privateEndpoints"]; had {
			s["privateEndpoints"] = kept
		}
	}
	return out
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// assertSpec compares the whole spec, so any field lost or changed by an
// apply shows up in the diff. Entry order within a list map is not part of
// the contract, so lists of private endpoints are compared sorted by name.
func assertSpec(t *testing.T, c client.Client, want map[string]any, when string) {
	t.Helper()
	got := getSpec(t, c)
	if diff := cmp.Diff(normalize(want), normalize(got)); diff != "" {
		t.Errorf("%s: AzureCluster spec (-want +got):\n%s", when, diff)
	}
}

func normalize(spec map[string]any) map[string]any {
	out := runtimeDeepCopy(spec)
	for _, s := range subnets(out) {
		list, ok := s["privateEndpoints"].([]any)
		if !ok {
			continue
		}
		if len(list) == 0 {
			// An emptied list map and an absent one mean the same.
			delete(s, "privateEndpoints")
			continue
		}
		sort.Slice(list, func(i, j int) bool {
			return list[i].(map[string]any)["name"].(string) < list[j].(map[string]any)["name"].(string)
		})
	}
	return out
}

// TestCurrentOwnedReadsBackTheApply applies the operator's fields through
// Owned and reads them back from managedFields: equal to what was applied,
// with the user's own entry left out.
func TestCurrentOwnedReadsBackTheApply(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaFork})
	ctx := context.Background()
	c := env.Client
	createNamespace(t, c)
	if err := c.Create(ctx, azureCluster(testenv.SchemaFork), client.FieldOwner(userManager)); err != nil {
		t.Fatal(err)
	}
	want := capz.Owned{
		Endpoints: map[string][]capz.PrivateEndpoint{nodeSubnet: {{
			Name: "wc1-api-privatelink-privateendpoint", Location: "westeurope", ManualApproval: true,
			Connections: []capz.PrivateLinkServiceConnection{{Name: "wc1-api-privatelink-connection", PrivateLinkServiceID: "/subscriptions/" + subscription + "/resourceGroups/wc1/providers/Microsoft.Network/privateLinkServices/wc1-api-privatelink", RequestMessage: "please"}},
		}}},
		Finalizers:  []string{"azure-private-endpoint-operator.giantswarm.io/azurecluster"},
		Annotations: map[string]string{"azure-private-endpoint-operator.giantswarm.io/private-link-apiserver-ip": "10.0.0.5"},
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.ApplyConfiguration(namespace, clusterName, "")),
		client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	u := getObject(t, c)
	view, errs := capz.FromUnstructured(u)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	got := capz.CurrentOwned(u, view, capz.FieldManager)
	if !got.Equal(want) {
		t.Errorf("read back %+v, applied %+v", got, want)
	}
	if capz.CurrentOwned(u, view, "someone-else").Equal(want) {
		t.Error("another manager is read as owning the operator's fields")
	}
	// Who holds each entry: the operator its own, the user theirs.
	wantOwners := map[capz.EndpointKey][]string{
		{Subnet: nodeSubnet, Name: "wc1-api-privatelink-privateendpoint"}: {capz.FieldManager},
		{Subnet: nodeSubnet, Name: "users-own-privateendpoint"}:           {userManager},
	}
	if diff := cmp.Diff(wantOwners, capz.EndpointOwners(u)); diff != "" {
		t.Errorf("EndpointOwners (-want +got):\n%s", diff)
	}
	// An apply of the status subresource under the same manager is not
	// an apply of the spec: CurrentOwned reads only the main resource.
	status := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"ready": true}}}
	status.SetGroupVersionKind(capz.AzureClusterGVK)
	status.SetNamespace(namespace)
	status.SetName(clusterName)
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(status), client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	u = getObject(t, c)
	if got := capz.CurrentOwned(u, view, capz.FieldManager); !got.Equal(want) {
		t.Errorf("after a status apply, read back %+v, applied %+v", got, want)
	}
}

// TestApplyNeverCreates: an apply carrying the UID the operator read is
// refused once that object is gone, instead of creating an empty one.
func TestApplyNeverCreates(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaFork})
	ctx := context.Background()
	c := env.Client
	createNamespace(t, c)
	if err := c.Create(ctx, azureCluster(testenv.SchemaFork)); err != nil {
		t.Fatal(err)
	}
	u := getObject(t, c)
	if err := c.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	cfg := capz.Owned{Finalizers: []string{"x.io/y"}}.ApplyConfiguration(namespace, clusterName, u.GetUID())
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(cfg), client.FieldOwner(capz.FieldManager), client.ForceOwnership)
	if !apierrors.IsConflict(err) {
		t.Errorf("applying to a deleted object: want a conflict, got %v", err)
	}
	gone := &unstructured.Unstructured{}
	gone.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, gone); !apierrors.IsNotFound(err) {
		t.Errorf("the apply resurrected the object: %v", err)
	}
}
