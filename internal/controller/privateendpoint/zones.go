package privateendpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// This file is the pure part of an object's DNS: which zones it wants
// (spec.dns's zone and its additionalZones), which it holds something in
// (status), and with which identity each is written.

// slot is one zone of an object's names: spec.dns's zone (the primary) or
// an additional one, with what the status says the object holds there.
type slot struct {
	zone    dns.Zone
	records []string
	// ref is the identity that writes the zone (nil: the object's).
	ref *v1alpha1.IdentityReference
	st  slotStatus
}

// slotStatus points at the status fields of a slot.
type slotStatus struct {
	id           *string
	fqdns, links *[]string
	ref          **v1alpha1.IdentityReference
}

// primaryZone is the zone spec.dns names.
func primaryZone(obj *v1alpha1.AzurePrivateEndpoint) dns.Zone {
	d := obj.Spec.DNS
	return dns.Zone{
		Subscription: or(d.ZoneSubscriptionID, obj.Spec.SubscriptionID), ResourceGroup: or(d.ZoneResourceGroup, obj.Spec.ResourceGroup),
		Name: d.ZoneName, Shared: d.ZoneMode == v1alpha1.ZoneModeShared,
	}
}

// additionalZone is the zone of one spec.dns.additionalZones entry.
func additionalZone(obj *v1alpha1.AzurePrivateEndpoint, z v1alpha1.PrivateEndpointDNSZone) dns.Zone {
	p := primaryZone(obj)
	return dns.Zone{
		Subscription: or(z.ZoneSubscriptionID, p.Subscription), ResourceGroup: or(z.ZoneResourceGroup, p.ResourceGroup),
		Name: z.ZoneName, Shared: z.ZoneMode == v1alpha1.ZoneModeShared,
	}
}

// zonesOf are the zones an object's spec names, the primary first.
func zonesOf(obj *v1alpha1.AzurePrivateEndpoint) []dns.Zone {
	if obj.Spec.DNS == nil {
		return nil
	}
	out := []dns.Zone{primaryZone(obj)}
	for _, z := range obj.Spec.DNS.AdditionalZones {
		out = append(out, additionalZone(obj, z))
	}
	return out
}

// wanted are the slots the spec asks for. The status entries of
// additional zones are made here (an entry names its zone before the zone
// is created, so that a release finds it); call it before held.
func wanted(obj *v1alpha1.AzurePrivateEndpoint) []slot {
	d := obj.Spec.DNS
	if d == nil {
		return nil
	}
	out := []slot{{zone: primaryZone(obj), records: records(d), ref: zoneIdentity(obj, nil), st: primaryStatus(obj)}}
	for _, z := range d.AdditionalZones {
		zone := additionalZone(obj, z)
		i := slices.IndexFunc(obj.Status.DNSZones, func(s v1alpha1.DNSZoneStatus) bool { return strings.EqualFold(s.ID, zone.ID()) })
		if i < 0 {
			obj.Status.DNSZones = append(obj.Status.DNSZones, v1alpha1.DNSZoneStatus{ID: zone.ID()})
		}
	}
	for _, z := range d.AdditionalZones {
		zone := additionalZone(obj, z)
		i := slices.IndexFunc(obj.Status.DNSZones, func(s v1alpha1.DNSZoneStatus) bool { return strings.EqualFold(s.ID, zone.ID()) })
		out = append(out, slot{zone: zone, records: z.Records, ref: zoneIdentity(obj, z.IdentityRef), st: entryStatus(&obj.Status.DNSZones[i])})
	}
	return out
}

// held are the slots the status says the object holds something in (its
// zone, records or links), with the identity they were written with.
func held(obj *v1alpha1.AzurePrivateEndpoint) []slot {
	var out []slot
	if z, ok := dns.ZoneFromID(obj.Status.DNSZoneID); ok {
		out = append(out, slot{zone: z, ref: obj.Status.DNSIdentityRef, st: primaryStatus(obj)})
	}
	for i := range obj.Status.DNSZones {
		e := &obj.Status.DNSZones[i]
		if z, ok := dns.ZoneFromID(e.ID); ok {
			out = append(out, slot{zone: z, ref: e.IdentityRef, st: entryStatus(e)})
		}
	}
	return out
}

