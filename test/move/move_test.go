// Package move_test moves a management cluster with wired workload
// clusters, an AzurePrivateLinkService and an AzurePrivateEndpoint to a
// second API server the way `clusterctl move` does (sandbox.Move), with
// the operator running on both sides, and checks that nothing in Azure is
// recreated or deleted, that no annotation is emptied, and that deletion
// works afterwards (docs/operations.md, *Moving a management cluster*).
package move_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestMain starts each test's API server in the background while the test
// before it runs (testenv.Main).
func TestMain(m *testing.M) { testenv.Main(m) }

const (
	mcSub    = "11111111-1111-1111-1111-111111111111"
	wcSub    = "22222222-2222-2222-2222-222222222222"
	appSub   = "33333333-3333-3333-3333-333333333333"
	mcNS     = "org-giantswarm"
	wcNS     = "org-a"
	appNS    = "apps"
	location = testworld.DefaultLocation
	provRG   = "provider-rg"
	consRG   = "consumer-rg"
	apiAnn   = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingAnn   = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
)

var (
	mcKey = types.NamespacedName{Namespace: mcNS, Name: "mc"}
	wcs   = []string{"wc1", "wc2"}
	apps  = testworld.ServiceNetworks{ProviderSub: mcSub, ProviderRG: provRG, ProviderPrefix: "172.20",
		ConsumerSub: appSub, ConsumerRG: consRG, ConsumerPrefix: "10.9", LoadBalancer: "app-lb", Location: location}
)

// TestClusterctlMove: an MC with two wired WCs, a private link service and
// an endpoint to it (with DNS and a published ConfigMap) moves to a second
// API server with a fresh operator, while the first operator keeps
// running. Nothing in Azure is deleted or recreated (same network
// interfaces, no DELETE), the WCs' annotations are never empty on the
// target, the published address stays, and afterwards deleting the
// endpoint, the service and a WC works from the target.
func TestClusterctlMove(t *testing.T) {
	ctx := context.Background()
	src := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	for _, ns := range []string{wcNS, appNS} {
		src.Namespace(t, ns)
	}
	// clusterctl init labels every CRD of the providers it installs; ours
	// carry the labels in the chart, which is what this test relies on.
	labelProviderCRDs(t, src.Client)
	apps.Seed(t, src.Sim)

	src.CreateOwned(t, testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}, testenv.SchemaFork)
	for i, name := range wcs {
		src.CreateOwned(t, testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: 20 + i,
			PrivateLinks: []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}, testenv.SchemaFork)
	}
	opts := clusterlink.Options{ManagementCluster: mcKey, DeleteOrphanedEndpoints: true}
	src.StartOperator(t, opts)
	src.StartPrivateEndpoints(t, privateendpoint.Options{})
	createApps(t, src)

	before := map[string]map[string]string{}
	for _, name := range wcs {
		before[name] = wired(t, src, name)
	}
	published, nic := readyApp(t, src)
	azureBefore := testworld.AzureState(src.Sim)
	mcEntries := entries(t, src, mcKey)

	dst := src.SecondAPIServer(t)
	dst.StartOperator(t, opts)
	dst.StartPrivateEndpoints(t, privateendpoint.Options{})
	// From the moment a WC exists on the target, its annotations are
	// never missing or different.
	stopWatch := watchAnnotations(t, dst, before)
	src.Sim.ResetCounters()

	if err := sandbox.Move(ctx, src.Client, dst.Client, ""); err != nil {
		t.Fatal(err)
	}

	for _, name := range wcs {
		wired(t, dst, name)
	}
	if got, gotNIC := readyApp(t, dst); !maps.Equal(got, published) || gotNIC != nic {
		t.Errorf("on the target: published ConfigMap %v, network interface %s; want %v, %s", got, gotNIC, published, nic)
	}
	if got := entries(t, dst, mcKey); !slices.Equal(got, mcEntries) {
		t.Errorf("the MC's entries on the target = %v, want %v", got, mcEntries)
	}
	if seen := stopWatch(); len(seen) > 0 {
		t.Errorf("annotations changed on the target during the move: %v", seen)
	}
	checkNothingTornDown(t, src, azureBefore)

	deleteOnTarget(t, dst, before["wc1"])
}

