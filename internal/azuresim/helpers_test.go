package azuresim_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

const (
	tenant       = "72f988bf-0000-0000-0000-000000000001"
	clientID     = "operator-client"
	clientSecret = "s3cret"
	providerSub  = "11111111-1111-1111-1111-111111111111"
	consumerSub  = "22222222-2222-2222-2222-222222222222"
	location     = "westeurope"
)

// env is an emulator and real SDK clients that reach it over HTTPS with a
// token from its AAD endpoint.
type env struct {
	srv     *azuresim.Server
	httpc   *http.Client
	cred    *azidentity.ClientSecretCredential
	armOpts *arm.ClientOptions
}

func newEnv(t testing.TB, opts azuresim.Options) *env {
	t.Helper()
	opts.TLS = true
	if opts.Principals == nil {
		opts.Principals = []azuresim.Principal{{TenantID: tenant, ClientID: clientID, ClientSecret: clientSecret}}
	}
	srv := azuresim.New(opts)
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.CertPool(), MinVersion: tls.VersionTLS12}}}
	cfg := cloud.Configuration{
		ActiveDirectoryAuthorityHost: srv.URL() + "/",
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: srv.URL(), Audience: srv.URL()},
		},
	}
	copts := azcore.ClientOptions{
		Cloud:     cfg,
		Transport: httpc,
		Retry:     policy.RetryOptions{MaxRetries: 3, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 200 * time.Millisecond},
	}
	cred, err := azidentity.NewClientSecretCredential(tenant, clientID, clientSecret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions:            copts,
		DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{srv: srv, httpc: httpc, cred: cred, armOpts: &arm.ClientOptions{ClientOptions: copts}}
}

func (e *env) network(t testing.TB, sub string) *armnetwork.ClientFactory {
	t.Helper()
	f, err := armnetwork.NewClientFactory(sub, e.cred, e.armOpts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// networkPatient is a client whose retry policy waits out Retry-After hints
// up to maxDelay; azcore gives up on (returns) a 429 whose hint is longer.
func (e *env) networkPatient(t testing.TB, sub string, maxDelay time.Duration) *armnetwork.ClientFactory {
	t.Helper()
	opts := *e.armOpts
	opts.Retry.MaxRetryDelay = maxDelay
	f, err := armnetwork.NewClientFactory(sub, e.cred, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *env) dns(t testing.TB, sub string) *armprivatedns.ClientFactory {
	t.Helper()
	f, err := armprivatedns.NewClientFactory(sub, e.cred, e.armOpts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// provider is a provider-side network: a VNet with a node subnet and a NAT
// subnet, and a Standard internal load balancer.
type provider struct {
	sub, rg              string
	vnetID, nodeSubnetID string
	natSubnetID          string
	frontendID           string
}

var pollOpts = &runtime.PollUntilDoneOptions{Frequency: 10 * time.Millisecond}

type poller[T any] = runtime.Poller[T]

// mustPoll starts a long-running operation and waits for its result.
func mustPoll[T any](t testing.TB, begin func() (*poller[T], error)) T {
	t.Helper()
	p, err := begin()
	if err != nil {
		t.Fatalf("starting operation: %v", err)
	}
	res, err := p.PollUntilDone(context.Background(), pollOpts)
	if err != nil {
		t.Fatalf("operation: %v", err)
	}
	return res
}

// pollErr starts a long-running operation and returns its error, from the
// first request or from the operation.
func pollErr[T any](begin func() (*poller[T], error)) error {
	p, err := begin()
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(context.Background(), pollOpts)
	return err
}

// newProvider builds the provider side through the SDK.
func newProvider(t testing.TB, e *env, sub, rg, cidr16 string) provider {
	t.Helper()
	ctx := context.Background()
	e.seedGroup(t, sub, rg)
	nf := e.network(t, sub)
	vnet := mustPoll(t, func() (*poller[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], error) {
		return nf.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, rg, "vnet", armnetwork.VirtualNetwork{
			Location: new(location),
			Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new(cidr16 + ".0.0/16")}},
				Subnets: []*armnetwork.Subnet{
					{Name: new("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(cidr16 + ".0.0/24")}},
					{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{
						AddressPrefix:                     new(cidr16 + ".1.0/24"),
						PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled),
					}},
				},
			},
		}, nil)
	})
	p := provider{sub: sub, rg: rg, vnetID: *vnet.ID}
	p.nodeSubnetID = *vnet.ID + "/subnets/nodes"
	p.natSubnetID = *vnet.ID + "/subnets/nat"
	lb := mustPoll(t, func() (*poller[armnetwork.LoadBalancersClientCreateOrUpdateResponse], error) {
		return nf.NewLoadBalancersClient().BeginCreateOrUpdate(ctx, rg, "api-lb", internalLB("api", p.nodeSubnetID, ""), nil)
	})
	p.frontendID = *lb.Properties.FrontendIPConfigurations[0].ID
	return p
}

// internalLB is a Standard load balancer with one internal frontend, with a
// static address when ip is set.
func internalLB(frontend, subnetID, ip string) armnetwork.LoadBalancer {
	fe := &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: new(subnetID)}}
	if ip != "" {
		fe.PrivateIPAllocationMethod = new(armnetwork.IPAllocationMethodStatic)
		fe.PrivateIPAddress = new(ip)
	}
	return armnetwork.LoadBalancer{
		Location: new(location),
		SKU:      &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{
			FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{Name: new(frontend), Properties: fe}},
		},
	}
}

