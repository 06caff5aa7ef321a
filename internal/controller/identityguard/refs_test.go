package identityguard

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

func TestEndpointIdentities(t *testing.T) {
	ref := func(name, ns string) *v1alpha1.IdentityReference {
		return &v1alpha1.IdentityReference{Name: name, Namespace: ns}
	}
	e := &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "e"}}
	e.Spec.IdentityRef = ref("own", "")
	e.Spec.DNS = &v1alpha1.PrivateEndpointDNS{IdentityRef: ref("hub", "platform"), AdditionalZones: []v1alpha1.PrivateEndpointDNSZone{
		{IdentityRef: ref("own", "tenant")}, {IdentityRef: ref("other-hub", "platform")}, {},
	}}
	e.Status.DNSIdentityRef = ref("old-hub", "platform")
	e.Status.DNSZones = []v1alpha1.DNSZoneStatus{{IdentityRef: ref("older-hub", "platform")}}
	want := []string{"tenant/own", "platform/old-hub", "platform/hub", "platform/other-hub", "platform/older-hub"}
	if diff := cmp.Diff(want, endpointIdentities(e)); diff != "" {
		t.Errorf("every identity of spec and status, once each, the object's namespace by default (-want +got):\n%s", diff)
	}
	if got := endpointIdentities(&v1alpha1.AzurePrivateEndpoint{}); got != nil {
		t.Errorf("no identity (the operator's own credential): %v", got)
	}
}

func TestClusterIdentities(t *testing.T) {
	cluster := func(finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"identityRef": map[string]any{"name": "id"}}}}
		u.SetGroupVersionKind(capz.AzureClusterGVK)
		u.SetNamespace("org-a")
		u.SetFinalizers(finalizers)
		return u
	}
	if got := clusterIdentities(cluster("azurecluster.infrastructure.cluster.x-k8s.io")); got != nil {
		t.Errorf("a cluster the wiring does not hold uses nothing of the operator's: %v", got)
	}
	if diff := cmp.Diff([]string{wiringHolds, "org-a/id"}, clusterIdentities(cluster(clusterlink.Finalizer))); diff != "" {
		t.Errorf("held by the wiring: its identity (CAPZ's namespace default) and the wiring's (-want +got):\n%s", diff)
	}
}

func TestSecretOf(t *testing.T) {
	id := func(secret map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"type": "ServicePrincipal"}}}
		if secret != nil {
			u.Object["spec"].(map[string]any)["clientSecret"] = secret
		}
		u.SetNamespace("ids")
		return u
	}
	for _, tc := range []struct {
		secret map[string]any
		want   string
	}{
		{map[string]any{"name": "s"}, "ids/s"},
		{map[string]any{"name": "s", "namespace": "secrets"}, "secrets/s"},
		{nil, ""},
	} {
		if got := secretOf(id(tc.secret)); got != tc.want {
			t.Errorf("secretOf(%v) = %q, want %q", tc.secret, got, tc.want)
		}
	}
}
