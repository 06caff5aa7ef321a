package azuresim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

const (
	typePLS     = "microsoft.network/privatelinkservices"
	typePLSConn = "microsoft.network/privatelinkservices/privateendpointconnections"
	typePE      = "microsoft.network/privateendpoints"

	// maxNATIPConfigurations is Azure's limit of NAT IP configurations per
	// private link service.
	maxNATIPConfigurations = 8
	// minDirectConnectNATIPConfigurations: a service with a destination IP
	// address (Direct Connect) needs at least 3 NAT IP configurations
	// (Azure/azure-cli issue 31727: customers "getting an error that they
	// need 3"; the error's code is not on record, the emulator's is its
	// own).
	minDirectConnectNATIPConfigurations = 3
)

// Connection states as both sides of a private endpoint connection report
// them.
const (
	ConnectionPending      = "Pending"
	ConnectionApproved     = "Approved"
	ConnectionRejected     = "Rejected"
	ConnectionDisconnected = "Disconnected"
)

// --- Private link services ---

var plsKind = &kind{
	newObj:   func() any { return &armnetwork.PrivateLinkService{} },
	lro:      true,
	location: true,
	put:      putPLS,
	checkDelete: func(s *state, r *resource) *armError {
		conns := s.list(typePLSConn, r.id)
		if len(conns) == 0 {
			return nil
		}
		ids := make([]string, 0, len(conns))
		for _, c := range conns {
			ids = append(ids, c.id)
		}
		return errBadRequest("PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted",
			"Private link service %s has existing private endpoint connections %s. Remove the connections before deleting the private link service.",
			r.id, strings.Join(ids, ", "))
	},
	onDelete: func(s *state, r *resource) {
		releaseEverywhere(s, r.id)
		s.drop(key(r.nicID))
		pls := objOf[armnetwork.PrivateLinkService](r)
		delete(s.aliases, strings.ToLower(ptr.Deref(pls.Properties.Alias, "")))
		for _, c := range s.list(typePLSConn, r.id) {
			s.drop(key(c.id))
		}
	},
	render: func(s *state, r *resource) {
		pls := objOf[armnetwork.PrivateLinkService](r)
		setCommon(&pls.ID, &pls.Name, &pls.Type, &pls.Etag, r)
		p := pls.Properties
		p.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
		// What Azure always returns (the recording below), but
		// resourceGuid, which armnetwork v11's model of the service lacks.
		p.Fqdns = orEmpty(p.Fqdns)
		p.EnableProxyProtocol = new(ptr.Deref(p.EnableProxyProtocol, false))
		for _, c := range p.IPConfigurations {
			c.Etag, c.Type = new(r.etag), new("Microsoft.Network/privateLinkServices/ipConfigurations")
		}
		p.PrivateEndpointConnections = []*armnetwork.PrivateEndpointConnection{}
		for _, c := range s.list(typePLSConn, r.id) {
			plsConnKind.render(s, c)
			pls.Properties.PrivateEndpointConnections = append(pls.Properties.PrivateEndpointConnections,
				objOf[armnetwork.PrivateEndpointConnection](c))
		}
	},
	view: plsView,
}

// plsView is a private link service as Azure shows it: a dynamic NAT IP
// configuration has no privateIPAddress, in the PUT response and in every
// GET, and properties.networkInterfaces names the interface that holds the
// addresses (ASO v2 recording Test_Networking_PrivateLinkService_CRUD.yaml,
// api-version 2022-07-01; terraform-provider-azurerm issue 26371). The
// emulator keeps the addresses on the configurations for its own
// bookkeeping.
func plsView(_ *state, r *resource) any {
	in := objOf[armnetwork.PrivateLinkService](r)
	out := *in
	props := *in.Properties
	out.Properties = &props
	props.IPConfigurations = make([]*armnetwork.PrivateLinkServiceIPConfiguration, 0, len(in.Properties.IPConfigurations))
	for _, c := range in.Properties.IPConfigurations {
		cc, cp := *c, *c.Properties
		cc.Properties = &cp
		if ptr.Deref(cp.PrivateIPAllocationMethod, "") != armnetwork.IPAllocationMethodStatic {
			cp.PrivateIPAddress = nil
		}
		props.IPConfigurations = append(props.IPConfigurations, &cc)
	}
	props.NetworkInterfaces = nil
	if r.nicID != "" {
		props.NetworkInterfaces = []*armnetwork.Interface{{ID: new(r.nicID)}}
	}
	return &out
}

// syncPLSNIC writes the service's network interface: one IP configuration
// per NAT IP configuration, with its address. Azure names the interface
// <service>.nic.<guid> in the service's resource group (the recording
// above); the names of its IP configurations are not recorded, so the
// emulator uses the NAT configurations' names and the operator does not
// rely on them.
func (s *state) syncPLSNIC(r *resource, pls *armnetwork.PrivateLinkService) {
	if r.nicID == "" {
		r.nicID = resourceID(r.sub, r.rg, typeNIC, r.name+".nic."+newGUID())
	}
	nic := s.lookup(r.nicID)
	if nic == nil {
		p := armPathOf(r.nicID)
		nic = &resource{id: r.nicID, typeKey: typeNIC, sub: p.sub, rg: p.rg, name: p.names[0], state: stateSucceeded}
		s.store(nic)
	}
	nic.etag = newETag()
	cfgs := make([]*armnetwork.InterfaceIPConfiguration, 0, len(pls.Properties.IPConfigurations))
	for _, c := range pls.Properties.IPConfigurations {
		cfgs = append(cfgs, &armnetwork.InterfaceIPConfiguration{
			ID:   new(r.nicID + "/ipConfigurations/" + ptr.Deref(c.Name, "")),
			Name: c.Name,
			Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
				Primary:                   new(ptr.Deref(c.Properties.Primary, false)),
				PrivateIPAddress:          c.Properties.PrivateIPAddress,
				PrivateIPAddressVersion:   new(armnetwork.IPVersionIPv4),
				PrivateIPAllocationMethod: c.Properties.PrivateIPAllocationMethod,
				Subnet:                    &armnetwork.Subnet{ID: c.Properties.Subnet.ID},
				ProvisioningState:         new(armnetwork.ProvisioningStateSucceeded),
			},
		})
	}
	nic.obj = &armnetwork.Interface{
		Location: pls.Location,
		Properties: &armnetwork.InterfacePropertiesFormat{
			PrivateLinkService: &armnetwork.PrivateLinkService{ID: new(r.id)},
			ProvisioningState:  new(armnetwork.ProvisioningStateSucceeded),
			IPConfigurations:   cfgs,
		},
	}
}

