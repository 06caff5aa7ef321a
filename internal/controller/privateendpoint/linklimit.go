package privateendpoint

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/admission"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// A private DNS zone takes at most 1,000 virtual network links ("Azure
// subscription and service limits", Azure DNS limits, private DNS zones:
// "Virtual network links per private DNS zone"; the zone's own
// maxNumberOfVirtualNetworkLinks says the same; internal/azuresim/limits.go
// enforces it). Objects sharing a zone (zoneMode Shared, or several objects
// naming one zone) each need it linked to their networks: the thousand
// and first network would get Azure's refusal. The operator counts the
// zone's links the objects record in their status (every object on the
// zone, through the cache's zone index) before it makes a new one: a
// Warning PrivateDNSZoneLinkLimitNear from 90 %, and at the limit no link
// — DNSReady False with PrivateDNSZoneLinkLimit, and an Event — instead of
// a request Azure refuses. A link an object records is always kept.
// Links made outside the operator are not counted (Azure's refusal then
// shows on DNSReady as any error does).
//
// A virtual network is linked to at most 1,000 private DNS zones ("What is
// an Azure Private DNS zone?", Limits: "Number of private DNS zones a
// virtual network can get linked to", 1,000 without autoregistration;
// azuresim enforces it): objects with their own zone (zoneMode Owned, the
// default) in one network each link one more. The operator counts the zones the objects needing the network
// record links for (the cache's network index) in the same admission, with
// PrivateDNSNetworkZoneLimitNear from 90 % and PrivateDNSNetworkZoneLimit
// at the limit. DNS mode's zones are counted apart (wiringdns, the
// per-cluster zone limit), and links other tools made are not seen.
const (
	// AzureLinksPerZone is Azure's limit of virtual network links per
	// private DNS zone.
	AzureLinksPerZone = 1000

	// ReasonZoneLinkLimit: the zone has as many links as Azure allows; the
	// object's network gets none.
	ReasonZoneLinkLimit = "PrivateDNSZoneLinkLimit"
	// ReasonZoneLinkLimitNear: the zone has 90 % of them (a Warning).
	ReasonZoneLinkLimitNear = "PrivateDNSZoneLinkLimitNear"

	// AzureZonesPerNetwork is Azure's limit of private DNS zones linked to
	// one virtual network (links without autoregistration).
	AzureZonesPerNetwork = 1000
	// ReasonNetworkZoneLimit: the object's network is linked to as many
	// zones as Azure allows; the zone is not linked to it.
	ReasonNetworkZoneLimit = "PrivateDNSNetworkZoneLimit"
	// ReasonNetworkZoneLimitNear: the network is linked to 90 % of them
	// (a Warning).
	ReasonNetworkZoneLimitNear = "PrivateDNSNetworkZoneLimitNear"

	// ReasonRecordSetLimit: the zone holds as many record sets as Azure
	// allows (25,000); a new one of the object is not created
	// (dnsengine/recordlimit.go). From 90 % the engine's Warning
	// dnsengine.ReasonRecordSetLimitNear goes on the object.
	ReasonRecordSetLimit = "PrivateDNSRecordSetLimit"

	// ReasonZoneLimit: the zone's subscription holds as many private DNS
	// zones as Azure allows (1,000); the object's zone is not created
	// (dnsengine/zonelimit.go). From 90 % the engine's Warning
	// dnsengine.ReasonZoneLimitNear goes on the object.
	ReasonZoneLimit = "PrivateDNSZoneLimit"
)

// linkLimit is the limit in force (Options.ZoneLinkLimit, else Azure's).
func (o *Options) linkLimit() int {
	if o.ZoneLinkLimit > 0 {
		return o.ZoneLinkLimit
	}
	return AzureLinksPerZone
}

// networkLimit is the limit in force (Options.NetworkZoneLimit, else
// Azure's).
func (o *Options) networkLimit() int {
	if o.NetworkZoneLimit > 0 {
		return o.NetworkZoneLimit
	}
	return AzureZonesPerNetwork
}

// linkID is the ID of the link the DNS engine makes from zone to vnet.
func linkID(zone dns.Zone, vnet string) string {
	return strings.ToLower(zone.ID() + "/virtualNetworkLinks/" + dns.LinkName(vnet))
}

// networkScope is the admission scope of the zones linked to vnet.
func networkScope(vnet string) string { return "network|" + strings.ToLower(vnet) }

// zoneLinks are the links (lower-case IDs) the objects naming zone record
// in their status for it, read from the cache.
func (r *Reconciler) zoneLinks(ctx context.Context, zone dns.Zone) (map[string]bool, error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{zoneIndex: zone.Key()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("counting the links of private DNS zone %s: %w", zone.Name, err)
	}
	out := map[string]bool{}
	for i := range list.Items {
		for _, s := range held(&list.Items[i]) {
			if s.zone.Key() != zone.Key() {
				continue
			}
			for _, id := range *s.st.links {
				out[strings.ToLower(id)] = true
			}
		}
	}
	return out, nil
}

