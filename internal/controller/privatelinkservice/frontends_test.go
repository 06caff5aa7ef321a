package privatelinkservice_test

import (
	"context"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const lbRG = "lb-rg"

// seedLB adds a Standard load balancer to resource group lbRG with the
// given frontend and load balancing rules.
func seedLB(t *testing.T, w *testworld.World, name string, fe *armnetwork.FrontendIPConfiguration, rules ...*armnetwork.LoadBalancingRule) string {
	t.Helper()
	id := "/subscriptions/" + sub + "/resourceGroups/" + lbRG + "/providers/Microsoft.Network/loadBalancers/" + name
	seed(t, w, azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sub, Name: lbRG, Location: "westeurope"}},
		Resources: []azuresim.SeedResource{{ID: id, Body: body(t, armnetwork.LoadBalancer{
			Location: new("westeurope"), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{fe}, LoadBalancingRules: rules},
		})}},
	})
	return id
}

// publicFrontend is a frontend named "pub" with a public IP address.
func publicFrontend() *armnetwork.FrontendIPConfiguration {
	return &armnetwork.FrontendIPConfiguration{Name: new("pub"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
		PublicIPAddress: &armnetwork.PublicIPAddress{ID: new("/subscriptions/" + sub + "/resourceGroups/" + lbRG + "/providers/Microsoft.Network/publicIPAddresses/ingress")},
	}}
}

// rule is a load balancing rule on a load balancer's frontend "pub".
func rule(lbID, name string, floatingIP bool) *armnetwork.LoadBalancingRule {
	return &armnetwork.LoadBalancingRule{Name: new(name), Properties: &armnetwork.LoadBalancingRulePropertiesFormat{
		FrontendIPConfiguration: &armnetwork.SubResource{ID: new(lbID + "/frontendIPConfigurations/pub")},
		Protocol:                new(armnetwork.TransportProtocolTCP), FrontendPort: new(int32(443)), BackendPort: new(int32(443)),
		EnableFloatingIP: new(floatingIP),
	}}
}

// TestFrontendInAnotherResourceGroup: the load balancer is in another
// resource group than the service (cloud-provider-azure's
// azure-pls-resource-group); without spec.frontend.resourceGroup it is not
// found.
func TestFrontendInAnotherResourceGroup(t *testing.T) {
	w := world(t, true)
	lb := seedLB(t, w, "ingress-lb", &armnetwork.FrontendIPConfiguration{Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
		Subnet: &armnetwork.Subnet{ID: new(vnetID + "/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic), PrivateIPAddress: new("172.20.0.30"),
	}})

	lost := apls("lost")
	lost.Spec.Frontend = v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "ingress-lb", FrontendIPConfigurationName: "fe"}}
	create(t, w, lost)
	waitCondition(t, w, "lost", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, azure.ReasonNotFound)

	for name, fe := range map[string]v1alpha1.Frontend{
		"by-name": {ResourceGroup: lbRG, LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "ingress-lb", FrontendIPConfigurationName: "fe"}},
		"by-ip":   {ResourceGroup: lbRG, PrivateIPAddress: "172.20.0.30"},
	} {
		obj := apls(name)
		obj.Spec.Frontend = fe
		create(t, w, obj)
		got := ready(t, w, name)
		if want := lb + "/frontendIPConfigurations/fe"; !strings.EqualFold(got.Status.Frontend.FrontendIPConfigurationID, want) {
			t.Errorf("%s: status.frontend is %+v, want %s", name, got.Status.Frontend, want)
		}
		// Only one service per frontend in this test world: the second
		// object would share it, which is not what this test is about.
		if err := w.Client.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
		testworld.Eventually(t, testworld.Timeout, name+" deleted in Azure", func(context.Context) (bool, string) {
			return getPLS(t, w, name) == nil, "still there"
		})
	}
}

// TestPublicFrontend: a service on a public frontend is made when no load
// balancing rule on it has floating IP enabled (cloud-provider-azure's
// condition), with the NAT subnet named by ID; otherwise the object says
// why not.
func TestPublicFrontend(t *testing.T) {
	w := world(t, true)
	fipLB := "/subscriptions/" + sub + "/resourceGroups/" + lbRG + "/providers/Microsoft.Network/loadBalancers/fip-lb"
	seedLB(t, w, "fip-lb", publicFrontend(), rule(fipLB, "https", true))
	okLB := "/subscriptions/" + sub + "/resourceGroups/" + lbRG + "/providers/Microsoft.Network/loadBalancers/public-lb"
	seedLB(t, w, "public-lb", publicFrontend(), rule(okLB, "https", false))

	fip := apls("fip")
	fip.Spec.Frontend = v1alpha1.Frontend{ResourceGroup: lbRG, LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "fip-lb", FrontendIPConfigurationName: "pub"}}
	fip.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
	create(t, w, fip)
	c := waitCondition(t, w, "fip", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, privatelinkservice.ReasonFloatingIPEnabled)
	if msg := condMessage(c, v1alpha1.ConditionLoadBalancerFound); !strings.Contains(msg, "https") {
		t.Errorf("the message does not name the rule: %s", msg)
	}

	byName := apls("by-name")
	byName.Spec.Frontend = v1alpha1.Frontend{ResourceGroup: lbRG, LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "public-lb", FrontendIPConfigurationName: "pub"}}
	create(t, w, byName)
	waitCondition(t, w, "by-name", v1alpha1.ConditionNATSubnetReady, metav1.ConditionFalse, privatelinkservice.ReasonNATSubnetNeedsID)

	pub := apls("pub")
	pub.Spec.Frontend = byName.Spec.Frontend
	pub.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
	create(t, w, pub)
	got := ready(t, w, "pub")
	if !got.Status.Frontend.Public || got.Status.Frontend.PrivateIPAddress != "" {
		t.Errorf("status.frontend is %+v, want a public frontend", got.Status.Frontend)
	}
	inAzure := getPLS(t, w, "pub")
	if fes := inAzure.Properties.LoadBalancerFrontendIPConfigurations; len(fes) != 1 || !strings.EqualFold(*fes[0].ID, okLB+"/frontendIPConfigurations/pub") {
		t.Errorf("the service in Azure fronts %v", fes)
	}
	if len(got.Status.NATIPAddresses) != 1 {
		t.Errorf("NAT addresses %v", got.Status.NATIPAddresses)
	}
}