// watchAnnotations records every moment a WC on the target has
// annotations other than before's.
func watchAnnotations(t *testing.T, dst *testworld.World, before map[string]map[string]string) func() []string {
	t.Helper()
	ctx := context.Background()
	return testworld.Watch(t, func() string {
		for _, name := range wcs {
			u, err := dst.Get(ctx, wcNS, name)
			if err != nil {
				continue
			}
			for _, a := range []string{apiAnn, ingAnn} {
				if got := u.GetAnnotations()[a]; got != before[name][a] {
					return fmt.Sprintf("%s on the target: %s=%q, want %q", name, a, got, before[name][a])
				}
			}
		}
		return ""
	})
}

// checkNothingTornDown: no DELETE reached Azure since the counters were
// reset, Azure holds what it held, and nothing moved is left on the
// source.
func checkNothingTornDown(t *testing.T, src *testworld.World, azureBefore map[string]string) {
	t.Helper()
	counters := src.Sim.Counters()
	if n := counters.Sum("DELETE", "", 0, 999); n > 0 {
		t.Errorf("%d DELETE requests to Azure during the move: %+v", n, deletes(counters))
	}
	if diff := testworld.DiffMaps(azureBefore, testworld.AzureState(src.Sim)); diff != "" {
		t.Errorf("Azure changed during the move:\n%s", diff)
	}
	for _, gvk := range []string{"AzureCluster", "Cluster", "AzurePrivateEndpoint", "AzurePrivateLinkService"} {
		if left := leftovers(t, src, gvk); len(left) > 0 {
			t.Errorf("%ss left on the source: %v", gvk, left)
		}
	}
	var puts []string
	for _, r := range counters.Requests {
		if r.Method == "PUT" {
			puts = append(puts, fmt.Sprintf("%s by %s: %d", r.ResourceType, r.Principal, r.Count))
		}
	}
	t.Logf("during the move: %d ARM requests, %d DELETE; PUTs (updates in place): %v", counters.Total, counters.Sum("DELETE", "", 0, 999), puts)
}

// deleteOnTarget: deletion works on the target — the endpoint (its
// ConfigMap with it), the service, then a WC (its MC entry and endpoint go
// through CAPZ); wc1 keeps wc1Before.
func deleteOnTarget(t *testing.T, dst *testworld.World, wc1Before map[string]string) {
	t.Helper()
	ctx := context.Background()
	del(t, dst, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "app"}})
	del(t, dst, &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "svc"}})
	testworld.Eventually(t, testworld.Timeout, "the endpoint and the service gone from Azure", func(context.Context) (bool, string) {
		var left []string
		for _, r := range dst.Sim.Resources("") {
			if strings.Contains(r.ID, "/privateEndpoints/app") || strings.Contains(r.ID, "/privateLinkServices/svc") {
				left = append(left, r.ID)
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	for _, gvk := range []schemaKind{{capz.ClusterGVK.GroupVersion().String(), "Cluster"}, {capz.AzureClusterGVK.GroupVersion().String(), "AzureCluster"}} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvk.apiVersion)
		u.SetKind(gvk.kind)
		u.SetNamespace(wcNS)
		u.SetName("wc2")
		if err := dst.Client.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	testworld.Eventually(t, testworld.Timeout, "wc2's MC entry and endpoint gone", func(ctx context.Context) (bool, string) {
		names := entries(t, dst, mcKey)
		_, err := dst.Network(t, mcSub).NewPrivateEndpointsClient().Get(ctx, "mc-rg", "wc2-api-privatelink-privateendpoint", nil)
		gone := err != nil && strings.Contains(err.Error(), "ResourceNotFound")
		return !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "wc2-") }) && gone, fmt.Sprintf("entries %v, endpoint: %v", names, err)
	})
	if got := wired(t, dst, "wc1"); !maps.Equal(got, wc1Before) {
		t.Errorf("wc1 changed when wc2 was deleted: %v", got)
	}
}

type schemaKind struct{ apiVersion, kind string }

// labelProviderCRDs labels Cluster API's and CAPZ's CRDs as clusterctl init
// does (it adds clusterctl.cluster.x-k8s.io to every provider component).
func labelProviderCRDs(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		if !strings.HasSuffix(crd.Spec.Group, "cluster.x-k8s.io") {
			continue
		}
		patch := []byte(`{"metadata":{"labels":{"` + sandbox.ClusterctlLabel + `":""}}}`)
		if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
}

