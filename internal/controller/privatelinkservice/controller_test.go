package privatelinkservice_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestLifecycle: create, update, drift repair, out-of-band delete, and
// deletion with a connection, on one object.
func TestLifecycle(t *testing.T) {
	w := world(t, false)
	w.StartPrivateLinkServices(t, privatelinkservice.Options{DriftInterval: 2e9})
	create(t, w, apls("api"))
	obj := ready(t, w, "api")
	got := getPLS(t, w, "api")
	if got == nil || obj.Status.ResourceID != *got.ID || obj.Status.Alias == "" || obj.Status.Alias != *got.Properties.Alias {
		t.Fatalf("status %+v does not describe %+v", obj.Status, got)
	}
	if obj.Status.Frontend == nil || obj.Status.Frontend.PrivateIPAddress != "172.20.0.4" || !strings.HasSuffix(obj.Status.Frontend.FrontendIPConfigurationID, "/frontendIPConfigurations/fe") {
		t.Errorf("frontend status: %+v", obj.Status.Frontend)
	}
	if len(obj.Status.NATIPAddresses) != 1 || !strings.HasPrefix(obj.Status.NATIPAddresses[0], "172.20.1.") {
		t.Errorf("NAT addresses %v, want one in 172.20.1.0/26", obj.Status.NATIPAddresses)
	}
	if v := got.Tags[pls.OwnerTag]; v == nil || *v != ns+"/api" {
		t.Errorf("owner tag: %v", got.Tags)
	}

	// Update: two NAT IPs, proxy protocol, FQDNs.
	patch(t, w, "api", `{"spec":{"natIPConfigurations":{"count":2},"enableProxyProtocol":true,"fqdns":["api.example.com"]}}`)
	testworld.Eventually(t, testworld.Timeout, "the update in Azure", func(context.Context) (bool, string) {
		p := getPLS(t, w, "api")
		return len(p.Properties.IPConfigurations) == 2 && *p.Properties.EnableProxyProtocol && len(p.Properties.Fqdns) == 1, fmt.Sprintf("%+v", p.Properties)
	})
	obj = ready(t, w, "api")
	if len(obj.Status.NATIPAddresses) != 2 {
		t.Errorf("NAT addresses after the update: %v", obj.Status.NATIPAddresses)
	}

	// Drift: someone widens visibility in Azure; the drift check repairs it.
	p := getPLS(t, w, "api")
	p.Properties.Visibility.Subscriptions = []*string{new("*")}
	startPut(t, w, "api", *p)
	testworld.Eventually(t, testworld.Timeout, "visibility repaired", func(context.Context) (bool, string) {
		p := getPLS(t, w, "api")
		v := p.Properties.Visibility.Subscriptions
		return len(v) == 1 && *v[0] == consumer, fmt.Sprint(*v[0])
	})

	// Deleted behind our back: recreated, with a new alias, and said so.
	oldAlias := ready(t, w, "api").Status.Alias
	poller, err := w.Network(t, sub).NewPrivateLinkServicesClient().BeginDelete(context.Background(), rg, "api", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "recreated with a new alias", func(ctx context.Context) (bool, string) {
		o := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(ctx, key("api"), o); err != nil {
			return false, err.Error()
		}
		return o.Status.Alias != "" && o.Status.Alias != oldAlias && getPLS(t, w, "api") != nil, o.Status.Alias
	})
	waitEvent(t, w, "api", privatelinkservice.EventRecreated)

	// A consumer connects (auto-approved); deletion removes the connection
	// first, then the service.
	peID := connect(t, w, consumer, "mc-pe", ready(t, w, "api").Status.ResourceID, false)
	testworld.Eventually(t, testworld.Timeout, "the connection in status", func(ctx context.Context) (bool, string) {
		o := &v1alpha1.AzurePrivateLinkService{}
		_ = w.Client.Get(ctx, key("api"), o)
		return o.Status.ApprovedConnections == 1 && len(o.Status.Connections) == 1 && o.Status.Connections[0].PrivateEndpointID == peID &&
			o.Status.Connections[0].SubscriptionID == consumer, fmt.Sprintf("%+v", o.Status.Connections)
	})
	deleteAndWait(t, w, "api")
	if getPLS(t, w, "api") != nil {
		t.Error("the service is still in Azure")
	}
	waitEvent(t, w, "api", privatelinkservice.EventConnectionRemoved)
	pe, err := w.Network(t, consumer).NewPrivateEndpointsClient().Get(context.Background(), "consumer-rg", "mc-pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := *pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status; s != "Disconnected" {
		t.Errorf("the consumer's endpoint is %s, want Disconnected", s)
	}
}

