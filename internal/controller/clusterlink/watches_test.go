package clusterlink

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestIdentitySpecChanged(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := capz.Object(capz.AzureClusterIdentityGVK)
		u.SetNamespace("org-a")
		u.SetName("id")
		u.Object["spec"] = map[string]any{"type": "ServicePrincipal", "clientID": "c", "allowedNamespaces": map[string]any{}}
		return u
	}
	for _, tc := range []struct {
		reason string
		change func(*unstructured.Unstructured)
		want   bool
	}{
		{"CAPZ adds its finalizer for one more cluster: no cluster needs another look", func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{"azurecluster.infrastructure.cluster.x-k8s.io/abc"})
		}, false},
		{"labels, annotations and a new resourceVersion change nothing a cluster reads", func(u *unstructured.Unstructured) {
			u.SetLabels(map[string]string{"a": "b"})
			u.SetAnnotations(map[string]string{"c": "d"})
			u.SetResourceVersion("42")
		}, false},
		{"status is not read", func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"ready": true} }, false},
		{"allowedNamespaces decide whether a cluster may use the identity", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedStringSlice(u.Object, []string{"org-b"}, "spec", "allowedNamespaces", "list")
		}, true},
		{"a new client ID is a new credential", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "clientID")
		}, true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			got := identitySpecChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
