package privatelinkservice

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
)

// frontend is a resolved load balancer frontend IP configuration, or a
// Direct Connect destination.
type frontend struct {
	status v1alpha1.FrontendStatus
	// subnetID is an internal frontend's subnet; its VNet holds the NAT
	// subnet. Empty for a public frontend and for Direct Connect: the NAT
	// subnet is then named by ID.
	subnetID string
	// busy says why Azure would refuse a write of the service now: its load
	// balancer's operation has not ended ("" when it has, and for Direct
	// Connect).
	busy string
}

// writable is nil when Azure takes a write of the service now, else a
// wait for the load balancer's operation to end (reason
// LoadBalancerNotProvisioned; purpose, if any, says what the write was
// for).
func (f frontend) writable(purpose string) error {
	switch {
	case f.busy == "":
		return nil
	case purpose != "":
		return waitFor(ReasonLoadBalancerNotProvisioned, "%s (%s)", f.busy, purpose)
	}
	return waitFor(ReasonLoadBalancerNotProvisioned, "%s", f.busy)
}

func (f frontend) vnetID() string {
	if f.subnetID == "" {
		return ""
	}
	return pls.VNetOf(f.subnetID)
}

// frontend finds the frontend IP configuration the spec names, in
// spec.frontend.resourceGroup or the service's own.
func (r *Reconciler) frontend(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api networkAPI) (frontend, error) {
	spec, rg := obj.Spec.Frontend, obj.Spec.ResourceGroup
	if spec.DestinationIPAddress != "" {
		return frontend{status: v1alpha1.FrontendStatus{DestinationIPAddress: spec.DestinationIPAddress}}, nil
	}
	if spec.ResourceGroup != "" {
		rg = spec.ResourceGroup
	}
	if spec.LoadBalancer != nil {
		return byName(ctx, api, rg, spec.LoadBalancer)
	}
	ip := spec.PrivateIPAddress
	if spec.Service != nil {
		var err error
		if ip, err = r.serviceIP(ctx, obj.Namespace, spec.Service.Name); err != nil {
			return frontend{}, err
		}
	}
	lbs, err := api.LoadBalancers(ctx, rg)
	if err != nil {
		return frontend{}, err
	}
	for _, lb := range lbs {
		for _, fe := range frontends(lb) {
			if fe.Properties != nil && ptr.Deref(fe.Properties.PrivateIPAddress, "") == ip {
				return usableFrontend(lb, fe)
			}
		}
	}
	return frontend{}, waitFor(azure.ReasonNotFound, "no internal load balancer in resource group %s has a frontend with IP %s", rg, ip)
}

// byName finds a frontend by load balancer and frontend name.
func byName(ctx context.Context, api networkAPI, rg string, ref *v1alpha1.LoadBalancerFrontend) (frontend, error) {
	lb, err := api.LoadBalancer(ctx, rg, ref.Name)
	if err != nil {
		return frontend{}, err
	}
	if lb == nil {
		return frontend{}, waitFor(azure.ReasonNotFound, "load balancer %s does not exist in resource group %s", ref.Name, rg)
	}
	for _, fe := range frontends(lb) {
		if strings.EqualFold(ptr.Deref(fe.Name, ""), ref.FrontendIPConfigurationName) {
			return usableFrontend(lb, fe)
		}
	}
	return frontend{}, waitFor(azure.ReasonNotFound, "load balancer %s has no frontend IP configuration %s", ref.Name, ref.FrontendIPConfigurationName)
}

// serviceIP is the ingress IP of a Service of type LoadBalancer.
func (r *Reconciler) serviceIP(ctx context.Context, ns, name string) (string, error) {
	svc := &corev1.Service{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", waitFor(azure.ReasonNotFound, "Service %s/%s does not exist", ns, name)
		}
		return "", err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return "", terminal(ReasonServiceNotLoadBalancer, "Service %s/%s is of type %s, not LoadBalancer", ns, name, svc.Spec.Type)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP, nil
		}
	}
	return "", waitFor(ReasonServiceHasNoIP, "Service %s/%s has no load balancer ingress IP yet", ns, name)
}

