package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// The consumer step: a hosted control plane's API server behind an
// AzurePrivateLinkService in the provider's network, and an
// AzurePrivateEndpoint with private DNS in a guest network of another
// subscription. Names are the demo's own; the networks are seeded in
// azuresim as a platform would have them.
const (
	consumerNS     = "org-hosted"
	consumerName   = "hc1-apiserver"
	consumerZone   = "hc1.hypershift.local"
	guestSub       = "44444444-4444-4444-4444-444444444444"
	guestRG        = "hc1-guest-rg"
	providerRG     = "hcp-provider-rg"
	demoLocation   = "westeurope"
	providerPrefix = "10.60"
	guestPrefix    = "10.70"
	registryName   = "platformacr"
)

// consumer runs the consumer step and prints what the API server's name
// resolves to from the guest network, and from the provider's.
func (d *demo) consumer(ctx context.Context) error {
	providerSub, _, _ := unstructured.NestedString(d.samples.mc.Object, "spec", "subscriptionID")
	pVNet := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/hcp-vnet", providerSub, providerRG)
	gVNet := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/hc1-vnet", guestSub, guestRG)
	d.say("Consumer side: a hosted control plane's API server load balancer in the provider's network %s, and a guest network %s in subscription %s",
		pVNet[strings.LastIndex(pVNet, "/")+1:], gVNet[strings.LastIndex(gVNet, "/")+1:], guestSub)
	if err := d.sb.Sim.Seed(seedConsumerNetworks(providerSub, pVNet, gVNet)); err != nil {
		return fmt.Errorf("seeding the consumer step's networks: %w", err)
	}
	if err := d.sb.EnsureNamespace(ctx, consumerNS); err != nil {
		return err
	}
	identity := &v1alpha1.IdentityReference{Name: d.samples.identityName, Namespace: d.samples.identityNamespace}
	pls := &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: consumerName},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: providerSub, ResourceGroup: providerRG, Location: demoLocation, IdentityRef: identity,
			Frontend:   v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "hcp-apiserver-lb", FrontendIPConfigurationName: "apiserver"}},
			NATSubnet:  v1alpha1.NATSubnet{Name: "hcp-nat"},
			Visibility: []string{guestSub}, AutoApproval: []string{guestSub},
		},
	}
	ape := &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: consumerName},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: guestSub, ResourceGroup: guestRG, Location: demoLocation, IdentityRef: identity,
			SubnetID:              gVNet + "/subnets/private-endpoints",
			PrivateLinkServiceRef: &v1alpha1.LocalObjectReference{Name: consumerName},
			DNS:                   &v1alpha1.PrivateEndpointDNS{ZoneName: consumerZone},
		},
	}
	for _, o := range []client.Object{pls, ape} {
		if err := d.sb.Client.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	d.say("Applied AzurePrivateLinkService %s/%s (provider) and AzurePrivateEndpoint %s/%s with DNS zone %s (consumer)", consumerNS, consumerName, consumerNS, consumerName, consumerZone)
	got, err := d.waitEndpointReady(ctx, ape)
	if err != nil {
		return err
	}
	d.say("AzurePrivateEndpoint %s/%s is Ready: endpoint %s, connection %s", consumerNS, consumerName, strings.Join(got.Status.IPAddresses, ", "), got.Status.ConnectionState)
	name := "api." + consumerZone
	from := d.sb.Sim.Resolve(gVNet, name)
	other := d.sb.Sim.Resolve(pVNet, name)
	_, _ = fmt.Fprintf(d.out, `
What %s resolves to (Azure-provided DNS with the private zones linked to each network):

  from the guest network hc1-vnet:        %s
  from the provider's network hcp-vnet:   %s

Ask azuresim yourself:

  curl --cacert %s '%s/_sim/dns/resolve?vnet=%s&name=%s'

`, name, answer(from), answer(other), d.sb.CAFile, d.sb.Sim.URL(), url.QueryEscape(gVNet), name)
	if from.Status != azuresim.ResolveOK || len(from.Addresses) == 0 || from.Addresses[0] != got.Status.IPAddresses[0] {
		return fmt.Errorf("%s does not resolve to the endpoint's address %v from the guest network: %+v", name, got.Status.IPAddresses, from)
	}
	return d.azureService(ctx, providerSub, gVNet, identity)
}

