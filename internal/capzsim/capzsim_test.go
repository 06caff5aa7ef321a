package capzsim_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork, Latency: 3 * time.Second,
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
	// CAPZ holds the identity for each cluster using it (a finalizer named
	// after the cluster), and lets it go when the cluster's cleanup ends.
	identityFinalizers(t, w, "org-giantswarm/mc", "org-a/wc1")

	// An endpoint in the MC's spec (as the operator writes it) is created.
	endpoint := map[string]any{
		"name": "wc1-api-privatelink-privateendpoint",
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "wc1-api-privatelink-connection",
			"privateLinkServiceID": "/subscriptions/" + wcSub + "/resourceGroups/wc1-rg/providers/Microsoft.Network/privateLinkServices/wc1-api-privatelink",
		}},
	}
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes", endpoint)
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the endpoint approved with an IP", func(ctx context.Context) (bool, string) {
		pe, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		if err != nil {
			return false, err.Error()
		}
		state := *pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status
		done := *pe.Properties.ProvisioningState == armnetwork.ProvisioningStateSucceeded
		return state == "Approved" && len(pe.Properties.NetworkInterfaces) == 1 && done, fmt.Sprint(state, done)
	})

	// Removed from spec, it is deleted (the fork deletes what it created),
	// with one DELETE.
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes")
	testworld.Eventually(t, testworld.Timeout, "the endpoint deleted", func(ctx context.Context) (bool, string) {
		_, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		return err != nil && strings.Contains(err.Error(), "ResourceNotFound"), fmt.Sprint(err)
	})
	oneDelete(t, w)

	// Removed while Azure still creates it, it is deleted too: the DELETE
	// Azure refuses (409, the creation running) is retried.
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes", endpoint)
	testworld.Eventually(t, testworld.Timeout, "the endpoint in Azure again", func(ctx context.Context) (bool, string) {
		_, err := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		return err == nil, fmt.Sprint(err)
	})
	setEndpoints(t, w, "org-giantswarm", "mc", "mc-nodes")
	testworld.Eventually(t, testworld.Timeout, "the endpoint deleted again", func(ctx context.Context) (bool, string) {
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
	identityFinalizers(t, w, "org-giantswarm/mc")
}

// identityFinalizers waits until the test world's identity carries CAPZ's
// finalizer exactly for the clusters named (namespace/name), as CAPZ's
// controllers/helpers.go names it: the AzureCluster finalizer and the hex
// SHA-224 of "<namespace>-<name>".
func identityFinalizers(t *testing.T, w *testworld.World, clusters ...string) {
	t.Helper()
	var want []string
	for _, c := range clusters {
		sum := sha256.Sum224([]byte(strings.Replace(c, "/", "-", 1)))
		want = append(want, "azurecluster.infrastructure.cluster.x-k8s.io/"+hex.EncodeToString(sum[:]))
	}
	slices.Sort(want)
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("the identity held for %v", clusters), func(ctx context.Context) (bool, string) {
		id := &unstructured.Unstructured{}
		id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: testworld.IdentityNS, Name: testworld.IdentityName}, id); err != nil {
			return false, err.Error()
		}
		got := slices.Sorted(slices.Values(id.GetFinalizers()))
		return slices.Equal(got, want), fmt.Sprint(got)
	})
}

// TestASOModes: upstream CAPZ makes private endpoints as ASO objects
// (controlled by the AzureCluster, labelled with the cluster's name) that
// the ASO stand-in turns into Azure resources. v1.23 leaves the object, and
// so the endpoint, when the entry leaves spec; v1.27 deletes both, and
// makes the private link services of apiServerLB.privateLinks through ASO
// with PrivateLinksReady.
func TestASOModes(t *testing.T) {
	for _, tc := range []struct {
		schema testenv.Schema
		mode   capzsim.Mode
		keeps  bool
	}{
		{testenv.SchemaUpstream, capzsim.Upstream, true},
		{testenv.SchemaV127, capzsim.V127, false},
	} {
		t.Run(string(tc.mode), func(t *testing.T) { testASOMode(t, tc.schema, tc.mode, tc.keeps) })
	}
}