// TestConnectionPolicy approves Pending connections from listed
// subscriptions and rejects the others.
func TestConnectionPolicy(t *testing.T) {
	w := world(t, true)
	obj := apls("policy")
	obj.Spec.Visibility, obj.Spec.AutoApproval = []string{"*"}, nil
	obj.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{ApproveSubscriptions: []string{consumer}, RejectOthers: true}
	create(t, w, obj)
	id := ready(t, w, "policy").Status.ResourceID
	connect(t, w, consumer, "friend", id, true)
	connect(t, w, stranger, "foe", id, true)
	testworld.Eventually(t, testworld.Timeout, "one approved, one rejected", func(ctx context.Context) (bool, string) {
		o := &v1alpha1.AzurePrivateLinkService{}
		_ = w.Client.Get(ctx, key("policy"), o)
		states := map[string]string{}
		for _, c := range o.Status.Connections {
			states[c.SubscriptionID] = c.State
		}
		return states[consumer] == "Approved" && states[stranger] == "Rejected" && o.Status.ApprovedConnections == 1 && o.Status.PendingConnections == 0, fmt.Sprint(states)
	})
	for _, c := range getPLS(t, w, "policy").Properties.PrivateEndpointConnections {
		st := c.Properties.PrivateLinkServiceConnectionState
		if pls.SubscriptionOf(*c.Properties.PrivateEndpoint.ID) == stranger && (*st.Status != "Rejected" || !strings.Contains(*st.Description, "not allowed")) {
			t.Errorf("in Azure the stranger's connection is %s (%s)", *st.Status, *st.Description)
		}
	}
	waitEvent(t, w, "policy", privatelinkservice.EventConnectionApproved)
	waitEvent(t, w, "policy", privatelinkservice.EventConnectionRejected)
}

// TestAdoptAndOrphan: a service the operator did not create is refused until
// the object adopts it; Orphan leaves it in Azure.
func TestAdoptAndOrphan(t *testing.T) {
	w := world(t, true)
	legacy := pls.Body(pls.Desired{Location: "westeurope", FrontendID: lbID + "/frontendIPConfigurations/fe", NATSubnetID: vnetID + "/subnets/nat", NATCount: 1}, nil)
	delete(legacy.Tags, pls.OwnerTag)
	seed(t, w, azuresim.Seed{Resources: []azuresim.SeedResource{{ID: "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/privateLinkServices/legacy", Body: body(t, legacy)}}})
	obj := apls("legacy")
	obj.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	create(t, w, obj)
	o := waitCondition(t, w, "legacy", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, privatelinkservice.ReasonNotOwned)
	if c := findCondition(o, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "set spec.adopt") {
		t.Errorf("Ready: %+v", c)
	}
	if getPLS(t, w, "legacy").Tags[pls.OwnerTag] != nil {
		t.Fatal("the operator tagged a service it was not allowed to adopt")
	}
	waitEvent(t, w, "legacy", privatelinkservice.ReasonNotOwned)
	patch(t, w, "legacy", `{"spec":{"adopt":true}}`)
	ready(t, w, "legacy")
	if v := getPLS(t, w, "legacy").Tags[pls.OwnerTag]; v == nil || *v != ns+"/legacy" {
		t.Errorf("adopted service's tags: %v", getPLS(t, w, "legacy").Tags)
	}
	deleteAndWait(t, w, "legacy")
	if getPLS(t, w, "legacy") == nil {
		t.Error("deletionPolicy Orphan deleted the service")
	}
	waitEvent(t, w, "legacy", privatelinkservice.EventOrphaned)

	// Another object's service is never taken, even with adopt.
	other := apls("thief")
	other.Spec.Name, other.Spec.Adopt = "legacy", true
	create(t, w, other)
	o = waitCondition(t, w, "thief", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, privatelinkservice.ReasonNotOwned)
	if c := findCondition(o, v1alpha1.ConditionPrivateLinkServiceReady); !strings.Contains(c.Message, "belongs to AzurePrivateLinkService "+ns+"/legacy") {
		t.Errorf("message: %s", c.Message)
	}
}

