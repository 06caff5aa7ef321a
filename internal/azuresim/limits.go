package azuresim

import (
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
)

// Limits are Azure's per-resource limits that the emulator enforces when a
// resource is created (an update that stays within them is never refused).
// A zero field takes Azure's value (AzureLimits); tests set small values to
// reach a limit with a few resources.
//
// Sources, as published by Microsoft: "What is an Azure Private DNS zone?"
// (learn.microsoft.com/azure/dns/private-dns-privatednszone, section
// Limits) for the Private DNS figures; "Azure subscription and service
// limits", Private Link limits, for the private link figures (1,000
// endpoints per virtual network confirmed by "Increase Private Endpoint
// virtual network limits", 2025).
type Limits struct {
	// PrivateDNSZonesPerSubscription: 1,000.
	PrivateDNSZonesPerSubscription int
	// RecordSetsPerZone: 25,000, the zone's SOA record set included.
	RecordSetsPerZone int
	// RecordsPerRecordSet: 20.
	RecordsPerRecordSet int
	// VirtualNetworkLinksPerZone: 1,000.
	VirtualNetworkLinksPerZone int
	// ZonesPerVirtualNetwork is how many private DNS zones one virtual
	// network can be linked to (without autoregistration): 1,000.
	ZonesPerVirtualNetwork int
	// PrivateEndpointsPerVirtualNetwork: 1,000.
	PrivateEndpointsPerVirtualNetwork int
	// PrivateEndpointsPerHighScaleVirtualNetwork: 5,000, in a network
	// whose privateEndpointVNetPolicies is Basic (high-scale private
	// endpoints; "Increase Private Endpoint virtual network limits",
	// 2025, and the limits page's Private Link table).
	PrivateEndpointsPerHighScaleVirtualNetwork int
	// PrivateLinkServicesPerSubscription: 800.
	PrivateLinkServicesPerSubscription int
	// PrivateEndpointsPerPrivateLinkService: 1,000.
	PrivateEndpointsPerPrivateLinkService int
}

// AzureLimits are Azure's published defaults.
func AzureLimits() Limits {
	return Limits{
		PrivateDNSZonesPerSubscription:             1000,
		RecordSetsPerZone:                          25000,
		RecordsPerRecordSet:                        20,
		VirtualNetworkLinksPerZone:                 1000,
		ZonesPerVirtualNetwork:                     1000,
		PrivateEndpointsPerVirtualNetwork:          1000,
		PrivateEndpointsPerHighScaleVirtualNetwork: 5000,
		PrivateLinkServicesPerSubscription:         800,
		PrivateEndpointsPerPrivateLinkService:      1000,
	}
}

