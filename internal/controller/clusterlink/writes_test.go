package clusterlink

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// TestConditionBesideOtherWrites: a compatibility condition is written
// while CAPZ (or the other controller) writes the status between the
// operator's read and its write. Nothing fails and nothing is lost: CAPZ's
// condition stays, the operator's is added once, or replaced in place when
// its message must change. With a write locked on the object's version,
// every such race was a conflict (make bench-dns counted 207).
func TestConditionBesideOtherWrites(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaV127})
	ctx := context.Background()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "org-a"}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, c := range []conditionCase{
		{name: "added beside CAPZ's", before: []any{cond("Ready", "False", "")}, typ: ConditionGSPrivateLinksReady, msg: "m", wantEntries: 3},
		{name: "replaced in place", before: []any{cond("Ready", "False", ""), cond(ConditionGSDNSZoneReady, "True", "old")}, typ: ConditionGSDNSZoneReady, msg: "new", exact: true, wantEntries: 3},
		{name: "no conditions yet", typ: ConditionGSPrivateLinksReady, msg: "m", wantEntries: 1},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, env) })
	}
}

// conditionCase: the status's conditions when the operator reads (before),
// the condition it writes, and how many conditions there are after.
type conditionCase struct {
	name        string
	before      []any
	typ, msg    string
	exact       bool
	wantEntries int
}

func (c conditionCase) check(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "org-a", Name: "wc-" + string(rune('a'+len(c.before)))}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"location": "westeurope",
		"identityRef": map[string]any{"kind": "AzureClusterIdentity", "name": "id", "namespace": "org-a"}}}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	if c.before != nil {
		_ = unstructured.SetNestedSlice(u.Object, c.before, "status", "conditions")
		if err := env.Client.Status().Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	// CAPZ writes its condition between the operator's read and its write
	// (only where a list exists: creating the list is the one locked write).
	racy := racingCAPZ(t, env, key, c.before != nil)
	if err := SetTrueCondition(ctx, racy, racy, u, c.typ, "Reason", c.msg, c.exact); err != nil {
		t.Fatalf("SetTrueCondition: %v", err)
	}
	after, err := getAzureCluster(ctx, env.Client, key)
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(after.Object, "status", "conditions")
	if len(conds) != c.wantEntries {
		t.Errorf("%d conditions, want %d: %v", len(conds), c.wantEntries, conds)
	}
	if got := ConditionMessage(after, c.typ); got != c.msg || !HasCondition(after, c.typ) {
		t.Errorf("%s: True=%v message %q, want True %q", c.typ, HasCondition(after, c.typ), got, c.msg)
	}
	if c.before != nil && !HasCondition(after, "NetworkInfrastructureReady") {
		t.Error("CAPZ's condition written meanwhile is lost")
	}
}

// racingCAPZ is a client whose first status patch of key is preceded by
// CAPZ's write of a condition of its own (when race).
func racingCAPZ(t *testing.T, env *testenv.Env, key types.NamespacedName, race bool) client.Client {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if race {
				race = false
				capzU, err := getAzureCluster(ctx, cl, key)
				if err != nil {
					return err
				}
				conds, _, _ := unstructured.NestedSlice(capzU.Object, "status", "conditions")
				_ = unstructured.SetNestedSlice(capzU.Object, append(conds, cond("NetworkInfrastructureReady", "True", "")), "status", "conditions")
				if err := cl.Status().Update(ctx, capzU); err != nil {
					return err
				}
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

func cond(typ, status, msg string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "reason": "R", "lastTransitionTime": "2026-11-25T00:00:00Z"}
	if msg != "" {
		c["message"] = msg // CAPZ's schema refuses an empty one
	}
	return c
}
