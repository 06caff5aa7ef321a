package clusterlink_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestMigrationV123ToV127: a WC wired on upstream CAPZ v1.23 through the
// operator's managed private link service; CAPZ is upgraded to v1.27 (its
// CRD, and CAPZ now adopting the ASO objects v1.23 wrote) and the operator
// restarted. The WC keeps its managed service and its annotations never
// change. When its owner declares the link under the managed service's
// name, CAPZ cannot take it over (Azure refuses to change the primary NAT
// IP configuration, which CAPZ names differently): the operator keeps
// serving it and says so, and still nothing changes. A WC created after the
// upgrade with its links declared is wired through CAPZ's service.
func TestMigrationV123ToV127(t *testing.T) {
	w, u, stop := managedWorld(t, testenv.SchemaUpstream)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	want := fmt.Sprint([]string{u.GetAnnotations()[apiAnn], u.GetAnnotations()[ingAnn]})
	seen := recordAnnotations(t, w, key)
	mcEndpoint := endpointInstance(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint")

	// The upgrade: the operator stops, CAPZ becomes v1.27, the operator
	// starts again.
	stop()
	if err := w.UpgradeCAPZ(ctx, testenv.SchemaV127); err != nil {
		t.Fatal(err)
	}
	operator(t, w, managedLoop)
	testworld.Eventually(t, testworld.Timeout, "CAPZ v1.27 managing the ASO endpoints v1.23 wrote", func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
		err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc1-api-privatelink-privateendpoint"}, obj)
		return err == nil && capz.ReadASO(obj).Ready && obj.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] == capz.ASOReconcilePolicyManage, fmt.Sprint(err)
	})

	// The owner declares the link under the managed service's name.
	declareLink(t, w, key, "wc1-api-privatelink", true)
	waitEvent(t, w, key, clusterlink.ReasonPrivateLinkServiceNotHandedOver)
	testworld.Eventually(t, testworld.Timeout, "CAPZ's ASO service refused by Azure", func(ctx context.Context) (bool, string) {
		pls := &unstructured.Unstructured{}
		pls.SetGroupVersionKind(capz.ASOPrivateLinkServiceGVK)
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, pls); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(pls.Object, "status", "conditions")
		return strings.Contains(fmt.Sprint(conds), "PrivateLinkServicePrimaryIpConfigurationCannotBeChanged"), fmt.Sprint(conds)
	})
	apls := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, apls); err != nil || apls.DeletionTimestamp != nil {
		t.Errorf("the managed service is not kept: %v %v", err, apls.DeletionTimestamp)
	}

	// A WC created after the upgrade, its link declared: CAPZ's service.
	create(t, w, testenv.SchemaV127, wcCluster("wc2", 21))
	wired(t, w, "wc2", true, true)
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc2-api-privatelink"}, &v1alpha1.AzurePrivateLinkService{}); !apierrors.IsNotFound(err) {
		t.Errorf("wc2 declares its link, yet the operator made an AzurePrivateLinkService: %v", err)
	}

	wired(t, w, "wc1", true, true)
	if got := endpointInstance(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != mcEndpoint {
		t.Errorf("the MC's endpoint to wc1 was replaced: %s, was %s", got, mcEndpoint)
	}
	if len(seen()) < 2 {
		t.Fatalf("the watch saw %d states of wc1; it must have seen the privateLinks patch at least", len(seen()))
	}
	for _, v := range seen() {
		if v != want {
			t.Errorf("wc1's annotations changed during the migration: want %v, saw %v", want, seen())
			break
		}
	}
}