// validName checks a Microsoft.Network resource name as Azure does: max
// characters of word characters, '.', '-' or '_', beginning with a word
// character and ending with one or '_'.
func validName(req *putRequest, minLen, maxLen int) *armError {
	name := req.path.names[len(req.path.names)-1]
	if len(name) >= minLen && len(name) <= maxLen && nameRule.MatchString(name) {
		return nil
	}
	return errBadRequest("InvalidResourceName",
		"Resource name %s is invalid. The name can be up to %d characters long. It must begin with a word character, and it must end with a word character or with '_'. The name may contain word characters or '.', '-', '_'.",
		name, maxLen)
}

var nameRule = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

func putPLS(s *state, req *putRequest) (err *armError) {
	if e := validName(req, 1, 80); e != nil {
		return e
	}
	if e := s.checkServiceCreate(req); e != nil {
		return e
	}
	pls := bodyOf[armnetwork.PrivateLinkService](req)
	if pls.Properties == nil {
		return errBadRequest("InvalidRequestFormat", "Private link service %s has no properties.", req.id)
	}
	p := pls.Properties
	fe, e := s.plsFrontend(req, p)
	if e != nil {
		return e
	}
	if e := s.applyNATConfigurations(req, p, fe); e != nil {
		return e
	}
	// Read-only fields come from the stored version, never from the body.
	p.PrivateEndpointConnections = nil
	p.NetworkInterfaces = nil
	if req.existing != nil {
		was := objOf[armnetwork.PrivateLinkService](req.existing).Properties
		p.Alias = was.Alias
		// What Azure does with a PUT that leaves accessMode out is not on
		// record; the emulator keeps the stored mode (the harder reading:
		// a client that wants Default back must say so).
		if p.AccessMode == nil {
			p.AccessMode = was.AccessMode
		}
	} else {
		p.Alias = new(fmt.Sprintf("%s.%s.%s.azure.privatelinkservice", strings.ToLower(req.name()), newGUID(), strings.ToLower(ptr.Deref(pls.Location, ""))))
		s.aliases[strings.ToLower(*p.Alias)] = key(req.id)
	}
	req.res.obj = pls
	s.syncPLSNIC(req.res, pls)
	return nil
}

// plsFrontend checks what the service fronts: exactly one Standard load
// balancer frontend, or for Direct Connect none and a destination address.
// It returns the frontend, nil for Direct Connect.
func (s *state) plsFrontend(req *putRequest, p *armnetwork.PrivateLinkServiceProperties) (*armnetwork.FrontendIPConfiguration, *armError) {
	dest := ptr.Deref(p.DestinationIPAddress, "")
	if dest != "" && len(p.LoadBalancerFrontendIPConfigurations) == 0 {
		return nil, s.checkDirectConnect(req, p, dest)
	}
	if dest != "" {
		// Both at once is not described anywhere; the emulator refuses
		// it rather than guess which one Azure would use.
		return nil, errBadRequest("InvalidRequestFormat",
			"Private link service %s cannot have both a destination IP address and load balancer frontend IP configurations.", req.id)
	}
	if len(p.LoadBalancerFrontendIPConfigurations) != 1 {
		return nil, errBadRequest("InvalidNumberOfPrivateLinkServiceLoadBalancerFrontendIpConfigurationsSpecified",
			"Cannot have more than one load balancer frontend IP configuration on the private link service. Private link service %s has %d load balancer frontend IP configurations specified.",
			req.name(), len(p.LoadBalancerFrontendIPConfigurations))
	}
	feID := ptr.Deref(p.LoadBalancerFrontendIPConfigurations[0].ID, "")
	fe, lb, e := s.frontend(feID, req.id)
	if e != nil {
		return nil, e
	}
	if e := s.checkLinked(req, feID, "Microsoft.Network/loadBalancers/frontendIPConfigurations/join/action"); e != nil {
		return nil, e
	}
	if lb.SKU == nil || lb.SKU.Name == nil || *lb.SKU.Name != armnetwork.LoadBalancerSKUNameStandard {
		return nil, errBadRequest("PrivateLinkServiceNotSupportedOnBasicLoadBalancer",
			"Private link service %s can only reference a Standard SKU load balancer; %s is not Standard.", req.id, ptr.Deref(lb.ID, ""))
	}
	// A public frontend is accepted: cloud-provider-azure creates services
	// on public frontends whose rules have floating IP disabled
	// (reconcilePrivateLinkService), and nothing on record says Azure
	// checks the rules; traffic is what floating IP breaks.
	if fe.Properties == nil || fe.Properties.Subnet == nil && fe.Properties.PublicIPAddress == nil {
		return nil, errBadRequest("InvalidRequestFormat",
			"Frontend IP configuration %s referenced by private link service %s has neither a subnet nor a public IP address.", feID, req.id)
	}
	if req.existing != nil {
		old := objOf[armnetwork.PrivateLinkService](req.existing)
		if got := old.Properties.LoadBalancerFrontendIPConfigurations; len(got) == 0 || !strings.EqualFold(ptr.Deref(got[0].ID, ""), feID) {
			return nil, errBadRequest("PropertyChangeNotAllowed",
				"Changing property 'loadBalancerFrontendIpConfigurations' of private link service %s is not allowed.", req.id)
		}
	}
	return fe, nil
}