func testASOMode(t *testing.T, schema testenv.Schema, mode capzsim.Mode, keeps bool) {
	w := testworld.Start(t, testworld.Options{Schema: schema, CAPZMode: mode, Latency: 3 * time.Second,
		Ingress: map[string]capzsim.Ingress{"org-giantswarm/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	ctx := context.Background()
	w.Namespace(t, "org-a")
	wc := testworld.Cluster{Namespace: "org-a", Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20}
	if mode == capzsim.V127 {
		wc.PrivateLinks = []testworld.PrivateLink{{Name: "wc1-api-privatelink", AllowedSubscriptions: []string{mcSub}}}
	}
	for _, c := range []testworld.Cluster{{Namespace: "org-giantswarm", Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}, wc} {
		if err := w.Client.Create(ctx, c.Object(schema)); err != nil {
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
	aso := &unstructured.Unstructured{}
	aso.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
	asoKey := types.NamespacedName{Namespace: "org-a", Name: "wc1-to-mc-privatelink-privateendpoint"}
	testworld.Eventually(t, testworld.Timeout, "the WC's endpoint, made through ASO", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, asoKey, aso); err != nil {
			return false, err.Error()
		}
		pe, err := pes.Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil)
		if err != nil {
			return false, err.Error()
		}
		o := capz.ReadASO(aso)
		return o.Ready && *pe.Properties.ProvisioningState == armnetwork.ProvisioningStateSucceeded, fmt.Sprint(o)
	})
	o := capz.ReadASO(aso)
	if o.Controller != "wc1" || o.ClusterName != "wc1" || aso.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] != capz.ASOReconcilePolicyManage {
		t.Errorf("the ASO object is not CAPZ's as CAPZ writes it: %+v %v", o, aso.GetAnnotations())
	}
	u, _ := w.Get(ctx, "org-a", "wc1")
	view, _ := capz.FromUnstructured(u)
	if mode == capzsim.V127 {
		testworld.Eventually(t, testworld.Timeout, "v1.27's private link service through ASO", func(ctx context.Context) (bool, string) {
			u, _ := w.Get(ctx, "org-a", "wc1")
			view, _ = capz.FromUnstructured(u)
			pls := &unstructured.Unstructured{}
			pls.SetGroupVersionKind(capz.ASOPrivateLinkServiceGVK)
			err := w.Client.Get(ctx, types.NamespacedName{Namespace: "org-a", Name: "wc1-api-privatelink"}, pls)
			return err == nil && view.PrivateLinksReady && capz.ReadASO(pls).Ready, fmt.Sprint(err, view.PrivateLinksReady)
		})
	} else if view.PrivateLinksReady {
		t.Error("upstream CAPZ before v1.27 never sets PrivateLinksReady")
	}
	setEndpoints(t, w, "org-a", "wc1", "wc1-nodes")
	if !keeps {
		testworld.Eventually(t, testworld.Timeout, "v1.27 deletes the ASO object and so the endpoint", func(ctx context.Context) (bool, string) {
			err := w.Client.Get(ctx, asoKey, &unstructured.Unstructured{Object: map[string]any{"apiVersion": capz.ASOPrivateEndpointGVK.GroupVersion().String(), "kind": "PrivateEndpoint"}})
			_, azErr := pes.Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil)
			return apierrors.IsNotFound(err) && azErr != nil, fmt.Sprint(err, azErr)
		})
		oneDelete(t, w)
		return
	}
	// v1.23 leaves it: give capzsim every chance to act, then check.
	testworld.Eventually(t, testworld.Timeout, "capzsim to see the removal", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, "org-a", "wc1")
		return err == nil && !strings.Contains(testworld.Describe(u), "privateendpoint"), fmt.Sprint(err)
	})
	if err := w.Client.Get(ctx, asoKey, aso); err != nil {
		t.Errorf("v1.23 deleted the ASO object of an endpoint removed from spec: %v", err)
	}
	if _, err := pes.Get(ctx, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint", nil); err != nil {
		t.Errorf("v1.23 deleted an endpoint removed from spec: %v", err)
	}
}

// oneDelete checks that capzsim deleted the endpoint as CAPZ (the fork's
// async service) and ASO do: one DELETE, then the operation is followed;
// no DELETE while Azure deletes (each would be answered 409
// AnotherOperationInProgress). Azure's operations take 3 s in the tests
// that call it, three of capzsim's resyncs.
func oneDelete(t *testing.T, w *testworld.World) {
	t.Helper()
	c := w.Sim.Counters()
	if n := c.Sum(http.MethodDelete, "Microsoft.Network/privateEndpoints", http.StatusConflict, http.StatusConflict); n != 0 {
		t.Errorf("capzsim sent %d DELETEs of an endpoint Azure was deleting (409)", n)
	}
	if n := c.Sum(http.MethodDelete, "Microsoft.Network/privateEndpoints", 200, 299); n != 1 {
		t.Errorf("capzsim sent %d accepted DELETEs of the endpoint, want 1", n)
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
