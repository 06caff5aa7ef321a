package azuresim

import (
	"net/http"
	"net/netip"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

const (
	typeVNet     = "microsoft.network/virtualnetworks"
	typeSubnet   = "microsoft.network/virtualnetworks/subnets"
	typeLB       = "microsoft.network/loadbalancers"
	typeFrontend = "microsoft.network/loadbalancers/frontendipconfigurations"
	typeNIC      = "microsoft.network/networkinterfaces"
	typeASG      = "microsoft.network/applicationsecuritygroups"
)

// --- Application security groups ---

// asgKind stores application security groups: a private endpoint's IP
// configurations may join them (putPE checks that they exist).
var asgKind = &kind{
	newObj:   func() any { return &armnetwork.ApplicationSecurityGroup{} },
	lro:      true,
	location: true,
	put:      func(*state, *putRequest) *armError { return nil },
}

// --- Virtual networks ---

var vnetKind = &kind{
	newObj:   func() any { return &armnetwork.VirtualNetwork{} },
	lro:      true,
	location: true,
	put:      putVNet,
	checkDelete: func(s *state, r *resource) *armError {
		for _, sn := range s.list(typeSubnet, r.id) {
			if e := subnetInUse(s, sn); e != nil {
				return e
			}
		}
		return nil
	},
	onDelete: func(s *state, r *resource) {
		for _, sn := range s.list(typeSubnet, r.id) {
			delete(s.pools, key(sn.id))
			s.drop(key(sn.id))
		}
	},
	render: func(s *state, r *resource) {
		v := objOf[armnetwork.VirtualNetwork](r)
		setCommon(&v.ID, &v.Name, &v.Type, &v.Etag, r)
		if v.Properties == nil {
			v.Properties = &armnetwork.VirtualNetworkPropertiesFormat{}
		}
		v.Properties.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
		// What Azure always returns, set or not (the recording above).
		v.Properties.ResourceGUID = new(r.guid)
		v.Properties.VirtualNetworkPeerings = orEmpty(v.Properties.VirtualNetworkPeerings)
		v.Properties.EnableDdosProtection = new(ptr.Deref(v.Properties.EnableDdosProtection, false))
		v.Properties.Subnets = []*armnetwork.Subnet{}
		for _, sn := range s.list(typeSubnet, r.id) {
			subnetKind.render(s, sn)
			v.Properties.Subnets = append(v.Properties.Subnets, objOf[armnetwork.Subnet](sn))
		}
	},
}

func putVNet(s *state, req *putRequest) *armError {
	v := bodyOf[armnetwork.VirtualNetwork](req)
	if v.Properties == nil || v.Properties.AddressSpace == nil || len(v.Properties.AddressSpace.AddressPrefixes) == 0 {
		return errBadRequest("InvalidRequestFormat", "Virtual network %s must have an address space.", req.id)
	}
	space, e := parsePrefixes(req.id, v.Properties.AddressSpace.AddressPrefixes)
	if e != nil {
		return e
	}
	if e := replaceSubnets(s, req, v.Properties.Subnets); e != nil {
		return e
	}
	stored := *v
	props := *v.Properties
	props.Subnets = nil
	stored.Properties = &props
	req.res.obj = &stored
	for _, sn := range v.Properties.Subnets {
		if e := putInlineSubnet(s, req.path, sn, space); e != nil {
			return e
		}
	}
	return nil
}

// replaceSubnets deletes the stored subnets a VNet PUT leaves out, as Azure
// does (and refuses, as Azure does, when one of them is in use).
func replaceSubnets(s *state, req *putRequest, in []*armnetwork.Subnet) *armError {
	wanted := map[string]bool{}
	for _, sn := range in {
		if sn == nil || sn.Name == nil || *sn.Name == "" {
			return errBadRequest("InvalidRequestFormat", "Every subnet of virtual network %s needs a name.", req.id)
		}
		wanted[strings.ToLower(*sn.Name)] = true
	}
	if req.existing == nil {
		return nil
	}
	var dropped []*resource
	for _, sn := range s.list(typeSubnet, req.id) {
		if !wanted[strings.ToLower(sn.name)] {
			if e := subnetInUse(s, sn); e != nil {
				return e
			}
			dropped = append(dropped, sn)
		}
	}
	for _, sn := range dropped {
		delete(s.pools, key(sn.id))
		s.drop(key(sn.id))
	}
	return nil
}

// putInlineSubnet stores a subnet given inside a VNet PUT.
func putInlineSubnet(s *state, vnet armPath, sn *armnetwork.Subnet, space []netip.Prefix) *armError {
	p := vnet
	p.types = []string{p.types[0], "subnets"}
	p.names = []string{p.names[0], *sn.Name}
	sub := s.lookup(p.id())
	isNew := sub == nil
	if isNew {
		sub = &resource{id: p.id(), typeKey: typeSubnet, sub: p.sub, rg: p.rg, name: *sn.Name}
	}
	if e := applySubnet(s, sub, sn, space, isNew); e != nil {
		return e
	}
	sub.state, sub.etag = stateSucceeded, newETag()
	s.store(sub)
	return nil
}

// --- Subnets ---

var subnetKind = &kind{
	newObj: func() any { return &armnetwork.Subnet{} },
	lro:    true,
	put: func(s *state, req *putRequest) *armError {
		vnet := s.lookup(req.path.parent().id())
		space, e := parsePrefixes(vnet.id, objOf[armnetwork.VirtualNetwork](vnet).Properties.AddressSpace.AddressPrefixes)
		if e != nil {
			return e
		}
		return applySubnet(s, req.res, bodyOf[armnetwork.Subnet](req), space, req.existing == nil)
	},
	checkDelete: subnetInUse,
	onDelete:    func(s *state, r *resource) { delete(s.pools, key(r.id)) },
	render: func(s *state, r *resource) {
		sn := objOf[armnetwork.Subnet](r)
		setCommon(&sn.ID, &sn.Name, &sn.Type, &sn.Etag, r)
		sn.Properties.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
		sn.Properties.Delegations = orEmpty(sn.Properties.Delegations)
		sn.Properties.PrivateEndpoints = nil
		sn.Properties.IPConfigurations = nil
		pool := s.pools[key(r.id)]
		if pool == nil {
			return
		}
		for _, h := range pool.holders() {
			if nic := s.lookup(h); nic != nil && nic.typeKey == typeNIC {
				if pe := objOf[armnetwork.Interface](nic).Properties.PrivateEndpoint; pe != nil {
					sn.Properties.PrivateEndpoints = append(sn.Properties.PrivateEndpoints, &armnetwork.PrivateEndpoint{ID: pe.ID})
				}
			}
			sn.Properties.IPConfigurations = append(sn.Properties.IPConfigurations, &armnetwork.IPConfiguration{ID: new(h)})
		}
	},
}

// applySubnet validates a subnet against its VNet's address space and its
// siblings, and stores it with its address pool.
func applySubnet(s *state, r *resource, in *armnetwork.Subnet, space []netip.Prefix, isNew bool) *armError {
	if in.Properties == nil {
		in.Properties = &armnetwork.SubnetPropertiesFormat{}
	}
	p := in.Properties
	prefixes := p.AddressPrefixes
	if p.AddressPrefix != nil {
		prefixes = append([]*string{p.AddressPrefix}, prefixes...)
	}
	if len(prefixes) == 0 {
		return errBadRequest("InvalidRequestFormat", "Subnet %s must have an address prefix.", r.name)
	}
	pool, e := newIPPool(r.name, derefAll(prefixes))
	if e != nil {
		return e
	}
	if e := checkSubnetRange(s, r, pool, space); e != nil {
		return e
	}
	if p.PrivateLinkServiceNetworkPolicies == nil {
		p.PrivateLinkServiceNetworkPolicies = new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled)
	}
	if p.PrivateEndpointNetworkPolicies == nil {
		p.PrivateEndpointNetworkPolicies = new(armnetwork.VirtualNetworkPrivateEndpointNetworkPoliciesDisabled)
	}
	if old := s.pools[key(r.id)]; !isNew && old != nil {
		if e := checkSubnetUpdate(s, r, p, old, pool); e != nil {
			return e
		}
		pool.used = old.used
	}
	stored := *in
	props := *p
	stored.Properties = &props
	r.obj = &stored
	s.pools[key(r.id)] = pool
	return nil
}

