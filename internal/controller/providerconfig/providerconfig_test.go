package providerconfig_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/providerconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	nsA     = "org-a"
	nsB     = "org-b"
	tenant  = "99999999-9999-9999-9999-999999999999"
	subA    = "11111111-1111-1111-1111-111111111111"
	clientA = "aaaaaaaa-0000-0000-0000-000000000001"
)

var wantOf = func(client, sub string) map[string]any {
	return map[string]any{
		"credentials":    map[string]any{"source": "UserAssignedManagedIdentity"},
		"clientID":       client,
		"subscriptionID": sub,
		"tenantID":       tenant,
	}
}

// TestProviderConfigs: the ProviderConfigs 0.7 writes, for an AzureCluster,
// an AzureManagedCluster and an AzureASOManagedCluster, with the same
// names and content and the same finalizer; none for a service principal
// or for an identity the Cluster's namespace may not use; the older
// operator's own ProviderConfig is taken over without losing what else it
// holds; a Cluster of the same name in another namespace never takes one
// over; deleting a Cluster deletes its ProviderConfig.
func TestProviderConfigs(t *testing.T) {
	env := pcEnv(t)
	ctx := context.Background()
	c := env.Client
	identity(t, c, nsA, "wi", "WorkloadIdentity", []any{nsA})
	identity(t, c, nsA, "sp", "ServicePrincipal", []any{nsA})
	identity(t, c, nsB, "elsewhere", "WorkloadIdentity", []any{nsB}) // org-a may not use it
	mustCreate(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "aso-creds"}, StringData: map[string]string{
		"AZURE_CLIENT_ID": "aaaaaaaa-0000-0000-0000-000000000003", "AZURE_SUBSCRIPTION_ID": "33333333-3333-3333-3333-333333333333", "AZURE_TENANT_ID": tenant,
	}})

	azureCluster(t, c, nsA, "wc1", map[string]any{"kind": "AzureClusterIdentity", "name": "wi"})
	azureCluster(t, c, nsA, "sp1", map[string]any{"kind": "AzureClusterIdentity", "name": "sp"})
	azureCluster(t, c, nsA, "stolen", map[string]any{"kind": "AzureClusterIdentity", "name": "elsewhere", "namespace": nsB})
	managed := obj(schema.GroupVersionKind{Group: capz.AzureClusterGVK.Group, Version: "v1beta1", Kind: "AzureManagedControlPlane"}, nsA, "aks1")
	managed.Object["spec"] = map[string]any{"identityRef": map[string]any{"kind": "AzureClusterIdentity", "name": "wi"}, "subscriptionID": "22222222-2222-2222-2222-222222222222",
		"location": "westeurope", "resourceGroupName": "aks1", "version": "v1.33.0"}
	mustCreate(t, c, managed)
	cluster(t, c, nsA, "aks1", "AzureManagedCluster", "AzureManagedControlPlane")
	aso := obj(schema.GroupVersionKind{Group: capz.AzureClusterGVK.Group, Version: "v1beta1", Kind: "AzureASOManagedControlPlane"}, nsA, "aso1")
	aso.Object["spec"] = map[string]any{"resources": []any{map[string]any{
		"apiVersion": "containerservice.azure.com/v1api20240901", "kind": "ManagedCluster",
		"metadata": map[string]any{"name": "aso1", "annotations": map[string]any{providerconfig.CredentialFromAnnotation: "aso-creds"}},
	}}}
	mustCreate(t, c, aso)
	cluster(t, c, nsA, "aso1", "AzureASOManagedCluster", "AzureASOManagedControlPlane")
	// A tenant's Secret whose values are not Azure IDs: nothing of it is
	// copied into a cluster-scoped object.
	mustCreate(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "aso-junk"}, StringData: map[string]string{
		"AZURE_CLIENT_ID": strings.Repeat("x", 4096), "AZURE_SUBSCRIPTION_ID": "33333333-3333-3333-3333-333333333333", "AZURE_TENANT_ID": tenant,
	}})
	junk := aso.DeepCopy()
	junk.SetName("aso2")
	junk.SetResourceVersion("")
	junk.Object["spec"].(map[string]any)["resources"].([]any)[0].(map[string]any)["metadata"] = map[string]any{
		"name": "aso2", "annotations": map[string]any{providerconfig.CredentialFromAnnotation: "aso-junk"}}
	mustCreate(t, c, junk)
	cluster(t, c, nsA, "aso2", "AzureASOManagedCluster", "AzureASOManagedControlPlane")

	// What 0.7 left: its ProviderConfig of "older" (with a field someone
	// added) and its finalizer on that Cluster.
	older := obj(providerconfig.ProviderConfigGVK, "", "older")
	older.Object["spec"] = map[string]any{"credentials": map[string]any{"source": "UserAssignedManagedIdentity"}, "clientID": "stale", "subscriptionID": subA, "tenantID": tenant, "clientCertificateSecretRef": "kept"}
	mustCreate(t, c, older)
	azureCluster(t, c, nsA, "older", map[string]any{"kind": "AzureClusterIdentity", "name": "wi"}, providerconfig.Finalizer)

	start(t, env, providerconfig.Options{Generate: true})

	specIs(t, c, "wc1", wantOf(clientA, subA))
	// A Cluster of the same name as org-a's wc1, in org-b, once org-a's
	// has its ProviderConfig.
	identity(t, c, nsB, "wi", "WorkloadIdentity", []any{nsB})
	azureCluster(t, c, nsB, "wc1", map[string]any{"kind": "AzureClusterIdentity", "name": "wi"})
	specIs(t, c, "aks1", wantOf(clientA, "22222222-2222-2222-2222-222222222222"))
	specIs(t, c, "aso1", wantOf("aaaaaaaa-0000-0000-0000-000000000003", "33333333-3333-3333-3333-333333333333"))
	adopted := wantOf(clientA, subA)
	adopted["clientCertificateSecretRef"] = "kept"
	specIs(t, c, "older", adopted)
	for _, name := range []string{"wc1", "aks1", "aso1", "older"} {
		if f := finalizers(t, c, nsA, name); !strings.Contains(f, providerconfig.Finalizer) {
			t.Errorf("Cluster %s/%s: finalizers %s", nsA, name, f)
		}
	}
	// org-b's wc1 is told, and org-a's ProviderConfig stays.
	testworld.Eventually(t, testworld.Timeout, "org-b/wc1 is told the name is taken", func(ctx context.Context) (bool, string) {
		return hasEvent(ctx, c, nsB, "wc1", providerconfig.EventNameTaken)
	})
	if pc := get(t, c, "wc1"); pc.GetAnnotations()[providerconfig.ForAnnotation] != nsA+"/wc1" {
		t.Errorf("wc1's ProviderConfig is held by %v", pc.GetAnnotations())
	}
	testworld.Eventually(t, testworld.Timeout, "aso2 is told its Secret's client ID is not a GUID", func(ctx context.Context) (bool, string) {
		return hasEvent(ctx, c, nsA, "aso2", providerconfig.EventInvalidCredentials)
	})
	// No ProviderConfig for a service principal, nor for an identity the
	// namespace may not use, nor for values that are not Azure IDs; no
	// finalizer on those Clusters.
	for _, name := range []string{"sp1", "stolen", "aso2"} {
		if err := c.Get(ctx, types.NamespacedName{Name: name}, capz.Object(providerconfig.ProviderConfigGVK)); !apierrors.IsNotFound(err) {
			t.Errorf("%s: a ProviderConfig exists (%v)", name, err)
		}
		if f := finalizers(t, c, nsA, name); strings.Contains(f, providerconfig.Finalizer) {
			t.Errorf("%s: finalizer without a ProviderConfig", name)
		}
	}

	// Deleting a Cluster takes its ProviderConfig; org-b's wc1, deleted
	// too, leaves org-a's alone.
	for _, k := range []types.NamespacedName{{Namespace: nsB, Name: "wc1"}, {Namespace: nsA, Name: "aks1"}} {
		cl := capz.Object(capz.ClusterGVK)
		cl.SetNamespace(k.Namespace)
		cl.SetName(k.Name)
		if err := c.Delete(ctx, cl); err != nil {
			t.Fatal(err)
		}
		testworld.Eventually(t, testworld.Timeout, "Cluster "+k.String()+" is gone", func(ctx context.Context) (bool, string) {
			err := c.Get(ctx, k, capz.Object(capz.ClusterGVK))
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	if err := c.Get(ctx, types.NamespacedName{Name: "aks1"}, capz.Object(providerconfig.ProviderConfigGVK)); !apierrors.IsNotFound(err) {
		t.Errorf("aks1's ProviderConfig outlived its Cluster: %v", err)
	}
	specIs(t, c, "wc1", wantOf(clientA, subA))
}

// TestProviderConfigsOff: without the flag nothing is written, and a
// Cluster 0.7 left its finalizer on is let go at deletion with its
// ProviderConfig deleted, as 0.7 would have.
func TestProviderConfigsOff(t *testing.T) {
	env := pcEnv(t)
	ctx := context.Background()
	c := env.Client
	identity(t, c, nsA, "wi", "WorkloadIdentity", []any{nsA})
	older := obj(providerconfig.ProviderConfigGVK, "", "older")
	older.Object["spec"] = wantOf(clientA, subA)
	mustCreate(t, c, older)
	azureCluster(t, c, nsA, "older", map[string]any{"kind": "AzureClusterIdentity", "name": "wi"}, providerconfig.Finalizer)
	azureCluster(t, c, nsA, "new", map[string]any{"kind": "AzureClusterIdentity", "name": "wi"})
	start(t, env, providerconfig.Options{})

	cl := capz.Object(capz.ClusterGVK)
	cl.SetNamespace(nsA)
	cl.SetName("older")
	if err := c.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "the older Cluster and its ProviderConfig are gone", func(ctx context.Context) (bool, string) {
		e1 := c.Get(ctx, types.NamespacedName{Namespace: nsA, Name: "older"}, capz.Object(capz.ClusterGVK))
		e2 := c.Get(ctx, types.NamespacedName{Name: "older"}, capz.Object(providerconfig.ProviderConfigGVK))
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2), fmt.Sprint(e1, e2)
	})
	if err := c.Get(ctx, types.NamespacedName{Name: "new"}, capz.Object(providerconfig.ProviderConfigGVK)); !apierrors.IsNotFound(err) {
		t.Errorf("a ProviderConfig was written without the flag: %v", err)
	}
}

