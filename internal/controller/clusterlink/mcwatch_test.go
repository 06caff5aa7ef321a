package clusterlink

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestEntryChanges: an MC write that only adds, removes or changes endpoint
// entries concerns the WCs those entries are for (by the group their
// connection targets, or by a name their links give); anything else
// concerns every WC.
func TestEntryChanges(t *testing.T) {
	entry := func(name, sub, rg string) any {
		return map[string]any{"name": name, "privateLinkServiceConnections": []any{map[string]any{
			"name": name + "-connection", "privateLinkServiceID": "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/privateLinkServices/x",
		}}}
	}
	mcWith := func(mutate func(u *unstructured.Unstructured), entries ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureCluster",
			"metadata": map[string]any{"name": "mc", "namespace": "org-giantswarm", "resourceVersion": "1"},
			"spec": map[string]any{"subscriptionID": "mc-sub", "networkSpec": map[string]any{"subnets": []any{
				map[string]any{"name": "mc-cp", "role": "control-plane"},
				map[string]any{"name": "mc-nodes", "role": "node", "privateEndpoints": entries},
			}}},
		}}
		if mutate != nil {
			mutate(u)
		}
		return u
	}
	wcU := func(name, sub, rg, link string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureCluster",
			"metadata": map[string]any{"name": name, "namespace": "org-a"},
			"spec": map[string]any{"subscriptionID": sub, "resourceGroup": rg, "networkSpec": map[string]any{
				"apiServerLB": map[string]any{"type": "Internal", "privateLinks": []any{map[string]any{"name": link}}},
			}},
		}}
	}
	a := entry("a-api-privateendpoint", "SUB-A", "A-RG")
	b := entry("b-api-privateendpoint", "sub-b", "b-rg")
	wcA := wcU("a", "sub-a", "a-rg", "a-api")
	wcB := wcU("b", "sub-b", "b-rg", "b-api")
	// Another tenant's WC whose link gives the name of a's entry.
	wcNamedLikeA := wcU("a", "sub-c", "c-rg", "a-api")

	for _, tc := range []struct {
		reason      string
		old, cur    *unstructured.Unstructured
		onlyEntries bool
		concerned   []*unstructured.Unstructured
		unconcerned []*unstructured.Unstructured
	}{
		{
			reason: "an entry added: its WC, and a WC whose link gives that name; not the others",
			old:    mcWith(nil, b), cur: mcWith(func(u *unstructured.Unstructured) { u.SetResourceVersion("2"); u.SetGeneration(2) }, a, b),
			onlyEntries: true, concerned: []*unstructured.Unstructured{wcA, wcNamedLikeA}, unconcerned: []*unstructured.Unstructured{wcB},
		},
		{
			reason: "an entry removed",
			old:    mcWith(nil, a, b), cur: mcWith(nil, b),
			onlyEntries: true, concerned: []*unstructured.Unstructured{wcA}, unconcerned: []*unstructured.Unstructured{wcB},
		},
		{
			reason: "nothing of the entries changed (a resync, a resource version): nobody",
			old:    mcWith(nil, a, b), cur: mcWith(func(u *unstructured.Unstructured) { u.SetResourceVersion("9") }, a, b),
			onlyEntries: true, unconcerned: []*unstructured.Unstructured{wcA, wcB},
		},
		{
			reason: "a subnet ID written by CAPZ: every WC",
			old:    mcWith(nil, a), cur: mcWith(func(u *unstructured.Unstructured) {
				subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
				subnets[1].(map[string]any)["id"] = "/subscriptions/mc-sub/.../subnets/mc-nodes"
				_ = unstructured.SetNestedSlice(u.Object, subnets, "spec", "networkSpec", "subnets")
			}, a),
		},
		{
			reason: "an annotation (the MC's base domain): every WC",
			old:    mcWith(nil, a), cur: mcWith(func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"x": "y"}) }, a),
		},
		{
			reason: "its status: every WC",
			old:    mcWith(nil, a), cur: mcWith(func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"ready": true} }, a),
		},
		{
			reason: "the MC's own condition written, in both forms: nobody (no WC plans from it)",
			old:    mcWith(withConditions(capzReady), a, b),
			cur:    mcWith(withConditions(capzReady, mcCond("Unknown")), a, b), onlyEntries: true, unconcerned: []*unstructured.Unstructured{wcA, wcB},
		},
		{
			reason: "the MC's own condition changed: nobody",
			old:    mcWith(withConditions(mcCond("Unknown"), capzReady), a),
			cur:    mcWith(withConditions(mcCond("True"), capzReady), a), onlyEntries: true, unconcerned: []*unstructured.Unstructured{wcA, wcB},
		},
		{
			reason: "a condition of CAPZ's beside it: every WC",
			old:    mcWith(withConditions(mcCond("True")), a),
			cur:    mcWith(withConditions(mcCond("True"), capzReady), a),
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			changed, only := entryChanges(tc.old, tc.cur)
			if only != tc.onlyEntries {
				t.Fatalf("only entries changed: %v, want %v", only, tc.onlyEntries)
			}
			for _, u := range tc.concerned {
				if !changed.concerns(u) {
					t.Errorf("%s/%s (%v) is not woken; changed %+v", u.GetNamespace(), u.GetName(), u.Object["spec"], changed)
				}
			}
			for _, u := range tc.unconcerned {
				if changed.concerns(u) {
					t.Errorf("%s/%s is woken for nothing; changed %+v", u.GetNamespace(), u.GetName(), changed)
				}
			}
		})
	}
}

// withConditions sets an object's conditions, in the v1beta1 list and in
// the v1beta2 one.
func withConditions(conds ...map[string]any) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		list := make([]any, 0, len(conds))
		for _, c := range conds {
			list = append(list, c)
		}
		u.Object["status"] = map[string]any{"conditions": list, "v1beta2": map[string]any{"conditions": slices.Clone(list)}}
	}
}

var capzReady = map[string]any{"type": "Ready", "status": "True"}

func mcCond(status string) map[string]any {
	return map[string]any{"type": ConditionGSWorkloadClusterEndpointsReady, "status": status, "reason": ReasonEndpointEntriesWritten}
}