// checkSubnetRange requires a subnet inside its VNet and apart from its
// siblings.
func checkSubnetRange(s *state, r *resource, pool *ipPool, space []netip.Prefix) *armError {
	for _, pfx := range pool.prefixes {
		if !coveredBy(pfx, space) {
			return errBadRequest("NetcfgSubnetRangeOutsideVnet",
				"Subnet '%s' is not valid because its IP address range is outside the IP address range of virtual network.", r.name)
		}
	}
	for _, sib := range s.list(typeSubnet, vnetOf(r.id)) {
		if key(sib.id) != key(r.id) && overlaps(pool.prefixes, s.pools[key(sib.id)].prefixes) {
			return errBadRequest("NetcfgSubnetRangesOverlap",
				"Subnet '%s' is not valid because its IP address range overlaps with that of an existing subnet in virtual network.", r.name)
		}
	}
	return nil
}

// checkSubnetUpdate refuses changes Azure refuses on a subnet in use.
func checkSubnetUpdate(s *state, r *resource, p *armnetwork.SubnetPropertiesFormat, old, pool *ipPool) *armError {
	if *p.PrivateLinkServiceNetworkPolicies == armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled && usedByPLS(s, r.id) {
		return errBadRequest("PrivateLinkServiceNetworkPoliciesCannotBeEnabledOnPrivateLinkServiceSubnet",
			"Private link service network policies cannot be enabled on private link service subnet %s.", r.id)
	}
	if len(old.used) > 0 && !samePrefixes(old.prefixes, pool.prefixes) {
		return errBadRequest("InUseSubnetCannotBeUpdated", "Subnet %s is in use and its address prefix cannot be changed.", r.name)
	}
	return nil
}

