package clusterlink

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
	u := createAzureCluster(t, env, key.Name)
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

// TestConditionBothForms: a condition is written in the v1beta1 list,
// and, once the AzureCluster's schema has status.v1beta2 (a CAPZ keeping
// Cluster API's v1beta2 form writes its conditions there), in that
// metav1.Condition list too, with the same status, reason and message and
// the object's generation; CAPZ's conditions stay. Without the field one
// write is made and a condition that says the same is not written again.
func TestConditionBothForms(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaV127})
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "org-a"}}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	w := newConditionWriter(t, env)

	// CAPZ v1.27 as published: the v1beta1 list only.
	after := w.write(createAzureCluster(t, env, "plain"), "Unknown", ReasonEndpointPending, "waiting")
	if _, found, _ := unstructured.NestedMap(after.Object, "status", "v1beta2"); found || ConditionOf(after, ConditionGSPrivateLinksReady)["reason"] != ReasonEndpointPending {
		t.Errorf("without the v1beta2 field: %v", after.Object["status"])
	}
	w.write(after, "Unknown", ReasonEndpointPending, "waiting")
	if w.writes != 1 {
		t.Errorf("%d writes for one condition written twice, want 1", w.writes)
	}

	addV1Beta2Status(t, env)
	wc := withCAPZV1Beta2(t, env, createAzureCluster(t, env, "wc"))
	for _, step := range []wantCondition{
		{typ: ConditionGSPrivateLinksReady, status: "Unknown", reason: ReasonEndpointPending, message: "waiting for approval"},
		{typ: ConditionGSPrivateLinksReady, status: "True", reason: "PrivateLinksReady", message: "wired"},
	} {
		w.writes = 0
		wc = w.write(wc, step.status, step.reason, step.message)
		checkBothForms(t, wc, step)
		if w.writes != 1 {
			t.Errorf("%s: %d writes, want 1 for both forms", step.status, w.writes)
		}
		w.write(wc, step.status, step.reason, step.message)
		if w.writes != 1 {
			t.Errorf("%s: written again though both forms say it", step.status)
		}
	}

	// A spec change moves the generation on: the same condition is
	// written again in the v1beta2 form, for the new generation, and the
	// transition times stay.
	since := ConditionOf(wc, ConditionGSPrivateLinksReady)["lastTransitionTime"]
	wc = bumpGeneration(t, env, wc)
	w.writes = 0
	wc = w.write(wc, "True", "PrivateLinksReady", "wired")
	checkBothForms(t, wc, wantCondition{typ: ConditionGSPrivateLinksReady, status: "True", reason: "PrivateLinksReady", message: "wired"})
	if w.writes != 1 || ConditionOf(wc, ConditionGSPrivateLinksReady)["lastTransitionTime"] != since ||
		v1beta2Condition(wc, ConditionGSPrivateLinksReady)["lastTransitionTime"] != since {
		t.Errorf("after a new generation: %d writes (want 1), transition times %v / %v, want %v", w.writes,
			ConditionOf(wc, ConditionGSPrivateLinksReady)["lastTransitionTime"], v1beta2Condition(wc, ConditionGSPrivateLinksReady)["lastTransitionTime"], since)
	}
}

