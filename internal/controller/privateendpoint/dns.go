package privateendpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// zoneOf is the zone the spec names.
func zoneOf(obj *v1alpha1.AzurePrivateEndpoint) dns.Zone {
	d := obj.Spec.DNS
	rg := d.ZoneResourceGroup
	if rg == "" {
		rg = obj.Spec.ResourceGroup
	}
	return dns.Zone{Subscription: obj.Spec.SubscriptionID, ResourceGroup: rg, Name: d.ZoneName, Shared: d.ZoneMode == v1alpha1.ZoneModeShared}
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
func forgetObject(m *memo.Memo, key string) {
	m.ForgetFunc(func(k string) bool {
		_, rest, ok := strings.Cut(k, "|")
		return ok && (rest == key || strings.HasPrefix(rest, key+"|"))
	})
}

// fingerprint is what the DNS depends on: the spec and the address.
func fingerprint(obj *v1alpha1.AzurePrivateEndpoint) string {
	return fmt.Sprintf("%d|%s", obj.Generation, strings.Join(obj.Status.IPAddresses, ","))
}

// dnsTarget is the engine's view of the object's zone.
func (r *Reconciler) dnsTarget(obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) dnsengine.Target {
	return dnsengine.Target{
		API: api, Zone: zone, Owner: dnsOwner(obj), AdoptZone: obj.Spec.Adopt, AdoptRecords: obj.Spec.Adopt,
		Event: func(reason, msg string) {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "DNS", "%s", msg)
		},
	}
}

// dnsMemo is the memo key of an object's whole DNS: set once every record
// and link is in place, for its spec and address (fingerprint). While it
// is fresh the object's DNS is not looked at.
func dnsMemo(obj *v1alpha1.AzurePrivateEndpoint) string { return "dns|" + owner(obj) }

// dnsInPlace says whether the object's DNS was verified within the check
// interval. A process that starts finds every object's DNS unverified: an
// object whose DNSReady says it is in place, for this generation and
// address, gets its first check at a random point of the check interval
// instead of at once (Azure allows 500 Private DNS reads per 5 minutes
// and subscription).
func (r *Reconciler) dnsInPlace(obj *v1alpha1.AzurePrivateEndpoint) bool {
	fp := fingerprint(obj)
	if c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.ConditionDNSReady); c != nil && c.Status == metav1.ConditionTrue &&
		c.ObservedGeneration == obj.Generation && c.Reason == ReasonReady && strings.EqualFold(obj.Status.DNSZoneID, zoneOf(obj).ID()) {
		r.dnsEngine().Spread(&r.dnsSeen, dnsMemo(obj), fp)
	}
	return r.dnsEngine().Fresh(&r.dnsSeen, dnsMemo(obj), fp)
}