// checkDirectConnect checks a Direct Connect service (a destination IP
// address, no load balancer).
func (s *state) checkDirectConnect(req *putRequest, p *armnetwork.PrivateLinkServiceProperties, dest string) *armError {
	// The subscription must have registered the preview feature, and
	// the service have at least 3 NAT IP configurations (sources at
	// FeatureDirectConnect and minDirectConnectNATIPConfigurations).
	// What Azure checks of the destination (that it is in the NAT
	// subnet's virtual network) and whether it may change are not on
	// record: the emulator checks that it is an IP address and, like the
	// load balancer frontend, keeps it.
	if e := s.checkFeature(req.path.sub, FeatureDirectConnect); e != nil {
		return e
	}
	if n := len(p.IPConfigurations); n < minDirectConnectNATIPConfigurations {
		return errBadRequest("PrivateLinkServiceWithDestinationIPAddressNeedsMoreIpConfigurations",
			"Private link service %s with a destination IP address needs at least %d IP configurations; it has %d.", req.id, minDirectConnectNATIPConfigurations, n)
	}
	if _, err := netip.ParseAddr(dest); err != nil {
		return errBadRequest("InvalidRequestFormat", "Destination IP address %s of private link service %s is not an IP address.", dest, req.id)
	}
	if req.existing != nil && ptr.Deref(objOf[armnetwork.PrivateLinkService](req.existing).Properties.DestinationIPAddress, "") != dest {
		return errBadRequest("PropertyChangeNotAllowed",
			"Changing property 'destinationIPAddress' of private link service %s is not allowed.", req.id)
	}
	return nil
}

// applyNATConfigurations validates the NAT IP configurations and gives each
// its address. On failure the stored version keeps its addresses. fe is
// nil for Direct Connect.
func (s *state) applyNATConfigurations(req *putRequest, p *armnetwork.PrivateLinkServiceProperties, fe *armnetwork.FrontendIPConfiguration) (err *armError) {
	if e := checkNATShape(req, p.IPConfigurations); e != nil {
		return e
	}
	previous := map[string]string{} // config ID -> address
	var oldPrimary string
	if req.existing != nil {
		for _, c := range objOf[armnetwork.PrivateLinkService](req.existing).Properties.IPConfigurations {
			previous[key(ptr.Deref(c.ID, ""))] = ptr.Deref(c.Properties.PrivateIPAddress, "")
			if ptr.Deref(c.Properties.Primary, false) {
				oldPrimary = key(ptr.Deref(c.ID, ""))
			}
		}
	}
	releaseEverywhere(s, req.id)
	defer func() {
		if err != nil {
			releaseEverywhere(s, req.id)
			if req.existing != nil {
				s.reclaimNAT(objOf[armnetwork.PrivateLinkService](req.existing))
			}
		}
	}()
	// The NAT subnet must be in an internal frontend's virtual network.
	// For a public frontend or Direct Connect what Azure requires is not
	// on record (the backend's network, presumably): not checked.
	lbVNet := ""
	if fe != nil && fe.Properties.Subnet != nil {
		lbVNet = vnetOf(ptr.Deref(fe.Properties.Subnet.ID, ""))
	}
	for _, c := range p.IPConfigurations {
		cid := req.id + "/ipConfigurations/" + *c.Name
		c.ID = new(cid)
		if ptr.Deref(c.Properties.Primary, false) && oldPrimary != "" && oldPrimary != key(cid) {
			return errBadRequest("PrivateLinkServicePrimaryIpConfigurationCannotBeChanged",
				"The primary IP configuration of private link service %s cannot be changed.", req.id)
		}
		if e := s.applyNATConfiguration(req, c, lbVNet, previous[key(cid)]); e != nil {
			return e
		}
	}
	return nil
}

// checkNATShape checks the count, names, subnets and single primary of the
// NAT IP configurations.
func checkNATShape(req *putRequest, cfgs []*armnetwork.PrivateLinkServiceIPConfiguration) *armError {
	if n := len(cfgs); n < 1 || n > maxNATIPConfigurations {
		return errBadRequest("PrivateLinkServiceIpConfigurationCountOutOfRange",
			"Private link service %s must have between 1 and %d IP configurations; it has %d.", req.id, maxNATIPConfigurations, n)
	}
	if len(cfgs) == 1 && cfgs[0] != nil && cfgs[0].Properties != nil && cfgs[0].Properties.Primary == nil {
		// Azure makes a single NAT IP configuration that does not say
		// primary the primary one (ASO's recording
		// Test_Networking_PrivateLinkService_CRUD.yaml). With more than
		// one, which it picks is not recorded: the emulator refuses.
		cfgs[0].Properties.Primary = new(true)
	}
	primaries := 0
	for _, c := range cfgs {
		if c == nil || c.Name == nil || c.Properties == nil || c.Properties.Subnet == nil {
			return errBadRequest("InvalidRequestFormat", "Every IP configuration of private link service %s needs a name and a subnet.", req.id)
		}
		if ptr.Deref(c.Properties.Primary, false) {
			primaries++
		}
	}
	if primaries != 1 {
		return errBadRequest("PrivateLinkServiceMustHaveOnePrimaryIpConfiguration",
			"Private link service %s must have exactly one primary IP configuration; it has %d.", req.id, primaries)
	}
	return nil
}

