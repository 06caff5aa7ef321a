package azuresim

import (
	"net/http"
	"net/netip"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
)

const (
	typeZone     = "microsoft.network/privatednszones"
	typeARecord  = "microsoft.network/privatednszones/a"
	typeVNetLink = "microsoft.network/privatednszones/virtualnetworklinks"
)

var zoneKind = &kind{
	newObj:     func() any { return &armprivatedns.PrivateZone{} },
	lro:        true,
	privateDNS: true,
	newETag:    bareETag,
	location:   true,
	put: func(s *state, req *putRequest) *armError {
		z := bodyOf[armprivatedns.PrivateZone](req)
		if !strings.EqualFold(ptr.Deref(z.Location, ""), "global") {
			return errBadRequest("InvalidResourceLocation",
				"The resource location '%s' is invalid: private DNS zones must be in location 'global'.", ptr.Deref(z.Location, ""))
		}
		if e := s.checkZoneCreate(req); e != nil {
			return e
		}
		if z.Properties == nil {
			z.Properties = &armprivatedns.PrivateZoneProperties{}
		}
		req.res.obj = z
		return nil
	},
	checkDelete: func(s *state, r *resource) *armError {
		// ARM's answer while a link exists, also while it is being
		// deleted (ASO v2 recording Test_Networking_PrivateDnsZone_CRUD.yaml).
		if s.countUnder(typeVNetLink, r.id) > 0 {
			return newError(http.StatusConflict, "CannotDeleteResource", "Can not delete resource before nested resources are deleted.")
		}
		return nil
	},
	onDelete: func(s *state, r *resource) {
		for _, t := range []string{typeARecord, typeVNetLink} {
			for _, c := range s.list(t, r.id) {
				s.drop(key(c.id))
			}
		}
	},
	render: func(s *state, r *resource) {
		z := objOf[armprivatedns.PrivateZone](r)
		setCommon(&z.ID, &z.Name, &z.Type, &z.Etag, r)
		z.Properties.ProvisioningState = new(armprivatedns.ProvisioningState(r.state))
		// Azure counts the zone's SOA record set, which it makes with the
		// zone: an empty zone has one.
		z.Properties.NumberOfRecordSets = new(int64(s.countUnder(typeARecord, r.id) + 1))
		z.Properties.NumberOfVirtualNetworkLinks = new(int64(s.countUnder(typeVNetLink, r.id)))
		// Azure says the zone's limits in its properties (25,000 and 1,000
		// in the recorded zone, testdata/private-dns-zone.json); these are
		// the limits this server enforces.
		z.Properties.MaxNumberOfRecordSets = new(int64(s.limits.RecordSetsPerZone))
		z.Properties.MaxNumberOfVirtualNetworkLinks = new(int64(s.limits.VirtualNetworkLinksPerZone))
		z.Properties.MaxNumberOfVirtualNetworkLinksWithRegistration = new(int64(100))
		registered := 0
		for _, l := range s.list(typeVNetLink, r.id) {
			if p := objOf[armprivatedns.VirtualNetworkLink](l).Properties; p != nil && ptr.Deref(p.RegistrationEnabled, false) {
				registered++
			}
		}
		z.Properties.NumberOfVirtualNetworkLinksWithRegistration = new(int64(registered))
	},
}