// stale are the held slots the spec no longer asks for (a zone removed
// or moved), released before anything is written.
func stale(obj *v1alpha1.AzurePrivateEndpoint) []slot {
	want := map[string]bool{}
	if obj.Spec.DNS != nil {
		want["p|"+strings.ToLower(primaryZone(obj).ID())] = true
		for _, z := range obj.Spec.DNS.AdditionalZones {
			want["a|"+strings.ToLower(additionalZone(obj, z).ID())] = true
		}
	}
	var out []slot
	for _, s := range held(obj) {
		kind := "a|"
		if s.st.id == &obj.Status.DNSZoneID {
			kind = "p|"
		}
		if !want[kind+strings.ToLower(s.zone.ID())] {
			out = append(out, s)
		}
	}
	return out
}

// dropEntry removes the status of an additional zone released for good.
func dropEntry(obj *v1alpha1.AzurePrivateEndpoint, id string) {
	obj.Status.DNSZones = slices.DeleteFunc(obj.Status.DNSZones, func(e v1alpha1.DNSZoneStatus) bool { return e.ID == id })
	if len(obj.Status.DNSZones) == 0 {
		obj.Status.DNSZones = nil
	}
}

func primaryStatus(obj *v1alpha1.AzurePrivateEndpoint) slotStatus {
	s := &obj.Status
	return slotStatus{id: &s.DNSZoneID, fqdns: &s.FQDNs, links: &s.VirtualNetworkLinks, ref: &s.DNSIdentityRef}
}

func entryStatus(e *v1alpha1.DNSZoneStatus) slotStatus {
	return slotStatus{id: &e.ID, fqdns: &e.FQDNs, links: &e.VirtualNetworkLinks, ref: &e.IdentityRef}
}

// zoneIdentity is the identity that writes a zone: the entry's, else
// spec.dns's, else nil (the object's own, spec.identityRef).
func zoneIdentity(obj *v1alpha1.AzurePrivateEndpoint, entry *v1alpha1.IdentityReference) *v1alpha1.IdentityReference {
	switch {
	case entry != nil:
		return entry.DeepCopy()
	case obj.Spec.DNS != nil && obj.Spec.DNS.IdentityRef != nil:
		return obj.Spec.DNS.IdentityRef.DeepCopy()
	}
	return nil
}

// allFQDNs are the names the object wrote, every zone's.
func allFQDNs(obj *v1alpha1.AzurePrivateEndpoint) []string {
	out := slices.Clone(obj.Status.FQDNs)
	for _, e := range obj.Status.DNSZones {
		out = append(out, e.FQDNs...)
	}
	return out
}

// records are the relative record names the spec asks for.
func records(d *v1alpha1.PrivateEndpointDNS) []string {
	if d == nil {
		return nil
	}
	if len(d.Records) == 0 {
		return dns.DefaultRecords
	}
	return d.Records
}

func ttl(d *v1alpha1.PrivateEndpointDNS) int64 {
	if d.TTL <= 0 {
		return dns.DefaultTTL
	}
	return d.TTL
}

// vnets are the virtual networks the names must resolve from.
func vnets(obj *v1alpha1.AzurePrivateEndpoint) []string {
	if d := obj.Spec.DNS; d != nil && len(d.VirtualNetworkLinks) > 0 {
		return d.VirtualNetworkLinks
	}
	return []string{pls.VNetOf(obj.Spec.SubnetID)}
}

// forgetObject drops what the memo (keys "<step>|<object>[|...]") knows
// of an object's DNS.
func forgetObject(m *memo.Memo, key string) { m.ForgetSubject(key) }

// fingerprint is what the DNS depends on: the spec and the address.
func fingerprint(obj *v1alpha1.AzurePrivateEndpoint) string {
	return fmt.Sprintf("%d|%s", obj.Generation, strings.Join(obj.Status.IPAddresses, ","))
}

// holds says whether another object's status holds records or links in
// zone.
func holds(o *v1alpha1.AzurePrivateEndpoint, zone dns.Zone) bool {
	if strings.EqualFold(o.Status.DNSZoneID, zone.ID()) && (len(o.Status.FQDNs) > 0 || len(o.Status.VirtualNetworkLinks) > 0) {
		return true
	}
	return slices.ContainsFunc(o.Status.DNSZones, func(e v1alpha1.DNSZoneStatus) bool {
		return strings.EqualFold(e.ID, zone.ID()) && (len(e.FQDNs) > 0 || len(e.VirtualNetworkLinks) > 0)
	})
}

// names says whether an object's spec names zone.
func names(o *v1alpha1.AzurePrivateEndpoint, zone dns.Zone) bool {
	return slices.ContainsFunc(zonesOf(o), func(z dns.Zone) bool { return z.Key() == zone.Key() })
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
