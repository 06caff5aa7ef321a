package identityguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
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

// TestUsesChanged: a user object's update reaches the guard only when the
// identities it uses change; the writes of a converging cluster (status,
// annotations, CAPZ's finalizer, the MC's entries) do not.
func TestUsesChanged(t *testing.T) {
	cluster := func() client.Object {
		u := azureCluster()
		u.SetNamespace("org-a")
		u.SetName("wc")
		u.SetFinalizers([]string{clusterlink.Finalizer})
		u.Object["spec"] = map[string]any{"identityRef": map[string]any{"name": "id", "namespace": "org-a"}}
		return u
	}
	endpoint := func() client.Object {
		return &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "e"},
			Spec: v1alpha1.AzurePrivateEndpointSpec{IdentityRef: &v1alpha1.IdentityReference{Name: "id"}}}
	}
	for _, tc := range []struct {
		reason string
		base   func() client.Object
		uses   func(client.Object) []string
		change func(client.Object)
		want   bool
	}{
		{"a cluster's status and annotations", cluster, clusterUses, func(o client.Object) {
			u := o.(*unstructured.Unstructured)
			u.SetAnnotations(map[string]string{"privatelink.giantswarm.io/x": "10.0.0.4"})
			u.Object["status"] = map[string]any{"ready": true}
		}, false},
		{"CAPZ's finalizer beside the wiring's", cluster, clusterUses, func(o client.Object) {
			o.SetFinalizers(append(o.GetFinalizers(), "azurecluster.infrastructure.cluster.x-k8s.io"))
		}, false},
		{"being deleted, still held", cluster, clusterUses, func(o client.Object) {
			now := metav1.Now()
			o.SetDeletionTimestamp(&now)
		}, false},
		{"the wiring lets it go", cluster, clusterUses, func(o client.Object) { o.SetFinalizers(nil) }, true},
		{"another identity", cluster, clusterUses, func(o client.Object) {
			_ = unstructured.SetNestedField(o.(*unstructured.Unstructured).Object, "other", "spec", "identityRef", "name")
		}, true},
		{"an endpoint's status", endpoint, endpointIdentities, func(o client.Object) {
			o.(*v1alpha1.AzurePrivateEndpoint).Status.ConnectionState = "Approved"
		}, false},
		{"an endpoint's DNS identity recorded", endpoint, endpointIdentities, func(o client.Object) {
			o.(*v1alpha1.AzurePrivateEndpoint).Status.DNSIdentityRef = &v1alpha1.IdentityReference{Name: "dns"}
		}, true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			old, cur := tc.base(), tc.base()
			tc.change(cur)
			if got := usesChanged(tc.uses).Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("%s: passed %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}
