// Package privatelinkservices decides what an Azure private link service
// should look like and compares it with what Azure has. Everything here is
// pure; the controller observes and writes.
package privatelinkservices

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// OwnerTag marks what the operator created; its value names the object,
// "<namespace>/<name>".
const OwnerTag = "azure-private-endpoint-operator.giantswarm.io_owner"

// Desired is the private link service the spec asks for.
type Desired struct {
	Name, Location string
	// FrontendID is the load balancer frontend IP configuration's ID;
	// empty for a Direct Connect service.
	FrontendID string
	// DestinationIP is a Direct Connect service's destination (no load
	// balancer).
	DestinationIP string
	// AccessMode is Default or Restricted; empty is Default: a service
	// Azure holds Restricted is set back to Default (accessMode).
	AccessMode string
	// NATSubnetID is where every NAT IP configuration gets its address.
	NATSubnetID string
	// NATCount is the number of NAT IP configurations, 1 to 8.
	NATCount int
	// StaticIPs are the addresses of the first configurations.
	StaticIPs     []string
	Visibility    []string
	AutoApproval  []string
	ProxyProtocol bool
	FQDNs         []string
	// Owner is the tag value naming the object.
	Owner string
	// Tags go on the service beside the owner tag (azure.Tags).
	Tags map[string]string
}

// NATName is the name of the i-th NAT IP configuration; the 0th is the
// primary.
func NATName(i int) string { return fmt.Sprintf("nat-ipconfig-%d", i) }

// Ownership says whose a private link service is.
type Ownership int

const (
	// Ours means tagged with our owner value.
	Ours Ownership = iota
	// Untagged means no owner tag: created by someone else.
	Untagged
	// OtherOwner means tagged for another object.
	OtherOwner
)

// OwnerOf reads the owner tag of an observed service.
func OwnerOf(pls *armnetwork.PrivateLinkService, owner string) (Ownership, string) {
	if pls == nil {
		return Untagged, ""
	}
	v := pls.Tags[OwnerTag]
	switch {
	case v == nil:
		return Untagged, ""
	case *v == owner:
		return Ours, *v
	default:
		return OtherOwner, *v
	}
}

// Body is the PUT body for the desired service. Tags the service has beside
// ours are kept; so are the addresses Azure gave dynamic configurations,
// and the observed primary configuration when the desired one differs
// (Azure does not let it change: see PrimaryLocked).
func Body(d Desired, observed *armnetwork.PrivateLinkService) armnetwork.PrivateLinkService {
	var had map[string]*string
	if observed != nil {
		had = observed.Tags
	}
	tags := azure.MergeTags(had, d.Tags, OwnerTag, d.Owner)
	cfgs := natConfigs(d)
	if observed != nil && observed.Properties != nil {
		if p := primary(observed.Properties.IPConfigurations); p != nil && PrimaryLocked(d, observed) {
			cfgs[0] = &armnetwork.PrivateLinkServiceIPConfiguration{Name: p.Name, Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
				Primary: new(true), Subnet: &armnetwork.Subnet{ID: p.Properties.Subnet.ID},
				PrivateIPAllocationMethod: p.Properties.PrivateIPAllocationMethod, PrivateIPAddress: p.Properties.PrivateIPAddress,
			}}
		}
	}
	props := &armnetwork.PrivateLinkServiceProperties{
		IPConfigurations:    cfgs,
		Visibility:          &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: ptrs(d.Visibility)},
		AutoApproval:        &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: ptrs(d.AutoApproval)},
		EnableProxyProtocol: new(d.ProxyProtocol),
		Fqdns:               ptrs(d.FQDNs),
	}
	if d.FrontendID != "" {
		props.LoadBalancerFrontendIPConfigurations = []*armnetwork.FrontendIPConfiguration{{ID: new(d.FrontendID)}}
	}
	if d.DestinationIP != "" {
		props.DestinationIPAddress = new(d.DestinationIP)
	}
	// Unset is sent only to take a Restricted service back to Default: a
	// PUT without the field may keep what Azure has (azuresim's reading).
	if want := accessMode(d); d.AccessMode != "" || observed != nil && observed.Properties != nil && !strings.EqualFold(observedAccessMode(observed.Properties), want) {
		props.AccessMode = new(armnetwork.AccessMode(want))
	}
	return armnetwork.PrivateLinkService{Location: new(d.Location), Tags: tags, Properties: props}
}

