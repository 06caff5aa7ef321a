package privateendpoint

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
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
const (
	// AzureLinksPerZone is Azure's limit of virtual network links per
	// private DNS zone.
	AzureLinksPerZone = 1000

	// ReasonZoneLinkLimit: the zone has as many links as Azure allows; the
	// object's network gets none.
	ReasonZoneLinkLimit = "PrivateDNSZoneLinkLimit"
	// ReasonZoneLinkLimitNear: the zone has 90 % of them (a Warning).
	ReasonZoneLinkLimitNear = "PrivateDNSZoneLinkLimitNear"

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

// linkID is the ID of the link the DNS engine makes from zone to vnet.
func linkID(zone dns.Zone, vnet string) string {
	return strings.ToLower(zone.ID() + "/virtualNetworkLinks/" + dns.LinkName(vnet))
}

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

// admitLink decides whether obj may have zone linked to vnet: a link an
// object records already, always; a new one while the zone's links stay
// within the limit, counting the admissions of this process the cache
// does not show yet. It returns the terminal error that says why not.
func (r *Reconciler) admitLink(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, zone dns.Zone, vnet string) error {
	id, scope, limit := linkID(zone, vnet), zone.Key(), r.Opts.linkLimit()
	var n int
	known, ok := false, false
	err := r.linkRoom.Admit(id, []string{scope}, r.clock().Now(), func() (map[string]map[string]bool, error) {
		links, err := r.zoneLinks(ctx, zone)
		known = links[id]
		delete(links, id)
		return map[string]map[string]bool{scope: links}, err
	}, func(use map[string]int) bool {
		n = use[scope]
		ok = known || n < limit
		return ok && !known // a link that exists waits for nothing
	})
	if err != nil {
		return err
	}
	if !ok {
		limitmetrics.Set(limitmetrics.PrivateDNSZoneLinks, zone.ID(), n, limit)
		return terminal(ReasonZoneLinkLimit,
			"private DNS zone %s is not linked to virtual network %s: it has %d links, the limit is %d (Azure allows %d per zone), so its names do not resolve from that network; "+
				"use another zone for networks beyond it (spec.dns.additionalZones, or another zoneName), or remove the objects whose networks no longer need it",
			zone.Name, vnetName(vnet), n, limit, AzureLinksPerZone)
	}
	if !known {
		n++
	}
	limitmetrics.Set(limitmetrics.PrivateDNSZoneLinks, zone.ID(), n, limit)
	if !known && n*10 >= limit*9 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonZoneLinkLimitNear, "Link",
			"private DNS zone %s has %d virtual network links, near the limit of %d (Azure allows %d per zone): beyond it a network gets no link and the objects in it say %s",
			zone.Name, n, limit, AzureLinksPerZone, ReasonZoneLinkLimit)
	}
	return nil
}

// vnetName is the last segment of a network's ID.
func vnetName(id string) string { return id[strings.LastIndex(id, "/")+1:] }