// applyNATConfiguration gives one NAT IP configuration its address in a
// subnet of the load balancer's VNet whose private link service network
// policies are disabled.
func (s *state) applyNATConfiguration(req *putRequest, c *armnetwork.PrivateLinkServiceIPConfiguration, lbVNet, previous string) *armError {
	subnetID := ptr.Deref(c.Properties.Subnet.ID, "")
	if e := s.checkLinked(req, subnetID, "Microsoft.Network/virtualNetworks/subnets/join/action"); e != nil {
		return e
	}
	sn := s.lookup(subnetID)
	pool := s.pools[key(subnetID)]
	if sn == nil || pool == nil {
		return errInvalidReference(subnetID, req.id)
	}
	if lbVNet != "" && !strings.EqualFold(vnetOf(subnetID), lbVNet) {
		return errBadRequest("PrivateLinkServiceIpConfigurationSubnetMustBeInLoadBalancerVnet",
			"Subnet %s of private link service %s is not in the virtual network of its load balancer frontend.", subnetID, req.id)
	}
	if ptr.Deref(objOf[armnetwork.Subnet](sn).Properties.PrivateLinkServiceNetworkPolicies, "") != armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled {
		return errBadRequest("PrivateLinkServiceNetworkPoliciesCannotBeEnabledOnPrivateLinkServiceSubnet",
			"Private link service network policies cannot be enabled on private link service subnet %s.", subnetID)
	}
	addr, e := claimOrAllocate(pool, ptr.Deref(c.ID, ""), c.Properties.PrivateIPAllocationMethod, c.Properties.PrivateIPAddress, previous)
	if e != nil {
		return e
	}
	c.Properties.PrivateIPAddress = new(addr)
	if c.Properties.PrivateIPAllocationMethod == nil {
		c.Properties.PrivateIPAllocationMethod = new(armnetwork.IPAllocationMethodDynamic)
	}
	c.Properties.PrivateIPAddressVersion = new(armnetwork.IPVersionIPv4)
	c.Properties.ProvisioningState = new(armnetwork.ProvisioningStateSucceeded)
	return nil
}

func (s *state) reclaimNAT(pls *armnetwork.PrivateLinkService) {
	for _, c := range pls.Properties.IPConfigurations {
		if pool := s.pools[key(ptr.Deref(c.Properties.Subnet.ID, ""))]; pool != nil {
			_ = pool.claim(ptr.Deref(c.Properties.PrivateIPAddress, ""), ptr.Deref(c.ID, ""))
		}
	}
}

// frontend resolves a load balancer frontend IP configuration ID.
func (s *state) frontend(feID, by string) (*armnetwork.FrontendIPConfiguration, *armnetwork.LoadBalancer, *armError) {
	i := strings.Index(strings.ToLower(feID), "/frontendipconfigurations/")
	if i < 0 {
		return nil, nil, errInvalidReference(feID, by)
	}
	lbRes := s.lookup(feID[:i])
	if lbRes == nil || lbRes.typeKey != typeLB {
		return nil, nil, errInvalidReference(feID, by)
	}
	if lbRes.state != stateSucceeded {
		// As Azure: a load balancer being created or updated cannot be
		// referred to until its operation ends.
		return nil, nil, &armError{Status: http.StatusBadRequest, Code: "ReferencedResourceNotProvisioned", Message: fmt.Sprintf(
			"Cannot proceed with operation because resource %s used by resource %s is not in Succeeded state. Resource is in %s state and the last operation that updated/is updating the resource is PutLoadBalancerOperation.",
			lbRes.id, by, lbRes.state)}
	}
	lb := objOf[armnetwork.LoadBalancer](lbRes)
	for _, fe := range lb.Properties.FrontendIPConfigurations {
		if strings.EqualFold(ptr.Deref(fe.ID, ""), feID) {
			return fe, lb, nil
		}
	}
	return nil, nil, errInvalidReference(feID, by)
}

func plsFrontends(r *resource) []string {
	fes := objOf[armnetwork.PrivateLinkService](r).Properties.LoadBalancerFrontendIPConfigurations
	out := make([]string, 0, len(fes))
	for _, fe := range fes {
		out = append(out, ptr.Deref(fe.ID, ""))
	}
	return out
}

func vnetOf(subnetID string) string {
	if i := strings.Index(strings.ToLower(subnetID), "/subnets/"); i >= 0 {
		return subnetID[:i]
	}
	return subnetID
}

// --- Private endpoint connections (the provider's side) ---

var plsConnKind = &kind{
	newObj: func() any { return &armnetwork.PrivateEndpointConnection{} },
	// Updating a connection is synchronous; deleting it is long-running.
	lroDelete: true,
	put: func(_ *state, req *putRequest) *armError {
		if req.existing == nil {
			return errNotFoundChild(req.path)
		}
		in := bodyOf[armnetwork.PrivateEndpointConnection](req)
		if in.Properties == nil || in.Properties.PrivateLinkServiceConnectionState == nil {
			return errBadRequest("InvalidRequestFormat", "The connection state of %s is required.", req.id)
		}
		want := in.Properties.PrivateLinkServiceConnectionState
		switch ptr.Deref(want.Status, "") {
		case ConnectionApproved, ConnectionRejected, ConnectionPending:
		default:
			return errBadRequest("InvalidPrivateEndpointConnectionStatus",
				"Private endpoint connection status '%s' is not valid; use Approved, Rejected or Pending.", ptr.Deref(want.Status, ""))
		}
		cur := objOf[armnetwork.PrivateEndpointConnection](req.existing)
		// A rejection is final for the provider: Azure refuses to approve
		// a Rejected connection "by design" (MicrosoftDocs/azure-docs
		// issue 115121 for private link services; the message is Azure's
		// as recorded for Cosmos DB in MicrosoftDocs/azure-docs PR 86823 —
		// the network provider's own error code is not on record, so
		// nothing may depend on it). Only the consumer can set it Pending
		// again (putPE).
		if ptr.Deref(cur.Properties.PrivateLinkServiceConnectionState.Status, "") == ConnectionRejected && ptr.Deref(want.Status, "") == ConnectionApproved {
			return errBadRequest("BadRequest", "Approving rejected private endpoint connections is not supported.")
		}
		cur.Properties.PrivateLinkServiceConnectionState = &armnetwork.PrivateLinkServiceConnectionState{
			Status:          want.Status,
			Description:     want.Description,
			ActionsRequired: new("None"),
		}
		return nil
	},
	render: func(_ *state, r *resource) {
		c := objOf[armnetwork.PrivateEndpointConnection](r)
		setCommon(&c.ID, &c.Name, &c.Type, &c.Etag, r)
		c.Properties.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
	},
}