func overlaps(a, b []netip.Prefix) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Overlaps(y) {
				return true
			}
		}
	}
	return false
}

func subnetInUse(s *state, r *resource) *armError {
	pool := s.pools[key(r.id)]
	if pool == nil || len(pool.used) == 0 {
		return nil
	}
	return errBadRequest("InUseSubnetCannotBeDeleted",
		"Subnet %s is in use by %s and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet.",
		r.name, pool.holders()[0])
}

// usedByPLS reports whether a private link service has NAT IPs in a subnet.
func usedByPLS(s *state, subnetID string) bool {
	pool := s.pools[key(subnetID)]
	if pool == nil {
		return false
	}
	for _, h := range pool.used {
		if strings.Contains(strings.ToLower(h), "/privatelinkservices/") {
			return true
		}
	}
	return false
}

// --- Load balancers ---

var lbKind = &kind{
	newObj:   func() any { return &armnetwork.LoadBalancer{} },
	lro:      true,
	location: true,
	put:      putLB,
	checkDelete: func(s *state, r *resource) *armError {
		for _, pls := range s.listAll(typePLS) {
			for _, fe := range plsFrontends(pls) {
				if hasPrefixFold(fe, r.id+"/") {
					return errBadRequest("CannotDeleteLoadBalancerWithPrivateLinkService",
						"Load balancer %s cannot be deleted because it is referenced by private link service %s.", r.id, pls.id)
				}
			}
		}
		return nil
	},
	onDelete: func(s *state, r *resource) { releaseEverywhere(s, r.id) },
	render: func(_ *state, r *resource) {
		lb := objOf[armnetwork.LoadBalancer](r)
		setCommon(&lb.ID, &lb.Name, &lb.Type, &lb.Etag, r)
		p := lb.Properties
		p.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
		// What Azure always returns (ASO v2 recording
		// Test_Networking_PrivateLinkService_CRUD.yaml, api-version
		// 2020-11-01): the resource GUID, empty lists, the tier, and on
		// each frontend its etag, type, IP version and the load balancer's
		// provisioning state.
		p.ResourceGUID = new(r.guid)
		p.BackendAddressPools = orEmpty(p.BackendAddressPools)
		p.LoadBalancingRules = orEmpty(p.LoadBalancingRules)
		p.Probes = orEmpty(p.Probes)
		p.InboundNatRules = orEmpty(p.InboundNatRules)
		p.OutboundRules = orEmpty(p.OutboundRules)
		if lb.SKU.Tier == nil {
			lb.SKU.Tier = new(armnetwork.LoadBalancerSKUTierRegional)
		}
		for _, fe := range p.FrontendIPConfigurations {
			fe.Etag, fe.Type = new(r.etag), new("Microsoft.Network/loadBalancers/frontendIPConfigurations")
			if fe.Properties != nil {
				fe.Properties.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
				if fe.Properties.PrivateIPAddress != nil && fe.Properties.PrivateIPAddressVersion == nil {
					fe.Properties.PrivateIPAddressVersion = new(armnetwork.IPVersionIPv4)
				}
			}
		}
	},
}

