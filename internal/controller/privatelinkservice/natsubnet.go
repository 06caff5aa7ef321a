package privatelinkservice

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
)

// natSubnet makes sure the NAT subnet exists in the frontend's VNet with
// private link service network policies disabled, creating or fixing it
// when the spec says so, and returns its ID.
func (r *Reconciler) natSubnet(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api networkAPI, fe frontend) (string, error) {
	spec := obj.Spec.NATSubnet
	vnetID := fe.vnetID()
	if vnetID == "" {
		// A public frontend or Direct Connect: no frontend subnet says
		// which virtual network, so the spec names the subnet by ID.
		if spec.ID == "" {
			return "", terminal(ReasonNATSubnetNeedsID, "the frontend is not in a subnet (a public frontend or Direct Connect), so no virtual network is known for the NAT subnet: name it by spec.natSubnet.id")
		}
		vnetID = pls.VNetOf(spec.ID)
	}
	name := spec.Name
	switch {
	case spec.ID != "":
		if !strings.EqualFold(pls.VNetOf(spec.ID), vnetID) {
			return "", terminal(ReasonSubnetNotInVNet, "NAT subnet %s is not in virtual network %s of the load balancer frontend", spec.ID, vnetID)
		}
		name = spec.ID[strings.LastIndex(spec.ID, "/")+1:]
	case spec.Create != nil:
		name = spec.Create.Name
	}
	vnet, err := api.VirtualNetwork(ctx, vnetID)
	if err != nil {
		return "", err
	}
	if vnet == nil {
		return "", waitFor(azure.ReasonNotFound, "virtual network %s of the load balancer frontend does not exist", vnetID)
	}
	id := vnetID + "/subnets/" + name
	sn := findSubnet(vnet, name)
	if sn == nil {
		if spec.Create == nil {
			return "", waitFor(azure.ReasonNotFound, "NAT subnet %s does not exist in virtual network %s", name, vnetID)
		}
		return "", r.createSubnet(ctx, obj, api, vnet, id)
	}
	if st := ptr.Deref(sn.Properties.ProvisioningState, ""); st != "" && st != armnetwork.ProvisioningStateSucceeded {
		return "", waitFor(ReasonWaitingForSubnet, "NAT subnet %s is %s", name, st)
	}
	if ptr.Deref(sn.Properties.PrivateLinkServiceNetworkPolicies, "") != armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled {
		if !spec.FixNetworkPolicies && (spec.Create == nil || !obj.Status.NATSubnetCreated) {
			return "", terminal(ReasonNetworkPoliciesEnabled,
				"NAT subnet %s has private link service network policies enabled, which Azure refuses for NAT IPs: disable them, or set spec.natSubnet.fixNetworkPolicies", name)
		}
		body := *sn
		body.Properties.PrivateLinkServiceNetworkPolicies = new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)
		if err := api.PutSubnet(ctx, id, body); err != nil {
			return "", err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventNATSubnetFixed, "FixSubnet", "disabled private link service network policies on subnet %s", id)
		return "", waitFor(ReasonWaitingForSubnet, "disabling private link service network policies on NAT subnet %s", name)
	}
	obj.Status.NATSubnetID = ptr.Deref(sn.ID, "")
	setCondition(obj, v1alpha1.ConditionNATSubnetReady, metav1.ConditionTrue, ReasonReady, "NAT subnet "+ptr.Deref(sn.ID, ""))
	return ptr.Deref(sn.ID, ""), nil
}

// createSubnet starts creating the NAT subnet in the first free range of
// the VNet's address space and records that the operator created it.
func (r *Reconciler) createSubnet(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api networkAPI, vnet *armnetwork.VirtualNetwork, id string) error {
	bits := int(obj.Spec.NATSubnet.Create.PrefixLength)
	space, used := addressSpace(vnet)
	prefix, ok, release := r.ranges.reserve(id[:strings.LastIndex(id, "/subnets/")], used, time.Now(), func(used []netip.Prefix) (netip.Prefix, bool) {
		return pls.FreePrefix(space, used, bits)
	})
	if !ok {
		return terminal(ReasonNoFreeRange, "virtual network %s (address space %s) has no free /%d range for the NAT subnet", ptr.Deref(vnet.Name, ""), joinPrefixes(space), bits)
	}
	body := armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{
		AddressPrefix:                     new(prefix.String()),
		PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled),
	}}
	if err := api.PutSubnet(ctx, id, body); err != nil {
		release()
		return err
	}
	obj.Status.NATSubnetID, obj.Status.NATSubnetCreated = id, true
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventNATSubnetCreated, "CreateSubnet", "creating NAT subnet %s with range %s", id, prefix)
	return waitFor(ReasonWaitingForSubnet, "creating NAT subnet %s (%s)", id, prefix)
}

// addressSpace reads the VNet's address prefixes and its subnets' ranges.
func addressSpace(vnet *armnetwork.VirtualNetwork) (space, used []netip.Prefix) {
	if vnet.Properties == nil {
		return nil, nil
	}
	if as := vnet.Properties.AddressSpace; as != nil {
		space = parsePrefixes(as.AddressPrefixes)
	}
	for _, sn := range vnet.Properties.Subnets {
		if sn.Properties == nil {
			continue
		}
		if sn.Properties.AddressPrefix != nil {
			used = append(used, parsePrefixes([]*string{sn.Properties.AddressPrefix})...)
		}
		used = append(used, parsePrefixes(sn.Properties.AddressPrefixes)...)
	}
	return space, used
}

func parsePrefixes(in []*string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range in {
		if p, err := netip.ParsePrefix(ptr.Deref(s, "")); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, 0, len(ps))
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

func findSubnet(vnet *armnetwork.VirtualNetwork, name string) *armnetwork.Subnet {
	if vnet.Properties == nil {
		return nil
	}
	for _, sn := range vnet.Properties.Subnets {
		if sn != nil && sn.Properties != nil && strings.EqualFold(ptr.Deref(sn.Name, ""), name) {
			return sn
		}
	}
	return nil
}