// pls creates a private link service on the provider's load balancer.
func (p provider) pls(t testing.TB, e *env, name string, visibility, autoApproval []string) armnetwork.PrivateLinkService {
	t.Helper()
	nf := e.network(t, p.sub)
	return mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return nf.NewPrivateLinkServicesClient().BeginCreateOrUpdate(context.Background(), p.rg, name, p.plsBody(visibility, autoApproval), nil)
	}).PrivateLinkService
}

func (p provider) plsBody(visibility, autoApproval []string) armnetwork.PrivateLinkService {
	return armnetwork.PrivateLinkService{
		Location: new(location),
		Properties: &armnetwork.PrivateLinkServiceProperties{
			LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: new(p.frontendID)}},
			IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{{
				Name: new("nat-0"),
				Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
					Primary: new(true),
					Subnet:  &armnetwork.Subnet{ID: new(p.natSubnetID)},
				},
			}},
			Visibility:   &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: to.SliceOfPtrs(visibility...)},
			AutoApproval: &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: to.SliceOfPtrs(autoApproval...)},
		},
	}
}

// peBody is a private endpoint in subnetID connecting to target (an ID or
// alias), manually or automatically.
func peBody(subnetID, target string, manual bool) armnetwork.PrivateEndpoint {
	conn := []*armnetwork.PrivateLinkServiceConnection{{
		Name: new("conn"),
		Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(target),
			RequestMessage:       new("please approve"),
		},
	}}
	pe := armnetwork.PrivateEndpoint{
		Location:   new(location),
		Properties: &armnetwork.PrivateEndpointProperties{Subnet: &armnetwork.Subnet{ID: new(subnetID)}},
	}
	if manual {
		pe.Properties.ManualPrivateLinkServiceConnections = conn
	} else {
		pe.Properties.PrivateLinkServiceConnections = conn
	}
	return pe
}

func (e *env) seedGroup(t testing.TB, sub, rg string) {
	t.Helper()
	if err := e.srv.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sub, Name: rg, Location: location}}}); err != nil {
		t.Fatal(err)
	}
}

// errorCode returns the ARM error code and status of an SDK error.
func errorCode(err error) (string, int) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode, re.StatusCode
	}
	if err != nil {
		return "not a ResponseError: " + err.Error(), 0
	}
	return "", 0
}

// nicIP reads a network interface's primary private IP, where Azure puts a
// private endpoint's address.
func nicIP(t testing.TB, e *env, sub, nicID string) string {
	t.Helper()
	parts := strings.Split(nicID, "/")
	if len(parts) < 9 {
		t.Fatalf("NIC ID %q", nicID)
	}
	nic, err := e.network(t, sub).NewInterfacesClient().Get(context.Background(), parts[4], parts[8], nil)
	if err != nil {
		t.Fatal(err)
	}
	return *nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress
}

// natIPs reads a private link service's NAT addresses by configuration
// name: as Azure does, the service shows a dynamic configuration without
// its address, which is on the service's network interface.
func natIPs(t testing.TB, e *env, sub string, pls *armnetwork.PrivateLinkService) map[string]string {
	t.Helper()
	if len(pls.Properties.NetworkInterfaces) != 1 {
		t.Fatalf("private link service %s lists %d network interfaces, want 1", *pls.ID, len(pls.Properties.NetworkInterfaces))
	}
	out := map[string]string{}
	for _, c := range pls.Properties.IPConfigurations {
		if ptr.Deref(c.Properties.PrivateIPAllocationMethod, "") != armnetwork.IPAllocationMethodStatic && c.Properties.PrivateIPAddress != nil {
			t.Errorf("dynamic NAT IP configuration %s shows address %s; Azure shows none", *c.Name, *c.Properties.PrivateIPAddress)
		}
	}
	parts := strings.Split(*pls.Properties.NetworkInterfaces[0].ID, "/")
	nic, err := e.network(t, sub).NewInterfacesClient().Get(context.Background(), parts[4], parts[8], nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.EqualFold(*nic.Properties.PrivateLinkService.ID, *pls.ID) {
		t.Errorf("the interface names %s as its service, want %s", *nic.Properties.PrivateLinkService.ID, *pls.ID)
	}
	for _, c := range nic.Properties.IPConfigurations {
		out[*c.Name] = *c.Properties.PrivateIPAddress
	}
	return out
}
