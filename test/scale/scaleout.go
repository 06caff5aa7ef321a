package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// The world past Azure's 1,000s (Config.ScaleOut), as docs/operations.md
// tells a user to set it up: "Ingress services beyond the first" and
// "Endpoints beyond the management cluster's AzureCluster".
const (
	// shardFrontends is how many further frontends capzsim gives the MC's
	// ingress load balancer: Azure allows 8 private link services per load
	// balancer, the first is the hand-made <mc>-ingress-privatelink.
	shardFrontends = 7
	// scaleOutMaxN is the most WCs the ingress services take: 8 services
	// of Azure's 1,000 endpoints each.
	scaleOutMaxN = (1 + shardFrontends) * 1000
	// beyondRG, beyondVNet, beyondSubnet: the MC subscription's network
	// for the endpoints beyond the MC's AzureCluster, high-scale
	// (privateEndpointVNetPolicies Basic: Azure takes 5,000 endpoints in
	// it, azuresim enforces both figures), with a /17 subnet.
	beyondRG     = "mc-pe-rg"
	beyondVNet   = "mc-pe"
	beyondSubnet = "pe"
	// ingressLB is the load balancer capzsim puts the MC's ingress on
	// (<cluster>-ingress-lb).
	ingressLB = sandbox.FleetMCName + "-ingress-lb"
)

// shardFrontendNames are the further frontends' names, in order.
func shardFrontendNames() []string {
	names := make([]string, 0, shardFrontends)
	for k := 2; k <= 1+shardFrontends; k++ {
		names = append(names, fmt.Sprintf("ingress-%d", k))
	}
	return names
}

// beyondSubnetID is the subnet of --mc-endpoint-subnets.
func beyondSubnetID() string {
	return "/subscriptions/" + sandbox.FleetMCSubscription + "/resourceGroups/" + beyondRG +
		"/providers/Microsoft.Network/virtualNetworks/" + beyondVNet + "/subnets/" + beyondSubnet
}

// scaleOutFlags are the operator's flags for the world: its further
// ingress services on capzsim's further frontends, auto-approving the WCs'
// subscriptions, and the endpoints beyond the MC's AzureCluster in the
// high-scale network.
func scaleOutFlags(subscriptions []string) []string {
	return []string{
		"--mc-ingress-shard-frontends=" + strings.Join(shardFrontendNames(), ","),
		"--mc-ingress-load-balancer=" + ingressLB,
		"--mc-ingress-shard-subscriptions=" + strings.Join(subscriptions, ","),
		"--mc-endpoint-subnets=" + beyondSubnetID(),
	}
}

// seedBeyondNetwork makes the network of --mc-endpoint-subnets in azuresim.
func seedBeyondNetwork(sim *azuresim.Server) error {
	raw, err := json.Marshal(armnetwork.VirtualNetwork{Location: new(sandbox.FleetLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace:                &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.50.0.0/16")}},
		PrivateEndpointVNetPolicies: new(armnetwork.PrivateEndpointVNetPoliciesBasic),
		Subnets:                     []*armnetwork.Subnet{{Name: new(beyondSubnet), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.50.0.0/17")}}},
	}})
	if err != nil {
		return err
	}
	vnet := strings.TrimSuffix(beyondSubnetID(), "/subnets/"+beyondSubnet)
	return sim.Seed(azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sandbox.FleetMCSubscription, Name: beyondRG, Location: sandbox.FleetLocation}},
		Resources:      []azuresim.SeedResource{{ID: vnet, Body: raw}},
	})
}

// scaleOutObjects counts what the operator made for the MC: its further
// ingress services and its endpoints beyond the MC's AzureCluster.
func (b *bench) scaleOutObjects(ctx context.Context) (services, endpoints int, err error) {
	pls := &v1alpha1.AzurePrivateLinkServiceList{}
	if err := b.sb.Client.List(ctx, pls, client.InNamespace(sandbox.FleetIdentityNS), client.MatchingLabels{clusterlink.ShardOfLabel: sandbox.FleetMCName}); err != nil {
		return 0, 0, err
	}
	pes := &v1alpha1.AzurePrivateEndpointList{}
	if err := b.sb.Client.List(ctx, pes, client.InNamespace(sandbox.FleetIdentityNS), client.MatchingLabels{clusterlink.MCEndpointOfLabel: sandbox.FleetMCName}); err != nil {
		return 0, 0, err
	}
	return len(pls.Items), len(pes.Items), nil
}