// TestNATSubnetCreatedInRealAddressSpace: the subnet goes into the first
// free range of a VNet that is not 10.0.0.0/16, and leaves with the service.
func TestNATSubnetCreatedInRealAddressSpace(t *testing.T) {
	w := world(t, true)
	obj := apls("created")
	obj.Spec.NATSubnet = v1alpha1.NATSubnet{Create: &v1alpha1.NATSubnetCreate{Name: "pls-nat", PrefixLength: 28}}
	create(t, w, obj)
	o := ready(t, w, "created")
	sn, err := w.Network(t, sub).NewSubnetsClient().Get(context.Background(), rg, "wc-vnet", "pls-nat", nil)
	if err != nil {
		t.Fatal(err)
	}
	// nodes is 172.20.0.0/24 and nat 172.20.1.0/26: the next free /28.
	if got := prefixOf(sn.Subnet); got != "172.20.1.64/28" || *sn.Properties.PrivateLinkServiceNetworkPolicies != armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled {
		t.Errorf("created subnet %s, policies %s", got, *sn.Properties.PrivateLinkServiceNetworkPolicies)
	}
	if !o.Status.NATSubnetCreated || !strings.HasSuffix(o.Status.NATSubnetID, "/subnets/pls-nat") || !strings.HasPrefix(o.Status.NATIPAddresses[0], "172.20.1.") {
		t.Errorf("status: %+v", o.Status)
	}
	waitEvent(t, w, "created", privatelinkservice.EventNATSubnetCreated)
	deleteAndWait(t, w, "created")
	if _, err := w.Network(t, sub).NewSubnetsClient().Get(context.Background(), rg, "wc-vnet", "pls-nat", nil); !azure.IsNotFound(err) {
		t.Errorf("the created subnet is still there: %v", err)
	}
}

// TestNetworkPolicies: a subnet with private link service network policies
// enabled is reported, and fixed when the spec says so.
func TestNetworkPolicies(t *testing.T) {
	w := world(t, true)
	obj := apls("nodes-nat")
	obj.Spec.NATSubnet = v1alpha1.NATSubnet{Name: "nodes"}
	create(t, w, obj)
	waitCondition(t, w, "nodes-nat", v1alpha1.ConditionNATSubnetReady, metav1.ConditionFalse, privatelinkservice.ReasonNetworkPoliciesEnabled)
	if getPLS(t, w, "nodes-nat") != nil {
		t.Error("a service was created before its NAT subnet was ready")
	}
	patch(t, w, "nodes-nat", `{"spec":{"natSubnet":{"fixNetworkPolicies":true}}}`)
	o := ready(t, w, "nodes-nat")
	if !strings.HasPrefix(o.Status.NATIPAddresses[0], "172.20.0.") || o.Status.NATSubnetCreated {
		t.Errorf("status: %+v", o.Status)
	}
	waitEvent(t, w, "nodes-nat", privatelinkservice.EventNATSubnetFixed)
}

// TestFrontendByIPAndByService finds the frontend by its address, directly
// or through a Service of type LoadBalancer.
func TestFrontendByIPAndByService(t *testing.T) {
	w := world(t, true)
	byIP := apls("by-ip")
	byIP.Spec.Frontend = v1alpha1.Frontend{PrivateIPAddress: "172.20.0.4"}
	create(t, w, byIP)
	if fe := ready(t, w, "by-ip").Status.Frontend; fe.LoadBalancerID != lbID {
		t.Errorf("frontend: %+v", fe)
	}
	// A frontend carries one private link service: free it.
	deleteAndWait(t, w, "by-ip")

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ingress"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}},
	}}
	if err := w.Client.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	bySvc := apls("by-svc")
	bySvc.Spec.Name = "by-svc-pls"
	bySvc.Spec.Frontend = v1alpha1.Frontend{Service: &v1alpha1.ServiceReference{Name: "ingress"}}
	create(t, w, bySvc)
	waitCondition(t, w, "by-svc", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, privatelinkservice.ReasonServiceHasNoIP)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "172.20.0.4"}}
	if err := w.Client.Status().Update(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	if o := ready(t, w, "by-svc"); o.Status.Frontend.PrivateIPAddress != "172.20.0.4" || getPLS(t, w, "by-svc-pls") == nil {
		t.Errorf("frontend: %+v", o.Status.Frontend)
	}
}

