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
	// shardFrontends is how many further frontends the MC's ingress has:
	// Azure allows 8 private link services per load balancer, the first
	// is the hand-made <mc>-ingress-privatelink, so 7 on capzsim's
	// ingress load balancer and 8 on a second one (secondIngressLB).
	shardFrontends = 15
	// beyondNetworks is how many high-scale networks the MC's
	// subscription has for the endpoints beyond the MC's AzureCluster
	// (privateEndpointVNetPolicies Basic: Azure takes 5,000 endpoints in
	// each, azuresim enforces both figures), each with a /17 subnet.
	beyondNetworks = 2
	// scaleOutMaxN is the most WCs the world takes: 1,000 entries in
	// the MC's AzureCluster and 5,000 endpoints per network beyond it
	// (the ingress would take 16,000).
	scaleOutMaxN = 1000 + beyondNetworks*5000
	// beyondRG, beyondSubnet: the networks' group and subnet.
	beyondRG     = "mc-pe-rg"
	beyondSubnet = "pe"
	// ingressLB is the load balancer capzsim puts the MC's ingress on
	// (<cluster>-ingress-lb); secondIngressLB another one in the MC's
	// group, for the services past Azure's 8 per load balancer.
	ingressLB       = sandbox.FleetMCName + "-ingress-lb"
	secondIngressLB = sandbox.FleetMCName + "-ingress-lb-2"
)

// shardFrontendNames are the further frontends, in order: 7 of the
// ingress load balancer by name, then 8 of the second as
// <load-balancer>/<frontend>.
func shardFrontendNames() []string {
	names := make([]string, 0, shardFrontends)
	for k := 2; k <= 1+shardFrontends; k++ {
		name := fmt.Sprintf("ingress-%d", k)
		if k > 8 {
			name = secondIngressLB + "/" + name
		}
		names = append(names, name)
	}
	return names
}

// beyondSubnetIDs are the subnets of --mc-endpoint-subnets, one per
// network.
func beyondSubnetIDs() []string {
	out := make([]string, 0, beyondNetworks)
	for i := 1; i <= beyondNetworks; i++ {
		out = append(out, fmt.Sprintf("%s/subnets/%s", beyondVNetID(i), beyondSubnet))
	}
	return out
}

func beyondVNetID(i int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/mc-pe-%d", sandbox.FleetMCSubscription, beyondRG, i)
}

// scaleOutFlags are the operator's flags for the world: its further
// ingress services on the further frontends, auto-approving the WCs'
// subscriptions, and the endpoints beyond the MC's AzureCluster in the
// high-scale networks.
func scaleOutFlags(subscriptions []string) []string {
	return []string{
		"--mc-ingress-shard-frontends=" + strings.Join(shardFrontendNames(), ","),
		"--mc-ingress-load-balancer=" + ingressLB,
		"--mc-ingress-shard-subscriptions=" + strings.Join(subscriptions, ","),
		"--mc-endpoint-subnets=" + strings.Join(beyondSubnetIDs(), ","),
	}
}

// seedBeyondNetworks makes the networks of --mc-endpoint-subnets in
// azuresim.
func seedBeyondNetworks(sim *azuresim.Server) error {
	seed := azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sandbox.FleetMCSubscription, Name: beyondRG, Location: sandbox.FleetLocation}}}
	for i := 1; i <= beyondNetworks; i++ {
		raw, err := json.Marshal(armnetwork.VirtualNetwork{Location: new(sandbox.FleetLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace:                &armnetwork.AddressSpace{AddressPrefixes: []*string{new(fmt.Sprintf("10.%d.0.0/16", 49+i))}},
			PrivateEndpointVNetPolicies: new(armnetwork.PrivateEndpointVNetPoliciesBasic),
			Subnets:                     []*armnetwork.Subnet{{Name: new(beyondSubnet), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(fmt.Sprintf("10.%d.0.0/17", 49+i))}}},
		}})
		if err != nil {
			return err
		}
		seed.Resources = append(seed.Resources, azuresim.SeedResource{ID: beyondVNetID(i), Body: raw})
	}
	return sim.Seed(seed)
}

// scaleOutObjects counts what the operator made for the MC: its further
// ingress services and its endpoints beyond the MC's AzureCluster.
func (b *bench) scaleOutObjects(ctx context.Context) (services, endpoints int, err error) {
	pls := &v1alpha1.AzurePrivateLinkServiceList{}
	if err := b.objects.List(ctx, pls, client.InNamespace(sandbox.FleetIdentityNS), client.MatchingLabels{clusterlink.ShardOfLabel: sandbox.FleetMCName}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, err
	}
	pes := &v1alpha1.AzurePrivateEndpointList{}
	if err := b.objects.List(ctx, pes, client.InNamespace(sandbox.FleetIdentityNS), client.MatchingLabels{clusterlink.MCEndpointOfLabel: sandbox.FleetMCName}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, 0, err
	}
	return len(pls.Items), len(pes.Items), nil
}
