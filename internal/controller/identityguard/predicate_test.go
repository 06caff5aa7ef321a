package identityguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestSecretRelevant(t *testing.T) {
	base := func() *unstructured.Unstructured {
		u := identity()
		u.SetNamespace("org-a")
		u.SetName("id")
		u.Object["spec"] = map[string]any{"type": "ServicePrincipal", "clientSecret": map[string]any{"name": "s"}}
		return u
	}
	for _, tc := range []struct {
		reason string
		change func(*unstructured.Unstructured)
		want   bool
	}{
		{"CAPZ's finalizer for one more cluster does not change who needs the Secret", func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{"azurecluster.infrastructure.cluster.x-k8s.io/abc"})
		}, false},
		{"the guard's finalizer on the identity: its users changed", func(u *unstructured.Unstructured) {
			u.SetFinalizers([]string{Finalizer})
		}, true},
		{"a new spec.clientSecret", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "other", "spec", "clientSecret", "name")
		}, true},
		{"the identity is being deleted", func(u *unstructured.Unstructured) {
			now := metav1.Now()
			u.SetDeletionTimestamp(&now)
		}, true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			got := secretRelevant().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
