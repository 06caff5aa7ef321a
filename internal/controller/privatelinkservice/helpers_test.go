package privatelinkservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	sub      = "11111111-1111-1111-1111-111111111111"
	consumer = "22222222-2222-2222-2222-222222222222"
	stranger = "33333333-3333-3333-3333-333333333333"
	rg       = "wc-rg"
	ns       = "team"
	vnetID   = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/wc-vnet"
	lbID     = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/loadBalancers/api-lb"
)

// world starts an API server, azuresim with a network that is deliberately
// not 10.0.0.0/16 (172.20.0.0/20 and 192.168.50.0/24): an internal Standard
// load balancer "api-lb" with frontend "fe" (172.20.0.4) in subnet "nodes"
// (policies enabled) and a subnet "nat" (policies disabled); and the
// controller, when start is set.
func world(t *testing.T, start bool) *testworld.World {
	t.Helper()
	return limitedWorld(t, start, azuresim.Limits{})
}

// limitedWorld is world with azuresim enforcing limits.
func limitedWorld(t *testing.T, start bool, limits azuresim.Limits) *testworld.World {
	t.Helper()
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream, Limits: limits})
	w.Namespace(t, ns)
	seed(t, w, azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sub, Name: rg, Location: "westeurope"}, {SubscriptionID: consumer, Name: "consumer-rg", Location: "westeurope"}},
		Resources: []azuresim.SeedResource{
			{ID: vnetID, Body: body(t, armnetwork.VirtualNetwork{Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("172.20.0.0/20"), new("192.168.50.0/24")}},
				Subnets: []*armnetwork.Subnet{
					{Name: new("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("172.20.0.0/24")}},
					{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("172.20.1.0/26"),
						PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)}},
				},
			}})},
			{ID: lbID, Body: body(t, armnetwork.LoadBalancer{Location: new("westeurope"), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
				Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
					Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
						Subnet: &armnetwork.Subnet{ID: new(vnetID + "/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic), PrivateIPAddress: new("172.20.0.4"),
					},
				}}}})},
			{ID: "/subscriptions/" + consumer + "/resourceGroups/consumer-rg/providers/Microsoft.Network/virtualNetworks/c-vnet", Body: body(t, armnetwork.VirtualNetwork{
				Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
					AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.9.0.0/16")}},
					Subnets:      []*armnetwork.Subnet{{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.9.0.0/24")}}},
				},
			})},
		},
	})
	if start {
		w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	}
	return w
}

func seed(t *testing.T, w *testworld.World, s azuresim.Seed) {
	t.Helper()
	if err := w.Sim.Seed(s); err != nil {
		t.Fatal(err)
	}
}

func body(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// apls is a valid object fronting api-lb/fe with NAT IPs in "nat",
// visible to and auto-approving the consumer subscription.
func apls(name string) *v1alpha1.AzurePrivateLinkService {
	return &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: sub, ResourceGroup: rg, Location: "westeurope",
			IdentityRef: &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS},
			Frontend:    v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "api-lb", FrontendIPConfigurationName: "fe"}},
			NATSubnet:   v1alpha1.NATSubnet{Name: "nat"},
			Visibility:  []string{consumer}, AutoApproval: []string{consumer},
		},
	}
}

func create(t *testing.T, w *testworld.World, obj *v1alpha1.AzurePrivateLinkService) {
	t.Helper()
	if err := w.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.Name, err)
	}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// waitCondition waits until a condition has a status and reason, and
// returns the object.
func waitCondition(t *testing.T, w *testworld.World, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.AzurePrivateLinkService {
	t.Helper()
	obj := &v1alpha1.AzurePrivateLinkService{}
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%s %s=%s (%s)", name, typ, status, reason), func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, key(name), obj); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(obj.Status.Conditions, typ)
		if c == nil {
			return false, fmt.Sprintf("no condition; status %+v", obj.Status)
		}
		return c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == obj.Generation,
			fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	})
	return obj
}

func ready(t *testing.T, w *testworld.World, name string) *v1alpha1.AzurePrivateLinkService {
	t.Helper()
	return waitCondition(t, w, name, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
}

// getPLS reads the service in Azure, nil when it does not exist.
func getPLS(t *testing.T, w *testworld.World, name string) *armnetwork.PrivateLinkService {
	t.Helper()
	resp, err := w.Network(t, sub).NewPrivateLinkServicesClient().Get(context.Background(), rg, name, nil)
	if err != nil {
		if strings.Contains(err.Error(), "NotFound") {
			return nil
		}
		t.Fatal(err)
	}
	return &resp.PrivateLinkService
}

// connect creates a consumer's private endpoint to a service, with a manual
// (Pending) or automatic connection, and returns its ID.
func connect(t *testing.T, w *testworld.World, subscription, name, target string, manual bool) string {
	t.Helper()
	if subscription != consumer {
		seed(t, w, azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: subscription, Name: "consumer-rg", Location: "westeurope"}},
			Resources: []azuresim.SeedResource{{ID: "/subscriptions/" + subscription + "/resourceGroups/consumer-rg/providers/Microsoft.Network/virtualNetworks/c-vnet", Body: body(t, armnetwork.VirtualNetwork{
				Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
					AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.9.0.0/16")}},
					Subnets:      []*armnetwork.Subnet{{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.9.0.0/24")}}},
				}})}}})
	}
	conn := []*armnetwork.PrivateLinkServiceConnection{{Name: new(name + "-conn"), Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
		PrivateLinkServiceID: new(target), RequestMessage: new("please"),
	}}}
	props := &armnetwork.PrivateEndpointProperties{Subnet: &armnetwork.Subnet{ID: new("/subscriptions/" + subscription + "/resourceGroups/consumer-rg/providers/Microsoft.Network/virtualNetworks/c-vnet/subnets/pe")}}
	if manual {
		props.ManualPrivateLinkServiceConnections = conn
	} else {
		props.PrivateLinkServiceConnections = conn
	}
	poller, err := w.Network(t, subscription).NewPrivateEndpointsClient().BeginCreateOrUpdate(context.Background(), "consumer-rg", name,
		armnetwork.PrivateEndpoint{Location: new("westeurope"), Properties: props}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := poller.PollUntilDone(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return *resp.ID
}
