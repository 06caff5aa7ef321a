package identityguard_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/identityguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const ns = "tenant"

func guard(t *testing.T, w *testworld.World, opts identityguard.Options) (stop func()) {
	t.Helper()
	return w.StartManager(t, false, func(mgr ctrl.Manager, _ *azure.Clients) error {
		return identityguard.Setup(context.Background(), mgr, opts)
	})
}

func identity(t *testing.T, w *testworld.World, name, secret string) {
	t.Helper()
	err := w.CreateIdentity(context.Background(), sandbox.Identity{Namespace: ns, Name: name, SecretName: secret,
		TenantID: testworld.TenantID, ClientID: testworld.OperatorClient, ClientSecret: testworld.OperatorSecret})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// secondIdentity is an identity reading an existing Secret, allowed in
// the namespaces listed (every namespace without a list).
func secondIdentity(t *testing.T, w *testworld.World, name, secret string, allowed ...any) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{
		"type": "ServicePrincipal", "tenantID": testworld.TenantID, "clientID": testworld.OperatorClient,
		"clientSecret": map[string]any{"name": secret}, "allowedNamespaces": map[string]any{},
	}
	if len(allowed) > 0 {
		u.Object["spec"].(map[string]any)["allowedNamespaces"] = map[string]any{"list": allowed}
	}
	if err := w.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// endpoint is an AzurePrivateEndpoint with an identity; no controller runs
// for it here: the guard reads only the object.
func endpoint(t *testing.T, w *testworld.World, name, id string) {
	t.Helper()
	endpointIn(t, w, ns, name, id, "")
}

// endpointIn is endpoint in a namespace, naming the identity in idNS
// (empty: its own).
func endpointIn(t *testing.T, w *testworld.World, namespace, name, id, idNS string) {
	t.Helper()
	e := &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: "22222222-2222-2222-2222-222222222222", ResourceGroup: "rg", Location: "westeurope",
			SubnetID:             "/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s",
			PrivateLinkServiceID: "/subscriptions/11111111-1111-1111-1111-111111111111/resourceGroups/p/providers/Microsoft.Network/privateLinkServices/svc",
			IdentityRef:          &v1alpha1.IdentityReference{Name: id, Namespace: idNS},
		},
	}
	if err := w.Client.Create(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

func deleteEndpoint(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	deleteEndpointIn(t, w, ns, name)
}

func deleteEndpointIn(t *testing.T, w *testworld.World, namespace, name string) {
	t.Helper()
	e := &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := w.Client.Delete(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// protected waits until an identity ("AzureClusterIdentity") or a Secret
// has the guard's finalizer (want) or not.
func protected(t *testing.T, w *testworld.World, kind, name string, want bool) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%s %s protected=%v", kind, name, want), func(ctx context.Context) (bool, string) {
		var obj client.Object = &corev1.Secret{}
		if kind == "AzureClusterIdentity" {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
			obj = u
		}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		return slices.Contains(obj.GetFinalizers(), identityguard.Finalizer) == want, fmt.Sprint(obj.GetFinalizers())
	})
}

// TestSharedIdentitiesAndSecrets: an identity is protected while any
// object uses it, a Secret while any identity reading it is in use; off,
// the guard takes its finalizers off again.
func TestSharedIdentitiesAndSecrets(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream})
	w.Namespace(t, ns)
	identity(t, w, "a", "shared-secret")
	secondIdentity(t, w, "b", "shared-secret")
	identity(t, w, "unused", "unused-secret")
	// Someone else's: it does not allow this namespace, so an object here
	// naming it cannot use it, and must not pin it.
	identity(t, w, "theirs", "theirs-secret")
	secondIdentity(t, w, "theirs-only", "theirs-secret", "other")
	stop := guard(t, w, identityguard.Options{Protect: true, PrivateEndpoints: true})

	endpoint(t, w, "squatter", "theirs-only") // first: seen before what is waited on below
	endpoint(t, w, "e1", "a")
	endpoint(t, w, "e2", "b")
	endpoint(t, w, "e3", "b")
	protected(t, w, "AzureClusterIdentity", "a", true)
	protected(t, w, "AzureClusterIdentity", "b", true)
	protected(t, w, "Secret", "shared-secret", true)

	deleteEndpoint(t, w, "e1")
	protected(t, w, "AzureClusterIdentity", "a", false)
	deleteEndpoint(t, w, "e2")
	// b is still used by e3, so the Secret both read stays protected.
	protected(t, w, "AzureClusterIdentity", "b", true)
	protected(t, w, "Secret", "shared-secret", true)
	protected(t, w, "AzureClusterIdentity", "unused", false)
	protected(t, w, "Secret", "unused-secret", false)
	protected(t, w, "AzureClusterIdentity", "theirs-only", false)
	protected(t, w, "Secret", "theirs-secret", false)

	// Among users it does not allow, one it does pins it, wherever the
	// cache lists it (the guard looks at one user before all of them).
	for i := range 4 {
		endpoint(t, w, fmt.Sprintf("squatter-%d", i), "theirs-only")
	}
	w.Namespace(t, "other")
	endpointIn(t, w, "other", "theirs", "theirs-only", ns)
	protected(t, w, "AzureClusterIdentity", "theirs-only", true)
	deleteEndpointIn(t, w, "other", "theirs")
	protected(t, w, "AzureClusterIdentity", "theirs-only", false)

	// An identity in use that a person deletes past the guard's finalizer:
	// its Secret is let go as soon as it is gone.
	identity(t, w, "forced", "forced-secret")
	endpoint(t, w, "e4", "forced")
	protected(t, w, "AzureClusterIdentity", "forced", true)
	protected(t, w, "Secret", "forced-secret", true)
	forceDelete(t, w, "forced")
	protected(t, w, "Secret", "forced-secret", false)

	// Turned off: what it put on comes off, though e3 still uses b.
	stop()
	guard(t, w, identityguard.Options{Protect: false, PrivateEndpoints: true})
	protected(t, w, "AzureClusterIdentity", "b", false)
	protected(t, w, "Secret", "shared-secret", false)
}

