package privateendpoint_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/identityguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestNamespaceDeletedIdentityFirst deletes everything in the object's
// namespace at once, its identity and that identity's Secret first, as a
// namespace deletion may: the endpoint, its DNS zone and its records still
// go in Azure, and then the identity and the Secret go too. Without the
// identity guard, the object is stuck ("AzureClusterIdentity ... does not
// exist") and its endpoint stays in Azure.
func TestNamespaceDeletedIdentityFirst(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	if err := w.CreateIdentity(ctx, sandbox.Identity{Namespace: ns, Name: "tenant", SecretName: "tenant-secret",
		TenantID: testworld.TenantID, ClientID: testworld.OperatorClient, ClientSecret: testworld.OperatorSecret}); err != nil {
		t.Fatal(err)
	}
	w.StartManager(t, false, func(mgr ctrl.Manager, _ *azure.Clients) error {
		return identityguard.Setup(ctx, mgr, identityguard.Options{Protect: true, PrivateEndpoints: true, PrivateLinkServices: true})
	})
	obj := ape("tenants", svc.Status.ResourceID)
	obj.Spec.IdentityRef = &v1alpha1.IdentityReference{Name: "tenant"} // the object's namespace
	create(t, w, obj)
	ready(t, w, "tenants")
	if endpoint(w, "tenants") == nil {
		t.Fatal("no endpoint in Azure")
	}

	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	id.SetNamespace(ns)
	id.SetName("tenant")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-secret"}}
	testworld.Eventually(t, testworld.Timeout, "identity and Secret protected", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(id), id); err != nil {
			return false, err.Error()
		}
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return false, err.Error()
		}
		return hasFinalizer(id) && hasFinalizer(secret), fmt.Sprint(id.GetFinalizers(), secret.Finalizers)
	})
	for _, o := range []client.Object{id, secret, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenants"}}} {
		if err := w.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, w, "tenants")
	if e := endpoint(w, "tenants"); e != nil {
		t.Errorf("the endpoint outlived the object: %+v", e)
	}
	if zones := resources(w, "Microsoft.Network/privateDnsZones", "tenants.hcp.internal"); len(zones) != 0 {
		t.Errorf("the zone outlived the object: %v", zones)
	}
	for _, o := range []client.Object{id, secret} {
		testworld.Eventually(t, testworld.Timeout, o.GetName()+" gone", func(ctx context.Context) (bool, string) {
			err := w.Client.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), fmt.Sprint(err, o.GetFinalizers())
		})
	}
}

func hasFinalizer(o client.Object) bool {
	for _, f := range o.GetFinalizers() {
		if f == identityguard.Finalizer {
			return true
		}
	}
	return false
}
