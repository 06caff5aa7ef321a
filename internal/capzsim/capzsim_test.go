package capzsim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	mcSub = "11111111-1111-1111-1111-111111111111"
	wcSub = "22222222-2222-2222-2222-222222222222"
)

func TestForkMode(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{"org-giantswarm/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	ctx := context.Background()
	w.Namespace(t, "org-a")
	mc := testworld.Cluster{Namespace: "org-giantswarm", Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}
	wc := testworld.Cluster{Namespace: "org-a", Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20,
		PrivateLinks: []testworld.PrivateLink{{Name: "wc1-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
	for _, c := range []testworld.Cluster{mc, wc} {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaFork)); err != nil {
			t.Fatal(err)
		}
	}

	testworld.Eventually(t, testworld.Timeout, "the WC's private links and the MC's ingress link", func(ctx context.Context) (bool, string) {
		return privateLinksProvisioned(ctx, t, w)
	})

	// An endpoint in the MC's spec (as the operator writes it) is created.
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes", map[string]any{
		"name": "wc1-api-privatelink-privateendpoint",
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "wc1-api-privatelink-connection",
			"privateLinkServiceID": "/subscriptions/" + wcSub + "/resourceGroups/wc1-rg/providers/Microsoft.Network/privateLinkServices/wc1-api-privatelink",
		}},
	})
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the endpoint approved with an IP", func(ctx context.Context) (bool, string) {
		pe, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		if err != nil {
			return false, err.Error()
		}
		state := *pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status
		return state == "Approved" && len(pe.Properties.NetworkInterfaces) == 1, state
	})

	// Removed from spec, it is deleted (the fork deletes what it created).
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes")
	testworld.Eventually(t, testworld.Timeout, "the endpoint deleted", func(ctx context.Context) (bool, string) {
		_, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		return err != nil && strings.Contains(err.Error(), "ResourceNotFound"), fmt.Sprint(err)
	})

	// Deleting the cluster removes its resource group and releases it.
	u, _ := w.Get(ctx, "org-a", "wc1")
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "the WC gone with its resource group", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, "org-a", "wc1")
		left := w.Sim.Resources("Microsoft.Resources/resourceGroups")
		return err != nil && len(left) == 1, fmt.Sprint(err, left)
	})
}

func TestUpstreamModeLeavesRemovedEndpoints(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream,
		Ingress: map[string]capzsim.Ingress{"org-giantswarm/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	ctx := context.Background()
	w.Namespace(t, "org-a")
	for _, c := range []testworld.Cluster{
		{Namespace: "org-giantswarm", Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10},
		{Namespace: "org-a", Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20},
	} {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaUpstream)); err != nil {
			t.Fatal(err)
		}
	}
	setEndpoints(t, w, "org-a", "wc1", "wc1-nodes", map[string]any{
		"name": "wc1-to-mc-privatelink-privateendpoint",
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "wc1-to-mc-privatelink-connection",
			"privateLinkServiceID": "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateLinkServices/mc-ingress-privatelink",
		}},
	})
	pes := w.Network(t, wcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the WC's endpoint to the MC's ingress", func(ctx context.Context) (bool, string) {
		pe, err := pes.Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil)
		if err != nil {
			return false, err.Error()
		}
		return *pe.Properties.ProvisioningState == armnetwork.ProvisioningStateSucceeded, string(*pe.Properties.ProvisioningState)
	})
	u, _ := w.Get(ctx, "org-a", "wc1")
	if view, _ := capz.FromUnstructured(u); view.PrivateLinksReady {
		t.Error("upstream CAPZ never sets PrivateLinksReady")
	}
	setEndpoints(t, w, "org-a", "wc1", "wc1-nodes")
	// Upstream CAPZ leaves it: give capzsim every chance to act, then check.
	testworld.Eventually(t, testworld.Timeout, "capzsim to see the removal", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, "org-a", "wc1")
		return err == nil && !strings.Contains(testworld.Describe(u), "privateendpoint"), fmt.Sprint(err)
	})
	if _, err := pes.Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil); err != nil {
		t.Errorf("upstream mode deleted an endpoint removed from spec: %v", err)
	}
}

// privateLinksProvisioned checks what capzsim does for a private WC in fork
// mode and for the MC's ingress.
func privateLinksProvisioned(ctx context.Context, t *testing.T, w *testworld.World) (bool, string) {
	u, err := w.Get(ctx, "org-a", "wc1")
	if err != nil {
		return false, err.Error()
	}
	view, _ := capz.FromUnstructured(u)
	for _, s := range view.Subnets {
		if s.ID == "" {
			return false, "subnet IDs not written back: " + testworld.Describe(u)
		}
	}
	if !view.PrivateLinksReady {
		return false, "PrivateLinksReady not set"
	}
	pls, err := w.Network(t, wcSub).NewPrivateLinkServicesClient().Get(ctx, "wc1-rg", "wc1-api-privatelink", nil)
	if err != nil {
		return false, err.Error()
	}
	if got := *pls.Properties.Visibility.Subscriptions[0]; got != mcSub {
		return false, "visibility " + got
	}
	_, err = w.Network(t, mcSub).NewPrivateLinkServicesClient().Get(ctx, "mc-rg", "mc-ingress-privatelink", nil)
	return err == nil, fmt.Sprint(err)
}

// setEndpoints applies the operator's private endpoint entries of a subnet.
func setEndpoints(t *testing.T, w *testworld.World, ns, name, subnet string, pes ...map[string]any) {
	t.Helper()
	entries := []any{}
	for _, pe := range pes {
		entries = append(entries, pe)
	}
	cfg := &unstructured.Unstructured{Object: map[string]any{}}
	cfg.SetGroupVersionKind(capz.AzureClusterGVK)
	cfg.SetNamespace(ns)
	cfg.SetName(name)
	if len(pes) > 0 {
		cfg.Object["spec"] = map[string]any{"networkSpec": map[string]any{"subnets": []any{
			map[string]any{"name": subnet, "privateEndpoints": entries},
		}}}
	}
	if err := w.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(cfg),
		client.FieldOwner("azure-private-endpoint-operator"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}