// endpointInstance is an endpoint's Azure resource ID with its network
// interfaces, so that a recreated endpoint of the same name differs.
func endpointInstance(t *testing.T, w *testworld.World, sub, rg, name string) string {
	t.Helper()
	pe, err := w.Network(t, sub).NewPrivateEndpointsClient().Get(context.Background(), rg, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := *pe.ID
	if pe.Properties != nil {
		for _, nic := range pe.Properties.NetworkInterfaces {
			out += "#" + *nic.ID
		}
	}
	return out
}

// recordAnnotations watches a WC and returns the API server and ingress
// annotation values of every state seen, as "[api ingress]".
func recordAnnotations(t *testing.T, w *testworld.World, key types.NamespacedName) func() []string {
	t.Helper()
	l := watchWC(t, w, key)
	return func() []string {
		l.mu.Lock()
		defer l.mu.Unlock()
		out := make([]string, 0, len(l.states))
		for _, st := range l.states {
			out = append(out, fmt.Sprint([]string{st.api, st.annotation}))
		}
		return out
	}
}

// TestMigrationNewLinkName: a WC wired on CAPZ v1.23 through the operator's
// managed private link service; after the upgrade to v1.27 its owner
// declares the link under another name, with manual approval. The MC keeps
// its endpoint to the managed service and the API server annotation its
// address while CAPZ makes the new service and the MC's endpoint to it
// waits for approval; once approved, the annotation moves to the new
// endpoint and only then does the managed service go, with the MC's
// endpoint to it. The annotation is never empty, and never holds an
// address that no Approved endpoint of the MC holds.
func TestMigrationNewLinkName(t *testing.T) {
	w, _, stop := managedWorld(t, testenv.SchemaUpstream)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	seen := recordAnnotations(t, w, key)
	wrong := watchAPIAnnotation(t, w, key)

	stop()
	if err := w.UpgradeCAPZ(ctx, testenv.SchemaV127); err != nil {
		t.Fatal(err)
	}
	operator(t, w, managedLoop)
	declareLink(t, w, key, "wc1-apiserver", false)
	newPLS := clusterlink.PrivateLinkServiceID(wcSub, "wc1-rg", "wc1-apiserver")
	newPE := "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateEndpoints/wc1-apiserver-privateendpoint"
	testworld.Eventually(t, testworld.Timeout, "the MC's endpoint to wc1-apiserver awaiting approval", func(context.Context) (bool, string) {
		for _, e := range w.Sim.Endpoints() {
			if strings.EqualFold(e.ID, newPE) {
				return e.ConnectionState == "Pending", fmt.Sprintf("%+v", e)
			}
		}
		return false, "no endpoint yet"
	})
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, &v1alpha1.AzurePrivateLinkService{}); err != nil {
		t.Fatalf("the managed service went before the new link served: %v", err)
	}

	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: newPLS, PrivateEndpointID: newPE, Status: "Approved"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, w, key, clusterlink.ReasonPrivateLinkServiceHandedOver)
	testworld.Eventually(t, testworld.Timeout, "the annotation on the new endpoint, the managed service and its endpoint gone", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		err = w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, &v1alpha1.AzurePrivateLinkService{})
		old := false
		for _, e := range w.Sim.Endpoints() {
			old = old || strings.HasSuffix(e.ID, "/wc1-api-privatelink-privateendpoint")
		}
		ip := u.GetAnnotations()[apiAnn]
		return ip != "" && ip == azureIP(t, w, mcSub, "mc-rg", "wc1-apiserver-privateendpoint") && apierrors.IsNotFound(err) && !old,
			fmt.Sprintf("annotation %q, managed service: %v, old endpoint: %v", ip, err, old)
	})
	for _, v := range seen() {
		if strings.HasPrefix(v, "[ ") {
			t.Errorf("the API server annotation was empty during the migration: %v", seen())
			break
		}
	}
	if v := wrong(); len(v) > 0 {
		t.Errorf("the API server annotation held an address of no Approved endpoint (%d times), first: %s", len(v), v[0])
	}
}

// watchAPIAnnotation follows a WC's API server annotation through a watch
// and, every 20 ms until the returned function is called, records each
// time it holds an address that no Approved endpoint of the MC holds in
// Azure (the watch, not polling the API server: its client's rate limit
// is the test's).
func watchAPIAnnotation(t *testing.T, w *testworld.World, key types.NamespacedName) func() []string {
	t.Helper()
	l := watchWC(t, w, key)
	return testworld.Watch(t, func() string {
		l.mu.Lock()
		n := len(l.states)
		ip := ""
		if n > 0 {
			ip = l.states[n-1].api
		}
		l.mu.Unlock()
		if n == 0 {
			return ""
		}
		var mcEndpoints []string
		for _, e := range w.Sim.Endpoints() {
			if !strings.Contains(e.ID, "/resourceGroups/mc-rg/") {
				continue
			}
			if e.IP == ip && e.ConnectionState == "Approved" {
				return ""
			}
			mcEndpoints = append(mcEndpoints, e.Name+" "+e.IP+" "+e.ConnectionState)
		}
		return fmt.Sprintf("%q while the MC holds %v", ip, mcEndpoints)
	})
}

// declareLink has the WC declare one private link on its API server load
// balancer (the v1.27 schema), auto-approving the MC's subscription or not,
// and waits until the schema keeps it.
func declareLink(t *testing.T, w *testworld.World, key types.NamespacedName, name string, autoApprove bool) {
	t.Helper()
	approve := ""
	if autoApprove {
		approve = `"autoApprovedSubscriptions":["` + mcSub + `"],`
	}
	link := `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[{"name":"` + name + `",` +
		`"allowedSubscriptions":["` + mcSub + `"],` + approve +
		`"lbFrontendIPConfigNames":["wc1-api-lb-frontend"],"natIPConfigurations":[{"allocationMethod":"Dynamic","subnet":"wc1-cp"}]}]}}}}`
	testworld.Eventually(t, testworld.Timeout, key.Name+" declaring "+name, func(ctx context.Context) (bool, string) {
		mergePatch(t, w, key, link)
		u, err := w.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return false, err.Error()
		}
		view, _ := capz.FromUnstructured(u)
		return len(view.PrivateLinks) == 1, testworld.Describe(u)
	})
}