// pcEnv is an API server with two namespaces and a ProviderConfig CRD
// (Crossplane's Azure provider's group, kind and scope; its schema is not
// what is tested).
func pcEnv(t *testing.T) *testenv.Env {
	t.Helper()
	env := testenv.StartT(t, testenv.Options{})
	for _, n := range []string{nsA, nsB} {
		mustCreate(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "providerconfigs.azure.upbound.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "azure.upbound.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "providerconfigs", Singular: "providerconfig", Kind: "ProviderConfig", ListKind: "ProviderConfigList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: new(true),
				}}}},
		},
	}
	mustCreate(t, env.Client, crd)
	testworld.Eventually(t, testworld.Timeout, "the ProviderConfig CRD is served", func(ctx context.Context) (bool, string) {
		err := env.Client.List(ctx, capz.List(providerconfig.ProviderConfigGVK))
		return err == nil, fmt.Sprint(err)
	})
	return env
}

func start(t *testing.T, env *testenv.Env, opts providerconfig.Options) {
	t.Helper()
	// The controller runs as the chart's ServiceAccount under the chart's
	// rules: a read its RBAC does not allow (a cached read of a kind the
	// chart grants only get on starts an informer that needs list and
	// watch) is refused here as in a cluster.
	cfg, err := env.AsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
		// As the operator's main.go sets it.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true, DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := providerconfig.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	})
}

