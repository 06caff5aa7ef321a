package privateendpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	provider   = "11111111-1111-1111-1111-111111111111"
	consumer   = "22222222-2222-2222-2222-222222222222"
	prg        = "provider-rg"
	crg        = "consumer-rg"
	ns         = "hcp"
	location   = "westeurope"
	pVNet      = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.Network/virtualNetworks/p-vnet"
	cVNet      = "/subscriptions/" + consumer + "/resourceGroups/" + crg + "/providers/Microsoft.Network/virtualNetworks/c-vnet"
	cSubnet    = cVNet + "/subnets/pe"
	lbID       = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.Network/loadBalancers/api-lb"
	peResource = "/subscriptions/" + consumer + "/resourceGroups/" + crg + "/providers/Microsoft.Network/privateEndpoints/"
)

// world starts an API server, azuresim with a provider network (an
// internal load balancer and a NAT subnet) and a consumer network in
// another subscription, and the AzurePrivateLinkService and
// AzurePrivateEndpoint controllers. Two services front the load balancer:
// "svc" auto-approves the consumer, "manual-svc" only lets it see the
// service. It returns their status.
func world(t *testing.T, opts privateendpoint.Options) (*testworld.World, *v1alpha1.AzurePrivateLinkService, *v1alpha1.AzurePrivateLinkService) {
	t.Helper()
	return limitedWorld(t, opts, azuresim.Limits{})
}

// limitedWorld is world with azuresim enforcing limits (zero: Azure's).
func limitedWorld(t *testing.T, opts privateendpoint.Options, limits azuresim.Limits) (*testworld.World, *v1alpha1.AzurePrivateLinkService, *v1alpha1.AzurePrivateLinkService) {
	t.Helper()
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream, Limits: limits})
	w.Namespace(t, ns)
	testworld.ServiceNetworks{ProviderSub: provider, ProviderRG: prg, ProviderPrefix: "172.20",
		ConsumerSub: consumer, ConsumerRG: crg, ConsumerPrefix: "10.9", LoadBalancer: "api-lb", Location: location}.Seed(t, w.Sim)
	w.StartPrivateEndpoints(t, opts)
	svc := service(t, w, "svc", []string{consumer})
	manual := service(t, w, "manual-svc", nil)
	return w, svc, manual
}

// service creates an AzurePrivateLinkService on api-lb/fe visible to the
// consumer and waits until it has an alias.
func service(t *testing.T, w *testworld.World, name string, autoApprove []string) *v1alpha1.AzurePrivateLinkService {
	t.Helper()
	obj := &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: provider, ResourceGroup: prg, Location: location,
			IdentityRef: &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS},
			Frontend:    v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "api-lb", FrontendIPConfigurationName: "fe"}},
			NATSubnet:   v1alpha1.NATSubnet{Name: "nat"},
			Visibility:  []string{consumer}, AutoApproval: autoApprove,
		},
	}
	if err := w.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, name+" has an alias", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		return obj.Status.Alias != "" && obj.Status.ResourceID != "", fmt.Sprintf("%+v", obj.Status.Conditions)
	})
	return obj
}

func body(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// ape is an endpoint in the consumer subnet to target (a resource ID), with
// DNS in an own zone <name>.hcp.internal.
func ape(name, target string) *v1alpha1.AzurePrivateEndpoint {
	return &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: consumer, ResourceGroup: crg, Location: location, SubnetID: cSubnet,
			IdentityRef:          &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS},
			PrivateLinkServiceID: target,
			DNS:                  &v1alpha1.PrivateEndpointDNS{ZoneName: name + ".hcp.internal"},
		},
	}
}

func create(t *testing.T, w *testworld.World, obj *v1alpha1.AzurePrivateEndpoint) {
	t.Helper()
	if err := w.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.Name, err)
	}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// waitCondition waits until a condition has a status (and reason, when
// given) for the object's generation, and returns the object.
func waitCondition(t *testing.T, w *testworld.World, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.AzurePrivateEndpoint {
	t.Helper()
	obj := &v1alpha1.AzurePrivateEndpoint{}
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

func ready(t *testing.T, w *testworld.World, name string) *v1alpha1.AzurePrivateEndpoint {
	t.Helper()
	return waitCondition(t, w, name, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
}

// resolves waits until name resolves from vnet with the given status and,
// for NOERROR, to ip.
func resolves(t *testing.T, w *testworld.World, vnet, name, status, ip string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%s from %s: %s %s", name, vnet[strings.LastIndex(vnet, "/")+1:], status, ip), func(context.Context) (bool, string) {
		r := w.Sim.Resolve(vnet, name)
		return r.Status == status && (ip == "" || len(r.Addresses) == 1 && r.Addresses[0] == ip), fmt.Sprintf("%+v", r)
	})
}

// endpoint is what azuresim holds of a private endpoint, or nil.
func endpoint(w *testworld.World, name string) *azuresim.EndpointInfo {
	for _, e := range w.Sim.Endpoints() {
		if strings.EqualFold(e.ID, peResource+name) {
			return &e
		}
	}
	return nil
}

// resources lists azuresim's resources of a type whose ID contains s.
func resources(w *testworld.World, typ, s string) []string {
	var out []string
	for _, r := range w.Sim.Resources(typ) {
		if strings.Contains(strings.ToLower(r.ID), strings.ToLower(s)) {
			out = append(out, r.ID)
		}
	}
	return out
}

func waitGone(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+" is deleted", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, key(name), &v1alpha1.AzurePrivateEndpoint{})
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
}

func hasEvent(t *testing.T, w *testworld.World, name, reason string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+" has Event "+reason, func(ctx context.Context) (bool, string) {
		ok, seen := w.HasEvent(ctx, key(name), reason)
		return ok, strings.Join(seen, "; ")
	})
}
