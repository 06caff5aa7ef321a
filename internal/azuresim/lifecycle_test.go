package azuresim_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestPrivateLinkLifecycle walks the provider and consumer sides through
// the SDK, the way the operator will: a private link service on an internal
// load balancer, a private endpoint to it, the endpoint's IP, and deletion
// in the order Azure requires.
func TestPrivateLinkLifecycle(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")

	pls := prov.pls(t, e, "wc-api-privatelink", []string{consumerSub}, []string{consumerSub})
	if !regexp.MustCompile(`^wc-api-privatelink\.[0-9a-f-]{36}\.westeurope\.azure\.privatelinkservice$`).MatchString(*pls.Properties.Alias) {
		t.Errorf("alias %q does not have Azure's shape", *pls.Properties.Alias)
	}
	if got := natIPs(t, e, providerSub, &pls)[*pls.Properties.IPConfigurations[0].Name]; got != "10.1.1.4" {
		t.Errorf("first NAT IP: want 10.1.1.4 (Azure reserves .0-.3), got %s", got)
	}

	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	pe := mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "wc-api-privatelink-privateendpoint", peBody(cons.nodeSubnetID, *pls.ID, false), nil)
	})
	if got := *pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status; got != azuresim.ConnectionApproved {
		t.Errorf("auto-approved connection: want Approved, got %s", got)
	}

	got, err := pes.Get(ctx, "mc-rg", "wc-api-privatelink-privateendpoint", &armnetwork.PrivateEndpointsClientGetOptions{Expand: new("networkInterfaces")})
	if err != nil {
		t.Fatal(err)
	}
	nic := got.Properties.NetworkInterfaces[0]
	// The load balancer frontend took .4 in the consumer's node subnet.
	if ip := *nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress; ip != "10.2.0.5" {
		t.Errorf("endpoint IP: want 10.2.0.5, got %s", ip)
	}
	if n := len(got.Properties.CustomDNSConfigs); n != 0 {
		t.Errorf("an endpoint to a private link service without FQDNs has customDnsConfigs (%d), which Azure omits", n)
	}
	nicName := regexp.MustCompile(`^wc-api-privatelink-privateendpoint\.nic\.[0-9a-f-]{36}$`)
	if !nicName.MatchString(*nic.Name) {
		t.Errorf("NIC name %q is not Azure's default <endpoint>.nic.<guid>", *nic.Name)
	}
	nicGot, err := e.network(t, consumerSub).NewInterfacesClient().Get(ctx, "mc-rg", *nic.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *nicGot.Properties.PrivateEndpoint.ID != *pe.ID {
		t.Errorf("NIC's private endpoint: want %s, got %s", *pe.ID, *nicGot.Properties.PrivateEndpoint.ID)
	}

	checkProviderView(t, e, *pe.ID)
	checkDeletionOrder(t, e, *nic.Name)
}

// checkProviderView checks what the service's owner sees of the endpoint.
func checkProviderView(t *testing.T, e *env, peID string) {
	t.Helper()
	ctx := context.Background()
	plsClient := e.network(t, providerSub).NewPrivateLinkServicesClient()
	plsNow, err := plsClient.Get(ctx, "wc-rg", "wc-api-privatelink", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plsNow.Properties.PrivateEndpointConnections); n != 1 {
		t.Fatalf("private link service connections: want 1, got %d", n)
	}
	if id := *plsNow.Properties.PrivateEndpointConnections[0].Properties.PrivateEndpoint.ID; id != peID {
		t.Errorf("connection's endpoint: want %s, got %s", peID, id)
	}

	conn, err := plsClient.GetPrivateEndpointConnection(ctx, "wc-rg", "wc-api-privatelink", *plsNow.Properties.PrivateEndpointConnections[0].Name, nil)
	if err != nil || *conn.Properties.PrivateLinkServiceConnectionState.Status != azuresim.ConnectionApproved {
		t.Errorf("GET of the connection: %v %v", conn.Properties, err)
	}
	listed := 0
	for pager := plsClient.NewListBySubscriptionPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page.Value)
	}
	if listed != 1 {
		t.Errorf("services in the subscription: want 1, got %d", listed)
	}
	if c := e.srv.Counters(); c.ByPrincipal[clientID] == 0 || c.ByPrincipal[clientID] != c.Total {
		t.Errorf("requests by principal: want all %d by %s, got %v", c.Total, clientID, c.ByPrincipal)
	}

}