// withDefaults fills every zero field with Azure's value.
func (l Limits) withDefaults() Limits {
	d := AzureLimits()
	for _, f := range []struct{ v, def *int }{
		{&l.PrivateDNSZonesPerSubscription, &d.PrivateDNSZonesPerSubscription},
		{&l.RecordSetsPerZone, &d.RecordSetsPerZone},
		{&l.RecordsPerRecordSet, &d.RecordsPerRecordSet},
		{&l.VirtualNetworkLinksPerZone, &d.VirtualNetworkLinksPerZone},
		{&l.ZonesPerVirtualNetwork, &d.ZonesPerVirtualNetwork},
		{&l.PrivateEndpointsPerVirtualNetwork, &d.PrivateEndpointsPerVirtualNetwork},
		{&l.PrivateEndpointsPerHighScaleVirtualNetwork, &d.PrivateEndpointsPerHighScaleVirtualNetwork},
		{&l.PrivateLinkServicesPerSubscription, &d.PrivateLinkServicesPerSubscription},
		{&l.PrivateEndpointsPerPrivateLinkService, &d.PrivateEndpointsPerPrivateLinkService},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Error codes for a reached limit. Azure answers a request over one of
// these limits with 400; the codes and messages of those answers were not
// found in any public recording, so these are the emulator's own (listed
// as such in the package documentation). Classify by status.
const (
	codeZonesPerSubscription   = "PrivateDnsZonesPerSubscriptionLimitExceeded"
	codeRecordSetsPerZone      = "RecordSetsPerZoneLimitExceeded"
	codeRecordsPerRecordSet    = "RecordsPerRecordSetLimitExceeded"
	codeLinksPerZone           = "VirtualNetworkLinksPerZoneLimitExceeded"
	codeZonesPerVirtualNetwork = "ZonesPerVirtualNetworkLimitExceeded"
	codeEndpointsPerVNet       = "PrivateEndpointsPerVirtualNetworkLimitExceeded"
	codeServicesPerSub         = "PrivateLinkServicesPerSubscriptionLimitExceeded"
	codeEndpointsPerService    = "PrivateEndpointsPerPrivateLinkServiceLimitExceeded"
)

// PrivateDNSLimitCodes are the codes of the Private DNS limits of zones,
// links and record sets: zones per subscription, zones linked to a
// network, links per zone, record sets per zone. The operator counts each
// before it asks (a harness checks that none is ever answered).
func PrivateDNSLimitCodes() []string {
	return []string{codeZonesPerSubscription, codeZonesPerVirtualNetwork, codeLinksPerZone, codeRecordSetsPerZone}
}

func errLimit(code, what string, limit int, scope string) *armError {
	return errBadRequest(code, "%s limit of %d exceeded in %s.", what, limit, scope)
}

// reservedZoneNames are the names Azure blocks from creation as private
// DNS zones in the public cloud, to protect its services ("What is an
// Azure Private DNS zone?", Restrictions). Only the names themselves are
// blocked: Azure's own privatelink.* zones sit under some of them.
var reservedZoneNames = map[string]bool{
	"azclient.ms": true, "azure.com": true, "cloudapp.net": true, "core.windows.net": true,
	"microsoft.com": true, "msidentity.com": true, "trafficmanager.net": true, "windows.net": true,
}

// checkZoneName applies Azure's zone name restrictions (same source): two
// labels at least (Azure's message, as a crossplane-contrib
// provider-upjet-azure issue #19 reports it), 34 at most, no reserved name.
func checkZoneName(name string) *armError {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	switch {
	case len(labels) < 2:
		return errBadRequest("BadRequest", "The zone name '%s' does not have enough labels. Zone names must have two or more labels.", name)
	case len(labels) > 34:
		return errBadRequest("BadRequest", "The zone name '%s' has too many labels. Zone names must have 34 or fewer labels.", name)
	case reservedZoneNames[strings.ToLower(name)]:
		return errBadRequest("BadRequest", "The zone name '%s' is reserved and cannot be used for a private DNS zone.", name)
	}
	return nil
}

// checkZoneCreate bounds the zones of a subscription.
func (s *state) checkZoneCreate(req *putRequest) *armError {
	if e := checkZoneName(req.name()); e != nil {
		return e
	}
	if req.existing != nil {
		return nil
	}
	if n := s.countUnder(typeZone, "/subscriptions/"+req.path.sub); n >= s.limits.PrivateDNSZonesPerSubscription {
		return errLimit(codeZonesPerSubscription, "Private DNS zones per subscription", s.limits.PrivateDNSZonesPerSubscription, "subscription "+req.path.sub)
	}
	return nil
}

// checkRecordSet bounds a record set's records, and the record sets of its
// zone (which counts its SOA record set).
func (s *state) checkRecordSet(req *putRequest, rs *armprivatedns.RecordSet) *armError {
	if n := len(rs.Properties.ARecords); n > s.limits.RecordsPerRecordSet {
		return errLimit(codeRecordsPerRecordSet, "Records per record set", s.limits.RecordsPerRecordSet, "record set "+req.name())
	}
	if req.existing != nil {
		return nil
	}
	zoneID := req.path.parent().id()
	if n := s.countUnder(typeARecord, zoneID) + 1; n >= s.limits.RecordSetsPerZone {
		return errLimit(codeRecordSetsPerZone, "Record sets per private DNS zone", s.limits.RecordSetsPerZone, "zone "+req.path.names[0])
	}
	return nil
}

// checkLinkCreate bounds the links of a zone and the zones a virtual
// network is linked to.
func (s *state) checkLinkCreate(req *putRequest, vnetID string) *armError {
	if req.existing != nil {
		return nil
	}
	zoneID := req.path.parent().id()
	if n := s.countUnder(typeVNetLink, zoneID); n >= s.limits.VirtualNetworkLinksPerZone {
		return errLimit(codeLinksPerZone, "Virtual network links per private DNS zone", s.limits.VirtualNetworkLinksPerZone, "zone "+req.path.names[0])
	}
	linked := s.count(typeVNetLink, func(l *resource) bool {
		return strings.EqualFold(ptr.Deref(objOf[armprivatedns.VirtualNetworkLink](l).Properties.VirtualNetwork.ID, ""), vnetID)
	})
	if linked >= s.limits.ZonesPerVirtualNetwork {
		return errLimit(codeZonesPerVirtualNetwork, "Private DNS zones linked to a virtual network", s.limits.ZonesPerVirtualNetwork, "virtual network "+vnetID)
	}
	return nil
}

// checkEndpointCreate bounds the endpoints of a virtual network and the
// connections of the target service.
func (s *state) checkEndpointCreate(req *putRequest, subnetID string, pls *resource) *armError {
	if req.existing != nil {
		return nil
	}
	vnetID := armPathOf(subnetID).parent().id()
	subnets := vnetID + "/subnets/"
	inVNet := s.count(typePE, func(pe *resource) bool {
		return pe.link != nil && hasPrefixFold(pe.link.subnetID, subnets)
	})
	limit := s.limits.PrivateEndpointsPerVirtualNetwork
	if vnet := s.lookup(vnetID); vnet != nil {
		if p := objOf[armnetwork.VirtualNetwork](vnet).Properties; p != nil && p.PrivateEndpointVNetPolicies != nil &&
			*p.PrivateEndpointVNetPolicies == armnetwork.PrivateEndpointVNetPoliciesBasic {
			limit = s.limits.PrivateEndpointsPerHighScaleVirtualNetwork
		}
	}
	if inVNet >= limit {
		return errLimit(codeEndpointsPerVNet, "Private endpoints per virtual network", limit, "virtual network "+vnetID)
	}
	// Azure's limit of endpoints per service is a private link service's;
	// none is on record for an Azure service (firstparty.go).
	if n := s.countUnder(typePLSConn, pls.id); pls.typeKey == typePLS && n >= s.limits.PrivateEndpointsPerPrivateLinkService {
		return errLimit(codeEndpointsPerService, "Private endpoints per private link service", s.limits.PrivateEndpointsPerPrivateLinkService, "private link service "+pls.id)
	}
	return nil
}

// count is how many resources of a type match, without the sorting and
// copying of all: it runs on every create.
func (s *state) count(typeKey string, match func(*resource) bool) int {
	n := 0
	for _, r := range s.byType[typeKey] {
		if match(r) {
			n++
		}
	}
	return n
}

// checkServiceCreate bounds the private link services of a subscription.
func (s *state) checkServiceCreate(req *putRequest) *armError {
	if req.existing != nil {
		return nil
	}
	if n := s.countUnder(typePLS, "/subscriptions/"+req.path.sub); n >= s.limits.PrivateLinkServicesPerSubscription {
		return errLimit(codeServicesPerSub, "Private link services per subscription", s.limits.PrivateLinkServicesPerSubscription, "subscription "+req.path.sub)
	}
	return nil
}