// TestPause: a paused object is not touched; unpausing resumes.
func TestPause(t *testing.T) {
	w := world(t, true)
	obj := apls("paused")
	obj.Annotations = map[string]string{privatelinkservice.PausedAnnotation: "true"}
	create(t, w, obj)
	waitCondition(t, w, "paused", v1alpha1.ConditionReady, metav1.ConditionUnknown, privatelinkservice.ReasonPaused)
	if getPLS(t, w, "paused") != nil {
		t.Fatal("a paused object's service was created")
	}
	patch(t, w, "paused", `{"metadata":{"annotations":{"`+privatelinkservice.PausedAnnotation+`":null}}}`)
	ready(t, w, "paused")
}

// TestOperatorCredential: without identityRef the operator's own credential
// is used.
// TestOperatorCredential: an object without identityRef uses the
// operator's own credential only in a namespace allowed to
// (--operator-credential-namespaces); elsewhere it is refused, says why, and
// nothing is written to Azure.
func TestOperatorCredential(t *testing.T) {
	w := world(t, true)
	w.Namespace(t, testworld.OwnCredentialNamespace)
	allowed := apls("own")
	allowed.Namespace = testworld.OwnCredentialNamespace
	allowed.Spec.IdentityRef = nil
	create(t, w, allowed)
	testworld.Eventually(t, testworld.Timeout, "the allowed namespace's object Ready", func(ctx context.Context) (bool, string) {
		got := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: allowed.Namespace, Name: allowed.Name}, got); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady), fmt.Sprint(got.Status.Conditions)
	})

	refused := apls("own-refused")
	refused.Spec.IdentityRef = nil
	create(t, w, refused)
	o := waitCondition(t, w, "own-refused", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, azure.ReasonOwnCredentialNotAllowed)
	c := findCondition(o, v1alpha1.ConditionLoadBalancerFound)
	if !strings.Contains(c.Message, "namespace "+ns+" may not use the operator's own credential") {
		t.Errorf("message: %s", c.Message)
	}
	waitEvent(t, w, "own-refused", azure.ReasonOwnCredentialNotAllowed)
	if diff := cmp.Diff((*armnetwork.PrivateLinkService)(nil), getPLS(t, w, "own-refused")); diff != "" {
		t.Errorf("a refused object's service exists in Azure (-want +got):\n%s", diff)
	}
}