func natConfigs(d Desired) []*armnetwork.PrivateLinkServiceIPConfiguration {
	n := max(d.NATCount, 1, len(d.StaticIPs))
	out := make([]*armnetwork.PrivateLinkServiceIPConfiguration, 0, n)
	for i := range n {
		p := &armnetwork.PrivateLinkServiceIPConfigurationProperties{
			Primary:                   new(i == 0),
			Subnet:                    &armnetwork.Subnet{ID: new(d.NATSubnetID)},
			PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodDynamic),
			PrivateIPAddressVersion:   new(armnetwork.IPVersionIPv4),
		}
		if i < len(d.StaticIPs) {
			p.PrivateIPAllocationMethod = new(armnetwork.IPAllocationMethodStatic)
			p.PrivateIPAddress = new(d.StaticIPs[i])
		}
		out = append(out, &armnetwork.PrivateLinkServiceIPConfiguration{Name: new(NATName(i)), Properties: p})
	}
	return out
}

// PrimaryLocked reports that the desired primary NAT IP configuration
// differs from the observed one (name, subnet, or a static address), which
// Azure refuses to change: it is reported, not fought.
func PrimaryLocked(d Desired, observed *armnetwork.PrivateLinkService) bool {
	if observed == nil || observed.Properties == nil {
		return false
	}
	p := primary(observed.Properties.IPConfigurations)
	if p == nil {
		return false
	}
	want := natConfigs(d)[0]
	if !strings.EqualFold(ptr.Deref(p.Name, ""), ptr.Deref(want.Name, "")) || !strings.EqualFold(subnetOf(p), ptr.Deref(want.Properties.Subnet.ID, "")) {
		return true
	}
	if want.Properties.PrivateIPAddress != nil && ptr.Deref(p.Properties.PrivateIPAddress, "") != *want.Properties.PrivateIPAddress {
		return true
	}
	return false
}

// Diff names the fields on which the observed service differs from the
// desired one; none means up to date and nothing is written.
func Diff(d Desired, observed *armnetwork.PrivateLinkService) []string {
	if observed == nil || observed.Properties == nil {
		return []string{"service"}
	}
	p := observed.Properties
	var out []string
	if !sameFrontend(d, p) {
		out = append(out, "frontend")
	}
	if !strings.EqualFold(observedAccessMode(p), accessMode(d)) {
		out = append(out, "accessMode")
	}
	if !sameNAT(Body(d, observed).Properties.IPConfigurations, p.IPConfigurations) {
		out = append(out, "natIPConfigurations")
	}
	if p.Visibility == nil || !sameSet(d.Visibility, derefs(p.Visibility.Subscriptions)) {
		out = append(out, "visibility")
	}
	if p.AutoApproval == nil || !sameSet(d.AutoApproval, derefs(p.AutoApproval.Subscriptions)) {
		out = append(out, "autoApproval")
	}
	if ptr.Deref(p.EnableProxyProtocol, false) != d.ProxyProtocol {
		out = append(out, "enableProxyProtocol")
	}
	if !sameSet(d.FQDNs, derefs(p.Fqdns)) {
		out = append(out, "fqdns")
	}
	if v := observed.Tags[OwnerTag]; v == nil || *v != d.Owner || len(azure.TagsDiffer(observed.Tags, d.Tags)) > 0 {
		out = append(out, "tags")
	}
	return out
}

