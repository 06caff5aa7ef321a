package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// thirdPartyNotVisible is Azure's code for an endpoint whose private link
// service does not exist or is not visible to the endpoint's subscription.
const thirdPartyNotVisible = "ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible"

// TestWaitsForTheMCIngressService: the MC's ingress private link service
// does not exist in Azure yet. wc1 gets its endpoint to the MC's API
// server, but no entry to the MC's ingress: it waits (Event
// WaitingForManagementClusterService), and Azure is sent no endpoint it
// refuses. The service made, but not visible to wc1's subscription: its
// condition says ManagementClusterServiceNotVisible. Once visible, wc1 is wired.
func TestWaitsForTheMCIngressService(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) { o.PendingRecheck = 2 * time.Second })
	wc1 := types.NamespacedName{Namespace: wcNS, Name: "wc1"}

	waitEvent(t, w, wc1, clusterlink.ReasonMCServiceNotInAzure)
	testworld.Eventually(t, testworld.Timeout, "the MC's endpoint to wc1's API server", func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		return slices.Contains(names, "wc1-api-privatelink-privateendpoint"), fmt.Sprint(names)
	})
	if names := endpointNames(t, w, wc1); len(names) != 0 {
		t.Errorf("wc1's entries %v, want none while the MC's ingress service does not exist", names)
	}

	// The service, on the MC's API server load balancer, visible to
	// another subscription only.
	ctx := context.Background()
	net := w.Network(t, mcSub)
	var frontend *armnetwork.FrontendIPConfiguration
	for pager := net.NewLoadBalancersClient().NewListPager("mc-rg", nil); pager.More() && frontend == nil; {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, lb := range page.Value {
			if len(lb.Properties.FrontendIPConfigurations) > 0 {
				frontend = lb.Properties.FrontendIPConfigurations[0]
				break
			}
		}
	}
	if frontend == nil {
		t.Fatal("the MC has no load balancer frontend")
	}
	// Its NAT address in the nodes' subnet, which allows it once its
	// private link service network policies are off.
	subnets := net.NewSubnetsClient()
	nodes, err := subnets.Get(ctx, "mc-rg", "mc-vnet", "mc-nodes", nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes.Properties.PrivateLinkServiceNetworkPolicies = to.Ptr(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)
	if _, err := subnets.BeginCreateOrUpdate(ctx, "mc-rg", "mc-vnet", "mc-nodes", nodes.Subnet, nil); err != nil {
		t.Fatal(err)
	}
	nat := nodes.ID
	pls := armnetwork.PrivateLinkService{Location: to.Ptr("westeurope"), Properties: &armnetwork.PrivateLinkServiceProperties{
		LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: frontend.ID}},
		IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{{Name: to.Ptr("nat"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
			Primary: to.Ptr(true), Subnet: &armnetwork.Subnet{ID: nat}}}},
		Visibility:   &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: []*string{to.Ptr("33333333-3333-3333-3333-333333333333")}},
		AutoApproval: &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: []*string{to.Ptr(wcSub)}},
	}}
	plss := net.NewPrivateLinkServicesClient()
	testworld.Eventually(t, testworld.Timeout, "the service made", func(ctx context.Context) (bool, string) {
		_, err := plss.BeginCreateOrUpdate(ctx, "mc-rg", "mc-ingress-privatelink", pls, nil)
		return err == nil, fmt.Sprint(err)
	})
	says(t, w, "wc1", clusterlink.ReasonMCServiceNotVisible, "is not visible to the cluster's subscription "+wcSub)
	if names := endpointNames(t, w, wc1); len(names) != 0 {
		t.Errorf("wc1's entries %v, want none while the MC's ingress service does not show itself to wc1", names)
	}

	pls.Properties.Visibility.Subscriptions = []*string{to.Ptr(wcSub)}
	testworld.Eventually(t, testworld.Timeout, "the service updated", func(ctx context.Context) (bool, string) {
		_, err := plss.BeginCreateOrUpdate(ctx, "mc-rg", "mc-ingress-privatelink", pls, nil)
		return err == nil, fmt.Sprint(err)
	})
	wired(t, w, "wc1", true, true)
	if n := w.Sim.Counters().Errors[thirdPartyNotVisible]; n != 0 {
		t.Errorf("Azure refused %d endpoints to a service it did not have or show (%s)", n, thirdPartyNotVisible)
	}
}
