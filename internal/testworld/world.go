// Package testworld assembles the test world (docs/design.md, *The test world*) for
// controller tests: a real API server (envtest) with the CAPZ CRDs, the
// azuresim ARM emulator over HTTPS, and capzsim reconciling AzureClusters
// into it. It also builds AzureCluster objects the way users write them.
package testworld

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// Identities of the world.
const (
	TenantID        = sandbox.CAPZTenantID
	CloudName       = sandbox.CloudName
	CAPZClientID    = sandbox.CAPZClientID
	CAPZSecret      = sandbox.CAPZSecret
	OperatorClient  = "operator"
	OperatorSecret  = "operator-secret"
	IdentityName    = "cluster-identity"
	IdentityNS      = "org-giantswarm"
	IdentitySecret  = "cluster-identity-secret"
	DefaultLocation = "westeurope"
)

// Options configures a world.
type Options struct {
	Schema   testenv.Schema
	CAPZMode capzsim.Mode
	// Ingress lists clusters ("namespace/name") that get an ingress private
	// link service, auto-approving the given subscriptions.
	Ingress map[string]capzsim.Ingress
	// Latency of Azure's long-running operations. Default 0.
	Latency time.Duration
	// KeepRemovedEndpoints makes capzsim leave endpoints removed from spec.
	KeepRemovedEndpoints bool
	// CAPZSyncPeriod is capzsim's --sync-period. Default: CAPZ's, 10m.
	CAPZSyncPeriod time.Duration
	// CloudHosts are well-known clouds' hosts the emulator answers as
	// (sandbox.Options.CloudHosts).
	CloudHosts []string
	// Limits are the Azure limits the emulator enforces (zero fields:
	// Azure's).
	Limits azuresim.Limits
	// RealControllers runs CAPZ's and ASO's own controllers in place of
	// capzsim (sandbox.Options.RealControllers); Schema must be
	// testenv.SchemaV127 or testenv.SchemaUpstream.
	RealControllers bool
}

// World is a running test world: a sandbox, plus the AzureClusterIdentity
// every cluster of a test uses.
type World struct {
	*sandbox.Sandbox
}

var setLogger sync.Once

// Start starts the world and stops it when the test ends. Controller logs go
// to stderr with APEO_TEST_LOG=1 and nowhere otherwise.
func Start(t testing.TB, opts Options) *World {
	t.Helper()
	setLogger.Do(func() {
		if os.Getenv("APEO_TEST_LOG") == "1" {
			ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
			return
		}
		ctrl.SetLogger(logr.Discard())
	})
	resync := 200 * time.Millisecond // capzsim's; the real CAPZ has its own
	if opts.RealControllers {
		resync = 0
	}
	sb, err := sandbox.Start(context.Background(), sandbox.Options{
		Dir: t.TempDir(), Schema: opts.Schema, CAPZMode: opts.CAPZMode, CAPZResync: resync, CAPZSyncPeriod: opts.CAPZSyncPeriod,
		Ingress: opts.Ingress, KeepRemovedEndpoints: opts.KeepRemovedEndpoints, Latency: opts.Latency, CloudHosts: opts.CloudHosts,
		Limits: opts.Limits, RealControllers: opts.RealControllers,
		Principals: []azuresim.Principal{{TenantID: TenantID, ClientID: OperatorClient, ClientSecret: OperatorSecret}},
	})
	if err != nil {
		t.Fatalf("test world: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stopping the test world: %v", err)
		}
	})
	w := &World{Sandbox: sb}
	w.createIdentity(t)
	return w
}