// sameFrontend says the service is bound to the desired frontend: the one
// load balancer frontend, or for Direct Connect none and the destination.
// Azure may return no frontend, or a null item: both differ.
func sameFrontend(d Desired, p *armnetwork.PrivateLinkServiceProperties) bool {
	if d.FrontendID == "" {
		return len(p.LoadBalancerFrontendIPConfigurations) == 0 && ptr.Deref(p.DestinationIPAddress, "") == d.DestinationIP
	}
	return len(p.LoadBalancerFrontendIPConfigurations) == 1 && p.LoadBalancerFrontendIPConfigurations[0] != nil &&
		strings.EqualFold(ptr.Deref(p.LoadBalancerFrontendIPConfigurations[0].ID, ""), d.FrontendID)
}

// Frontend names what the desired service is bound to, in the words of
// ObservedFrontend.
func (d Desired) Frontend() string {
	if d.FrontendID != "" {
		return d.FrontendID
	}
	if d.DestinationIP != "" {
		return "destination " + d.DestinationIP
	}
	return "nothing"
}

// ObservedFrontend names what an observed service is bound to: its load
// balancer frontend's ID, or its Direct Connect destination.
func ObservedFrontend(observed *armnetwork.PrivateLinkService) string {
	if observed == nil || observed.Properties == nil {
		return ""
	}
	p := observed.Properties
	if len(p.LoadBalancerFrontendIPConfigurations) > 0 && p.LoadBalancerFrontendIPConfigurations[0] != nil {
		return ptr.Deref(p.LoadBalancerFrontendIPConfigurations[0].ID, "")
	}
	if d := ptr.Deref(p.DestinationIPAddress, ""); d != "" {
		return "destination " + d
	}
	return "nothing"
}

// sameNAT compares NAT IP configurations by name: subnet, primary, and the
// address of static ones.
func sameNAT(want, got []*armnetwork.PrivateLinkServiceIPConfiguration) bool {
	if len(want) != len(got) {
		return false
	}
	byName := map[string]*armnetwork.PrivateLinkServiceIPConfiguration{}
	for _, g := range got {
		if g != nil && g.Properties != nil {
			byName[strings.ToLower(ptr.Deref(g.Name, ""))] = g
		}
	}
	for _, w := range want {
		g := byName[strings.ToLower(ptr.Deref(w.Name, ""))]
		if g == nil || !strings.EqualFold(subnetOf(g), ptr.Deref(w.Properties.Subnet.ID, "")) || ptr.Deref(g.Properties.Primary, false) != ptr.Deref(w.Properties.Primary, false) {
			return false
		}
		if ptr.Deref(w.Properties.PrivateIPAllocationMethod, "") == armnetwork.IPAllocationMethodStatic &&
			(ptr.Deref(g.Properties.PrivateIPAllocationMethod, "") != armnetwork.IPAllocationMethodStatic || ptr.Deref(g.Properties.PrivateIPAddress, "") != ptr.Deref(w.Properties.PrivateIPAddress, "")) {
			return false
		}
		if ptr.Deref(w.Properties.PrivateIPAllocationMethod, "") != armnetwork.IPAllocationMethodStatic && ptr.Deref(g.Properties.PrivateIPAllocationMethod, "") == armnetwork.IPAllocationMethodStatic {
			return false
		}
	}
	return true
}

// NATAddresses are the observed NAT addresses, primary first. Azure gives
// a dynamic NAT IP configuration no privateIPAddress, neither in the PUT
// response nor in any GET: the address is on the service's network
// interface, listed in properties.networkInterfaces (ASO v2's recording
// Test_Networking_PrivateLinkService_CRUD.yaml, api-version 2022-07-01,
// and terraform-provider-azurerm issue 26371). So when a configuration
// has no address, the addresses are read from nics, the interfaces
// NetworkInterfaces lists, primary first; when every configuration has
// one (all static), from the configurations, as before.
func NATAddresses(pls *armnetwork.PrivateLinkService, nics []*armnetwork.Interface) []string {
	if pls == nil || pls.Properties == nil {
		return nil
	}
	if NeedsInterfaces(pls) {
		return interfaceAddresses(nics)
	}
	var out []string
	cfgs := slices.Clone(pls.Properties.IPConfigurations)
	slices.SortStableFunc(cfgs, func(a, b *armnetwork.PrivateLinkServiceIPConfiguration) int {
		pa, pb := isPrimary(a), isPrimary(b)
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return strings.Compare(nameOf(a), nameOf(b))
	})
	for _, c := range cfgs {
		if c != nil && c.Properties != nil && c.Properties.PrivateIPAddress != nil {
			out = append(out, *c.Properties.PrivateIPAddress)
		}
	}
	return out
}