// Record sets are written synchronously, as in Azure.
var aRecordKind = &kind{
	newObj:     func() any { return &armprivatedns.RecordSet{} },
	privateDNS: true,
	newETag:    bareETag,
	put: func(s *state, req *putRequest) *armError {
		rs := bodyOf[armprivatedns.RecordSet](req)
		if rs.Properties == nil {
			rs.Properties = &armprivatedns.RecordSetProperties{}
		}
		for _, a := range rs.Properties.ARecords {
			if a == nil || a.IPv4Address == nil || !isIPv4(*a.IPv4Address) {
				return errBadRequest("BadRequest", "The A record set %s has an invalid IPv4 address.", req.name())
			}
		}
		if e := s.checkRecordSet(req, rs); e != nil {
			return e
		}
		req.res.obj = rs
		return nil
	},
	render: func(_ *state, r *resource) {
		rs := objOf[armprivatedns.RecordSet](r)
		setCommon(&rs.ID, &rs.Name, &rs.Type, &rs.Etag, r)
		zone := armPathOf(r.id).names[0]
		fqdn := r.name + "." + zone + "."
		if r.name == "@" {
			fqdn = zone + "."
		}
		rs.Properties.Fqdn = new(fqdn)
		rs.Properties.IsAutoRegistered = new(false)
	},
}

var vnetLinkKind = &kind{
	newObj:     func() any { return &armprivatedns.VirtualNetworkLink{} },
	lro:        true,
	privateDNS: true,
	newETag:    quotedETag,
	location:   true,
	put: func(s *state, req *putRequest) *armError {
		l := bodyOf[armprivatedns.VirtualNetworkLink](req)
		if l.Properties == nil || l.Properties.VirtualNetwork == nil || l.Properties.VirtualNetwork.ID == nil {
			return errBadRequest("BadRequest", "Virtual network link %s must reference a virtual network.", req.name())
		}
		vnetID := *l.Properties.VirtualNetwork.ID
		if v := s.lookup(vnetID); v == nil || v.typeKey != typeVNet {
			return errBadRequest("BadRequest", "Virtual network %s referenced by link %s does not exist.", vnetID, req.name())
		}
		zoneID := req.path.parent().id()
		for _, other := range s.list(typeVNetLink, zoneID) {
			if key(other.id) == key(req.id) {
				continue
			}
			o := objOf[armprivatedns.VirtualNetworkLink](other)
			if strings.EqualFold(ptr.Deref(o.Properties.VirtualNetwork.ID, ""), vnetID) {
				// Azure accepts the PUT (202) and fails the operation with
				// Conflict; the link stays, Failed (the measurement
				// against ASO's recordings; the message is the emulator's).
				req.opErr = newError(http.StatusConflict, "Conflict",
					"Private zone '%s' is already linked to the virtual network '%s'.", req.path.names[0], vnetID)
				break
			}
		}
		if e := s.checkLinkCreate(req, vnetID); e != nil {
			return e
		}
		if l.Properties.RegistrationEnabled == nil {
			l.Properties.RegistrationEnabled = new(false)
		}
		req.res.obj = l
		return nil
	},
	render: func(_ *state, r *resource) {
		l := objOf[armprivatedns.VirtualNetworkLink](r)
		setCommon(&l.ID, &l.Name, &l.Type, &l.Etag, r)
		l.Properties.ProvisioningState = new(armprivatedns.ProvisioningState(r.state))
		st := armprivatedns.VirtualNetworkLinkStateInProgress
		if r.state == stateSucceeded {
			st = armprivatedns.VirtualNetworkLinkStateCompleted
		}
		l.Properties.VirtualNetworkLinkState = &st
	},
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

// kinds maps a lower-case resource type to how it is served.
var kinds = map[string]*kind{
	typeVNet:     vnetKind,
	typeSubnet:   subnetKind,
	typeLB:       lbKind,
	typeNIC:      nicKind,
	typeASG:      asgKind,
	typePLS:      plsKind,
	typePLSConn:  plsConnKind,
	typePE:       peKind,
	typeZone:     zoneKind,
	typeARecord:  aRecordKind,
	typeVNetLink: vnetLinkKind,
}

// Resolution statuses of GET /_sim/dns/resolve.
const (
	// ResolveOK: a linked zone holds the name; Addresses are its A records.
	ResolveOK = "NOERROR"
	// ResolveNXDomain: the most specific linked zone for the name lacks it.
	// Azure answers NXDOMAIN and does not ask public DNS.
	ResolveNXDomain = "NXDOMAIN"
	// ResolveNotPrivate: no zone linked to the virtual network covers the
	// name; Azure would ask public DNS, which azuresim does not model.
	ResolveNotPrivate = "NotPrivate"
)

// Resolution is what a name resolves to from a virtual network through
// Azure-provided DNS and the private DNS zones linked to it.
type Resolution struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Zone is the private DNS zone that answered.
	Zone string `json:"zone,omitempty"`
	// Record is the record set that matched (a wildcard, say).
	Record    string   `json:"record,omitempty"`
	Addresses []string `json:"addresses,omitempty"`
}