// TestNamespaceDeletedFirstIdentity: everything in the namespace is
// deleted at once, the identity and its Secret first, as a namespace
// deletion may; both stay until the last object that uses them is gone,
// then go.
func TestNamespaceDeletedFirstIdentity(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream})
	w.Namespace(t, ns)
	identity(t, w, "a", "a-secret")
	guard(t, w, identityguard.Options{Protect: true, PrivateEndpoints: true})
	endpoint(t, w, "e1", "a")
	// A finalizer of the endpoint's controller, removed below by hand, so
	// the endpoint outlives the deletion request like a real one does.
	e := &v1alpha1.AzurePrivateEndpoint{}
	ctx := context.Background()
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "e1"}, e); err != nil {
		t.Fatal(err)
	}
	e.Finalizers = append(e.Finalizers, "privatelink.giantswarm.io/azureprivateendpoint")
	if err := w.Client.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	protected(t, w, "AzureClusterIdentity", "a", true)
	protected(t, w, "Secret", "a-secret", true)

	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	id.SetNamespace(ns)
	id.SetName("a")
	for _, obj := range []client.Object{id, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-secret"}}, e} {
		if err := w.Client.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	// The endpoint's cleanup can still read both.
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(id), id); err != nil || id.GetDeletionTimestamp() == nil {
		t.Fatalf("the identity must be there, being deleted: %v", err)
	}
	s := &corev1.Secret{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-secret"}, s); err != nil || s.DeletionTimestamp == nil {
		t.Fatalf("the Secret must be there, being deleted: %v", err)
	}
	// The endpoint's controller is done.
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
		t.Fatal(err)
	}
	e.Finalizers = nil
	if err := w.Client.Update(ctx, e); err != nil {
		t.Fatal(err)
	}
	gone(t, w, id)
	gone(t, w, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-secret"}})
}

// TestWiringHoldsClusterAndMCIdentities: a cluster the wiring holds (its
// finalizer) keeps its own identity and the management cluster's, also
// after CAPZ's own cleanup of the cluster ended and CAPZ let go of the
// identity; once the wiring lets it go, both are free again.
func TestWiringHoldsClusterAndMCIdentities(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream})
	w.Namespace(t, ns)
	identity(t, w, "wc-id", "wc-secret")
	identity(t, w, "mc-id", "mc-secret")
	identity(t, w, "zone-id", "zone-secret")
	ctx := context.Background()
	cluster := func(name, id string, finalizers ...string) *unstructured.Unstructured {
		u := testworld.Cluster{Namespace: ns, Name: name, Subscription: "22222222-2222-2222-2222-222222222222", Private: true, CIDR16: 20}.Object(testenv.SchemaUpstream)
		if err := unstructured.SetNestedMap(u.Object, map[string]any{"kind": "AzureClusterIdentity", "name": id, "namespace": ns}, "spec", "identityRef"); err != nil {
			t.Fatal(err)
		}
		u.SetFinalizers(finalizers)
		if err := w.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	cluster("mc", "mc-id")
	wc := cluster("wc", "wc-id", clusterlink.Finalizer)
	guard(t, w, identityguard.Options{
		Protect: true, ManagementCluster: types.NamespacedName{Namespace: ns, Name: "mc"},
		WiringIdentities: []types.NamespacedName{{Namespace: ns, Name: "zone-id"}},
	})
	for _, id := range []string{"wc-id", "mc-id", "zone-id"} {
		protected(t, w, "AzureClusterIdentity", id, true)
	}
	protected(t, w, "Secret", "mc-secret", true)

	// The WC is deleted: CAPZ (capzsim) deletes its resource group and
	// takes its own finalizers off the cluster and off the identity; the
	// wiring still holds the cluster, so the guard still holds the
	// identity.
	if err := w.Client.Delete(ctx, wc); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "CAPZ done with the WC", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(wc), wc); err != nil {
			return false, err.Error()
		}
		id := &unstructured.Unstructured{}
		id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "wc-id"}, id); err != nil {
			return false, err.Error()
		}
		return slices.Equal(wc.GetFinalizers(), []string{clusterlink.Finalizer}) && slices.Equal(id.GetFinalizers(), []string{identityguard.Finalizer}),
			fmt.Sprint("cluster ", wc.GetFinalizers(), ", identity ", id.GetFinalizers())
	})
	wc.SetFinalizers(nil) // the wiring released it
	if err := w.Client.Update(ctx, wc); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"wc-id", "mc-id", "zone-id"} {
		protected(t, w, "AzureClusterIdentity", id, false)
	}
	protected(t, w, "Secret", "mc-secret", false)
}

func gone(t *testing.T, w *testworld.World, obj client.Object) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, obj.GetName()+" gone", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%v, finalizers %v", err, obj.GetFinalizers())
	})
}

// forceDelete deletes an identity and removes every finalizer from it by
// hand, as a person might.
func forceDelete(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	ctx := context.Background()
	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	id.SetNamespace(ns)
	id.SetName(name)
	if err := w.Client.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, name+" finalizers removed by hand", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, client.ObjectKeyFromObject(id), id); err != nil {
			return apierrors.IsNotFound(err), err.Error()
		}
		id.SetFinalizers(nil)
		err := w.Client.Update(ctx, id)
		return err == nil, fmt.Sprint(err)
	})
	gone(t, w, id)
}