// TestAzureErrors runs each class of Azure error through the controller
// with azuresim's fault injection.
func TestAzureErrors(t *testing.T) {
	w := world(t, true)
	plsPath := func(name string) string { return "privateLinkServices/" + name + "$" }

	t.Run("throttled: Retry-After is honoured and it converges", func(t *testing.T) {
		fault(t, w, azuresim.Fault{Method: http.MethodPut, PathRegex: plsPath("throttled"), Status: 429, Code: "SubscriptionRequestsThrottled", RetryAfter: 2, Count: 1})
		create(t, w, apls("throttled"))
		ready(t, w, "throttled")
		if n := w.Sim.Counters().Sum(http.MethodPut, "Microsoft.Network/privateLinkServices", 429, 429); n < 1 {
			t.Errorf("the 429 was never served (%d)", n)
		}
	})
	t.Run("authorization failed names the missing permission", func(t *testing.T) {
		id := fault(t, w, azuresim.Fault{Method: http.MethodPut, PathRegex: plsPath("denied"), Status: 403, Code: "AuthorizationFailed",
			Message: "The client 'c' with object id 'o' does not have authorization to perform action 'Microsoft.Network/privateLinkServices/write' over scope '/subscriptions/" + sub + "/resourceGroups/" + rg + "' or the scope is invalid."})
		create(t, w, apls("denied"))
		o := waitCondition(t, w, "denied", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, azure.ReasonAuthorizationFailed)
		if c := findCondition(o, v1alpha1.ConditionPrivateLinkServiceReady); !strings.Contains(c.Message, "lacks Microsoft.Network/privateLinkServices/write on /subscriptions/"+sub) {
			t.Errorf("message: %s", c.Message)
		}
		waitEvent(t, w, "denied", azure.ReasonAuthorizationFailed)
		w.Sim.RemoveFault(id)
		ready(t, w, "denied")
	})
	t.Run("linked authorization failed (NAT subnet in another resource group)", func(t *testing.T) {
		fault(t, w, azuresim.Fault{Method: http.MethodPut, PathRegex: plsPath("linked"), Status: 403, Code: "LinkedAuthorizationFailed",
			Message: "The client 'c' with object id 'o' has permission to perform action 'Microsoft.Network/privateLinkServices/write' on scope 'x'; however, it does not have permission to perform action(s) 'Microsoft.Network/virtualNetworks/subnets/join/action' on the linked scope(s) '/subscriptions/" + sub + "/resourceGroups/net-rg/providers/Microsoft.Network/virtualNetworks/v/subnets/nat' (respectively) or the linked scope(s) are invalid."})
		create(t, w, apls("linked"))
		o := waitCondition(t, w, "linked", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, azure.ReasonAuthorizationFailed)
		if c := findCondition(o, v1alpha1.ConditionReady); !strings.Contains(c.Message, "lacks Microsoft.Network/virtualNetworks/subnets/join/action on /subscriptions/"+sub+"/resourceGroups/net-rg/") {
			t.Errorf("message: %s", c.Message)
		}
	})
	t.Run("a validation error is terminal until the spec changes", func(t *testing.T) {
		obj := apls("invalid-ip")
		obj.Spec.NATIPConfigurations = v1alpha1.NATIPConfigurations{Count: 1, StaticIPs: []string{"192.168.50.10"}}
		create(t, w, obj)
		o := waitCondition(t, w, "invalid-ip", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, azure.ReasonInvalidRequest)
		if getPLS(t, w, "invalid-ip") != nil {
			t.Errorf("created despite the refusal: %+v", o.Status)
		}
		patch(t, w, "invalid-ip", `{"spec":{"natIPConfigurations":{"staticIPs":["172.20.1.20"]}}}`)
		if got := ready(t, w, "invalid-ip").Status.NATIPAddresses; len(got) != 1 || got[0] != "172.20.1.20" {
			t.Errorf("NAT addresses: %v", got)
		}
	})
	t.Run("the NAT addresses' interface cannot be read: the service stays Ready, the addresses last read stay, an Event says why", func(t *testing.T) {
		natAddressesUnread(t, w)
	})
	t.Run("provisioningState Failed is not Ready and is retried", func(t *testing.T) {
		fault(t, w, azuresim.Fault{Method: http.MethodPut, PathRegex: plsPath("flaky"), Operation: true, Status: http.StatusInternalServerError, Code: "InternalServerError", Message: "boom", Count: 1})
		create(t, w, apls("flaky"))
		ready(t, w, "flaky")
		if n := w.Sim.Counters().Sum(http.MethodPut, "Microsoft.Network/privateLinkServices", 200, 299); n < 2 {
			t.Errorf("PUTs: %d, want a retry after the failed operation", n)
		}
	})
	t.Run("server errors and AnotherOperationInProgress are retried with backoff", func(t *testing.T) {
		fault(t, w, azuresim.Fault{Method: http.MethodGet, PathRegex: plsPath("busy"), Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Count: 4})
		fault(t, w, azuresim.Fault{Method: http.MethodPut, PathRegex: plsPath("busy"), Status: http.StatusConflict, Code: "AnotherOperationInProgress", Count: 1})
		create(t, w, apls("busy"))
		o := ready(t, w, "busy")
		for _, c := range o.Status.Conditions {
			if c.Reason == azure.ReasonAzureUnavailable || c.Reason == azure.ReasonOperationInProgress {
				t.Errorf("a transient error stayed in the conditions: %+v", c)
			}
		}
	})
	t.Run("an identity that does not exist", func(t *testing.T) {
		obj := apls("no-identity")
		obj.Spec.IdentityRef = &v1alpha1.IdentityReference{Name: "missing"}
		create(t, w, obj)
		waitCondition(t, w, "no-identity", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, azure.ReasonIdentityNotFound)
	})
	t.Run("a load balancer that does not exist yet", func(t *testing.T) {
		obj := apls("no-lb")
		obj.Spec.Frontend.LoadBalancer.Name = "later-lb"
		create(t, w, obj)
		waitCondition(t, w, "no-lb", v1alpha1.ConditionLoadBalancerFound, metav1.ConditionFalse, azure.ReasonNotFound)
	})
}

func fault(t *testing.T, w *testworld.World, f azuresim.Fault) string {
	t.Helper()
	id, err := w.Sim.AddFault(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Sim.RemoveFault(id) })
	return id
}

func patch(t *testing.T, w *testworld.World, name, body string) {
	t.Helper()
	obj := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := w.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(body))); err != nil {
		t.Fatal(err)
	}
}

