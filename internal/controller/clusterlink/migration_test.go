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
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
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
	w := world(t, testenv.SchemaUpstream, capzsim.Upstream, false)
	ctx := context.Background()
	wc := wcCluster("wc1", 20)
	wc.PrivateLinks = nil
	create(t, w, testenv.SchemaUpstream, mcCluster(true), wc)
	managed := func(o *clusterlink.Options) { o.PrivateLinkServices, o.ManagePrivateLinkServices = true, true }
	stop := operator(t, w, managed)
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	u := wired(t, w, "wc1", true, true)
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
	operator(t, w, managed)
	testworld.Eventually(t, testworld.Timeout, "CAPZ v1.27 managing the ASO endpoints v1.23 wrote", func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
		err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc1-api-privatelink-privateendpoint"}, obj)
		return err == nil && capz.ReadASO(obj).Ready && obj.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] == capz.ASOReconcilePolicyManage, fmt.Sprint(err)
	})

	// The owner declares the link under the managed service's name.
	link := `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[{"name":"wc1-api-privatelink",` +
		`"allowedSubscriptions":["` + mcSub + `"],"autoApprovedSubscriptions":["` + mcSub + `"],` +
		`"lbFrontendIPConfigNames":["wc1-api-lb-frontend"],"natIPConfigurations":[{"allocationMethod":"Dynamic","subnet":"wc1-cp"}]}]}}}}`
	testworld.Eventually(t, testworld.Timeout, "the v1.27 schema keeping privateLinks", func(ctx context.Context) (bool, string) {
		mergePatch(t, w, key, link)
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		view, _ := capz.FromUnstructured(u)
		return len(view.PrivateLinks) == 1, testworld.Describe(u)
	})
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