// azureService connects the guest network to an Azure service, a container
// registry of the provider's subscription, with a static address for each
// of the two members of its registry sub-resource, and prints the names
// Azure gives them.
func (d *demo) azureService(ctx context.Context, providerSub, gVNet string, identity *v1alpha1.IdentityReference) error {
	registry := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.ContainerRegistry/registries/%s", providerSub, providerRG, registryName)
	body, err := json.Marshal(map[string]any{"location": demoLocation})
	if err != nil {
		return err
	}
	if err := d.sb.Sim.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{{ID: registry, Body: body}}}); err != nil {
		return fmt.Errorf("seeding the container registry: %w", err)
	}
	ape := &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS, Name: registryName},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: guestSub, ResourceGroup: guestRG, Location: demoLocation, IdentityRef: identity,
			SubnetID:              gVNet + "/subnets/private-endpoints",
			PrivateLinkResourceID: registry, GroupIDs: []string{"registry"},
			IPConfigurations: []v1alpha1.PrivateEndpointIPConfiguration{
				{MemberName: "registry", PrivateIPAddress: guestPrefix + ".1.40"},
				{MemberName: "registry_data_" + demoLocation, PrivateIPAddress: guestPrefix + ".1.41"},
			},
		},
	}
	if err := d.sb.Client.Create(ctx, ape); err != nil {
		return fmt.Errorf("creating AzurePrivateEndpoint %s: %w", ape.Name, err)
	}
	d.say("Applied AzurePrivateEndpoint %s/%s to the container registry %s (group registry, a static address per member)", consumerNS, registryName, registryName)
	got, err := d.waitEndpointReady(ctx, ape)
	if err != nil {
		return err
	}
	d.say("AzurePrivateEndpoint %s/%s is Ready: connection %s; the names Azure gives its members (for the network's privatelink.azurecr.io zone):", consumerNS, registryName, got.Status.ConnectionState)
	for _, c := range got.Status.CustomDNSConfigs {
		d.say("  %-40s %s", c.FQDN, strings.Join(c.IPAddresses, ", "))
	}
	return nil
}

// answer is one line of the resolution printout.
func answer(r azuresim.Resolution) string {
	switch r.Status {
	case azuresim.ResolveOK:
		return strings.Join(r.Addresses, ", ") + "  (zone " + r.Zone[strings.LastIndex(r.Zone, "/")+1:] + ", record " + r.Record + ")"
	case azuresim.ResolveNXDomain:
		return "NXDOMAIN (a linked private zone lacks the name)"
	default:
		return "no private zone linked here covers the name (public DNS would be asked)"
	}
}

func (d *demo) waitEndpointReady(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (*v1alpha1.AzurePrivateEndpoint, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	got := &v1alpha1.AzurePrivateEndpoint{}
	last := ""
	for {
		if err := d.sb.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err == nil {
			if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); c != nil {
				if c.Status == metav1.ConditionTrue && c.ObservedGeneration == got.Generation {
					return got, nil
				}
				if msg := c.Reason + ": " + c.Message; msg != last {
					d.say("  %s/%s: %s", obj.Namespace, obj.Name, msg)
					last = msg
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("AzurePrivateEndpoint %s/%s not Ready within %s (last: %s)", obj.Namespace, obj.Name, d.opts.timeout, last)
		case <-time.After(time.Second):
		}
	}
}

// seedConsumerNetworks are the provider's network (with the API server's
// internal load balancer and a NAT subnet) and the guest network.
func seedConsumerNetworks(providerSub, pVNet, gVNet string) azuresim.Seed {
	raw := func(v any) json.RawMessage {
		b, _ := json.Marshal(v) //nolint:errchkjson // plain SDK structs always marshal
		return b
	}
	subnet := func(name, prefix string, plsPolicies bool) *armnetwork.Subnet {
		s := &armnetwork.Subnet{Name: new(name), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(prefix)}}
		if plsPolicies {
			s.Properties.PrivateLinkServiceNetworkPolicies = new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)
		}
		return s
	}
	vnet := func(prefix string, subnets ...*armnetwork.Subnet) json.RawMessage {
		return raw(armnetwork.VirtualNetwork{Location: new(demoLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new(prefix + ".0.0/16")}}, Subnets: subnets,
		}})
	}
	lbID := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/loadBalancers/hcp-apiserver-lb", providerSub, providerRG)
	return azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{
			{SubscriptionID: providerSub, Name: providerRG, Location: demoLocation},
			{SubscriptionID: guestSub, Name: guestRG, Location: demoLocation},
		},
		Resources: []azuresim.SeedResource{
			{ID: pVNet, Body: vnet(providerPrefix, subnet("hcp-nodes", providerPrefix+".0.0/24", false), subnet("hcp-nat", providerPrefix+".1.0/24", true))},
			{ID: gVNet, Body: vnet(guestPrefix, subnet("nodes", guestPrefix+".0.0/24", false), subnet("private-endpoints", guestPrefix+".1.0/24", false))},
			{ID: lbID, Body: raw(armnetwork.LoadBalancer{Location: new(demoLocation), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
				Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
					Name: new("apiserver"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
						Subnet: &armnetwork.Subnet{ID: new(pVNet + "/subnets/hcp-nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic),
						PrivateIPAddress: new(providerPrefix + ".0.4"),
					},
				}}}})},
		},
	}
}