// checkDeletionOrder deletes in the order Azure requires and checks the
// refusals on the way.
func checkDeletionOrder(t *testing.T, e *env, nicName string) {
	t.Helper()
	ctx := context.Background()
	plsClient := e.network(t, providerSub).NewPrivateLinkServicesClient()
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	// Azure's deletion order: the service refuses while it has connections,
	// the load balancer while a service uses it.
	err := pollErr(func() (*poller[armnetwork.PrivateLinkServicesClientDeleteResponse], error) {
		return plsClient.BeginDelete(ctx, "wc-rg", "wc-api-privatelink", nil)
	})
	if code, status := errorCode(err); code != "PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted" || status != 400 {
		t.Errorf("deleting a service with connections: want 400 PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted, got %d %s", status, code)
	}
	err = pollErr(func() (*poller[armnetwork.LoadBalancersClientDeleteResponse], error) {
		return e.network(t, providerSub).NewLoadBalancersClient().BeginDelete(ctx, "wc-rg", "api-lb", nil)
	})
	if code, _ := errorCode(err); code != "CannotDeleteLoadBalancerWithPrivateLinkService" {
		t.Errorf("deleting a load balancer under a service: want CannotDeleteLoadBalancerWithPrivateLinkService, got %s", code)
	}
	mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientDeleteResponse], error) {
		return pes.BeginDelete(ctx, "mc-rg", "wc-api-privatelink-privateendpoint", nil)
	})
	if _, err := e.network(t, consumerSub).NewInterfacesClient().Get(ctx, "mc-rg", nicName, nil); err == nil {
		t.Errorf("the endpoint's NIC outlived the endpoint")
	}
	mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientDeleteResponse], error) {
		return plsClient.BeginDelete(ctx, "wc-rg", "wc-api-privatelink", nil)
	})
	if _, err := plsClient.Get(ctx, "wc-rg", "wc-api-privatelink", nil); err == nil {
		t.Errorf("service still exists after delete")
	} else if code, status := errorCode(err); code != "ResourceNotFound" || status != 404 {
		t.Errorf("GET after delete: want 404 ResourceNotFound, got %d %s", status, code)
	}
	// Deleting what is gone is success, as in ARM.
	mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientDeleteResponse], error) {
		return plsClient.BeginDelete(ctx, "wc-rg", "wc-api-privatelink", nil)
	})
}

// TestCustomDNSConfigsFollowFQDNs: Azure lists a private endpoint's
// customDnsConfigs from the target service's FQDNs, one per FQDN, with the
// endpoint's IP; a service without FQDNs gives none (the IP is then only on
// the network interface, as TestPrivateLinkLifecycle checks).
func TestCustomDNSConfigsFollowFQDNs(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	body := prov.plsBody([]string{consumerSub}, []string{consumerSub})
	body.Properties.Fqdns = []*string{new("api.wc1.example"), new("apps.wc1.example")}
	plss := e.network(t, providerSub).NewPrivateLinkServicesClient()
	pls := mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return plss.BeginCreateOrUpdate(ctx, "wc-rg", "named", body, nil)
	})
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	pe := mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "named-pe", peBody(cons.nodeSubnetID, *pls.ID, false), nil)
	})
	type cfg struct{ FQDN, IP string }
	var got []cfg
	for _, c := range pe.Properties.CustomDNSConfigs {
		got = append(got, cfg{*c.Fqdn, *c.IPAddresses[0]})
	}
	ip := nicIP(t, e, consumerSub, *pe.Properties.NetworkInterfaces[0].ID)
	if diff := cmp.Diff([]cfg{{"api.wc1.example", ip}, {"apps.wc1.example", ip}}, got); diff != "" {
		t.Errorf("customDnsConfigs (-want +got):\n%s", diff)
	}
}
