package wiringdns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// Event reasons of the DNS mode; what it does to zones, links and records
// is recorded with the engine's (dnsengine.Reason*).
const (
	ReasonDNSRecordNotOwned = "DNSRecordSetNotOwned"
	ReasonDNSNotReleased    = "DNSNotReleased"
	ReasonInvalidDNS        = "InvalidDNSNames"
	ReasonDNSNameRefused    = "DNSZoneNameRefused"
	// ReasonDNSNameReserved: a WC's MC-side name would shadow the
	// management cluster's own domain in its network (mcDomain).
	ReasonDNSNameReserved = "DNSNameReserved"
	// ReasonDNSZoneHeld: the cluster's own zone (a template naming
	// .Cluster) exists and another workload cluster made it: two clusters
	// of one name in two namespaces. The holder keeps it.
	ReasonDNSZoneHeld = "DNSZoneHeld"
	// ReasonDNSRecordSetLimit: a record set of the cluster is not created
	// because its zone holds Azure's maximum of record sets (25,000: the
	// shared MC-side zone of many clusters; dnsengine/recordlimit.go).
	// From 90 % the engine's Warning dnsengine.ReasonRecordSetLimitNear
	// goes on the cluster that takes a record set.
	ReasonDNSRecordSetLimit   = "DNSRecordSetLimit"
	reasonDNSZoneReadyMessage = "private DNS records of the wiring are written and linked"
)

// dnsClients gives the Private DNS API of a set's zone: its subscription,
// with the set's identity (the holder cluster's unless the set names one).
type dnsClients interface {
	For(ctx context.Context, set DNSSet) (dns.API, error)
}

// AzureDNS implements dnsClients with the shared client cache, within
// each subscription's Private DNS budget (the engine's).
type AzureDNS struct {
	Clients *azure.Clients
	Engine  *dnsengine.Engine
}

// For implements dnsClients.
func (a AzureDNS) For(ctx context.Context, set DNSSet) (dns.API, error) {
	subject := azure.SubjectOf(set.Holder)
	if set.Identity != nil {
		subject.IdentityRef = set.Identity
	}
	f, err := a.Clients.PrivateDNSFor(ctx, subject, set.Zone.Subscription)
	if err != nil {
		return nil, err
	}
	return a.Engine.Paced(dns.SDK{Factory: f}, set.Zone.Subscription), nil
}

// dnsTarget is the engine's view of a set's zone for its WC.
func (r *DNSReconciler) dnsTarget(u *unstructured.Unstructured, api dns.API, set DNSSet) dnsengine.Target {
	return dnsengine.Target{
		API: api, Zone: set.Zone, Owner: set.owner(), AdoptRecords: r.Opts.DNS.Adopt, Tags: r.Opts.DNS.Tags,
		Event:   func(reason, msg string) { r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, reason, "DNS", "%s", msg) },
		Warning: func(reason, msg string) { r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, reason, "DNS", "%s", msg) },
	}
}

// dnsState is where a DNS set stands after a pass.
type dnsState int

const (
	dnsDone    dnsState = iota // in place (or removed) as desired
	dnsWaiting                 // Azure is working: look again soon
	dnsBlocked                 // a record set belongs to someone else: a person must act
)

// ensureDNS brings one set in place: the zone (created when missing, any
// existing one used), its link to the network (any link to it will do),
// and the records, each written only when missing or different and never
// over a record set someone else wrote. Without IP, it removes the
// operator's records and nothing else.
func (r *DNSReconciler) ensureDNS(ctx context.Context, u *unstructured.Unstructured, set DNSSet) (dnsState, error) {
	memo, fp := set.Owner+"|"+string(set.Side), set.Fingerprint(r.Opts.DNS.TTL)
	now := r.Clock.Now()
	if r.seen.Fresh(memo, fp, now, r.Opts.DNS.Check) {
		return dnsDone, nil
	}
	// While Azure works, one look per pending recheck, whatever else
	// brings the cluster back (its own annotation and condition writes).
	waitMemo := "wait|" + memo
	if r.seen.Fresh(waitMemo, fp, now, r.Opts.PendingRecheckInterval()) {
		return dnsWaiting, nil
	}
	state, err := r.ensureDNSNow(ctx, u, set, memo, fp, now)
	if err == nil && state == dnsWaiting {
		r.seen.Set(waitMemo, fp, now)
	}
	return state, err
}

