package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestUpstreamCAPZManagedPrivateLinkServices closes the loop on upstream
// CAPZ: the operator creates an AzurePrivateLinkService for a private WC's
// API server load balancer, and the MC -> WC wiring uses it; an opted-out
// WC gets none; deleting the WC removes it.
func TestUpstreamCAPZManagedPrivateLinkServices(t *testing.T) {
	w := world(t, testenv.SchemaUpstream, capzsim.Upstream, false)
	wc1, wc2, wc3 := wcCluster("wc1", 20), wcCluster("wc2", 21), wcCluster("wc3", 22)
	wc1.PrivateLinks, wc2.PrivateLinks, wc3.PrivateLinks = nil, nil, nil
	// A user's object already has wc3's managed name: it is left alone.
	users := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Namespace: wcNS, Name: "wc3-api-privatelink"},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{SubscriptionID: wcSub, ResourceGroup: "elsewhere", Location: "westeurope",
			Frontend:  v1alpha1.Frontend{PrivateIPAddress: "10.99.0.4"},
			NATSubnet: v1alpha1.NATSubnet{Name: "users"}, DeletionPolicy: v1alpha1.DeletionPolicyOrphan}}
	if err := w.Client.Create(context.Background(), users); err != nil {
		t.Fatal(err)
	}
	create(t, w, testenv.SchemaUpstream, mcCluster(true), wc1, wc2, wc3)
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"},
		`{"metadata":{"annotations":{"`+clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.ManageAnnotation+`":"false"}}}`)
	operator(t, w, func(o *clusterlink.Options) { o.PrivateLinkServices, o.ManagePrivateLinkServices = true, true })
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})

	u := wired(t, w, "wc1", true, true)
	if got, want := u.GetAnnotations()[apiAnn], azureIP(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want the MC endpoint's IP %s", apiAnn, got, want)
	}
	ctx := context.Background()
	apls := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, apls); err != nil {
		t.Fatal(err)
	}
	if len(apls.OwnerReferences) != 1 || apls.OwnerReferences[0].UID != u.GetUID() || apls.Spec.Visibility[0] != mcSub ||
		apls.Spec.NATSubnet.Name != "wc1-cp" || apls.Spec.Frontend.LoadBalancer.Name != "wc1-api-lb" {
		t.Errorf("managed object: %+v %+v", apls.OwnerReferences, apls.Spec)
	}
	sn, err := w.Network(t, wcSub).NewSubnetsClient().Get(ctx, "wc1-rg", "wc1-vnet", "wc1-cp", nil)
	if err != nil || *sn.Properties.PrivateLinkServiceNetworkPolicies != armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled {
		t.Errorf("control-plane subnet policies: %v %v", err, sn.Properties)
	}
	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, clusterlink.ReasonPrivateLinkServiceRequested)

	wired(t, w, "wc2", false, true)
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc2-api-privatelink"}, &v1alpha1.AzurePrivateLinkService{}); !apierrors.IsNotFound(err) {
		t.Errorf("the opted-out wc2 has a managed private link service: %v", err)
	}
	if names := endpointNames(t, w, mcKey); slices.Contains(names, "wc2-api-privatelink-privateendpoint") {
		t.Errorf("MC endpoints %v", names)
	}

	waitEvent(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc3"}, clusterlink.ReasonPrivateLinkServiceNameTaken)
	got := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc3-api-privatelink"}, got); err != nil ||
		got.Spec.ResourceGroup != "elsewhere" || got.Labels[clusterlink.ManagedForLabel] != "" || len(got.OwnerReferences) != 0 {
		t.Errorf("the user's object was changed: %v %+v", err, got)
	}

	// Deleting the WC removes its private link service, in Kubernetes and
	// in Azure, and the MC's endpoint to it.
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1's private link service gone", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, types.NamespacedName{Namespace: wcNS, Name: "wc1-api-privatelink"}, &v1alpha1.AzurePrivateLinkService{})
		_, azErr := w.Network(t, wcSub).NewPrivateLinkServicesClient().Get(ctx, "wc1-rg", "wc1-api-privatelink", nil)
		names := endpointNames(t, w, mcKey)
		return apierrors.IsNotFound(err) && azure.IsNotFound(azErr) && !slices.Contains(names, "wc1-api-privatelink-privateendpoint"),
			fmt.Sprint(err, azErr, names)
	})
}