// --- Private endpoints (the consumer's side) ---

// peLink is what a private endpoint remembers about its connection.
type peLink struct {
	subnetID string
	nicID    string
	address  string
	connID   string // the PLS connection resource, "" once removed
	manual   bool
	plsID    string
	fqdns    []*string
	// members are the addresses of an endpoint to an Azure service, one
	// per required member of its group (firstparty.go); none for an
	// endpoint to a private link service, whose one address is address.
	members []peMember
}

var peKind = &kind{
	newObj:   func() any { return &armnetwork.PrivateEndpoint{} },
	lro:      true,
	location: true,
	put:      putPE,
	onDelete: func(s *state, r *resource) {
		l := r.link
		if l == nil {
			return
		}
		if pool := s.pools[key(l.subnetID)]; pool != nil {
			pool.release(l.nicID)
		}
		s.drop(key(l.nicID))
		if l.connID != "" {
			s.drop(key(l.connID))
		}
	},
	render: renderPE,
}

func putPE(s *state, req *putRequest) *armError {
	if e := validName(req, 2, 64); e != nil {
		return e
	}
	pe := bodyOf[armnetwork.PrivateEndpoint](req)
	conn, isManual, e := peConnection(req, pe)
	if e != nil {
		return e
	}
	subnetID := *pe.Properties.Subnet.ID
	if l := req.existing.linkOrNil(); l != nil && !strings.EqualFold(l.subnetID, subnetID) {
		return errBadRequest("PropertyChangeNotAllowed", "Changing property 'subnet' of private endpoint %s is not allowed.", req.id)
	}
	if e := s.checkPENICAndGroups(req, pe); e != nil {
		return e
	}
	if e := s.checkLinked(req, subnetID, "Microsoft.Network/virtualNetworks/subnets/join/action"); e != nil {
		return e
	}
	pool := s.pools[key(subnetID)]
	if pool == nil {
		return errInvalidReference(subnetID, req.id)
	}
	target := ptr.Deref(conn.Properties.PrivateLinkServiceID, "")
	plsRes, members, e := s.peTarget(req, pe, conn, target)
	if e != nil {
		return e
	}
	if e := keepsService(req, conn, plsRes); e != nil {
		return e
	}
	if e := s.checkEndpointCreate(req, subnetID, plsRes); e != nil {
		return e
	}
	status := ConnectionPending
	if !isManual {
		if !canAutoApprove(plsRes, req) {
			return errLinkedAuthorizationFailed(req.principalOrAnonymous(), action(req.path, http.MethodPut), req.id,
				approvalAction(plsRes), plsRes.id)
		}
		status = ConnectionApproved
	}
	link := req.existing.linkOrNil()
	sameTarget := link != nil && link.connID != "" && strings.EqualFold(link.plsID, plsRes.id) && link.manual == isManual
	if link == nil {
		if link, e = newPELink(req, pe, pool, members); e != nil {
			return e
		}
	}
	link.manual, link.plsID = isManual, plsRes.id
	if members == nil {
		link.fqdns = objOf[armnetwork.PrivateLinkService](plsRes).Properties.Fqdns
	}
	req.res.link = link
	pe.Properties.NetworkInterfaces, pe.Properties.CustomDNSConfigs = nil, nil
	req.res.obj = pe

	// Azure's 201 while the endpoint is still Updating already names its
	// network interface and, for an automatic connection it approves, says
	// Approved (the measurement against ASO's recordings; the REST
	// API's PrivateEndpointCreate example shows the same shape): the NIC,
	// its address and the connection exist from the PUT on. Code that
	// takes an address must look at provisioningState, not at the NIC.
	s.ensurePENIC(req.res, pe)
	if !sameTarget {
		s.connectPE(req.res, plsRes, conn, status)
	} else if isManual {
		s.askAgain(link, conn)
	}
	return nil
}

// keepsService refuses a PUT that moves an existing endpoint to another
// service: Azure never does (the error body recorded in
// Azure/bicep-registry-modules#7285 and #1513). Whoever wants another
// target deletes the endpoint first.
func keepsService(req *putRequest, conn *armnetwork.PrivateLinkServiceConnection, target *resource) *armError {
	if l := req.existing.linkOrNil(); l == nil || strings.EqualFold(l.plsID, target.id) {
		return nil
	}
	return errBadRequest("CannotChangePrivateLinkConnectionOnPrivateEndpoint",
		"Cannot change the private link connection on private endpoint %s. Please ensure you are not updating the details of existing private link connection: '%s/privateLinkServiceConnections/%s'. That is not allowed.",
		req.id, req.id, ptr.Deref(conn.Name, ""))
}