// bumpGeneration changes u's spec (a tag) and returns u as the API server
// has it after, with its new generation.
func bumpGeneration(t *testing.T, env *testenv.Env, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"additionalTags":{"bump":"1"}}}`))
	if err := env.Client.Patch(ctx, u.DeepCopy(), patch); err != nil {
		t.Fatal(err)
	}
	after, err := getAzureCluster(ctx, env.Client, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetGeneration() == u.GetGeneration() {
		t.Fatalf("the spec change did not move the generation on (%d)", after.GetGeneration())
	}
	return after
}

// conditionWriter writes GSPrivateLinksReady as the controllers do,
// counting the status writes.
type conditionWriter struct {
	t      *testing.T
	env    *testenv.Env
	c      client.Client
	writes int
}

func newConditionWriter(t *testing.T, env *testenv.Env) *conditionWriter {
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &conditionWriter{t: t, env: env}
	w.c = interceptor.NewClient(direct, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			w.writes++
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	return w
}

// write writes the condition (True, or Unknown as a wait) and returns the
// object as the API server has it after.
func (w *conditionWriter) write(u *unstructured.Unstructured, status, reason, msg string) *unstructured.Unstructured {
	w.t.Helper()
	ctx := context.Background()
	var err error
	if status == "True" {
		err = SetTrueCondition(ctx, w.c, w.c, u, ConditionGSPrivateLinksReady, reason, msg, true)
	} else {
		err = SetWaitingCondition(ctx, w.c, w.c, u, ConditionGSPrivateLinksReady, reason, msg)
	}
	if err != nil {
		w.t.Fatal(err)
	}
	after, err := getAzureCluster(ctx, w.env.Client, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
	if err != nil {
		w.t.Fatal(err)
	}
	return after
}

// withCAPZV1Beta2 writes CAPZ's Ready in both forms on u, once the API
// server serves the changed schema, and returns u as written.
func withCAPZV1Beta2(t *testing.T, env *testenv.Env, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	capzV1Beta2 := map[string]any{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "m", "lastTransitionTime": "2026-11-25T00:00:00Z", "observedGeneration": int64(1)}
	pollUntil(t, "CAPZ's v1beta2 condition is kept by the API server", func() bool {
		fresh, err := getAzureCluster(ctx, env.Client, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
		if err != nil {
			return false
		}
		_ = unstructured.SetNestedSlice(fresh.Object, []any{capzV1Beta2}, "status", "v1beta2", "conditions")
		_ = unstructured.SetNestedSlice(fresh.Object, []any{cond("Ready", "False", "m")}, "status", "conditions")
		if err := env.Client.Status().Update(ctx, fresh); err != nil {
			return false
		}
		_, found, _ := unstructured.NestedSlice(fresh.Object, "status", "v1beta2", "conditions")
		u = fresh
		return found
	})
	return u
}

// checkBothForms: u says want in both lists, the v1beta2 one with u's
// generation, and CAPZ's Ready is still in both.
func checkBothForms(t *testing.T, u *unstructured.Unstructured, want wantCondition) {
	t.Helper()
	v1, v2 := ConditionOf(u, want.typ), v1beta2Condition(u, want.typ)
	for form, m := range map[string]map[string]any{"v1beta1": v1, "v1beta2": v2} {
		if m == nil || m["status"] != want.status || m["reason"] != want.reason || m["message"] != want.message {
			t.Errorf("%s: %s form: %v", want.status, form, m)
		}
	}
	if v2 == nil || v2["observedGeneration"] != u.GetGeneration() {
		t.Errorf("%s: v1beta2 form's observedGeneration %v, generation %d", want.status, v2["observedGeneration"], u.GetGeneration())
	}
	if v1beta2Condition(u, "Ready") == nil || ConditionOf(u, "Ready") == nil {
		t.Errorf("%s: CAPZ's Ready is lost: %v", want.status, u.Object["status"])
	}
}

// createAzureCluster creates an AzureCluster in org-a.
func createAzureCluster(t *testing.T, env *testenv.Env, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"location": "westeurope",
		"identityRef": map[string]any{"kind": "AzureClusterIdentity", "name": "id", "namespace": "org-a"}}}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace("org-a")
	u.SetName(name)
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// v1beta2Condition is the entry of typ in status.v1beta2.conditions.
func v1beta2Condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "v1beta2", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// addV1Beta2Status gives the AzureCluster CRD Cluster API's
// status.v1beta2.conditions, a metav1.Condition list keyed by type, as a
// provider on the v1beta2 contract's way has it (cluster-api
// api/core/v1beta1 ClusterV1Beta2Status). The test's API server is not
// reused after it (testenv's reset sees the changed CRD).
func addV1Beta2Status(t *testing.T, env *testenv.Env) {
	t.Helper()
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: "azureclusters.infrastructure.cluster.x-k8s.io"}, crd); err != nil {
		t.Fatal(err)
	}
	str := func(desc string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: desc}
	}
	condition := apiextensionsv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"lastTransitionTime", "message", "reason", "status", "type"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type": str("type"), "reason": str("reason"), "message": str("message"),
			"status":             {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"True"`)}, {Raw: []byte(`"False"`)}, {Raw: []byte(`"Unknown"`)}}},
			"lastTransitionTime": {Type: "string", Format: "date-time"},
			"observedGeneration": {Type: "integer", Format: "int64", Minimum: ptr.To(0.0)},
		},
	}
	listType, keys := "map", []string{"type"}
	for i := range crd.Spec.Versions {
		status := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"]
		status.Properties["v1beta2"] = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"conditions": {Type: "array", MaxItems: ptr.To[int64](32), XListType: &listType, XListMapKeys: keys,
				Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &condition}},
		}}
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["status"] = status
	}
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
}

// pollUntil polls cond every 200 ms for a minute.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestRemoveStaleLeavesItsObjectAlone: the MC's pass hands removeStale the
// cache's own object (gather reads it without a copy); the patch removes
// the entry in the API server and writes nothing into that object.
func TestRemoveStaleLeavesItsObjectAlone(t *testing.T) {
	u := capz.Object(capz.AzureClusterGVK)
	u.SetNamespace("org-mc")
	u.SetName("mc")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"name": "nodes",
		"privateEndpoints": []any{
			map[string]any{"name": "keep-privateendpoint"},
			map[string]any{"name": "old-privateendpoint"},
		},
	}}, "spec", "networkSpec", "subnets")
	c := fake.NewClientBuilder().WithObjects(u.DeepCopy()).Build()
	cached := u.DeepCopy()
	wrote, err := removeStale(context.Background(), c, cached, []StaleEntry{{Subnet: 0, Entry: 1, Name: "old-privateendpoint"}})
	if err != nil || !wrote {
		t.Fatalf("removeStale: wrote %v, err %v", wrote, err)
	}
	got := capz.Object(capz.AzureClusterGVK)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if entries := entriesOf(got); len(entries) != 1 || entries[capz.EndpointKey{Subnet: "nodes", Name: "keep-privateendpoint"}] == nil {
		t.Errorf("entries in the API server after the patch: %v; want only keep-privateendpoint", entries)
	}
	if !equality.Semantic.DeepEqual(u.Object, cached.Object) {
		t.Errorf("removeStale wrote into the object it was given: %v", cached.Object)
	}
}
