package azuresim_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestPrivateLinkServiceUpdates changes a service in place: a secondary NAT
// IP is added, visibility widened, the alias kept; moving the primary NAT IP
// is refused, and so is a Basic load balancer.
func TestPrivateLinkServiceUpdates(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	created := prov.pls(t, e, "svc", []string{consumerSub}, nil)
	client := e.network(t, providerSub).NewPrivateLinkServicesClient()

	body := prov.plsBody([]string{"*"}, []string{consumerSub})
	body.Properties.EnableProxyProtocol = new(true)
	body.Properties.Fqdns = []*string{new("api.wc1.example")}
	body.Properties.IPConfigurations = append(body.Properties.IPConfigurations, &armnetwork.PrivateLinkServiceIPConfiguration{
		Name: new("nat-1"),
		Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
			Subnet:                    &armnetwork.Subnet{ID: new(prov.natSubnetID)},
			PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic),
			PrivateIPAddress:          new("10.1.1.50"),
		},
	})
	updated := mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return client.BeginCreateOrUpdate(ctx, "wc-rg", "svc", body, nil)
	})
	if *updated.Properties.Alias != *created.Properties.Alias {
		t.Errorf("alias changed on update: %s -> %s", *created.Properties.Alias, *updated.Properties.Alias)
	}
	ips := natIPs(t, e, providerSub, &updated.PrivateLinkService)
	if ips["nat-0"] != "10.1.1.4" || ips["nat-1"] != "10.1.1.50" {
		t.Errorf("NAT IPs after update: want nat-0 kept at 10.1.1.4 and nat-1 at 10.1.1.50, got %v", ips)
	}
	if !*updated.Properties.EnableProxyProtocol || *updated.Properties.Visibility.Subscriptions[0] != "*" {
		t.Errorf("proxy protocol and visibility not updated: %+v", updated.Properties)
	}

	moved := prov.plsBody(nil, nil)
	moved.Properties.IPConfigurations = []*armnetwork.PrivateLinkServiceIPConfiguration{{
		Name:       new("other-primary"),
		Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Primary: new(true), Subnet: &armnetwork.Subnet{ID: new(prov.natSubnetID)}},
	}}
	_, err := client.BeginCreateOrUpdate(ctx, "wc-rg", "svc", moved, nil)
	if code, _ := errorCode(err); code != "PrivateLinkServicePrimaryIpConfigurationCannotBeChanged" {
		t.Errorf("moving the primary NAT IP: got %v", err)
	}
	got, err := client.Get(ctx, "wc-rg", "svc", nil)
	if err != nil || len(got.Properties.IPConfigurations) != 2 {
		t.Errorf("a refused update changed the stored service: %v", err)
	}

	mustPoll(t, func() (*poller[armnetwork.LoadBalancersClientCreateOrUpdateResponse], error) {
		return e.network(t, providerSub).NewLoadBalancersClient().BeginCreateOrUpdate(ctx, "wc-rg", "basic-lb", armnetwork.LoadBalancer{
			Location: new(location),
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: new(prov.nodeSubnetID)}},
			}}},
		}, nil)
	})
	basic := prov.plsBody(nil, nil)
	basic.Properties.LoadBalancerFrontendIPConfigurations[0].ID = new(prov.vnetID[:len(prov.vnetID)-len("virtualNetworks/vnet")] + "loadBalancers/basic-lb/frontendIPConfigurations/fe")
	_, err = client.BeginCreateOrUpdate(ctx, "wc-rg", "svc-basic", basic, nil)
	if code, _ := errorCode(err); code != "PrivateLinkServiceNotSupportedOnBasicLoadBalancer" {
		t.Errorf("a Basic load balancer: got %v", err)
	}
}

// TestVirtualNetworkReplacesSubnets checks that a VNet PUT deletes the
// subnets it leaves out, except one in use.
func TestVirtualNetworkReplacesSubnets(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	newProvider(t, e, providerSub, "rg", "10.1")
	vnets := e.network(t, providerSub).NewVirtualNetworksClient()
	put := func(subnets ...string) error {
		v := armnetwork.VirtualNetwork{Location: new(location), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.1.0.0/16")}},
		}}
		for i, name := range subnets {
			v.Properties.Subnets = append(v.Properties.Subnets, &armnetwork.Subnet{Name: new(name), Properties: &armnetwork.SubnetPropertiesFormat{
				AddressPrefix:                     new("10.1." + string(rune('0'+i)) + ".0/24"),
				PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled),
			}})
		}
		return pollErr(func() (*poller[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], error) {
			return vnets.BeginCreateOrUpdate(ctx, "rg", "vnet", v, nil)
		})
	}
	// "nodes" holds the load balancer frontend; "nat" is free.
	if err := put("nodes"); err != nil {
		t.Fatalf("dropping the unused subnet: %v", err)
	}
	if _, err := e.network(t, providerSub).NewSubnetsClient().Get(ctx, "rg", "vnet", "nat", nil); err == nil {
		t.Error("the subnet left out of the PUT still exists")
	}
	if code, _ := errorCode(put("other")); code != "InUseSubnetCannotBeDeleted" {
		t.Errorf("dropping a subnet in use: want InUseSubnetCannotBeDeleted")
	}
}