// peTarget resolves an endpoint's target: a private link service the
// caller's subscription may see (by ID or alias), or an Azure service by
// resource ID, with the members its group gives addresses to.
func (s *state) peTarget(req *putRequest, pe *armnetwork.PrivateEndpoint, conn *armnetwork.PrivateLinkServiceConnection, target string) (*resource, []peMember, *armError) {
	if r := s.lookup(target); r != nil {
		if st := serviceTypeOf(r); st != nil {
			members, e := serviceMembers(req, pe, conn, r, st)
			return r, members, e
		}
	}
	plsRes := s.resolvePLS(target)
	if plsRes == nil || !visibleTo(plsRes, req.path.sub) {
		return nil, nil, errBadRequest("ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible",
			"Third-party Private Link Service Id %s provided during private endpoint creation does not exist or is not visible.", target)
	}
	return plsRes, nil, nil
}

// askAgain: a consumer that PUTs its manual connection with status Pending
// while the provider rejected it asks again: the provider sees it Pending,
// with the request message (the consumer's way out of a rejection,
// MicrosoftDocs/azure-docs issue 81751: Set-AzPrivateEndpoint with the
// connection's status set to Pending). Any other state it sends is
// ignored, as Azure keeps the provider's decision.
func (s *state) askAgain(link *peLink, conn *armnetwork.PrivateLinkServiceConnection) {
	c := s.lookup(link.connID)
	sent := conn.Properties.PrivateLinkServiceConnectionState
	if c == nil || sent == nil || ptr.Deref(sent.Status, "") != ConnectionPending {
		return
	}
	cs := objOf[armnetwork.PrivateEndpointConnection](c).Properties.PrivateLinkServiceConnectionState
	if ptr.Deref(cs.Status, "") != ConnectionRejected {
		return
	}
	cs.Status, cs.Description = new(ConnectionPending), conn.Properties.RequestMessage
	c.etag = newETag()
}

// checkPENICAndGroups refuses a new name for an existing endpoint's
// network interface (Azure names it at creation and the endpoint keeps its
// NIC; that a new name is refused, and with this code, is modelled on the
// subnet's rule, not verified) and application security groups that do
// not exist or that the caller may not join (the join action is Azure's,
// from the Microsoft.Network resource provider operations list).
func (s *state) checkPENICAndGroups(req *putRequest, pe *armnetwork.PrivateEndpoint) *armError {
	if req.existing != nil {
		was := ptr.Deref(objOf[armnetwork.PrivateEndpoint](req.existing).Properties.CustomNetworkInterfaceName, "")
		if now := ptr.Deref(pe.Properties.CustomNetworkInterfaceName, ""); now != was {
			return errBadRequest("PropertyChangeNotAllowed", "Changing property 'customNetworkInterfaceName' of private endpoint %s is not allowed.", req.id)
		}
	}
	for _, g := range pe.Properties.ApplicationSecurityGroups {
		id := ""
		if g != nil {
			id = ptr.Deref(g.ID, "")
		}
		if r := s.lookup(id); r == nil || r.typeKey != typeASG {
			return errInvalidReference(id, req.id)
		}
		if e := s.checkLinked(req, id, "Microsoft.Network/applicationSecurityGroups/joinIpConfiguration/action"); e != nil {
			return e
		}
	}
	return nil
}

// peConnection returns the endpoint's one connection and whether it is
// manual.
func peConnection(req *putRequest, pe *armnetwork.PrivateEndpoint) (*armnetwork.PrivateLinkServiceConnection, bool, *armError) {
	if pe.Properties == nil || pe.Properties.Subnet == nil || pe.Properties.Subnet.ID == nil {
		return nil, false, errBadRequest("InvalidRequestFormat", "Private endpoint %s must reference a subnet.", req.id)
	}
	auto, manual := pe.Properties.PrivateLinkServiceConnections, pe.Properties.ManualPrivateLinkServiceConnections
	if len(auto)+len(manual) != 1 {
		return nil, false, errBadRequest("InvalidRequestFormat",
			"Private endpoint %s must have exactly one private link service connection, automatic or manual; it has %d.", req.id, len(auto)+len(manual))
	}
	conn := append(auto, manual...)[0]
	if conn == nil || conn.Name == nil || conn.Properties == nil || conn.Properties.PrivateLinkServiceID == nil {
		return nil, false, errBadRequest("InvalidRequestFormat", "The private link service connection of %s needs a name and a privateLinkServiceId.", req.id)
	}
	return conn, len(manual) == 1, nil
}

// canAutoApprove says whether an automatic connection is approved at once:
// the consumer's subscription is auto-approved, or the caller may approve
// connections on a service in its own subscription. On an Azure service,
// the caller's rights on it decide, whatever its subscription.
func canAutoApprove(pls *resource, req *putRequest) bool {
	if serviceTypeOf(pls) != nil {
		return req.principal.canAccess(pls.id)
	}
	if autoApproved(pls, req.path.sub) {
		return true
	}
	return strings.EqualFold(pls.sub, req.path.sub) && req.principal.canAccess(pls.id)
}

// newPELink reserves the endpoint's address (one per member for an Azure
// service) and names its NIC.
func newPELink(req *putRequest, pe *armnetwork.PrivateEndpoint, pool *ipPool, members []peMember) (*peLink, *armError) {
	p := pe.Properties
	nicName := ptr.Deref(p.CustomNetworkInterfaceName, "")
	if nicName == "" {
		nicName = req.name() + ".nic." + newGUID()
	}
	link := &peLink{subnetID: *p.Subnet.ID, nicID: resourceID(req.path.sub, req.path.rg, typeNIC, nicName)}
	if members != nil {
		if e := claimMembers(pool, link.nicID, members); e != nil {
			return nil, e
		}
		link.members, link.address = members, members[0].address
		return link, nil
	}
	if len(p.IPConfigurations) > 0 && p.IPConfigurations[0].Properties != nil && p.IPConfigurations[0].Properties.PrivateIPAddress != nil {
		link.address = *p.IPConfigurations[0].Properties.PrivateIPAddress
		return link, pool.claim(link.address, link.nicID)
	}
	addr, e := pool.allocate(link.nicID)
	link.address = addr
	return link, e
}

