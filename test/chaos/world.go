package main

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// The chaos run's AzurePrivateLinkService world: M Standard load balancers
// in one resource group of the MC's subscription, each fronted by an
// AzurePrivateLinkService with its NAT IP in a shared subnet.
const (
	plsNamespace = "org-chaos-pls"
	plsGroup     = "chaos-pls"
	plsVNet      = "chaos-pls-vnet"
	// userManager is the field manager of the concurrent writer, a person
	// or a GitOps tool editing the same objects.
	userManager = "chaos-user"
)

func plsLB(i int) string   { return fmt.Sprintf("chaos-lb-%02d", i) }
func plsName(i int) string { return fmt.Sprintf("svc-%02d", i) }

// createPLSWorld creates the resource group, VNet and load balancers, as
// CAPZ's principal, before faults begin.
func (c *chaos) createPLSWorld(ctx context.Context) error {
	sub := sandbox.FleetMCSubscription
	if err := c.sb.Sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sub, Name: plsGroup, Location: sandbox.FleetLocation}}}); err != nil {
		return err
	}
	f, err := c.sb.Network(sub)
	if err != nil {
		return err
	}
	vp, err := f.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, plsGroup, plsVNet, armnetwork.VirtualNetwork{
		Location: new(sandbox.FleetLocation),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.200.0.0/16")}},
			Subnets: []*armnetwork.Subnet{
				{Name: new("frontends"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.200.0.0/24")}},
				{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{
					AddressPrefix:                     new("10.200.1.0/24"),
					PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled),
				}},
			},
		},
	}, nil)
	if err != nil {
		return err
	}
	vnet, err := vp.PollUntilDone(ctx, nil)
	if err != nil {
		return err
	}
	frontends := *vnet.ID + "/subnets/frontends"
	for i := range c.cfg.PLS {
		lp, err := f.NewLoadBalancersClient().BeginCreateOrUpdate(ctx, plsGroup, plsLB(i), armnetwork.LoadBalancer{
			Location: new(sandbox.FleetLocation),
			SKU:      &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: new(frontends)}},
			}}},
		}, nil)
		if err != nil {
			return err
		}
		if _, err := lp.PollUntilDone(ctx, nil); err != nil {
			return err
		}
	}
	return c.sb.EnsureNamespace(ctx, plsNamespace)
}

// privateLinkService is AzurePrivateLinkService i.
func privateLinkService(i int) *v1alpha1.AzurePrivateLinkService {
	return &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: plsNamespace, Name: plsName(i)},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: sandbox.FleetMCSubscription, ResourceGroup: plsGroup, Location: sandbox.FleetLocation,
			IdentityRef: &v1alpha1.IdentityReference{Name: sandbox.FleetIdentityName, Namespace: sandbox.FleetIdentityNS},
			Frontend:    v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: plsLB(i), FrontendIPConfigurationName: "fe"}},
			NATSubnet:   v1alpha1.NATSubnet{Name: "nat"},
			Visibility:  []string{sandbox.FleetMCSubscription},
		},
	}
}