// ensureDNSNow is ensureDNS's pass through the engine: removal without IP,
// else zone, link and records. Azure Private DNS allows few reads (500 per
// 5 minutes and subscription): what is seen in place is not read again
// within the check interval, across passes and clusters (the engine's
// memo), and what was never written is created without reading first.
func (r *DNSReconciler) ensureDNSNow(ctx context.Context, u *unstructured.Unstructured, set DNSSet, memo, fp string, now time.Time) (dnsState, error) {
	api, err := r.DNS.For(ctx, set)
	if err != nil {
		return dnsWaiting, err
	}
	t := r.dnsTarget(u, api, set)
	if set.IP == "" {
		for _, rel := range set.Records {
			if err := r.dnsEngine().DeleteRecord(ctx, t, rel, "its private endpoint is not ready or no longer wanted"); err != nil {
				return dnsWaiting, err
			}
		}
		r.seen.Set(memo, fp, now)
		return dnsDone, nil
	}
	if set.VNet == "" {
		return dnsWaiting, nil // CAPZ has not written the subnet IDs yet
	}
	had := clusterlink.HasCondition(u, clusterlink.ConditionGSDNSZoneReady)
	zone, err := r.dnsEngine().EnsureZone(ctx, t, had)
	if full := (*dnsengine.ZoneLimitError)(nil); errors.As(err, &full) {
		return dnsBlocked, &setProblemError{Problem: clusterlink.Problem{Cluster: key(&capz.AzureCluster{Namespace: u.GetNamespace(), Name: u.GetName()}), Reason: ReasonDNSZoneLimit, Message: fmt.Sprintf(
			"no private DNS zone %s (%s side) is created: subscription %s holds %d private DNS zones, the limit of %d (Azure allows %d per subscription); share a zone between clusters (docs/dns.md), or delete zones no one needs",
			full.Zone, set.Side, full.Subscription, full.Used, full.Limit, dnsengine.AzureZonesPerSubscription)}}
	}
	if err != nil || !zone.Ready {
		return dnsWaiting, err
	}
	if held := zoneHeldByAnotherCluster(set, zone.Owner, key(&capz.AzureCluster{Namespace: u.GetNamespace(), Name: u.GetName()})); held != nil {
		return dnsBlocked, held
	}
	link, err := r.dnsEngine().EnsureLink(ctx, t, set.VNet, linkOwner(set))
	if err != nil {
		return dnsWaiting, err
	}
	state, err := r.writeRecords(ctx, u, t, set, had)
	if err != nil {
		return state, err
	}
	if state == dnsDone && !link.Ready {
		state = dnsWaiting
	}
	if state == dnsDone {
		r.seen.Set(memo, fp, now)
	}
	return state, nil
}

// writeRecords writes the set's records through the engine. A record set
// someone else wrote makes the set dnsBlocked (with a Warning); record sets
// the zone has no room for are reported, after the others are written, as
// a setProblemError with DNSRecordSetLimit.
func (r *DNSReconciler) writeRecords(ctx context.Context, u *unstructured.Unstructured, t dnsengine.Target, set DNSSet, had bool) (dnsState, error) {
	state := dnsDone
	var full []string
	var limit *dnsengine.RecordSetLimitError
	for _, rel := range set.Records {
		taken, err := r.dnsEngine().WriteRecord(ctx, t, rel, []string{set.IP}, r.Opts.DNS.TTL, had)
		if errors.As(err, &limit) {
			full = append(full, dns.FQDN(rel, set.Zone.Name))
			continue
		}
		if err != nil {
			return dnsWaiting, err
		}
		if taken != nil {
			r.warnOnce(u, ReasonDNSRecordNotOwned, fmt.Sprintf(
				"record set %s exists and was not written for this cluster (metadata %s=%q): the operator leaves it alone; remove it, or start the operator with --wiring-dns-adopt to take over record sets without owner",
				taken.FQDN, dns.OwnerMetadata, taken.Owner))
			state = dnsBlocked
		}
	}
	if limit != nil {
		return dnsBlocked, &setProblemError{wrote: true, Problem: clusterlink.Problem{Cluster: key(&capz.AzureCluster{Namespace: u.GetNamespace(), Name: u.GetName()}), Reason: ReasonDNSRecordSetLimit, Message: fmt.Sprintf(
			"record set(s) %s (%s side) are not created: private DNS zone %s holds %d record sets, Azure's maximum for a zone (%d, its SOA record set included), so those names do not resolve; "+
				"name the zone per namespace or per cluster (--wiring-dns-mc-zone with .Namespace or .Cluster; docs/dns.md), or remove record sets no one needs from it",
			strings.Join(full, ", "), set.Side, set.Zone.Name, limit.Used, limit.Limit)}}
	}
	return state, nil
}

// linkOwner is the owner tag of a set's link: the WC's on the WC side (the
// link is to its own network, whoever shares the zone), shared on the MC
// side of a shared zone (every WC needs the MC's link).
func linkOwner(set DNSSet) string {
	if set.Side == clusterlink.DNSSideWC {
		return set.owner().Value()
	}
	return set.Zone.Owner(set.owner())
}