// connectPE replaces the endpoint's connection on the service's side.
func (s *state) connectPE(r *resource, pls *resource, conn *armnetwork.PrivateLinkServiceConnection, status string) {
	link := r.link
	if link.connID != "" {
		s.drop(key(link.connID))
	}
	pe := objOf[armnetwork.PrivateEndpoint](r)
	name := r.name + "." + newGUID()
	// The provider sees the consumer's request message; an automatic
	// connection Azure approves says so instead. Azure's wording varies
	// between sources ("Auto Approved", "Auto-Approved", "Auto-approved"):
	// nothing may depend on a description.
	desc := conn.Properties.RequestMessage
	switch {
	case status == ConnectionApproved && serviceTypeOf(pls) != nil:
		desc = new("Auto-Approved") // ASO's recording of an endpoint to a storage account
	case status == ConnectionApproved:
		desc = new("Auto Approved")
	}
	c := &resource{
		id:      pls.id + "/privateEndpointConnections/" + name,
		typeKey: typePLSConn, sub: pls.sub, rg: pls.rg, name: name,
		state: stateSucceeded, etag: newETag(),
		obj: &armnetwork.PrivateEndpointConnection{Properties: &armnetwork.PrivateEndpointConnectionProperties{
			PrivateEndpoint:         &armnetwork.PrivateEndpoint{ID: new(r.id)},
			PrivateEndpointLocation: pe.Location,
			LinkIdentifier:          new(fmt.Sprint(rand.Uint32())), //nolint:gosec // G404: an emulated identifier, not a secret
			PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{
				Status:          new(status),
				Description:     desc,
				ActionsRequired: new("None"),
			},
		}},
	}
	s.store(c)
	link.connID = c.id
}

// ensurePENIC creates the endpoint's network interface once.
func (s *state) ensurePENIC(r *resource, pe *armnetwork.PrivateEndpoint) {
	l := r.link
	if s.lookup(l.nicID) != nil {
		return
	}
	p := armPathOf(l.nicID)
	nic := &resource{id: l.nicID, typeKey: typeNIC, sub: p.sub, rg: p.rg, name: p.names[0], state: stateSucceeded, etag: newETag()}
	nic.obj = &armnetwork.Interface{
		Location: pe.Location,
		Properties: &armnetwork.InterfacePropertiesFormat{
			PrivateEndpoint:   &armnetwork.PrivateEndpoint{ID: new(r.id)},
			ProvisioningState: new(armnetwork.ProvisioningStateSucceeded),
			IPConfigurations:  nicConfigs(l),
		},
	}
	s.store(nic)
}

// nicConfigs are the IP configurations of an endpoint's NIC: its one
// address, or, for an Azure service, one per member with what it serves
// (privateLinkConnectionProperties: groupId, requiredMemberName, fqdns, the
// network SDK's NetworkInterfaceIPConfigurationPrivateLinkConnectionProperties).
func nicConfigs(l *peLink) []*armnetwork.InterfaceIPConfiguration {
	config := func(name, address string, primary bool) *armnetwork.InterfaceIPConfiguration {
		return &armnetwork.InterfaceIPConfiguration{
			ID:   new(l.nicID + "/ipConfigurations/privateEndpointIpConfig." + newGUID()),
			Name: new(name),
			Properties: &armnetwork.InterfaceIPConfigurationPropertiesFormat{
				Primary:                   new(primary),
				PrivateIPAddress:          new(address),
				PrivateIPAddressVersion:   new(armnetwork.IPVersionIPv4),
				PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodDynamic),
				Subnet:                    &armnetwork.Subnet{ID: new(l.subnetID)},
				ProvisioningState:         new(armnetwork.ProvisioningStateSucceeded),
			},
		}
	}
	if len(l.members) == 0 {
		return []*armnetwork.InterfaceIPConfiguration{config("privateEndpointIpConfig", l.address, true)}
	}
	out := make([]*armnetwork.InterfaceIPConfiguration, 0, len(l.members))
	for i, m := range l.members {
		c := config("privateEndpointIpConfig."+m.name, m.address, i == 0)
		c.Properties.PrivateLinkConnectionProperties = &armnetwork.InterfaceIPConfigurationPrivateLinkConnectionProperties{
			GroupID: new(m.group), RequiredMemberName: new(m.name), Fqdns: []*string{new(m.fqdn)},
		}
		out = append(out, c)
	}
	return out
}

