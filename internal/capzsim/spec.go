package capzsim

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// CAPZ's defaults, applied by its webhooks (which envtest does not run).
const (
	defaultVNetCIDR         = "10.0.0.0/8"
	defaultCPSubnetCIDR     = "10.0.0.0/16"
	defaultNodeSubnetCIDR   = "10.1.0.0/16"
	defaultInternalLBIP     = "10.0.0.100"
	ownedTagPrefix          = "sigs.k8s.io_cluster-api-provider-azure_cluster_"
	capzFinalizer           = "azurecluster.infrastructure.cluster.x-k8s.io"
	ingressLinkSuffix       = "-ingress-privatelink"
	gatewayLinkSuffix       = "-gateway-privatelink"
	ingressLoadBalancerName = "-ingress-lb"
)

// clusterSpec is what capzsim reads of an AzureCluster, CAPZ defaults
// applied.
type clusterSpec struct {
	view       *capz.AzureCluster
	vnetName   string
	vnetCIDRs  []string
	subnets    []subnetSpec
	lbInternal bool
	lbName     string
	frontends  []frontendSpec
}

type subnetSpec struct {
	name, role string
	cidrs      []string
}

type frontendSpec struct {
	name, privateIP string
}

func readSpec(u *unstructured.Unstructured) (*clusterSpec, error) {
	view, errs := capz.FromUnstructured(u)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if view.SubscriptionID == "" || view.ResourceGroup == "" || view.Location == "" {
		return nil, fmt.Errorf("spec.subscriptionID, spec.resourceGroup and spec.location are required")
	}
	s := &clusterSpec{view: view}
	s.vnetName, _, _ = unstructured.NestedString(u.Object, "spec", "networkSpec", "vnet", "name")
	if s.vnetName == "" {
		s.vnetName = u.GetName() + "-vnet"
	}
	s.vnetCIDRs, _, _ = unstructured.NestedStringSlice(u.Object, "spec", "networkSpec", "vnet", "cidrBlocks")
	if len(s.vnetCIDRs) == 0 {
		s.vnetCIDRs = []string{defaultVNetCIDR}
	}
	subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
	for _, raw := range subnets {
		m, _ := raw.(map[string]any)
		sn := subnetSpec{}
		sn.name, _, _ = unstructured.NestedString(m, "name")
		sn.role, _, _ = unstructured.NestedString(m, "role")
		sn.cidrs, _, _ = unstructured.NestedStringSlice(m, "cidrBlocks")
		if len(sn.cidrs) == 0 {
			sn.cidrs = []string{defaultNodeSubnetCIDR}
			if sn.role == capz.SubnetRoleControlPlane {
				sn.cidrs = []string{defaultCPSubnetCIDR}
			}
		}
		s.subnets = append(s.subnets, sn)
	}
	s.lbInternal = view.APIServerLBType == capz.LBTypeInternal
	s.lbName, _, _ = unstructured.NestedString(u.Object, "spec", "networkSpec", "apiServerLB", "name")
	if s.lbName == "" {
		s.lbName = u.GetName() + "-internal-lb"
	}
	fes, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "apiServerLB", "frontendIPs")
	for _, raw := range fes {
		m, _ := raw.(map[string]any)
		fe := frontendSpec{}
		fe.name, _, _ = unstructured.NestedString(m, "name")
		fe.privateIP, _, _ = unstructured.NestedString(m, "privateIP")
		s.frontends = append(s.frontends, fe)
	}
	if len(s.frontends) == 0 {
		s.frontends = []frontendSpec{{name: s.lbName + "-frontEnd", privateIP: defaultInternalLBIP}}
	}
	return s, nil
}

// subnetByRole returns the first subnet with a role, else the first.
func (s *clusterSpec) subnetByRole(role string) (subnetSpec, bool) {
	for _, sn := range s.subnets {
		if sn.role == role {
			return sn, true
		}
	}
	if len(s.subnets) > 0 {
		return s.subnets[0], true
	}
	return subnetSpec{}, false
}

// natSubnets are the subnets the fork's private links put NAT IPs in; they
// need private-link-service network policies disabled.
func (s *clusterSpec) natSubnets() map[string]bool {
	out := map[string]bool{}
	for _, pl := range s.view.PrivateLinks {
		for _, nat := range pl.NATIPConfigurations {
			out[nat.Subnet] = true
		}
		if len(pl.NATIPConfigurations) == 0 {
			if cp, ok := s.subnetByRole(capz.SubnetRoleControlPlane); ok {
				out[cp.name] = true
			}
		}
	}
	return out
}

func (s *clusterSpec) rgID() string {
	return "/subscriptions/" + s.view.SubscriptionID + "/resourceGroups/" + s.view.ResourceGroup
}

func (s *clusterSpec) vnetID() string {
	return s.rgID() + "/providers/Microsoft.Network/virtualNetworks/" + s.vnetName
}

func (s *clusterSpec) subnetID(name string) string { return s.vnetID() + "/subnets/" + name }

func (s *clusterSpec) frontendID(lb, fe string) string {
	return s.rgID() + "/providers/Microsoft.Network/loadBalancers/" + lb + "/frontendIPConfigurations/" + fe
}

func prefixContains(cidr, ip string) bool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(ip)
	return err == nil && p.Contains(a)
}

func ownedTag(cluster string) string { return ownedTagPrefix + cluster }