// createApps creates the service "svc" on app-lb (auto-approving the
// consumer) and the endpoint "app" to it, with its own zone and a
// published ConfigMap.
func createApps(t *testing.T, w *testworld.World) {
	t.Helper()
	ctx := context.Background()
	id := &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS}
	svc := &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "svc"},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: mcSub, ResourceGroup: provRG, Location: location, IdentityRef: id,
			Frontend:   v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "app-lb", FrontendIPConfigurationName: "fe"}},
			NATSubnet:  v1alpha1.NATSubnet{Name: "nat"},
			Visibility: []string{appSub}, AutoApproval: []string{appSub},
		},
	}
	if err := w.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	ape := &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "app"},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: appSub, ResourceGroup: consRG, Location: location, SubnetID: apps.VNet(true) + "/subnets/pe", IdentityRef: id,
			PrivateLinkServiceRef: &v1alpha1.LocalObjectReference{Name: "svc"},
			DNS:                   &v1alpha1.PrivateEndpointDNS{ZoneName: "app.apps.internal"},
			Publish:               &v1alpha1.PrivateEndpointPublish{ConfigMapName: "app-endpoint"},
		},
	}
	if err := w.Client.Create(ctx, ape); err != nil {
		t.Fatal(err)
	}
}

// readyApp waits until the endpoint and the service are Ready (the
// endpoint's status written for its generation) and the ConfigMap holds
// the endpoint's address; it returns the ConfigMap's data and the
// endpoint's network interface.
func readyApp(t *testing.T, w *testworld.World) (map[string]string, string) {
	t.Helper()
	var data map[string]string
	var nic string
	testworld.Eventually(t, testworld.Timeout, "the endpoint Ready and published", func(ctx context.Context) (bool, string) {
		ape := &v1alpha1.AzurePrivateEndpoint{}
		svc := &v1alpha1.AzurePrivateLinkService{}
		cm := &corev1.ConfigMap{}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "app"}, ape); err != nil {
			return false, err.Error()
		}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "svc"}, svc); err != nil {
			return false, err.Error()
		}
		if !meta.IsStatusConditionTrue(ape.Status.Conditions, v1alpha1.ConditionReady) || ape.Status.ObservedGeneration != ape.Generation ||
			!meta.IsStatusConditionTrue(svc.Status.Conditions, v1alpha1.ConditionReady) {
			return false, fmt.Sprintf("endpoint %+v; service %+v", ape.Status.Conditions, svc.Status.Conditions)
		}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "app-endpoint"}, cm); err != nil {
			return false, err.Error()
		}
		data, nic = cm.Data, ape.Status.NetworkInterfaceID
		return cm.Data["ipAddress"] != "" && nic != "", fmt.Sprint(cm.Data)
	})
	return data, nic
}

// wired waits until a WC has both annotations and GSPrivateLinksReady, and
// returns its annotations.
func wired(t *testing.T, w *testworld.World, name string) map[string]string {
	t.Helper()
	var ann map[string]string
	testworld.Eventually(t, testworld.Timeout, name+" wired", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		ann = annotationsOf(u)
		return ann[apiAnn] != "" && ann[ingAnn] != "" && clusterlink.HasCondition(u, clusterlink.ConditionGSPrivateLinksReady), testworld.Describe(u)
	})
	return ann
}

func annotationsOf(u *unstructured.Unstructured) map[string]string {
	return map[string]string{apiAnn: u.GetAnnotations()[apiAnn], ingAnn: u.GetAnnotations()[ingAnn]}
}

// entries are the sorted names of an AzureCluster's endpoint entries.
func entries(t *testing.T, w *testworld.World, key types.NamespacedName) []string {
	t.Helper()
	names := w.EntryNames(t, key)
	slices.Sort(names)
	return names
}

func deletes(c azuresim.Counters) []azuresim.RequestCount {
	var out []azuresim.RequestCount
	for _, r := range c.Requests {
		if r.Method == "DELETE" {
			out = append(out, r)
		}
	}
	return out
}

func leftovers(t *testing.T, w *testworld.World, kind string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	switch kind {
	case "Cluster":
		list.SetGroupVersionKind(capz.ClusterGVK.GroupVersion().WithKind("ClusterList"))
	case "AzureCluster":
		list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	default:
		list.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind + "List"))
	}
	if err := w.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range list.Items {
		out = append(out, u.GetNamespace()+"/"+u.GetName())
	}
	return out
}

func del(t *testing.T, w *testworld.World, obj client.Object) {
	t.Helper()
	if err := w.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, obj.GetName()+" deleted", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
}