// usableFrontend checks that a frontend can carry a private link service:
// a Standard load balancer's frontend, either internal (a private IP in a
// subnet) or public with floating IP disabled on every load balancing
// rule that uses it. Private link traffic ignores floating IP, so a rule
// with it enabled sends consumers' packets where nothing listens:
// cloud-provider-azure refuses a service on such a frontend for that
// reason (reconcilePrivateLinkService: "must be internal or disable
// floating ip"; kubernetes-sigs/cloud-provider-azure issue 1659 and PR
// 1728), and creates one on a public frontend otherwise.
func usableFrontend(lb *armnetwork.LoadBalancer, fe *armnetwork.FrontendIPConfiguration) (frontend, error) {
	if lb.SKU == nil || ptr.Deref(lb.SKU.Name, "") != armnetwork.LoadBalancerSKUNameStandard {
		return frontend{}, terminal(ReasonFrontendNotInternal, "load balancer %s is not of the Standard SKU, which a private link service needs", ptr.Deref(lb.Name, ""))
	}
	st := v1alpha1.FrontendStatus{LoadBalancerID: ptr.Deref(lb.ID, ""), FrontendIPConfigurationID: ptr.Deref(fe.ID, "")}
	busy := loadBalancerBusy(lb)
	if fe.Properties != nil && fe.Properties.Subnet != nil && fe.Properties.Subnet.ID != nil {
		st.PrivateIPAddress = ptr.Deref(fe.Properties.PrivateIPAddress, "")
		return frontend{status: st, subnetID: *fe.Properties.Subnet.ID, busy: busy}, nil
	}
	if rules := floatingIPRules(lb, ptr.Deref(fe.ID, "")); len(rules) > 0 {
		return frontend{}, terminal(ReasonFloatingIPEnabled,
			"frontend %s of load balancer %s is public and load balancing rule(s) %s on it have floating IP enabled; private link traffic ignores floating IP, so consumers would reach nothing: disable floating IP on them (cloud-provider-azure: annotation service.beta.kubernetes.io/azure-disable-load-balancer-floating-ip)",
			ptr.Deref(fe.Name, ""), ptr.Deref(lb.Name, ""), strings.Join(rules, ", "))
	}
	st.Public = true
	return frontend{status: st, busy: busy}, nil
}

// loadBalancerBusy says why Azure refuses, while a load balancer's own
// operation runs, to create or change a private link service on it: 400
// ReferencedResourceNotProvisioned, "Cannot proceed with operation
// because resource <load balancer> used by resource <service> is not in
// Succeeded state. Resource is in Updating state and the last operation
// that updated/is updating the resource is PutLoadBalancerOperation"
// (azuresim's frontend check holds that answer). "" when it is Succeeded,
// and when Azure says nothing of its state (then Azure decides).
func loadBalancerBusy(lb *armnetwork.LoadBalancer) string {
	if lb.Properties == nil {
		return ""
	}
	switch st := ptr.Deref(lb.Properties.ProvisioningState, ""); st {
	case "", armnetwork.ProvisioningStateSucceeded:
		return ""
	default:
		return fmt.Sprintf("load balancer %s is %s: Azure refuses to create or change a private link service on it until its operation ends (ReferencedResourceNotProvisioned); the service is written then",
			ptr.Deref(lb.Name, ""), st)
	}
}

// floatingIPRules names the load balancing rules on a frontend that have
// floating IP enabled.
func floatingIPRules(lb *armnetwork.LoadBalancer, feID string) []string {
	if lb.Properties == nil {
		return nil
	}
	var out []string
	for _, rule := range lb.Properties.LoadBalancingRules {
		if rule == nil || rule.Properties == nil || rule.Properties.FrontendIPConfiguration == nil {
			continue
		}
		if strings.EqualFold(ptr.Deref(rule.Properties.FrontendIPConfiguration.ID, ""), feID) && ptr.Deref(rule.Properties.EnableFloatingIP, false) {
			out = append(out, ptr.Deref(rule.Name, ""))
		}
	}
	return out
}

func frontends(lb *armnetwork.LoadBalancer) []*armnetwork.FrontendIPConfiguration {
	if lb == nil || lb.Properties == nil {
		return nil
	}
	return lb.Properties.FrontendIPConfigurations
}