// dnsInfra prepares the zone and its links whatever the connection's state
// (by themselves they point nowhere), so that the records can be written
// the moment the connection is Approved. It releases the DNS of a spec that
// no longer asks for it (or moved it to another zone) first. It reports
// whether the zone is ready for records and whether every link is. Without
// spec.dns both are true. ok is false when a failure was recorded on
// DNSReady.
func (r *Reconciler) dnsInfra(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (res ctrl.Result, zoneReady, linked, ok bool, err error) {
	cond := v1alpha1.ConditionDNSReady
	spec := obj.Spec.DNS
	fail := func(err error) (ctrl.Result, bool, bool, bool, error) {
		res, err := r.fail(ctx, obj, cond, err)
		return res, false, false, false, err
	}
	if spec == nil || (obj.Status.DNSZoneID != "" && !strings.EqualFold(obj.Status.DNSZoneID, zoneOf(obj).ID())) {
		// No DNS any more, or a different zone: release the old one first.
		if done, res, err := r.releaseDNS(ctx, obj, api); !done || err != nil {
			return res, false, false, err == nil, err
		}
	}
	if spec == nil {
		setCondition(obj, cond, metav1.ConditionTrue, ReasonNotRequested, "spec.dns is not set")
		return ctrl.Result{}, true, true, true, nil
	}
	if r.dnsInPlace(obj) {
		return ctrl.Result{}, true, true, true, nil
	}
	zone := zoneOf(obj)
	if err := r.Opts.ZoneGuard.Check(zone.Name); err != nil {
		// The spec is the tenant's: a zone that would take Azure's own
		// names away from the linked networks is never created or adopted.
		return fail(&azure.ClassifiedError{Classification: azure.Classification{
			Class: azure.ClassTerminal, Reason: ReasonZoneNameRefused, Message: "spec.dns.zoneName is refused: " + err.Error(),
		}})
	}
	t := r.dnsTarget(obj, api, zone)
	existing := strings.EqualFold(obj.Status.DNSZoneID, zone.ID())
	obj.Status.DNSZoneID = zone.ID() // before the create: a release finds it
	st, err := r.dnsEngine().EnsureZone(ctx, t, existing)
	if err != nil {
		return fail(err)
	}
	if !st.Ready {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, st.Progress)
		return r.requeueSoon(), false, false, true, nil
	}
	if c := meta.FindStatusCondition(obj.Status.Conditions, cond); st.Foreign && (c == nil || c.Status != metav1.ConditionTrue) {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneNotOwned, "Use",
			"private DNS zone %s exists and is not this object's (owner %q): the records go into it, and the operator never deletes it", zone.Name, st.Owner)
	}
	linked, err = r.links(ctx, obj, t)
	if err != nil {
		return fail(err)
	}
	if !linked {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "linking private DNS zone "+zone.Name+" to the virtual networks")
		return r.requeueSoon(), true, false, true, nil
	}
	return ctrl.Result{}, true, true, true, nil
}

// dnsRecords writes the records of an Approved endpoint with an address,
// each only when missing or different, and never over a record set someone
// else wrote; DNSReady is True once they and every link are in place. An
// object whose DNS is in place is looked at again only every DNSCheck.
func (r *Reconciler) dnsRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, linked bool) (ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	if obj.Spec.DNS == nil || r.dnsEngine().Fresh(&r.dnsSeen, dnsMemo(obj), fingerprint(obj)) {
		return ctrl.Result{}, nil
	}
	if err := r.writeRecords(ctx, obj, r.dnsTarget(obj, api, zoneOf(obj))); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if !linked {
		return r.requeueSoon(), nil
	}
	setCondition(obj, cond, metav1.ConditionTrue, ReasonReady,
		fmt.Sprintf("%s resolve to %s from %d linked virtual network(s)", strings.Join(obj.Status.FQDNs, ", "), strings.Join(obj.Status.IPAddresses, ", "), len(obj.Status.VirtualNetworkLinks)))
	r.dnsEngine().Mark(&r.dnsSeen, dnsMemo(obj), fingerprint(obj))
	return ctrl.Result{}, nil
}

// links makes sure the zone is linked to every virtual network the object
// needs (any link to the network will do, whoever made it), and removes
// the links it used before and no longer needs. It reports whether every
// needed link is provisioned.
func (r *Reconciler) links(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target) (bool, error) {
	ready, used := true, []string{}
	for _, v := range vnets(obj) {
		l, err := r.dnsEngine().EnsureLink(ctx, t, v, t.Zone.Owner(t.Owner.Value()))
		if err != nil {
			return false, err
		}
		used, ready = append(used, l.ID), ready && l.Ready
	}
	if slices.ContainsFunc(obj.Status.VirtualNetworkLinks, func(id string) bool { return !containsFold(used, id) }) {
		if err := r.dropUnusedLinks(ctx, obj, t, used); err != nil {
			return false, err
		}
	}
	obj.Status.VirtualNetworkLinks = used
	return ready, nil
}

// dropUnusedLinks drops the links the object used before (status) and no
// longer uses, unless another live object on the zone needs their
// network.
func (r *Reconciler) dropUnusedLinks(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target, used []string) error {
	existing, err := r.dnsEngine().Links(ctx, t)
	if err != nil {
		return err
	}
	others, err := r.zoneUsers(ctx, obj, t.Zone)
	if err != nil {
		return err
	}
	for _, l := range existing {
		id := ptr.Deref(l.ID, "")
		if !containsFold(obj.Status.VirtualNetworkLinks, id) || containsFold(used, id) || others.needs(dns.LinkedVNet(l)) {
			continue
		}
		if _, err := r.dnsEngine().DropLink(ctx, t, l, true); err != nil {
			return err
		}
	}
	return nil
}