// TestDirectConnect: a service without a load balancer needs the
// subscription's preview feature; Azure's refusal is reported, and once
// the feature is registered the service is made with the destination and
// a consumer connects.
func TestDirectConnect(t *testing.T) {
	w := world(t, true)
	obj := apls("direct")
	obj.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "172.20.0.50"}
	obj.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
	obj.Spec.NATIPConfigurations = v1alpha1.NATIPConfigurations{Count: 3}
	create(t, w, obj)
	got := waitCondition(t, w, "direct", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, azure.ReasonFeatureNotRegistered)
	if msg := condMessage(got, v1alpha1.ConditionPrivateLinkServiceReady); !strings.Contains(msg, azuresim.FeatureDirectConnect) {
		t.Errorf("the message does not name the feature: %s", msg)
	}
	if c := condReason(got, v1alpha1.ConditionLoadBalancerFound); c != privatelinkservice.ReasonDirectConnect {
		t.Errorf("LoadBalancerFound reason %s, want %s", c, privatelinkservice.ReasonDirectConnect)
	}

	w.Sim.RegisterFeature(sub, azuresim.FeatureDirectConnect)
	got = ready(t, w, "direct")
	if got.Status.Frontend == nil || got.Status.Frontend.DestinationIPAddress != "172.20.0.50" || got.Status.Frontend.LoadBalancerID != "" {
		t.Errorf("status.frontend %+v", got.Status.Frontend)
	}
	if len(got.Status.NATIPAddresses) != 3 {
		t.Errorf("NAT addresses %v, want 3", got.Status.NATIPAddresses)
	}
	p := getPLS(t, w, "direct").Properties
	if ptr.Deref(p.DestinationIPAddress, "") != "172.20.0.50" || len(p.LoadBalancerFrontendIPConfigurations) != 0 {
		t.Errorf("in Azure: destination %v, frontends %v", ptr.Deref(p.DestinationIPAddress, ""), p.LoadBalancerFrontendIPConfigurations)
	}
	connect(t, w, consumer, "to-direct", got.Status.ResourceID, false)
	testworld.Eventually(t, testworld.Timeout, "the consumer's connection approved", func(ctx context.Context) (bool, string) {
		o := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(ctx, key("direct"), o); err != nil {
			return false, err.Error()
		}
		return o.Status.ApprovedConnections == 1, ptr.Deref(o.Status.Frontend, v1alpha1.FrontendStatus{}).DestinationIPAddress
	})
}

// TestAccessMode: spec.accessMode reaches Azure and is kept there; taken
// out of the spec, the service is Default again (a PUT without the field
// keeps Azure's mode in azuresim).
func TestAccessMode(t *testing.T) {
	w := world(t, false)
	w.StartPrivateLinkServices(t, privatelinkservice.Options{DriftInterval: 2e9})
	obj := apls("restricted")
	obj.Spec.AccessMode = "Restricted"
	create(t, w, obj)
	ready(t, w, "restricted")
	if m := ptr.Deref(getPLS(t, w, "restricted").Properties.AccessMode, ""); m != armnetwork.AccessModeRestricted {
		t.Fatalf("access mode in Azure %q, want Restricted", m)
	}
	// Someone opens it up in Azure; the drift check closes it again.
	cur := getPLS(t, w, "restricted")
	cur.Properties.AccessMode = new(armnetwork.AccessModeDefault)
	putPLS(t, w, "restricted", *cur)
	testworld.Eventually(t, testworld.Timeout, "access mode Restricted again", func(context.Context) (bool, string) {
		m := ptr.Deref(getPLS(t, w, "restricted").Properties.AccessMode, "")
		return m == armnetwork.AccessModeRestricted, string(m)
	})
	o := &v1alpha1.AzurePrivateLinkService{}
	o.SetNamespace(key("restricted").Namespace)
	o.SetName(key("restricted").Name)
	if err := w.Client.Patch(context.Background(), o, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"accessMode":null}}`))); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "access mode Default once the spec no longer asks for Restricted", func(context.Context) (bool, string) {
		m := ptr.Deref(getPLS(t, w, "restricted").Properties.AccessMode, "")
		return m == armnetwork.AccessModeDefault, string(m)
	})
}

func putPLS(t *testing.T, w *testworld.World, name string, body armnetwork.PrivateLinkService) {
	t.Helper()
	poller, err := w.Network(t, sub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(context.Background(), rg, name, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func condMessage(obj *v1alpha1.AzurePrivateLinkService, typ string) string {
	return ptr.Deref(meta.FindStatusCondition(obj.Status.Conditions, typ), metav1.Condition{}).Message
}

func condReason(obj *v1alpha1.AzurePrivateLinkService, typ string) string {
	return ptr.Deref(meta.FindStatusCondition(obj.Status.Conditions, typ), metav1.Condition{}).Reason
}
