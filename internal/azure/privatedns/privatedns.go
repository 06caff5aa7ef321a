// Package privatedns holds what the operator knows of Azure Private DNS:
// the zone, virtual network links and A record sets an endpoint's names
// need, who owns each (docs/design.md, *Never take what is not ours*), and
// an SDK adapter that starts long-running writes without waiting on them.
package privatedns

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// OwnerTag marks zones and virtual network links the operator created: the
// owning object's Owner.Value, or SharedValue of its kind.
const OwnerTag = "azure-private-endpoint-operator.giantswarm.io_owner"

// OwnerMetadata marks record sets the operator wrote (record sets carry
// metadata, not tags); its value is the owning object's Owner.Value.
const OwnerMetadata = "azure_private_endpoint_operator_owner"

// Kinds of objects that own DNS: an AzurePrivateEndpoint, and a workload
// cluster's AzureCluster (the wiring's DNS mode).
const (
	KindAzurePrivateEndpoint = "AzurePrivateEndpoint"
	KindAzureCluster         = "AzureCluster"
)

// Owner is the object a zone, link or record set was made for.
type Owner struct {
	Kind, Namespace, Name string
}

// Value is the owner value the operator writes: kind-qualified
// ("AzurePrivateEndpoint:org-x/wc1"), so that an AzurePrivateEndpoint and
// a workload cluster with the same namespace and name never take each
// other's DNS. A Kubernetes name holds no ':' or '/': values cannot clash,
// nor with SharedOwner.
func (o Owner) Value() string { return o.Kind + ":" + o.Namespace + "/" + o.Name }

// Legacy is the value earlier versions wrote: "namespace/name",
// without the kind. Both writers wrote it, so it does not say which kind
// it belongs to (see ClaimsLegacy).
func (o Owner) Legacy() string { return o.Namespace + "/" + o.Name }

// Claim says whether value marks what was made for o: its Value, or its
// Legacy value when otherKind is false — no object of the other DNS-owning
// kind has o's namespace and name, so the old value can only be o's. On
// the next write the operator puts o's Value in its place.
func (o Owner) Claim(value string, otherKind bool) bool {
	return value == o.Value() || value == o.Legacy() && !otherKind
}

// ParseOwner reads a kind-qualified owner value (Value's form); a legacy
// value, SharedOwner or anything else is not one.
func ParseOwner(value string) (Owner, bool) {
	kind, rest, ok := strings.Cut(value, ":")
	ns, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || kind == "" || ns == "" || name == "" || strings.ContainsAny(name, "/:") {
		return Owner{}, false
	}
	return Owner{Kind: kind, Namespace: ns, Name: name}, true
}

// IsLegacy says whether value is o's Legacy value (whose claim needs to
// know whether an object of the other kind has o's name).
func (o Owner) IsLegacy(value string) bool { return value == o.Legacy() }

// SharedOwner is the owner value earlier versions wrote on a zone or link
// that several objects use (zone mode Shared, the wiring's shared zone),
// whatever their kind. It is still read as shared by objects of either
// kind; what the operator creates now carries SharedValue.
const SharedOwner = "shared"

// SharedValue is the owner value of a zone or link that several objects of
// one kind use ("shared:AzurePrivateEndpoint"): it is deleted when the last
// of them no longer needs it, and never by an object of the other kind —
// an AzurePrivateEndpoint that names the wiring's shared zone uses it as
// someone else's. It cannot clash with an Owner's Value (no '/').
func SharedValue(kind string) string { return SharedOwner + ":" + kind }

// IsShared says whether tag marks a zone or link shared by objects of kind
// (SharedValue), or by objects of any kind (SharedOwner, earlier versions).
func IsShared(tag, kind string) bool { return tag == SharedOwner || tag == SharedValue(kind) }

// DefaultRecords are the record names when spec.dns.records is empty: a
// cluster's API and its ingress wildcard.
var DefaultRecords = []string{"api", "*.apps"}

// DefaultTTL is the records' TTL when spec.dns.ttl is not set.
const DefaultTTL = 300

// Zone is where and how an object's names live.
type Zone struct {
	Subscription, ResourceGroup, Name string
	Shared                            bool
}

// ID is the zone's resource ID.
func (z Zone) ID() string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/privateDnsZones/%s", z.Subscription, z.ResourceGroup, z.Name)
}