// writeRecords writes each record set the spec names with the endpoint's
// address, and deletes the ones the object wrote before and no longer
// names. A record set the operator did not write is left alone unless the
// spec adopts it.
func (r *Reconciler) writeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target) error {
	ips, ttl, zone := obj.Status.IPAddresses, ttl(obj.Spec.DNS), t.Zone
	var written, taken []string
	for _, rel := range records(obj.Spec.DNS) {
		fqdn := dns.FQDN(rel, zone.Name)
		by, err := r.dnsEngine().WriteRecord(ctx, t, rel, ips, ttl, slices.Contains(obj.Status.FQDNs, fqdn))
		if err != nil {
			return err
		}
		if by != nil {
			taken = append(taken, fmt.Sprintf("%s (owner %q)", fqdn, by.Owner))
			continue
		}
		written = append(written, fqdn)
	}
	for _, fqdn := range obj.Status.FQDNs {
		if slices.Contains(written, fqdn) || !strings.HasSuffix(fqdn, zone.Name) {
			continue
		}
		if err := r.dnsEngine().DeleteRecord(ctx, t, dns.RelativeName(fqdn, zone.Name), ""); err != nil {
			return err
		}
	}
	obj.Status.FQDNs = written
	if len(taken) > 0 {
		return terminal(ReasonRecordNotOwned, "record set(s) %s exist and were not written for this object (metadata %s); the operator leaves them alone: remove them, pick other spec.dns.records, or set spec.adopt",
			strings.Join(taken, ", "), dns.OwnerMetadata)
	}
	return nil
}

// removeRecords deletes the records the object wrote (status.fqdns).
func (r *Reconciler) removeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (ctrl.Result, error) {
	zone, ok := dns.ZoneFromID(obj.Status.DNSZoneID)
	if !ok || len(obj.Status.FQDNs) == 0 {
		return ctrl.Result{}, nil
	}
	t := r.dnsTarget(obj, api, zone)
	for _, fqdn := range obj.Status.FQDNs {
		if err := r.dnsEngine().DeleteRecord(ctx, t, dns.RelativeName(fqdn, zone.Name), ""); err != nil {
			return r.fail(ctx, obj, v1alpha1.ConditionDNSReady, err)
		}
	}
	obj.Status.FQDNs = nil
	forgetObject(&r.dnsSeen, owner(obj))
	return ctrl.Result{}, nil
}

// releaseDNS undoes the object's DNS in order: its records, the links it
// used that nobody else needs, then the zone if the operator made it for
// this object (or it is shared and unused) and it is empty. It reports
// whether everything is released.
//
// A shared zone is deleted by the last object that leaves it: an object
// waits while others being deleted still hold records or links in the
// zone, instead of leaving the zone to them — two objects that each saw
// the other's records and left would leave it behind for good. A stale
// view of the others only makes it wait longer.
func (r *Reconciler) releaseDNS(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (bool, ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	zone, ok := dns.ZoneFromID(obj.Status.DNSZoneID)
	if !ok {
		return true, ctrl.Result{}, nil
	}
	zone.Shared = true // the zone's tag says what it is; Shared only widens the checks
	failed := func(err error) (bool, ctrl.Result, error) {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	if res, err := r.removeRecords(ctx, obj, api); err != nil {
		return false, res, err
	}
	others, err := r.zoneUsers(ctx, obj, zone)
	if err != nil {
		return failed(err)
	}
	if len(obj.Status.VirtualNetworkLinks) == 0 && others.waiting() {
		// Nothing of this object's is left in the zone: wait for the others
		// without reading Azure. Every read counts against the
		// subscription's Private DNS window, which they need to finish.
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, waitingMessage(zone, others))
		return false, r.requeueSoon(), nil
	}
	t := r.dnsTarget(obj, api, zone)
	existing, err := r.dnsEngine().Links(ctx, t)
	if err != nil {
		return failed(err)
	}
	pending := false
	for _, l := range existing {
		if !containsFold(obj.Status.VirtualNetworkLinks, ptr.Deref(l.ID, "")) || others.needs(dns.LinkedVNet(l)) {
			continue
		}
		going, err := r.dnsEngine().DropLink(ctx, t, l, true)
		if err != nil {
			return failed(err)
		}
		pending = pending || going
	}
	if pending {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "removing virtual network links")
		return false, r.requeueSoon(), nil
	}
	obj.Status.VirtualNetworkLinks = nil
	if others.waiting() {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, waitingMessage(zone, others))
		return false, r.requeueSoon(), nil
	}
	done, err := r.dnsEngine().DropZone(ctx, t, dnsengine.ZoneRelease{Links: len(existing), OthersLive: others.live, Live: r.liveOwner})
	if err != nil {
		return failed(err)
	}
	if !done {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting private DNS zone "+zone.Name)
		return false, r.requeueSoon(), nil
	}
	obj.Status.DNSZoneID = ""
	return true, ctrl.Result{}, nil
}

