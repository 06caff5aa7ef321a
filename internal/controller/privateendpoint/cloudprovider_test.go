package privateendpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// The workload clusters' internal load balancer, as cloud-provider-azure
// names it (<cluster>-internal), with a frontend per Service named
// a<Service UID without dashes>, and the group its private link services
// go to (the Service's azure-pls-resource-group annotation).
const (
	cpLB    = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.Network/loadBalancers/wc-internal"
	cpRG    = "wc-pls"
	cpPLSRG = "/subscriptions/" + provider + "/resourceGroups/" + cpRG + "/providers/Microsoft.Network/privateLinkServices/"
)

// cloudProviderWorld adds the load balancer with four Service frontends,
// and the group for the private link services.
func cloudProviderWorld(t *testing.T, opts privateendpoint.Options) *testworld.World {
	t.Helper()
	w, _, _ := world(t, opts)
	var fes []*armnetwork.FrontendIPConfiguration
	for i, uid := range []string{"a1", "a2", "a3", "a4"} {
		fes = append(fes, &armnetwork.FrontendIPConfiguration{Name: new(uid), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
			Subnet: &armnetwork.Subnet{ID: new(pVNet + "/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic),
			PrivateIPAddress: new(fmt.Sprintf("172.20.0.%d", 10+i)),
		}})
	}
	if err := w.Sim.Seed(azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: provider, Name: cpRG, Location: location}},
		Resources: []azuresim.SeedResource{{ID: cpLB, Body: body(t, armnetwork.LoadBalancer{Location: new(location),
			SKU:        &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: fes}})}},
	}); err != nil {
		t.Fatal(err)
	}
	return w
}