// NeedsInterfaces says the service's NAT addresses are only on its network
// interfaces: a configuration has none of its own.
func NeedsInterfaces(pls *armnetwork.PrivateLinkService) bool {
	if pls == nil || pls.Properties == nil {
		return false
	}
	for _, c := range pls.Properties.IPConfigurations {
		if c != nil && c.Properties != nil && ptr.Deref(c.Properties.PrivateIPAddress, "") == "" {
			return true
		}
	}
	return false
}

// InterfaceIDs are the IDs of the service's network interfaces.
func InterfaceIDs(pls *armnetwork.PrivateLinkService) []string {
	if pls == nil || pls.Properties == nil {
		return nil
	}
	var out []string
	for _, n := range pls.Properties.NetworkInterfaces {
		if id := ptr.Deref(n.ID, ""); n != nil && id != "" {
			out = append(out, id)
		}
	}
	return out
}

// interfaceAddresses are the addresses of the interfaces' IP
// configurations, the primary ones first, otherwise in Azure's order.
func interfaceAddresses(nics []*armnetwork.Interface) []string {
	var primaries, others []string
	for _, n := range nics {
		if n == nil || n.Properties == nil {
			continue
		}
		for _, c := range n.Properties.IPConfigurations {
			if c == nil || c.Properties == nil || ptr.Deref(c.Properties.PrivateIPAddress, "") == "" {
				continue
			}
			if ptr.Deref(c.Properties.Primary, false) {
				primaries = append(primaries, *c.Properties.PrivateIPAddress)
			} else {
				others = append(others, *c.Properties.PrivateIPAddress)
			}
		}
	}
	return append(primaries, others...)
}

func primary(cfgs []*armnetwork.PrivateLinkServiceIPConfiguration) *armnetwork.PrivateLinkServiceIPConfiguration {
	for _, c := range cfgs {
		if c != nil && c.Properties != nil && ptr.Deref(c.Properties.Primary, false) && c.Properties.Subnet != nil {
			return c
		}
	}
	return nil
}

func isPrimary(c *armnetwork.PrivateLinkServiceIPConfiguration) bool {
	return c != nil && c.Properties != nil && ptr.Deref(c.Properties.Primary, false)
}

func nameOf(c *armnetwork.PrivateLinkServiceIPConfiguration) string {
	if c == nil {
		return ""
	}
	return ptr.Deref(c.Name, "")
}

func subnetOf(c *armnetwork.PrivateLinkServiceIPConfiguration) string {
	if c == nil || c.Properties == nil || c.Properties.Subnet == nil {
		return ""
	}
	return ptr.Deref(c.Properties.Subnet.ID, "")
}

func sameSet(a, b []string) bool {
	norm := func(l []string) []string {
		out := make([]string, 0, len(l))
		for _, s := range l {
			out = append(out, strings.ToLower(s))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}

func ptrs(in []string) []*string {
	out := make([]*string, 0, len(in))
	for _, s := range in {
		out = append(out, new(s))
	}
	return out
}

func derefs(in []*string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// accessMode is the mode the spec asks for: unset is Azure's default.
func accessMode(d Desired) string {
	if d.AccessMode == "" {
		return string(armnetwork.AccessModeDefault)
	}
	return d.AccessMode
}

// observedAccessMode is the service's mode in Azure; a service that
// reports none has Azure's default.
func observedAccessMode(p *armnetwork.PrivateLinkServiceProperties) string {
	return string(ptr.Deref(p.AccessMode, armnetwork.AccessModeDefault))
}