// liveOwner says whether the AzurePrivateEndpoint o is live (not gone, not
// being deleted), read from the API server, not the cache: an object the
// cache does not hold yet must not lose its records.
func (r *Reconciler) liveOwner(ctx context.Context, o dns.Owner) (bool, error) {
	other := &v1alpha1.AzurePrivateEndpoint{}
	err := r.reader().Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, other)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil && other.DeletionTimestamp == nil, err
}

// users are the other objects whose spec names a zone: the networks the
// live ones need it linked to, and those being deleted that still hold
// records or links in it (by their status, as last written) — named when
// they are in the object's namespace, counted otherwise, so that a
// tenant's conditions never name another namespace's objects.
type users struct {
	live             bool
	nets             []string
	leaving          []string
	leavingElsewhere int
}

// needs says whether a live object needs the zone linked to vnet.
func (u users) needs(vnet string) bool { return containsFold(u.nets, vnet) }

// waiting says whether a release waits for others to leave: nobody live
// keeps the zone, and someone being deleted still holds something in it.
func (u users) waiting() bool { return !u.live && len(u.leaving)+u.leavingElsewhere > 0 }

// zoneUsers reads the other objects on a zone from the cache (read only:
// a shared zone's objects are listed on every release).
func (r *Reconciler) zoneUsers(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, zone dns.Zone) (users, error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{zoneIndex: zone.Key()}, client.UnsafeDisableDeepCopy); err != nil {
		return users{}, err
	}
	var u users
	for i := range list.Items {
		o := &list.Items[i]
		switch {
		case o.UID == obj.UID || o.Spec.DNS == nil || zoneOf(o).Key() != zone.Key():
		case o.DeletionTimestamp == nil:
			u.live, u.nets = true, append(u.nets, vnets(o)...)
		case !strings.EqualFold(o.Status.DNSZoneID, zone.ID()) || len(o.Status.FQDNs) == 0 && len(o.Status.VirtualNetworkLinks) == 0:
		case o.Namespace == obj.Namespace:
			u.leaving = append(u.leaving, o.Name)
		default:
			u.leavingElsewhere++
		}
	}
	slices.Sort(u.leaving)
	return u, nil
}

// waitingMessage says which objects being deleted a release waits for.
func waitingMessage(zone dns.Zone, u users) string {
	var who []string
	if n := len(u.leaving); n > 0 {
		names := strings.Join(u.leaving[:min(n, 5)], ", ")
		if n > 5 {
			names += fmt.Sprintf(" and %d more", n-5)
		}
		who = append(who, names)
	}
	if u.leavingElsewhere > 0 {
		who = append(who, fmt.Sprintf("%d object(s) in other namespaces", u.leavingElsewhere))
	}
	return fmt.Sprintf("private DNS zone %s is deleted with the last object that uses it: waiting for %s, also being deleted, to remove their records and links",
		zone.Name, strings.Join(who, " and "))
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

// dnsEngine is the process's Private DNS engine.
func (r *Reconciler) dnsEngine() *dnsengine.Engine { return r.Opts.DNSEngine }

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