// Resolve answers name from the virtual network vnetID as Azure-provided
// DNS does with private zones: among the provisioned zones linked to the
// network (by a completed link), the most specific one that is a suffix of
// the name answers; an exact record wins over a wildcard, the closest
// wildcard over one further up; a zone without a match answers NXDOMAIN.
func (s *Server) Resolve(vnetID, name string) Resolution {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.advance()
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	res := Resolution{Name: name, Status: ResolveNotPrivate}
	zone := s.st.linkedZone(vnetID, name)
	if zone == nil {
		return res
	}
	res.Zone, res.Status = zone.id, ResolveNXDomain
	if r := s.st.matchRecord(zone, name); r != nil {
		res.Status, res.Record = ResolveOK, r.name
		for _, a := range objOf[armprivatedns.RecordSet](r).Properties.ARecords {
			res.Addresses = append(res.Addresses, ptr.Deref(a.IPv4Address, ""))
		}
	}
	return res
}

// linkedZone is the most specific provisioned zone linked (by a completed
// link) to the network that covers name; of two as specific (zones of one
// name in two groups), the first by ID.
func (s *state) linkedZone(vnetID, name string) *resource {
	var zone *resource
	for _, l := range s.byType[typeVNetLink] {
		if l.state != stateSucceeded {
			continue
		}
		if link := objOf[armprivatedns.VirtualNetworkLink](l); !strings.EqualFold(ptr.Deref(link.Properties.VirtualNetwork.ID, ""), vnetID) {
			continue
		}
		// A link's ID is <zone's ID>/virtualNetworkLinks/<name>: the zone's
		// name is tested before anything is looked up or copied, as most
		// links of a network are to other zones.
		zoneID := l.id[:strings.LastIndexByte(l.id[:strings.LastIndexByte(l.id, '/')], '/')]
		if !coversFold(name, zoneID[strings.LastIndexByte(zoneID, '/')+1:]) {
			continue
		}
		z := s.lookup(zoneID)
		if z == nil || z.state != stateSucceeded {
			continue
		}
		zn := strings.ToLower(z.name)
		if zone == nil || len(zn) > len(zone.name) || len(zn) == len(zone.name) && key(z.id) < key(zone.id) {
			zone = z
		}
	}
	return zone
}

// coversFold says whether zone (any case) is name (lower case) or one of
// its parent domains.
func coversFold(name, zone string) bool {
	if len(name) < len(zone) || !strings.EqualFold(name[len(name)-len(zone):], zone) {
		return false
	}
	return len(name) == len(zone) || name[len(name)-len(zone)-1] == '.'
}

// matchRecord is the A record set of a zone that answers name: the exact
// name, else the closest wildcard.
func (s *state) matchRecord(zone *resource, name string) *resource {
	records := map[string]*resource{}
	for _, r := range s.list(typeARecord, zone.id) {
		records[strings.ToLower(r.name)] = r
	}
	zn := strings.ToLower(zone.name)
	if name == zn {
		return records["@"]
	}
	rel := strings.TrimSuffix(name, "."+zn)
	if r := records[rel]; r != nil {
		return r
	}
	labels := strings.Split(rel, ".")
	for i := 1; i <= len(labels); i++ {
		if r := records[strings.Join(append([]string{"*"}, labels[i:]...), ".")]; r != nil {
			return r
		}
	}
	return nil
}