// TestConditionalRequestsAndTokens covers If-Match, token expiry, resource
// group HEAD and DELETE, and listing NICs.
func TestConditionalRequestsAndTokens(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, azuresim.Options{Now: clock.Now, MaxPollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "rg", "10.1")
	pls := prov.pls(t, e, "svc", nil, nil)
	pes := e.network(t, providerSub).NewPrivateEndpointsClient()
	mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "rg", "pe", peBody(prov.nodeSubnetID, *pls.ID, true), nil)
	})

	var nics []string
	pager := e.network(t, providerSub).NewInterfacesClient().NewListPager("rg", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Value {
			nics = append(nics, *n.Name)
		}
	}
	slices.Sort(nics)
	if len(nics) != 2 || !strings.HasPrefix(nics[0], "pe.nic.") || !strings.HasPrefix(nics[1], "svc.nic.") {
		t.Errorf("NICs in the group: want the endpoint's and the service's, got %v", nics)
	}

	stale := policy.WithHTTPHeader(ctx, http.Header{"If-Match": []string{`W/"stale"`}})
	_, err := pes.BeginDelete(stale, "rg", "pe", nil)
	if code, status := errorCode(err); code != "PreconditionFailed" || status != http.StatusPreconditionFailed {
		t.Errorf("If-Match with a stale ETag: want 412 PreconditionFailed, got %d %s", status, code)
	}

	rgURL := e.srv.URL() + "/subscriptions/" + providerSub + "/resourceGroups/rg?api-version=2021-04-01"
	tok, err := e.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{e.srv.URL() + "/.default"}})
	if err != nil {
		t.Fatal(err)
	}
	send := func(method string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, method, rgURL, nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := e.httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("x-ms-error-code")
	}
	if code, _ := send(http.MethodHead); code != http.StatusNoContent {
		t.Errorf("HEAD of an existing group: want 204, got %d", code)
	}
	if code, _ := send(http.MethodDelete); code != http.StatusAccepted {
		t.Errorf("DELETE of a group: want 202 (ARM's, with a Location to poll), got %d", code)
	}
	if code, _ := send(http.MethodHead); code != http.StatusNotFound {
		t.Errorf("HEAD after delete: want 404, got %d", code)
	}
	if got := e.srv.Resources("Microsoft.Network/privateEndpoints"); len(got) != 0 {
		t.Errorf("resources outlived their group: %v", got)
	}

	clock.Advance(2 * time.Hour)
	if code, ec := send(http.MethodHead); code != http.StatusUnauthorized || ec != "ExpiredAuthenticationToken" {
		t.Errorf("an expired token: want 401 ExpiredAuthenticationToken, got %d %s", code, ec)
	}
}

// TestEndpointKeepsItsService: a PUT of an existing endpoint that names
// another service is refused with Azure's error, and the endpoint still
// connects where it did; the same target is accepted again (CAPZ re-PUTs
// its endpoints on every reconcile).
func TestEndpointKeepsItsService(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	first := prov.pls(t, e, "svc", []string{consumerSub}, []string{consumerSub})
	second := prov.pls(t, e, "svc2", []string{consumerSub}, []string{consumerSub})
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", peBody(cons.nodeSubnetID, *first.ID, false), nil)
	})
	_, err := pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", peBody(cons.nodeSubnetID, *second.ID, false), nil)
	if code, status := errorCode(err); code != "CannotChangePrivateLinkConnectionOnPrivateEndpoint" || status != http.StatusBadRequest {
		t.Fatalf("re-targeting an endpoint: want 400 CannotChangePrivateLinkConnectionOnPrivateEndpoint, got %v", err)
	}
	got, err := pes.Get(ctx, "mc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if target := *got.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID; !strings.EqualFold(target, *first.ID) {
		t.Errorf("after a refused re-target the endpoint connects to %s, want %s", target, *first.ID)
	}
	mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", peBody(cons.nodeSubnetID, *first.ID, false), nil)
	})
}