// publish makes the private link service cloud-provider-azure makes for a
// Service with service.beta.kubernetes.io/azure-pls-create: "true" on the
// Service's frontend: named pls-<frontend>, tagged with the owner Service
// and the cluster (reconcilePLSTags), visible to and auto-approving the
// consumer (azure-pls-visibility, azure-pls-auto-approval).
func publish(t *testing.T, w *testworld.World, frontend, service, cluster string) string {
	t.Helper()
	raw, err := json.Marshal(armnetwork.PrivateLinkService{
		Location: new(location),
		Tags:     map[string]*string{pls.CloudProviderOwnerTag: new(service), pls.CloudProviderClusterTag: new(cluster)},
		Properties: &armnetwork.PrivateLinkServiceProperties{
			LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: new(cpLB + "/frontendIPConfigurations/" + frontend)}},
			IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{{Name: new("pls-" + frontend + "-ipconfig"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
				Primary: new(true), Subnet: &armnetwork.Subnet{ID: new(pVNet + "/subnets/nat")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodDynamic),
			}}},
			Visibility:   &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: []*string{new(consumer)}},
			AutoApproval: &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: []*string{new(consumer)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := cpPLSRG + "pls-" + frontend
	if err := w.Sim.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{{ID: id, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func byService(name, service, cluster string) *v1alpha1.AzurePrivateEndpoint {
	obj := ape(name, "")
	namespace, svc, _ := strings.Cut(service, "/")
	obj.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: namespace, Name: svc, ClusterName: cluster, ResourceGroup: cpRG, SubscriptionID: provider}
	return obj
}

// TestCloudProviderService: an endpoint targets the private link service
// cloud-provider-azure made for a Service, found by its tags; a Service
// of the same name in two clusters needs clusterName; a Service without
// one waits and says what to add; when the Service is recreated (a new
// frontend, a new private link service) the endpoint is replaced to
// connect to the new one and its name follows the new address.
func TestCloudProviderService(t *testing.T) {
	w := cloudProviderWorld(t, privateendpoint.Options{DriftInterval: 2 * time.Second, ConnectionCheck: time.Second})
	first := publish(t, w, "a1", "ingress/nginx", "wc1")
	publish(t, w, "a2", "ingress/nginx", "wc2")

	create(t, w, byService("any-cluster", "ingress/nginx", ""))
	create(t, w, byService("wc1", "ingress/nginx", "WC1"))
	create(t, w, byService("unpublished", "ingress/web", "wc1"))
	wrongSub := byService("wrong-sub", "ingress/nginx", "wc1")
	wrongSub.Spec.CloudProviderService.SubscriptionID = "" // the endpoint's: the group is not there
	create(t, w, wrongSub)

	amb := waitCondition(t, w, "any-cluster", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, privateendpoint.ReasonTargetAmbiguous)
	if m := message(amb, v1alpha1.ConditionPrivateEndpointReady); !strings.Contains(m, `pls-a1 of cluster "wc1", pls-a2 of cluster "wc2"`) || !strings.Contains(m, "clusterName") {
		t.Errorf("any-cluster: %q does not name both services and the field to set", m)
	}
	hasEvent(t, w, "any-cluster", privateendpoint.ReasonTargetAmbiguous)
	if e := endpoint(w, "any-cluster"); e != nil {
		t.Errorf("an endpoint was made for an ambiguous Service: %+v", e)
	}

	un := waitCondition(t, w, "unpublished", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, privateendpoint.ReasonTargetNotReady)
	if m := message(un, v1alpha1.ConditionPrivateEndpointReady); !strings.Contains(m, "k8s-azure-owner-service=ingress/web") || !strings.Contains(m, "azure-pls-create") {
		t.Errorf("unpublished: %q does not say what is missing", m)
	}

	ws := waitCondition(t, w, "wrong-sub", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, privateendpoint.ReasonTargetNotReady)
	if m := message(ws, v1alpha1.ConditionPrivateEndpointReady); !strings.Contains(m, "is not in subscription "+consumer) {
		t.Errorf("wrong-sub: %q does not say where the group was looked for", m)
	}

	got := ready(t, w, "wc1")
	if !strings.EqualFold(got.Status.Target, first) {
		t.Fatalf("wc1: target %q, want %s", got.Status.Target, first)
	}
	if e := endpoint(w, "wc1"); e == nil || !strings.EqualFold(e.PrivateLinkService, first) || e.ConnectionState != "Approved" {
		t.Fatalf("wc1: azuresim holds %+v", e)
	}
	oldIP := got.Status.IPAddresses[0]
	resolves(t, w, cVNet, "api.wc1.hcp.internal", azuresim.ResolveOK, oldIP)

	// The Service is published later: the waiting endpoint connects.
	publish(t, w, "a3", "ingress/web", "wc1")
	ready(t, w, "unpublished")

	// The Service ingress/nginx of wc1 is recreated: cloud-provider-azure
	// deletes its private link service with its frontend and makes a new
	// one on the new Service's frontend (a new UID, a new name).
	unpublish(t, w, "pls-a1")
	// While the Service has no private link service, the endpoint has no
	// connection: its name must not lead to it.
	resolves(t, w, cVNet, "api.wc1.hcp.internal", azuresim.ResolveNXDomain, "")
	waitCondition(t, w, "wc1", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonDisconnected)
	second := publish(t, w, "a4", "ingress/nginx", "wc1")
	hasEvent(t, w, "wc1", privateendpoint.EventRetargeted)
	testworld.Eventually(t, testworld.Timeout, "wc1 connects to the new service", func(context.Context) (bool, string) {
		e := endpoint(w, "wc1")
		return e != nil && strings.EqualFold(e.PrivateLinkService, second) && e.ConnectionState == "Approved", fmt.Sprintf("%+v", e)
	})
	got = ready(t, w, "wc1")
	if !strings.EqualFold(got.Status.Target, second) {
		t.Errorf("wc1: target %q, want %s", got.Status.Target, second)
	}
	resolves(t, w, cVNet, "api.wc1.hcp.internal", azuresim.ResolveOK, got.Status.IPAddresses[0])
	// The other endpoints were left alone.
	if e := endpoint(w, "unpublished"); e == nil || !strings.EqualFold(e.PrivateLinkService, cpPLSRG+"pls-a3") || e.ConnectionState != "Approved" {
		t.Errorf("unpublished: azuresim holds %+v", e)
	}
}

// unpublish deletes a private link service as cloud-provider-azure does
// when its Service goes (safeDeletePLS): each private endpoint connection
// first (Azure refuses to delete a service that has some), then the
// service.
func unpublish(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	ctx := context.Background()
	c := w.Network(t, provider).NewPrivateLinkServicesClient()
	got, err := c.Get(ctx, cpRG, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, conn := range got.Properties.PrivateEndpointConnections {
		poller, err := c.BeginDeletePrivateEndpointConnection(ctx, cpRG, name, *conn.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := poller.PollUntilDone(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	poller, err := c.BeginDelete(ctx, cpRG, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
}