func putLB(s *state, req *putRequest) (err *armError) {
	lb := bodyOf[armnetwork.LoadBalancer](req)
	if lb.SKU == nil || lb.SKU.Name == nil {
		lb.SKU = &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameBasic)}
	}
	if lb.Properties == nil {
		lb.Properties = &armnetwork.LoadBalancerPropertiesFormat{}
	}
	old := map[string]string{} // frontend ID -> address held before
	if req.existing != nil {
		for _, fe := range objOf[armnetwork.LoadBalancer](req.existing).Properties.FrontendIPConfigurations {
			if fe.Properties != nil && fe.Properties.PrivateIPAddress != nil {
				old[key(*fe.ID)] = *fe.Properties.PrivateIPAddress
			}
		}
	}
	// Release what the old version held; what is kept is claimed again below.
	// A refused update must leave the old version's addresses in place.
	releaseEverywhere(s, req.id)
	defer func() {
		if err != nil {
			releaseEverywhere(s, req.id)
			if req.existing != nil {
				reclaimFrontends(s, objOf[armnetwork.LoadBalancer](req.existing))
			}
		}
	}()
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		if e := applyFrontend(s, req, fe, old); e != nil {
			return e
		}
	}
	req.res.obj = lb
	return nil
}

// applyFrontend validates one frontend IP configuration and gives an
// internal one its address.
func applyFrontend(s *state, req *putRequest, fe *armnetwork.FrontendIPConfiguration, old map[string]string) *armError {
	if fe == nil || fe.Name == nil {
		return errBadRequest("InvalidRequestFormat", "Every frontend IP configuration of %s needs a name.", req.id)
	}
	feID := req.id + "/frontendIPConfigurations/" + *fe.Name
	fe.ID = new(feID)
	if fe.Properties == nil {
		fe.Properties = &armnetwork.FrontendIPConfigurationPropertiesFormat{}
	}
	fp := fe.Properties
	if fp.Subnet != nil && fp.PublicIPAddress != nil {
		return errBadRequest("FrontendIPConfigHasBothSubnetAndPublicIP",
			"Frontend IP Configuration %s must not reference both a Subnet and a Public IP Address.", feID)
	}
	if fp.Subnet == nil {
		return nil // public frontend: public IPs are not modelled
	}
	if e := s.checkLinked(req, ptr.Deref(fp.Subnet.ID, ""), "Microsoft.Network/virtualNetworks/subnets/join/action"); e != nil {
		return e
	}
	pool := s.pools[key(ptr.Deref(fp.Subnet.ID, ""))]
	if pool == nil {
		return errInvalidReference(ptr.Deref(fp.Subnet.ID, ""), req.id)
	}
	addr, e := claimOrAllocate(pool, feID, fp.PrivateIPAllocationMethod, fp.PrivateIPAddress, old[key(feID)])
	if e != nil {
		return e
	}
	fp.PrivateIPAddress = new(addr)
	if fp.PrivateIPAllocationMethod == nil {
		fp.PrivateIPAllocationMethod = new(armnetwork.IPAllocationMethodDynamic)
	}
	fp.ProvisioningState = new(armnetwork.ProvisioningStateSucceeded)
	return nil
}

