package testenv

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestResetEmptiesToBaseline: what a test leaves behind (namespaces with
// objects held by finalizers, a CAPZ object through CAPZ's webhooks, a
// cluster-scoped role, a lease in kube-system) is gone after reset, and the
// API server holds exactly its baseline again; a baseline object changed or
// a schema upgraded makes the environment not reusable.
func TestResetEmptiesToBaseline(t *testing.T) {
	ctx := context.Background()
	e, err := start(ctx, Options{Schema: SchemaFork})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Error(err)
		}
	})
	if e.base, err = e.snapshot(ctx); err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		leaveBehind(t, e)
		if err := e.reset(ctx); err != nil {
			t.Fatalf("round %d: reset: %v", round, err)
		}
		all, err := e.inventory(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if extra := e.base.extra(all); len(extra) > 0 {
			t.Fatalf("round %d: left after reset: %v", round, extra)
		}
	}

	def := &corev1.Namespace{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: "default"}, def); err != nil {
		t.Fatal(err)
	}
	def.Labels = map[string]string{"changed": "by-a-test"}
	if err := e.Client.Update(ctx, def); err != nil {
		t.Fatal(err)
	}
	if err := e.reset(ctx); err == nil || !strings.Contains(err.Error(), "namespaces/default was changed") {
		t.Errorf("reset after the default namespace changed: %v, want it refused", err)
	}

	base, err := e.snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.base = base
	if err := e.InstallSchema(ctx, SchemaV127); err != nil {
		t.Fatal(err)
	}
	if err := e.reset(ctx); err == nil || !strings.Contains(err.Error(), "schema moved") {
		t.Errorf("reset after a schema upgrade: %v, want it refused", err)
	}
}

// leaveBehind makes what a test may leave: a namespace being deleted with a
// ConfigMap held by a finalizer and a CAPZ object (through CAPZ's
// webhooks), a cluster-scoped role, a ConfigMap in kube-system.
func leaveBehind(t *testing.T, e *Env) {
	t.Helper()
	ctx := context.Background()
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "left-behind", Name: "held", Finalizers: []string{"example.com/hold"}}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "left-behind"}},
	} {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	ac := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "AzureCluster",
		"metadata": map[string]any{"namespace": "left-behind", "name": "wc", "finalizers": []any{"azurecluster.infrastructure.cluster.x-k8s.io"}},
		"spec": map[string]any{"location": "westeurope", "resourceGroup": "wc", "subscriptionID": "22222222-2222-2222-2222-222222222222",
			"identityRef": map[string]any{"kind": "AzureClusterIdentity", "name": "id", "namespace": "left-behind"}},
	}}
	if err := e.Client.Create(ctx, ac); err != nil {
		t.Fatal(err)
	}
	// A namespace being deleted waits for the namespace controller,
	// which envtest does not run.
	if err := e.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "left-behind"}}); err != nil {
		t.Fatal(err)
	}
}