// Key identifies the zone among objects (case-insensitive, as ARM).
func (z Zone) Key() string {
	return strings.ToLower(z.Subscription + "/" + z.ResourceGroup + "/" + z.Name)
}

// Owner is the owner value the operator puts on a zone or link it creates
// for o: o's Value, or the shared value of o's kind.
func (z Zone) Owner(o Owner) string {
	if z.Shared {
		return SharedValue(o.Kind)
	}
	return o.Value()
}

// ZoneFromID reads a zone resource ID (as in status.dnsZoneID).
func ZoneFromID(id string) (Zone, bool) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) != 8 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") || !strings.EqualFold(segs[6], "privateDnsZones") {
		return Zone{}, false
	}
	return Zone{Subscription: segs[1], ResourceGroup: segs[3], Name: segs[7]}, true
}

// LinkName is the name of the zone's link to a virtual network: derived
// from the network's ID alone, so every object that needs the link names
// the same one. At most 80 characters, as Azure allows.
func LinkName(vnetID string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(vnetID)))
	name := strings.ToLower(vnetID[strings.LastIndex(vnetID, "/")+1:])
	if len(name) > 70 {
		name = name[:70]
	}
	return fmt.Sprintf("%s-%08x", name, h.Sum32())
}

// FQDN is the name a relative record name stands for in a zone ("@" is the
// zone's apex).
func FQDN(rel, zone string) string {
	if rel == "@" {
		return zone
	}
	return rel + "." + zone
}

// FQDNs lists the names the records stand for, in the records' order.
func FQDNs(records []string, zone string) []string {
	out := make([]string, 0, len(records))
	for _, r := range records {
		out = append(out, FQDN(r, zone))
	}
	return out
}

// RelativeName is the inverse of FQDN for a name in zone.
func RelativeName(fqdn, zone string) string {
	if strings.EqualFold(fqdn, zone) {
		return "@"
	}
	return strings.TrimSuffix(fqdn, "."+zone)
}

// RecordOwner reads who wrote a record set ("" when nobody the operator
// knows).
func RecordOwner(rs *armprivatedns.RecordSet) string {
	if rs == nil || rs.Properties == nil {
		return ""
	}
	return ptr.Deref(rs.Properties.Metadata[OwnerMetadata], "")
}

// TagOwner reads the owner tag of a zone or link.
func TagOwner(tags map[string]*string) string { return ptr.Deref(tags[OwnerTag], "") }

// RecordMatches says whether a record set already is what the operator
// would write: its A records are exactly ips, with the TTL.
func RecordMatches(rs *armprivatedns.RecordSet, ips []string, ttl int64, owner string) bool {
	if rs == nil || rs.Properties == nil || ptr.Deref(rs.Properties.TTL, 0) != ttl || RecordOwner(rs) != owner {
		return false
	}
	var got []string
	for _, a := range rs.Properties.ARecords {
		if a != nil {
			got = append(got, ptr.Deref(a.IPv4Address, ""))
		}
	}
	want := slices.Clone(ips)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}

// RecordBody is the A record set for ips. Metadata the record set has beside
// the operator's is kept.
func RecordBody(observed *armprivatedns.RecordSet, ips []string, ttl int64, owner string) armprivatedns.RecordSet {
	md := map[string]*string{}
	if observed != nil && observed.Properties != nil {
		for k, v := range observed.Properties.Metadata {
			md[k] = v
		}
	}
	md[OwnerMetadata] = new(owner)
	recs := make([]*armprivatedns.ARecord, 0, len(ips))
	for _, ip := range ips {
		recs = append(recs, &armprivatedns.ARecord{IPv4Address: new(ip)})
	}
	return armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: new(ttl), ARecords: recs, Metadata: md}}
}

// ZoneBody is the zone to create, or the observed one with the owner tag
// and tags set (adoption, new tags); tags others set stay. Zones live in
// location global.
func ZoneBody(observed *armprivatedns.PrivateZone, owner string, tags map[string]string) armprivatedns.PrivateZone {
	var had map[string]*string
	if observed != nil {
		had = observed.Tags
	}
	return armprivatedns.PrivateZone{Location: new("global"), Tags: azure.MergeTags(had, tags, OwnerTag, owner)}
}