func reclaimFrontends(s *state, lb *armnetwork.LoadBalancer) {
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		if fe.Properties == nil || fe.Properties.Subnet == nil || fe.Properties.PrivateIPAddress == nil {
			continue
		}
		if pool := s.pools[key(ptr.Deref(fe.Properties.Subnet.ID, ""))]; pool != nil {
			_ = pool.claim(*fe.Properties.PrivateIPAddress, *fe.ID)
		}
	}
}

// claimOrAllocate gives an IP configuration its address: the requested one
// when static, the one it had before when dynamic, else the next free one.
func claimOrAllocate(pool *ipPool, holder string, method *armnetwork.IPAllocationMethod, requested *string, previous string) (string, *armError) {
	if method != nil && *method == armnetwork.IPAllocationMethodStatic {
		if requested == nil || *requested == "" {
			return "", errBadRequest("InvalidRequestFormat", "IP configuration %s has static allocation but no private IP address.", holder)
		}
		return *requested, pool.claim(*requested, holder)
	}
	if previous != "" && pool.claim(previous, holder) == nil {
		return previous, nil
	}
	return pool.allocate(holder)
}

// releaseEverywhere frees addresses held by id or its sub-resources in every
// subnet.
func releaseEverywhere(s *state, id string) {
	for _, pool := range s.pools {
		pool.release(id)
	}
}

// --- Network interfaces (created by private endpoints and private link services; read-only here) ---

var nicKind = &kind{
	newObj: func() any { return &armnetwork.Interface{} },
	put: func(_ *state, req *putRequest) *armError {
		return newError(http.StatusMethodNotAllowed, "MethodNotAllowed",
			"The emulator creates network interfaces only for private endpoints and private link services; %s cannot be written.", req.id)
	},
	checkDelete: func(_ *state, r *resource) *armError {
		by := "a private endpoint"
		if p := objOf[armnetwork.Interface](r).Properties; p != nil && p.PrivateLinkService != nil {
			by = "a private link service"
		}
		return errBadRequest("InUseNetworkInterfaceCannotBeDeleted",
			"Network interface %s is used by %s and cannot be deleted.", r.id, by)
	},
	render: func(_ *state, r *resource) {
		n := objOf[armnetwork.Interface](r)
		setCommon(&n.ID, &n.Name, &n.Type, &n.Etag, r)
	},
}

// --- helpers ---

// orEmpty is a list Azure returns as [] when it has no items.
func orEmpty[T any](in []T) []T {
	if in == nil {
		return []T{}
	}
	return in
}

// setCommon fills the envelope fields every resource renders.
func setCommon(id, name, typ, etag **string, r *resource) {
	*id, *name, *etag = new(r.id), new(r.name), new(r.etag)
	*typ = new(canonicalType(r.typeKey))
}

func parsePrefixes(id string, in []*string) ([]netip.Prefix, *armError) {
	var out []netip.Prefix
	for _, s := range in {
		pfx, err := netip.ParsePrefix(ptr.Deref(s, ""))
		if err != nil || pfx != pfx.Masked() {
			return nil, errBadRequest("InvalidAddressPrefixFormat",
				"Address prefix %s of resource %s is not formatted correctly. It should follow CIDR notation, for example 10.0.0.0/24.", ptr.Deref(s, ""), id)
		}
		out = append(out, pfx)
	}
	return out, nil
}

func coveredBy(p netip.Prefix, space []netip.Prefix) bool {
	for _, s := range space {
		if s.Bits() <= p.Bits() && s.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func samePrefixes(a, b []netip.Prefix) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func derefAll(in []*string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		out = append(out, ptr.Deref(s, ""))
	}
	return out
}

// listAll returns every resource of a type, in every scope.
func (s *state) listAll(typeKey string) []*resource {
	out := make([]*resource, 0, len(s.byType[typeKey]))
	for _, r := range s.byType[typeKey] {
		out = append(out, r)
	}
	return out
}

// checkLinked enforces linked authorization: writing a resource that
// references another (a subnet, a private link service) needs access to it.
func (s *state) checkLinked(req *putRequest, linkedID, linkedAction string) *armError {
	if req.principal == nil || req.principal.canAccess(linkedID) {
		return nil
	}
	return errLinkedAuthorizationFailed(req.principal, action(req.path, http.MethodPut), req.id, linkedAction, linkedID)
}