func identity(t *testing.T, c client.Client, ns, name, typ string, allowed []any) {
	t.Helper()
	id := obj(capz.AzureClusterIdentityGVK, ns, name)
	id.Object["spec"] = map[string]any{"type": typ, "clientID": clientA, "tenantID": tenant, "allowedNamespaces": map[string]any{"list": allowed}}
	mustCreate(t, c, id)
}

// azureCluster creates a Cluster and its AzureCluster (subscription subA)
// with the identity reference; finalizers go on the Cluster.
func azureCluster(t *testing.T, c client.Client, ns, name string, identityRef map[string]any, finalizers ...string) {
	t.Helper()
	ac := testworld.Cluster{Namespace: ns, Name: name, Subscription: subA, CIDR16: 30}.Object(testenv.SchemaUpstream)
	ac.Object["spec"].(map[string]any)["identityRef"] = identityRef
	mustCreate(t, c, ac)
	cluster(t, c, ns, name, "AzureCluster", "KubeadmControlPlane", finalizers...)
}

func cluster(t *testing.T, c client.Client, ns, name, infraKind, cpKind string, finalizers ...string) {
	t.Helper()
	cl := obj(capz.ClusterGVK, ns, name)
	cl.SetFinalizers(finalizers)
	cpGroup := capz.AzureClusterGVK.Group
	if cpKind == "KubeadmControlPlane" {
		cpGroup = "controlplane.cluster.x-k8s.io"
	}
	cl.Object["spec"] = map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": capz.AzureClusterGVK.Group, "kind": infraKind, "name": name},
		"controlPlaneRef":   map[string]any{"apiGroup": cpGroup, "kind": cpKind, "name": name},
	}
	mustCreate(t, c, cl)
}

func obj(gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	u := capz.Object(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func mustCreate(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
	}
}

func get(t *testing.T, c client.Client, name string) *unstructured.Unstructured {
	t.Helper()
	pc := capz.Object(providerconfig.ProviderConfigGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Name: name}, pc); err != nil {
		t.Fatal(err)
	}
	return pc
}

func specIs(t *testing.T, c client.Client, name string, want map[string]any) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "ProviderConfig "+name, func(ctx context.Context) (bool, string) {
		pc := capz.Object(providerconfig.ProviderConfigGVK)
		if err := c.Get(ctx, types.NamespacedName{Name: name}, pc); err != nil {
			return false, err.Error()
		}
		d := cmp.Diff(want, pc.Object["spec"])
		return d == "", d
	})
}

func finalizers(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	cl := capz.Object(capz.ClusterGVK)
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cl); err != nil {
		t.Fatal(err)
	}
	return strings.Join(cl.GetFinalizers(), ",")
}

// hasEvent says whether an Event of reason names the object
// (events.k8s.io).
func hasEvent(ctx context.Context, c client.Client, ns, name, reason string) (bool, string) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "events.k8s.io", Version: "v1", Kind: "EventList"})
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	var seen []string
	for _, e := range list.Items {
		r, _, _ := unstructured.NestedString(e.Object, "reason")
		n, _, _ := unstructured.NestedString(e.Object, "regarding", "name")
		seen = append(seen, n+":"+r)
		if r == reason && n == name {
			return true, ""
		}
	}
	return false, strings.Join(seen, " ")
}
