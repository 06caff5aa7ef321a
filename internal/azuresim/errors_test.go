package azuresim_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"

	"github.com/google/go-cmp/cmp"
)

// TestAzureErrors checks that each Azure error the operator classifies
// reaches the SDK with Azure's status and code.
func TestAzureErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		reason     string
		run        func(t *testing.T, e *env, prov provider) error
		wantStatus int
		wantCode   string
	}{
		{
			reason: "a resource group that does not exist",
			run: func(t *testing.T, e *env, _ provider) error {
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().Get(ctx, "no-such-rg", "pe", nil)
				return err
			},
			wantStatus: http.StatusNotFound, wantCode: "ResourceGroupNotFound",
		},
		{
			reason: "a resource that does not exist",
			run: func(t *testing.T, e *env, prov provider) error {
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().Get(ctx, prov.rg, "pe", nil)
				return err
			},
			wantStatus: http.StatusNotFound, wantCode: "ResourceNotFound",
		},
		{
			reason: "a child resource that does not exist",
			run: func(t *testing.T, e *env, prov provider) error {
				_, err := e.network(t, providerSub).NewSubnetsClient().Get(ctx, prov.rg, "vnet", "nope", nil)
				return err
			},
			wantStatus: http.StatusNotFound, wantCode: "NotFound",
		},
		{
			reason: "a tracked resource without location",
			run: func(t *testing.T, e *env, prov provider) error {
				body := peBody(prov.nodeSubnetID, "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/privateLinkServices/z", true)
				body.Location = nil
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, prov.rg, "pe", body, nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "LocationRequired",
		},
		{
			reason: "a private endpoint name longer than Azure's 64 characters",
			run: func(t *testing.T, e *env, prov provider) error {
				pls := prov.pls(t, e, "svc", nil, nil)
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, prov.rg, strings.Repeat("p", 65),
					peBody(prov.nodeSubnetID, *pls.ID, true), nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "InvalidResourceName",
		},
		{
			reason: "a private endpoint name ending with a hyphen",
			run: func(t *testing.T, e *env, prov provider) error {
				pls := prov.pls(t, e, "svc", nil, nil)
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, prov.rg, "pe-",
					peBody(prov.nodeSubnetID, *pls.ID, true), nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "InvalidResourceName",
		},
		{
			reason: "a private link service name longer than Azure's 80 characters",
			run: func(t *testing.T, e *env, prov provider) error {
				_, err := e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, strings.Repeat("s", 81), prov.plsBody(nil, nil), nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "InvalidResourceName",
		},
		{
			reason: "a private endpoint in a subnet that does not exist",
			run: func(t *testing.T, e *env, prov provider) error {
				pls := prov.pls(t, e, "svc", nil, nil)
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, prov.rg, "pe",
					peBody(prov.vnetID+"/subnets/missing", *pls.ID, true), nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "InvalidResourceReference",
		},
		{
			reason: "a private link service on a subnet with network policies enabled",
			run: func(t *testing.T, e *env, prov provider) error {
				body := prov.plsBody(nil, nil)
				body.Properties.IPConfigurations[0].Properties.Subnet.ID = new(prov.nodeSubnetID)
				return pollErr(func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
					return e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, "svc", body, nil)
				})
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateLinkServiceNetworkPoliciesCannotBeEnabledOnPrivateLinkServiceSubnet",
		},
		{
			reason: "enabling network policies on a subnet a private link service uses",
			run: func(t *testing.T, e *env, prov provider) error {
				prov.pls(t, e, "svc", nil, nil)
				return pollErr(func() (*poller[armnetwork.SubnetsClientCreateOrUpdateResponse], error) {
					return e.network(t, providerSub).NewSubnetsClient().BeginCreateOrUpdate(ctx, prov.rg, "vnet", "nat", armnetwork.Subnet{
						Properties: &armnetwork.SubnetPropertiesFormat{
							AddressPrefix:                     new("10.1.1.0/24"),
							PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled),
						},
					}, nil)
				})
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateLinkServiceNetworkPoliciesCannotBeEnabledOnPrivateLinkServiceSubnet",
		},
		{
			reason: "more than eight NAT IP configurations",
			run: func(t *testing.T, e *env, prov provider) error {
				body := prov.plsBody(nil, nil)
				for i := 1; i <= 8; i++ {
					body.Properties.IPConfigurations = append(body.Properties.IPConfigurations, &armnetwork.PrivateLinkServiceIPConfiguration{
						Name:       new("nat-" + string(rune('0'+i))),
						Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Subnet: &armnetwork.Subnet{ID: new(prov.natSubnetID)}},
					})
				}
				_, err := e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, "svc", body, nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateLinkServiceIpConfigurationCountOutOfRange",
		},
		{
			reason: "two load balancer frontends on one service",
			run: func(t *testing.T, e *env, prov provider) error {
				body := prov.plsBody(nil, nil)
				body.Properties.LoadBalancerFrontendIPConfigurations = append(body.Properties.LoadBalancerFrontendIPConfigurations,
					&armnetwork.FrontendIPConfiguration{ID: new(prov.frontendID)})
				_, err := e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, "svc", body, nil)
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "InvalidNumberOfPrivateLinkServiceLoadBalancerFrontendIpConfigurationsSpecified",
		},
		{
			reason: "a static IP outside the subnet",
			run: func(t *testing.T, e *env, prov provider) error {
				return staticFrontend(t, e, prov, "10.9.0.10")
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateIPAddressNotInSubnet",
		},
		{
			reason: "a static IP Azure reserves",
			run: func(t *testing.T, e *env, prov provider) error {
				return staticFrontend(t, e, prov, "10.1.0.1")
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateIPAddressInReservedRange",
		},
		{
			reason: "a static IP already in use",
			run: func(t *testing.T, e *env, prov provider) error {
				return staticFrontend(t, e, prov, "10.1.0.4") // the provider's LB frontend holds it
			},
			wantStatus: http.StatusBadRequest, wantCode: "PrivateIPAddressInUse",
		},
		{
			reason: "a full subnet",
			run: func(t *testing.T, e *env, prov provider) error {
				nf := e.network(t, providerSub)
				mustPoll(t, func() (*poller[armnetwork.SubnetsClientCreateOrUpdateResponse], error) {
					return nf.NewSubnetsClient().BeginCreateOrUpdate(ctx, prov.rg, "vnet", "tiny", armnetwork.Subnet{
						Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.1.9.0/29")}, // 3 usable addresses
					}, nil)
				})
				pls := prov.pls(t, e, "svc", nil, nil)
				var err error
				for i := 0; i < 4 && err == nil; i++ {
					err = pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
						return nf.NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, prov.rg, "pe-"+string(rune('a'+i)),
							peBody(prov.vnetID+"/subnets/tiny", *pls.ID, true), nil)
					})
				}
				return err
			},
			wantStatus: http.StatusBadRequest, wantCode: "SubnetIsFull",
		},
		{
			reason: "overlapping subnets",
			run: func(t *testing.T, e *env, prov provider) error {
				return pollErr(func() (*poller[armnetwork.SubnetsClientCreateOrUpdateResponse], error) {
					return e.network(t, providerSub).NewSubnetsClient().BeginCreateOrUpdate(ctx, prov.rg, "vnet", "overlap", armnetwork.Subnet{
						Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.1.0.128/25")},
					}, nil)
				})
			},
			wantStatus: http.StatusBadRequest, wantCode: "NetcfgSubnetRangesOverlap",
		},
		{
			reason: "deleting a subnet in use",
			run: func(t *testing.T, e *env, prov provider) error {
				return pollErr(func() (*poller[armnetwork.SubnetsClientDeleteResponse], error) {
					return e.network(t, providerSub).NewSubnetsClient().BeginDelete(ctx, prov.rg, "vnet", "nodes", nil)
				})
			},
			wantStatus: http.StatusBadRequest, wantCode: "InUseSubnetCannotBeDeleted",
		},
		{
			reason: "a failed provisioning (operation fault) ends the poller with the operation's error",
			run: func(t *testing.T, e *env, prov provider) error {
				if _, err := e.srv.AddFault(azuresim.Fault{Operation: true, Method: http.MethodPut, PathRegex: "privateLinkServices/svc$",
					Status: http.StatusInternalServerError, Code: "InternalServerError", Count: 1}); err != nil {
					t.Fatal(err)
				}
				err := pollErr(func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
					return e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, "svc", prov.plsBody(nil, nil), nil)
				})
				got, gerr := e.network(t, providerSub).NewPrivateLinkServicesClient().Get(ctx, prov.rg, "svc", nil)
				if gerr != nil || *got.Properties.ProvisioningState != armnetwork.ProvisioningStateFailed {
					t.Errorf("provisioningState after a failed operation: want Failed, got %v (%v)", got.Properties, gerr)
				}
				return err
			},
			wantStatus: http.StatusOK, wantCode: "InternalServerError",
		},
		{
			reason: "an injected 403 reaches the caller without retries",
			run: func(t *testing.T, e *env, prov provider) error {
				if _, err := e.srv.AddFault(azuresim.Fault{Method: http.MethodGet, PathRegex: "/privateEndpoints/pe$",
					Status: http.StatusForbidden, Code: "AuthorizationFailed"}); err != nil {
					t.Fatal(err)
				}
				_, err := e.network(t, providerSub).NewPrivateEndpointsClient().Get(ctx, prov.rg, "pe", nil)
				return err
			},
			wantStatus: http.StatusForbidden, wantCode: "AuthorizationFailed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			e := newEnv(t, azuresim.Options{})
			prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
			err := tc.run(t, e, prov)
			type armErr struct {
				Status int
				Code   string
			}
			code, status := errorCode(err)
			if diff := cmp.Diff(armErr{tc.wantStatus, tc.wantCode}, armErr{status, code}); diff != "" {
				t.Errorf("%s (-want +got):\n%s(%v)", tc.reason, diff, err)
			}
		})
	}
}

// staticFrontend adds a load balancer with a static frontend address.
func staticFrontend(t *testing.T, e *env, prov provider, ip string) error {
	t.Helper()
	return pollErr(func() (*poller[armnetwork.LoadBalancersClientCreateOrUpdateResponse], error) {
		return e.network(t, providerSub).NewLoadBalancersClient().BeginCreateOrUpdate(context.Background(), prov.rg, "static-lb",
			internalLB("fe", prov.nodeSubnetID, ip), nil)
	})
}