// releaseDNS undoes a deleted WC's DNS, both sides, in order: its records,
// the links made for it, then the zone the operator made once it is empty
// (only its SOA record, no link). The MC's link to a shared zone stays
// (every cluster uses it), and so that zone too. It reports whether
// everything is released; an error a person must fix (the identity is
// gone, say) is reported and lets the cluster go, so that DNS never blocks
// a deletion.
func (r *DNSReconciler) releaseDNS(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster) (bool, error) {
	ctx = azure.WithDeletionReason(ctx, "the workload cluster's records are released (deleted, or no longer served)")
	if mc == nil {
		mc = &capz.AzureCluster{} // the MC is gone: only the WC side
	}
	sets, _ := DesiredDNS(mc, wc, r.Opts.DNS, nil, nil, nil, r.Opts.Annotation, true)
	done := true
	for _, set := range sets {
		if set.Holder.SubscriptionID == "" || set.Holder.ResourceGroup == "" {
			continue
		}
		gone, err := r.releaseSet(ctx, u, set)
		if err != nil {
			c := azure.Classify(err)
			if c.Class == azure.ClassTerminal {
				r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonDNSNotReleased, "Release",
					"cannot remove the %s-side private DNS of zone %s (%s: %s); it is left as it is", set.Side, set.Zone.Name, c.Reason, c.Message)
				continue
			}
			return false, err
		}
		done = done && gone
	}
	if done {
		r.seen.ForgetTree(key(wc))
		r.seen.ForgetTree("wait|" + key(wc))
		r.seen.ForgetTree("release|" + key(wc))
		for _, set := range sets {
			for _, rel := range set.Records {
				r.dnsEngine().ForgetRecord(set.Zone, rel)
			}
			if !set.Zone.Shared {
				r.dnsEngine().ForgetZone(set.Zone)
			}
		}
	}
	return done, nil
}

// releaseSet releases one side; it reports whether nothing is left to wait
// for.
func (r *DNSReconciler) releaseSet(ctx context.Context, u *unstructured.Unstructured, set DNSSet) (bool, error) {
	api, err := r.DNS.For(ctx, set)
	if err != nil {
		return false, err
	}
	t := r.dnsTarget(u, api, set)
	// Each step done is remembered, so that a pass held back by the budget
	// goes on where the last one stopped.
	step := "release|" + set.Owner + "|" + string(set.Side) + "|"
	now := r.Clock.Now()
	for _, rel := range set.Records {
		if r.seen.Fresh(step+"record|"+rel, "", now, r.Opts.DNS.Check) {
			continue
		}
		if err := r.dnsEngine().DeleteRecord(ctx, t, rel, "its cluster is being deleted"); err != nil {
			return false, err
		}
		r.seen.Set(step+"record|"+rel, "", now)
	}
	links, err := r.dnsEngine().Links(ctx, t)
	if err != nil {
		return false, err
	}
	pending := false
	for _, l := range links {
		// Only the links made for this WC: the MC's link to a shared zone
		// (tagged shared) serves every cluster, and the wiring registers
		// no dnsengine.Users, so the engine keeps every shared link and
		// zone of its kind.
		going, err := r.dnsEngine().DropLink(ctx, t, l)
		if err != nil {
			return false, err
		}
		pending = pending || going
	}
	if pending {
		return false, nil
	}
	return r.dnsEngine().DropZone(ctx, t, len(links))
}

// dnsEngine is the process's Private DNS engine.
func (r *DNSReconciler) dnsEngine() *dnsengine.Engine { return r.Opts.DNSEngine }

// setProblemError: a set that cannot be brought in place until a person
// acts (another workload cluster holds its zone; its zone is full). wrote:
// some of its records may have been written in the pass.
type setProblemError struct {
	clusterlink.Problem
	wrote bool
}

func (e *setProblemError) Error() string { return e.Message }

// zoneHeldByAnotherCluster says whether a per-cluster zone (its template
// names .Cluster) was made by another workload cluster (its owner tag).
// Such a zone is that cluster's: this one writes nothing into it — its
// records would keep the zone after its maker is gone, and nobody would
// delete it — and gets a problem that names the holder only within its own
// namespace. A zone without the operator's tag (made by a person) or
// shared is used as before.
func zoneHeldByAnotherCluster(set DNSSet, owner, wc string) *setProblemError {
	o, ok := dns.ParseOwner(owner)
	if set.Zone.Shared || !ok || o.Kind != dns.KindAzureCluster || o.Namespace+"/"+o.Name == wc {
		return nil
	}
	holder := "another workload cluster"
	if ns, _, _ := strings.Cut(wc, "/"); o.Namespace == ns {
		holder = "workload cluster " + o.Namespace + "/" + o.Name
	}
	return &setProblemError{Problem: clusterlink.Problem{Cluster: wc, Reason: ReasonDNSZoneHeld, Message: fmt.Sprintf(
		"private DNS zone %s (%s side) was made by %s, which holds it: this cluster writes no records there while it does; rename the cluster, or name the zone per namespace (--wiring-dns-mc-zone with .Namespace)",
		set.Zone.Name, set.Side, holder)}}
}