// LinkBody is the link of a zone to a virtual network, without
// auto-registration (the operator writes the records).
func LinkBody(vnetID, owner string, tags map[string]string) armprivatedns.VirtualNetworkLink {
	return armprivatedns.VirtualNetworkLink{
		Location: new("global"),
		Tags:     azure.MergeTags(nil, tags, OwnerTag, owner),
		Properties: &armprivatedns.VirtualNetworkLinkProperties{
			VirtualNetwork:      &armprivatedns.SubResource{ID: new(vnetID)},
			RegistrationEnabled: new(false),
		},
	}
}

// LinkedVNet is the virtual network a link points at.
func LinkedVNet(l *armprivatedns.VirtualNetworkLink) string {
	if l == nil || l.Properties == nil || l.Properties.VirtualNetwork == nil {
		return ""
	}
	return ptr.Deref(l.Properties.VirtualNetwork.ID, "")
}

// LinkTo is the link that serves the zone in a virtual network: a
// provisioned link to it when there is one, else any link to it (nil when
// there is none). Azure keeps a link whose operation failed — a second
// link to a network already linked fails inside its operation with
// Conflict and stays, Failed — beside the one that works, so the first
// link to the network in a list is not necessarily the one that serves.
func LinkTo(links []*armprivatedns.VirtualNetworkLink, vnetID string) *armprivatedns.VirtualNetworkLink {
	var found *armprivatedns.VirtualNetworkLink
	for _, l := range links {
		if !strings.EqualFold(LinkedVNet(l), vnetID) {
			continue
		}
		if LinkState(l) == armprivatedns.ProvisioningStateSucceeded {
			return l
		}
		if found == nil {
			found = l
		}
	}
	return found
}

// LinkState is a link's provisioning state.
func LinkState(l *armprivatedns.VirtualNetworkLink) armprivatedns.ProvisioningState {
	if l == nil || l.Properties == nil {
		return ""
	}
	return ptr.Deref(l.Properties.ProvisioningState, "")
}

// RewriteFailedLink reports whether a link should be written again: its
// last operation failed (Azure keeps it Failed until it is written again
// or deleted) and it carries owner, the tag the writer would put on it.
// Another writer's failed link is left to that writer.
func RewriteFailedLink(l *armprivatedns.VirtualNetworkLink, owner string) bool {
	return LinkState(l) == armprivatedns.ProvisioningStateFailed && TagOwner(l.Tags) == owner
}

// API reads and writes private DNS zones, links and A record sets in one
// subscription; SDK implements it. Reads of what does not exist return
// nil, not an error.
type API interface {
	Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error)
	// ZoneCount is how many private DNS zones the subscription holds.
	ZoneCount(ctx context.Context) (int, error)
	PutZone(ctx context.Context, rg, zone, etag string, body armprivatedns.PrivateZone) error
	DeleteZone(ctx context.Context, rg, zone string) error
	Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error)
	PutLink(ctx context.Context, rg, zone, name, etag string, body armprivatedns.VirtualNetworkLink) error
	DeleteLink(ctx context.Context, rg, zone, name string) error
	Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error)
	Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error)
	PutRecord(ctx context.Context, rg, zone, rel, etag string, body armprivatedns.RecordSet) error
	DeleteRecord(ctx context.Context, rg, zone, rel, etag string) error
}

// SDK talks to Private DNS through the Azure SDK for one subscription.
// Zone and link writes are long-running: they are started, not waited on.
type SDK struct {
	Factory *armprivatedns.ClientFactory
}

// Zone returns the zone, or nil when it does not exist.
func (s SDK) Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error) {
	resp, err := s.Factory.NewPrivateZonesClient().Get(ctx, rg, zone, nil)
	if azure.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &resp.PrivateZone, nil
}

// ZoneCount lists the subscription's private DNS zones, every page, and
// counts them (Azure has no count of its own: PrivateZones_List, GET
// /subscriptions/{id}/providers/Microsoft.Network/privateDnsZones).
func (s SDK) ZoneCount(ctx context.Context) (int, error) {
	n := 0
	for pager := s.Factory.NewPrivateZonesClient().NewListPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += len(page.Value)
	}
	return n, nil
}