// Network returns network clients for a subscription, as CAPZ's principal.
func (w *World) Network(t testing.TB, sub string) *armnetwork.ClientFactory {
	t.Helper()
	f, err := w.Sandbox.Network(sub)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// DNS returns Private DNS clients for a subscription, as CAPZ's principal.
func (w *World) DNS(t testing.TB, sub string) *armprivatedns.ClientFactory {
	t.Helper()
	f, err := w.Sandbox.DNS(sub)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// createIdentity creates the AzureClusterIdentity every cluster uses, with
// the operator's principal, allowed in every namespace.
func (w *World) createIdentity(t testing.TB) {
	t.Helper()
	err := w.CreateIdentity(context.Background(), sandbox.Identity{
		Namespace: IdentityNS, Name: IdentityName, SecretName: IdentitySecret,
		TenantID: TenantID, ClientID: OperatorClient, ClientSecret: OperatorSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Namespace creates a namespace if it does not exist.
func (w *World) Namespace(t testing.TB, name string) {
	t.Helper()
	if err := w.EnsureNamespace(context.Background(), name); err != nil {
		t.Fatal(err)
	}
}

// Get reads an AzureCluster.
func (w *World) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	return u, err
}

// Eventually polls cond until it holds, failing the test after timeout
// with the last thing cond reported. It never sleeps a fixed time.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, msg := cond(ctx)
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; last: %s", what, err, last)
	}
}

// Timeout is the generous wait for anything in the world to happen, so a
// loaded 2-core machine does not make tests flaky.
const Timeout = 2 * time.Minute

// Describe summarises a cluster for failure messages.
func Describe(u *unstructured.Unstructured) string {
	ann := u.GetAnnotations()
	subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
	var pes []string
	for _, s := range subnets {
		sm, _ := s.(map[string]any)
		list, _, _ := unstructured.NestedSlice(sm, "privateEndpoints")
		for _, pe := range list {
			pm, _ := pe.(map[string]any)
			pes = append(pes, fmt.Sprint(pm["name"]))
		}
	}
	return fmt.Sprintf("%s/%s annotations=%v privateEndpoints=%v finalizers=%v", u.GetNamespace(), u.GetName(), ann, pes, u.GetFinalizers())
}

// EndpointIP is a private endpoint's IP, read from its network interface
// ("" while it has none).
func (w *World) EndpointIP(t testing.TB, sub, rg, name string) string {
	t.Helper()
	pe, err := w.Network(t, sub).NewPrivateEndpointsClient().Get(context.Background(), rg, name,
		&armnetwork.PrivateEndpointsClientGetOptions{Expand: new("networkInterfaces")})
	if err != nil {
		t.Fatalf("endpoint %s/%s: %v", rg, name, err)
	}
	if len(pe.Properties.NetworkInterfaces) == 0 {
		return ""
	}
	return *pe.Properties.NetworkInterfaces[0].Properties.IPConfigurations[0].Properties.PrivateIPAddress
}

// SecondAPIServer starts another API server with its own capzsim and the
// world's AzureClusterIdentity, on the same Azure: the target of a
// `clusterctl move` (sandbox.Move). It stops with the test, before w.
func (w *World) SecondAPIServer(t testing.TB) *World {
	t.Helper()
	sb, err := w.Sandbox.SecondAPIServer(context.Background(), t.TempDir())
	if err != nil {
		t.Fatalf("second API server: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stopping the second API server: %v", err)
		}
	})
	second := &World{Sandbox: sb}
	second.createIdentity(t)
	return second
}

// EntryNames lists the names of an AzureCluster's private endpoint
// entries, subnet by subnet.
func (w *World) EntryNames(t testing.TB, key types.NamespacedName) []string {
	t.Helper()
	u, err := w.Get(context.Background(), key.Namespace, key.Name)
	if err != nil {
		t.Fatal(err)
	}
	view, _ := capz.FromUnstructured(u)
	var out []string
	for _, s := range view.Subnets {
		for _, pe := range s.PrivateEndpoints {
			out = append(out, pe.Name)
		}
	}
	return out
}

// ServiceNetworks are a provider's network with an internal load balancer
// (frontend "fe" at <prefix>.0.4 in subnet "nodes") and a NAT subnet
// ("nat", private link service network policies off), and a consumer's
// network; each has a subnet "pe" for endpoints. VNet IDs are
// .../virtualNetworks/p-vnet and c-vnet.
type ServiceNetworks struct {
	ProviderSub, ProviderRG, ProviderPrefix string
	ConsumerSub, ConsumerRG, ConsumerPrefix string
	LoadBalancer, Location                  string
}

// VNet is the ID of the provider's (p-vnet) or the consumer's (c-vnet)
// network.
func (n ServiceNetworks) VNet(consumer bool) string {
	if consumer {
		return "/subscriptions/" + n.ConsumerSub + "/resourceGroups/" + n.ConsumerRG + "/providers/Microsoft.Network/virtualNetworks/c-vnet"
	}
	return "/subscriptions/" + n.ProviderSub + "/resourceGroups/" + n.ProviderRG + "/providers/Microsoft.Network/virtualNetworks/p-vnet"
}

// Seed puts the networks and the load balancer into azuresim.
func (n ServiceNetworks) Seed(t testing.TB, sim *azuresim.Server) {
	t.Helper()
	vnet := func(prefix string) json.RawMessage {
		return seedBody(t, armnetwork.VirtualNetwork{Location: new(n.Location), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new(prefix + ".0.0/16")}},
			Subnets: []*armnetwork.Subnet{
				{Name: new("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(prefix + ".0.0/24")}},
				{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(prefix + ".1.0/24"),
					PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)}},
				{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(prefix + ".2.0/24")}},
			},
		}})
	}
	lb := "/subscriptions/" + n.ProviderSub + "/resourceGroups/" + n.ProviderRG + "/providers/Microsoft.Network/loadBalancers/" + n.LoadBalancer
	if err := sim.Seed(azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: n.ProviderSub, Name: n.ProviderRG, Location: n.Location}, {SubscriptionID: n.ConsumerSub, Name: n.ConsumerRG, Location: n.Location}},
		Resources: []azuresim.SeedResource{
			{ID: n.VNet(false), Body: vnet(n.ProviderPrefix)},
			{ID: n.VNet(true), Body: vnet(n.ConsumerPrefix)},
			{ID: lb, Body: seedBody(t, armnetwork.LoadBalancer{Location: new(n.Location), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
				Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
					Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
						Subnet: &armnetwork.Subnet{ID: new(n.VNet(false) + "/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic), PrivateIPAddress: new(n.ProviderPrefix + ".0.4"),
					},
				}}}})},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func seedBody(t testing.TB, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
