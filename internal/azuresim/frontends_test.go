package azuresim_test

import (
	"context"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestPrivateLinkServiceFrontends covers what a service may front besides
// an internal frontend in its own resource group: a load balancer in
// another resource group, a public frontend, and no load balancer at all
// (Direct Connect, behind a subscription feature).
func TestPrivateLinkServiceFrontends(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	client := e.network(t, providerSub).NewPrivateLinkServicesClient()

	e.seedGroup(t, providerSub, "services-rg")
	inOtherGroup := prov.plsBody(nil, nil)
	mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return client.BeginCreateOrUpdate(ctx, "services-rg", "apart", inOtherGroup, nil)
	})

	lbs := e.network(t, providerSub).NewLoadBalancersClient()
	pub := mustPoll(t, func() (*poller[armnetwork.LoadBalancersClientCreateOrUpdateResponse], error) {
		return lbs.BeginCreateOrUpdate(ctx, "wc-rg", "public-lb", armnetwork.LoadBalancer{
			Location: new(location), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name: new("pub"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
					PublicIPAddress: &armnetwork.PublicIPAddress{ID: new("/subscriptions/" + providerSub + "/resourceGroups/wc-rg/providers/Microsoft.Network/publicIPAddresses/ip")},
				},
			}}},
		}, nil)
	})
	onPublic := prov.plsBody(nil, nil)
	onPublic.Properties.LoadBalancerFrontendIPConfigurations[0].ID = pub.Properties.FrontendIPConfigurations[0].ID
	mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return client.BeginCreateOrUpdate(ctx, "wc-rg", "public", onPublic, nil)
	})

	direct := prov.plsBody(nil, nil)
	direct.Properties.LoadBalancerFrontendIPConfigurations = nil
	direct.Properties.DestinationIPAddress = new("10.1.0.50")
	e.srv.RegisterFeature(consumerSub, azuresim.FeatureDirectConnect) // another subscription's registration does not count
	_, err := client.BeginCreateOrUpdate(ctx, "wc-rg", "direct", direct, nil)
	if code, _ := errorCode(err); code != "SubscriptionNotRegisteredForFeature" {
		t.Errorf("Direct Connect without the feature: got %v", err)
	}
	e.srv.RegisterFeature(providerSub, azuresim.FeatureDirectConnect)
	_, err = client.BeginCreateOrUpdate(ctx, "wc-rg", "direct", direct, nil)
	if code, _ := errorCode(err); code != "PrivateLinkServiceWithDestinationIPAddressNeedsMoreIpConfigurations" {
		t.Errorf("Direct Connect with one NAT IP configuration: got %v", err)
	}
	for _, n := range []string{"nat-1", "nat-2"} {
		direct.Properties.IPConfigurations = append(direct.Properties.IPConfigurations, &armnetwork.PrivateLinkServiceIPConfiguration{
			Name: new(n), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Primary: new(false), Subnet: &armnetwork.Subnet{ID: new(prov.natSubnetID)}},
		})
	}
	got := mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return client.BeginCreateOrUpdate(ctx, "wc-rg", "direct", direct, nil)
	})
	if got.Properties.DestinationIPAddress == nil || *got.Properties.DestinationIPAddress != "10.1.0.50" || len(got.Properties.LoadBalancerFrontendIPConfigurations) != 0 {
		t.Errorf("the Direct Connect service: %+v", got.Properties)
	}
	moved := direct
	moved.Properties.DestinationIPAddress = new("10.1.0.51")
	_, err = client.BeginCreateOrUpdate(ctx, "wc-rg", "direct", moved, nil)
	if code, _ := errorCode(err); code != "PropertyChangeNotAllowed" {
		t.Errorf("moving the destination: got %v", err)
	}

	both := prov.plsBody(nil, nil)
	both.Properties.DestinationIPAddress = new("10.1.0.50")
	_, err = client.BeginCreateOrUpdate(ctx, "wc-rg", "both", both, nil)
	if code, _ := errorCode(err); code != "InvalidRequestFormat" {
		t.Errorf("a destination beside a frontend: got %v", err)
	}
}