// PutZone starts creating or updating the zone: etag "" creates it only
// if it does not exist (If-None-Match: *; 412 when it does), otherwise it
// updates only the version the operator read (If-Match). Source: Azure's
// Private DNS REST specification, as armprivatedns documents these
// options ("Set to '*' to allow a new Private DNS zone to be created, but
// to prevent updating an existing zone"; the same for links and record
// sets); ARM answers an unmet condition with 412 PreconditionFailed.
func (s SDK) PutZone(ctx context.Context, rg, zone, etag string, body armprivatedns.PrivateZone) error {
	opts := &armprivatedns.PrivateZonesClientBeginCreateOrUpdateOptions{IfNoneMatch: new("*")}
	if etag != "" {
		opts = &armprivatedns.PrivateZonesClientBeginCreateOrUpdateOptions{IfMatch: new(etag)}
	}
	_, err := s.Factory.NewPrivateZonesClient().BeginCreateOrUpdate(ctx, rg, zone, body, opts)
	return err
}

// DeleteZone starts deleting the zone; a missing one is fine.
func (s SDK) DeleteZone(ctx context.Context, rg, zone string) error {
	_, err := s.Factory.NewPrivateZonesClient().BeginDelete(ctx, rg, zone, nil)
	return azure.IgnoreNotFound(err)
}

// Links lists the zone's virtual network links (none when the zone is
// missing).
func (s SDK) Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error) {
	return collect(ctx, s.Factory.NewVirtualNetworkLinksClient().NewListPager(rg, zone, nil),
		func(p armprivatedns.VirtualNetworkLinksClientListResponse) []*armprivatedns.VirtualNetworkLink {
			return p.Value
		})
}

// PutLink starts creating the link, or writing again the version read
// (etag as PutZone's).
func (s SDK) PutLink(ctx context.Context, rg, zone, name, etag string, body armprivatedns.VirtualNetworkLink) error {
	opts := &armprivatedns.VirtualNetworkLinksClientBeginCreateOrUpdateOptions{IfNoneMatch: new("*")}
	if etag != "" {
		opts = &armprivatedns.VirtualNetworkLinksClientBeginCreateOrUpdateOptions{IfMatch: new(etag)}
	}
	_, err := s.Factory.NewVirtualNetworkLinksClient().BeginCreateOrUpdate(ctx, rg, zone, name, body, opts)
	return err
}

// DeleteLink starts deleting the link; a missing one is fine.
func (s SDK) DeleteLink(ctx context.Context, rg, zone, name string) error {
	_, err := s.Factory.NewVirtualNetworkLinksClient().BeginDelete(ctx, rg, zone, name, nil)
	return azure.IgnoreNotFound(err)
}

// Record returns an A record set, or nil when it does not exist.
func (s SDK) Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error) {
	resp, err := s.Factory.NewRecordSetsClient().Get(ctx, rg, zone, armprivatedns.RecordTypeA, rel, nil)
	if azure.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &resp.RecordSet, nil
}

// Records lists the zone's A record sets.
func (s SDK) Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error) {
	return collect(ctx, s.Factory.NewRecordSetsClient().NewListByTypePager(rg, zone, armprivatedns.RecordTypeA, nil),
		func(p armprivatedns.RecordSetsClientListByTypeResponse) []*armprivatedns.RecordSet { return p.Value })
}

// PutRecord writes an A record set (synchronous in Azure). etag "" creates
// it only if it does not exist (If-None-Match: *), so a record set someone
// else made meanwhile is never overwritten; otherwise it updates only the
// version the operator read (If-Match).
func (s SDK) PutRecord(ctx context.Context, rg, zone, rel, etag string, body armprivatedns.RecordSet) error {
	opts := &armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfNoneMatch: new("*")}
	if etag != "" {
		opts = &armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfMatch: new(etag)}
	}
	_, err := s.Factory.NewRecordSetsClient().CreateOrUpdate(ctx, rg, zone, armprivatedns.RecordTypeA, rel, body, opts)
	return err
}

// DeleteRecord deletes an A record set the operator read at etag; a missing
// one is fine.
func (s SDK) DeleteRecord(ctx context.Context, rg, zone, rel, etag string) error {
	var opts *armprivatedns.RecordSetsClientDeleteOptions
	if etag != "" {
		opts = &armprivatedns.RecordSetsClientDeleteOptions{IfMatch: new(etag)}
	}
	_, err := s.Factory.NewRecordSetsClient().Delete(ctx, rg, zone, armprivatedns.RecordTypeA, rel, opts)
	return azure.IgnoreNotFound(err)
}

func collect[P, T any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*T) ([]*T, error) {
	var out []*T
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if azure.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}