// startPut writes a service in Azure as someone else would.
func startPut(t *testing.T, w *testworld.World, name string, p armnetwork.PrivateLinkService) {
	t.Helper()
	poller, err := w.Network(t, sub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(context.Background(), rg, name, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func deleteAndWait(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	obj := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := w.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, name+" deleted", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, key(name), obj)
		return apierrors.IsNotFound(err), fmt.Sprintf("%v %+v", err, obj.Status.Conditions)
	})
}

func waitEvent(t *testing.T, w *testworld.World, name, reason string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+" event "+reason, func(ctx context.Context) (bool, string) {
		ok, reasons := w.HasEvent(ctx, key(name), reason)
		return ok, fmt.Sprint(reasons)
	})
}

func findCondition(o *v1alpha1.AzurePrivateLinkService, typ string) *metav1.Condition {
	for i := range o.Status.Conditions {
		if o.Status.Conditions[i].Type == typ {
			return &o.Status.Conditions[i]
		}
	}
	return nil
}

func prefixOf(sn armnetwork.Subnet) string {
	if sn.Properties.AddressPrefix != nil {
		return *sn.Properties.AddressPrefix
	}
	if len(sn.Properties.AddressPrefixes) > 0 {
		return *sn.Properties.AddressPrefixes[0]
	}
	return ""
}

// natAddressesUnread: when the service's network interface, where Azure
// gives dynamic NAT addresses, cannot be read, the service stays Ready,
// status keeps the addresses last read and Event NATAddressesUnread says
// why.
func natAddressesUnread(t *testing.T, w *testworld.World) {
	create(t, w, apls("nicdenied"))
	before := ready(t, w, "nicdenied").Status.NATIPAddresses
	if len(before) != 1 {
		t.Fatalf("NAT addresses before: %v", before)
	}
	id := fault(t, w, azuresim.Fault{Method: http.MethodGet, PathRegex: "networkInterfaces/nicdenied[^/]*\\.nic\\.", Status: 403, Code: "AuthorizationFailed",
		Message: "The client 'c' with object id 'o' does not have authorization to perform action 'Microsoft.Network/networkInterfaces/read' over scope '/subscriptions/" + sub + "/resourceGroups/" + rg + "' or the scope is invalid."})
	defer w.Sim.RemoveFault(id)
	patch(t, w, "nicdenied", `{"metadata":{"annotations":{"test/poke":"1"}}}`)
	waitEvent(t, w, "nicdenied", privatelinkservice.EventNATAddressesUnread)
	o := ready(t, w, "nicdenied")
	if diff := cmp.Diff(before, o.Status.NATIPAddresses); diff != "" {
		t.Errorf("the addresses last read were lost (-want +got):\n%s", diff)
	}
}

// TestWaitsForTheLoadBalancer: while the frontend's load balancer has an
// operation running, Azure refuses to create a private link service on it
// (400 ReferencedResourceNotProvisioned, as azuresim answers). The
// controller sends no such request: it says what it waits for, and creates
// the service once the load balancer's operation has ended.
func TestWaitsForTheLoadBalancer(t *testing.T) {
	w := world(t, false)
	ctx := t.Context()
	lbs := w.Network(t, sub).NewLoadBalancersClient()
	lb, err := lbs.Get(ctx, rg, "api-lb", nil)
	if err != nil {
		t.Fatal(err)
	}
	// An update of the load balancer whose operation takes 40 s; the
	// service's own operations after it take 1 s.
	w.Sim.SetLatency(40 * time.Second)
	lb.Tags = map[string]*string{"changed": new("now")}
	if _, err := lbs.BeginCreateOrUpdate(ctx, rg, "api-lb", lb.LoadBalancer, nil); err != nil {
		t.Fatal(err)
	}
	w.Sim.SetLatency(time.Second)
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	create(t, w, apls("api"))
	o := waitCondition(t, w, "api", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, privatelinkservice.ReasonLoadBalancerNotProvisioned)
	if c := findCondition(o, v1alpha1.ConditionPrivateLinkServiceReady); !strings.Contains(c.Message, "load balancer api-lb is Updating") {
		t.Errorf("message: %s", c.Message)
	}
	if c := w.Sim.Counters(); c.Sum(http.MethodPut, "Microsoft.Network/privateLinkServices", 0, 999) != 0 {
		t.Errorf("a service was written while its load balancer was Updating: %v", c.Requests)
	}
	ready(t, w, "api")
	if n := w.Sim.Counters().Errors["ReferencedResourceNotProvisioned"]; n != 0 {
		t.Errorf("Azure refused %d writes for the load balancer's state", n)
	}
}
