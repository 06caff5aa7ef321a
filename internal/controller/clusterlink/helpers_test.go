package clusterlink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	mcSub   = "11111111-1111-1111-1111-111111111111"
	wcSub   = "22222222-2222-2222-2222-222222222222"
	mcNS    = "org-giantswarm"
	wcNS    = "org-a"
	apiAnn  = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingAnn  = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
	userMgr = "kubectl-client-side-apply"
)

var mcKey = types.NamespacedName{Namespace: mcNS, Name: "mc"}

// world starts a world whose MC (org-giantswarm/mc) gets an ingress private
// link auto-approving the WCs' subscription.
func world(t *testing.T, schema testenv.Schema, mode capzsim.Mode, keep bool) *testworld.World {
	t.Helper()
	w := testworld.Start(t, testworld.Options{Schema: schema, CAPZMode: mode, KeepRemovedEndpoints: keep,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	return w
}

func mcCluster(private bool) testworld.Cluster {
	return testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: private, CIDR16: 10}
}

// wcCluster is a private WC whose link allows and auto-approves the MC.
func wcCluster(name string, cidr int) testworld.Cluster {
	return testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: cidr,
		PrivateLinks: []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
}

func create(t *testing.T, w *testworld.World, schema testenv.Schema, clusters ...testworld.Cluster) {
	t.Helper()
	for _, c := range clusters {
		if err := w.Client.Create(context.Background(), c.Object(schema), client.FieldOwner(userMgr)); err != nil {
			t.Fatalf("creating %s/%s: %v", c.Namespace, c.Name, err)
		}
	}
}

func operator(t *testing.T, w *testworld.World, mutate ...func(*clusterlink.Options)) (stop func()) {
	t.Helper()
	opts := clusterlink.Options{ManagementCluster: mcKey, DeleteOrphanedEndpoints: true}
	for _, m := range mutate {
		m(&opts)
	}
	return w.StartOperator(t, opts)
}

// wired waits until a WC has the annotations it should, and returns it.
func wired(t *testing.T, w *testworld.World, name string, wantAPI, wantIngress bool) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	testworld.Eventually(t, testworld.Timeout, name+" wired", func(ctx context.Context) (bool, string) {
		var err error
		u, err = w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		ann := u.GetAnnotations()
		_, api := ann[apiAnn]
		_, ing := ann[ingAnn]
		_, events := w.HasEvent(ctx, types.NamespacedName{Namespace: wcNS, Name: name}, "")
		return api == wantAPI && ing == wantIngress && conditionTrue(u, clusterlink.ConditionGSPrivateLinksReady),
			fmt.Sprintf("%s events=%v", testworld.Describe(u), events)
	})
	return u
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// endpointNames lists the private endpoint entries of an AzureCluster.
func endpointNames(t *testing.T, w *testworld.World, key types.NamespacedName) []string {
	t.Helper()
	return w.EntryNames(t, key)
}

// azureIP is the IP Azure gives an endpoint, on its network interface (an
// endpoint to a private link service without FQDNs has no customDnsConfigs).
func azureIP(t *testing.T, w *testworld.World, sub, rg, name string) string {
	t.Helper()
	return w.EndpointIP(t, sub, rg, name)
}

func waitEvent(t *testing.T, w *testworld.World, key types.NamespacedName, reason string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "event "+reason+" on "+key.String(), func(ctx context.Context) (bool, string) {
		ok, reasons := w.HasEvent(ctx, key, reason)
		return ok, strings.Join(reasons, ",")
	})
}

func mergePatch(t *testing.T, w *testworld.World, key types.NamespacedName, patch string) {
	t.Helper()
	u, err := w.Get(context.Background(), key.Namespace, key.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(userMgr)); err != nil {
		t.Fatal(err)
	}
}

// managedWorld wires wc1 on upstream CAPZ (no privateLinks) through the
// operator's managed private link service, in a world of the given
// schema; mutate adjusts the operator's options beyond the managed loop.
// It returns the world, the wired WC and the operator's stop.
func managedWorld(t *testing.T, schema testenv.Schema, mutate ...func(*clusterlink.Options)) (*testworld.World, *unstructured.Unstructured, func()) {
	t.Helper()
	w := world(t, schema, capzsim.Upstream, false)
	wc := wcCluster("wc1", 20)
	wc.PrivateLinks = nil
	create(t, w, schema, mcCluster(true), wc)
	stop := operator(t, w, append([]func(*clusterlink.Options){managedLoop}, mutate...)...)
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	return w, wired(t, w, "wc1", true, true), stop
}

// managedLoop turns on the managed private link services for every WC.
func managedLoop(o *clusterlink.Options) {
	o.PrivateLinkServices, o.ManagePrivateLinkServices = true, true
}

// withdrawLinks removes a WC's private links and waits until its own
// reconcile has seen them go: its API annotation is removed.
func withdrawLinks(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: name}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	testworld.Eventually(t, testworld.Timeout, name+"'s API annotation removed with its link", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		_, api := u.GetAnnotations()[apiAnn]
		return !api, testworld.Describe(u)
	})
}