// networkLinks are the zones linked to vnet as the objects that need the
// network record them, each as the ID of the link the engine makes
// (linkID). A link to vnet made by another tool that an object uses is
// not counted, as on the zone. Read from the cache's network index.
func (r *Reconciler) networkLinks(ctx context.Context, vnet string) (map[string]bool, error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{networkIndex: strings.ToLower(vnet)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("counting the private DNS zones linked to virtual network %s: %w", vnetName(vnet), err)
	}
	out := map[string]bool{}
	for i := range list.Items {
		for _, s := range held(&list.Items[i]) {
			if id := linkID(s.zone, vnet); containsFold(*s.st.links, id) {
				out[id] = true
			}
		}
	}
	return out, nil
}

// linkCount is what one admission saw: the links of the zone and the
// zones of the network, each with its limit, and whether the link is
// there already.
type linkCount struct {
	zone, network           int
	zoneLimit, networkLimit int
	known                   bool
}

// fits reports whether a new link stays within both limits.
func (c linkCount) fits() bool { return c.zone < c.zoneLimit && c.network < c.networkLimit }

// admitLink decides whether obj may have zone linked to vnet: a link an
// object records already (on the zone, or in the network), always; a new
// one while the zone's links and the network's zones stay within their
// limits, counting the admissions of this process the cache does not
// show yet. It returns the terminal error that says why not.
func (r *Reconciler) admitLink(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, zone dns.Zone, vnet string) error {
	id, zs, ns := linkID(zone, vnet), zone.Key(), networkScope(vnet)
	c := linkCount{zoneLimit: r.Opts.linkLimit(), networkLimit: r.Opts.networkLimit()}
	admitted := false
	err := r.linkRoom.Admit(id, []string{zs, ns}, r.clock().Now(), func() (admission.Holders, error) {
		links, err := r.zoneLinks(ctx, zone)
		if err != nil {
			return nil, err
		}
		zones, err := r.networkLinks(ctx, vnet)
		c.known = links[id] || zones[id]
		delete(links, id)
		delete(zones, id)
		return admission.Sets{zs: links, ns: zones}, err
	}, func(use map[string]int) bool {
		c.zone, c.network = use[zs], use[ns]
		admitted = c.known || c.fits()
		return admitted && !c.known // a link that exists waits for nothing
	})
	if err != nil {
		return err
	}
	if !c.known && admitted {
		c.zone++
		c.network++
	}
	limitmetrics.Set(limitmetrics.PrivateDNSZoneLinks, zone.ID(), c.zone, c.zoneLimit)
	limitmetrics.Set(limitmetrics.PrivateDNSNetworkZones, vnet, c.network, c.networkLimit)
	if !admitted {
		return linkRefused(zone, vnet, c)
	}
	if !c.known {
		r.warnNearLinkLimits(obj, zone, vnet, c)
	}
	return nil
}

// linkRefused is the terminal error of a link beyond a limit: the zone's
// links first, then the network's zones.
func linkRefused(zone dns.Zone, vnet string, c linkCount) error {
	if c.zone >= c.zoneLimit {
		return terminal(ReasonZoneLinkLimit,
			"private DNS zone %s is not linked to virtual network %s: it has %d links, the limit is %d (Azure allows %d per zone), so its names do not resolve from that network; "+
				"use another zone for networks beyond it (spec.dns.additionalZones, or another zoneName), or remove the objects whose networks no longer need it",
			zone.Name, vnetName(vnet), c.zone, c.zoneLimit, AzureLinksPerZone)
	}
	return terminal(ReasonNetworkZoneLimit,
		"private DNS zone %s is not linked to virtual network %s: the network is linked to %d private DNS zones, the limit is %d (Azure allows %d per network), so the zone's names do not resolve from that network; "+
			"share a zone among the objects of the network (zoneMode: Shared, or one zoneName), or remove the objects in it whose zones are no longer needed",
		zone.Name, vnetName(vnet), c.network, c.networkLimit, AzureZonesPerNetwork)
}

// warnNearLinkLimits records a Warning for each limit a new link brought
// to 90 %.
func (r *Reconciler) warnNearLinkLimits(obj *v1alpha1.AzurePrivateEndpoint, zone dns.Zone, vnet string, c linkCount) {
	if c.zone*10 >= c.zoneLimit*9 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonZoneLinkLimitNear, "Link",
			"private DNS zone %s has %d virtual network links, near the limit of %d (Azure allows %d per zone): beyond it a network gets no link and the objects in it say %s",
			zone.Name, c.zone, c.zoneLimit, AzureLinksPerZone, ReasonZoneLinkLimit)
	}
	if c.network*10 >= c.networkLimit*9 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonNetworkZoneLimitNear, "Link",
			"virtual network %s is linked to %d private DNS zones, near the limit of %d (Azure allows %d per network): beyond it no further zone is linked to it and the objects that need one say %s",
			vnetName(vnet), c.network, c.networkLimit, AzureZonesPerNetwork, ReasonNetworkZoneLimit)
	}
}

// vnetName is the last segment of a network's ID.
func vnetName(id string) string { return id[strings.LastIndex(id, "/")+1:] }