// renderPE fills in the endpoint's derived state. Its view of the connection
// always mirrors the provider's side: a connection the provider removed, or
// whose service was deleted, shows as Disconnected.
func renderPE(s *state, r *resource) {
	pe := objOf[armnetwork.PrivateEndpoint](r)
	setCommon(&pe.ID, &pe.Name, &pe.Type, &pe.Etag, r)
	p := pe.Properties
	p.ProvisioningState = new(armnetwork.ProvisioningState(r.state))
	l := r.link
	state := connectionState(s, l)
	for _, list := range []struct {
		conns []*armnetwork.PrivateLinkServiceConnection
		typ   string
	}{{p.PrivateLinkServiceConnections, "privateLinkServiceConnections"}, {p.ManualPrivateLinkServiceConnections, "manualPrivateLinkServiceConnections"}} {
		for _, c := range list.conns {
			c.ID = new(r.id + "/" + list.typ + "/" + ptr.Deref(c.Name, ""))
			c.Type = new("Microsoft.Network/privateEndpoints/" + list.typ)
			c.Etag = new(r.etag)
			c.Properties.PrivateLinkServiceConnectionState = state
			c.Properties.ProvisioningState = new(armnetwork.ProvisioningStateSucceeded)
		}
	}
	// What Azure always returns, empty or not (ASO's recording of an
	// endpoint to a storage account): both connection lists, the static
	// IP configurations, the custom NIC name ("" without one).
	p.PrivateLinkServiceConnections = orEmpty(p.PrivateLinkServiceConnections)
	p.ManualPrivateLinkServiceConnections = orEmpty(p.ManualPrivateLinkServiceConnections)
	p.IPConfigurations = orEmpty(p.IPConfigurations)
	if p.CustomNetworkInterfaceName == nil {
		p.CustomNetworkInterfaceName = new("")
	}
	p.NetworkInterfaces, p.CustomDNSConfigs = nil, []*armnetwork.CustomDNSConfigPropertiesFormat{}
	nic := s.lookup(l.nicID)
	if nic == nil {
		return // not provisioned yet
	}
	if strings.Contains(strings.ToLower(s.renderCtx.expand), "networkinterfaces") {
		nicKind.render(s, nic)
		p.NetworkInterfaces = []*armnetwork.Interface{objOf[armnetwork.Interface](nic)}
	} else {
		p.NetworkInterfaces = []*armnetwork.Interface{{ID: new(nic.id)}}
	}
	// Azure's 201 while the endpoint is Updating has customDnsConfigs
	// empty; they are filled once it is provisioned (ASO's recording of an
	// endpoint to a storage account): an address is read once
	// provisioningState is Succeeded.
	if r.state == stateUpdating {
		return
	}
	// As Azure: customDnsConfigs name the service's FQDNs; an endpoint to a
	// private link service without FQDNs has none, and its IP is only on
	// its network interface.
	for _, fqdn := range l.fqdns {
		p.CustomDNSConfigs = append(p.CustomDNSConfigs, &armnetwork.CustomDNSConfigPropertiesFormat{
			Fqdn: new(ptr.Deref(fqdn, "")), IPAddresses: []*string{new(l.address)},
		})
	}
	// An endpoint to an Azure service names each member's FQDN with its
	// address (ASO's recording of an endpoint to a storage account).
	for _, m := range l.members {
		p.CustomDNSConfigs = append(p.CustomDNSConfigs, &armnetwork.CustomDNSConfigPropertiesFormat{
			Fqdn: new(m.fqdn), IPAddresses: []*string{new(m.address)},
		})
	}
}

// connectionState is the endpoint's view of its connection: the provider's
// side, or Disconnected when the provider removed it or the service is gone.
func connectionState(s *state, l *peLink) *armnetwork.PrivateLinkServiceConnectionState {
	if c := s.lookup(l.connID); c != nil {
		cs := objOf[armnetwork.PrivateEndpointConnection](c).Properties.PrivateLinkServiceConnectionState
		desc := cs.Description
		if ptr.Deref(cs.Status, "") == ConnectionPending {
			// The consumer's side of a connection waiting for the provider
			// (REST API example PrivateEndpointGetForManualApproval).
			desc = new("Awaiting approval")
		}
		return &armnetwork.PrivateLinkServiceConnectionState{Status: cs.Status, Description: desc, ActionsRequired: cs.ActionsRequired}
	}
	if l.connID != "" || s.lookup(l.plsID) == nil {
		return &armnetwork.PrivateLinkServiceConnectionState{
			Status:          new(ConnectionDisconnected),
			Description:     new("The private link service connection was removed by the service owner."),
			ActionsRequired: new("None"),
		}
	}
	return &armnetwork.PrivateLinkServiceConnectionState{Status: new(ConnectionPending), Description: new(""), ActionsRequired: new("None")}
}

// resolvePLS finds a private link service by resource ID or alias.
func (s *state) resolvePLS(target string) *resource {
	if strings.HasPrefix(strings.ToLower(target), "/subscriptions/") {
		if r := s.lookup(target); r != nil && r.typeKey == typePLS {
			return r
		}
		return nil
	}
	if k, ok := s.aliases[strings.ToLower(target)]; ok {
		return s.res[k]
	}
	return nil
}

// visibleTo reports whether a subscription may see and connect to a private
// link service: its own subscription always, others when listed, or "*"
// unless the service's accessMode is Restricted ("Limits access to
// subscriptions which are inside visibility list only": Azure's
// description of AccessModeRestricted, armnetwork v11 and the REST spec).
func visibleTo(r *resource, sub string) bool {
	if strings.EqualFold(r.sub, sub) {
		return true
	}
	p := objOf[armnetwork.PrivateLinkService](r).Properties
	if p.Visibility == nil {
		return false
	}
	if strings.EqualFold(string(ptr.Deref(p.AccessMode, armnetwork.AccessModeDefault)), string(armnetwork.AccessModeRestricted)) {
		return slices.ContainsFunc(p.Visibility.Subscriptions, func(v *string) bool { return v != nil && strings.EqualFold(*v, sub) })
	}
	return containsFold(p.Visibility.Subscriptions, sub)
}

func autoApproved(r *resource, sub string) bool {
	p := objOf[armnetwork.PrivateLinkService](r).Properties
	return p.AutoApproval != nil && containsFold(p.AutoApproval.Subscriptions, sub)
}

func containsFold(list []*string, s string) bool {
	for _, v := range list {
		if v != nil && (*v == "*" || strings.EqualFold(*v, s)) {
			return true
		}
	}
	return false
}

// armPathOf parses a resource ID known to be well formed.
func armPathOf(id string) armPath {
	p, _ := parseARMPath(id)
	return p
}

func (r *resource) linkOrNil() *peLink {
	if r == nil {
		return nil
	}
	return r.link
}

func (req *putRequest) name() string { return req.path.names[len(req.path.names)-1] }

func (req *putRequest) principalOrAnonymous() *principal {
	if req.principal == nil {
		return &principal{Principal: Principal{ClientID: "anonymous"}}
	}
	return req.principal
}
