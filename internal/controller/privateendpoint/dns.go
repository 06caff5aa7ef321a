package privateendpoint

import (
	"context"
	"errors"
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
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// dnsTarget is the engine's view of one of the object's zones.
func (r *Reconciler) dnsTarget(obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) dnsengine.Target {
	return dnsengine.Target{
		API: api, Zone: zone, Owner: dnsOwner(obj), AdoptZone: obj.Spec.Adopt, AdoptRecords: obj.Spec.Adopt,
		Tags: azure.Tags(r.Opts.Tags, obj.Spec.Tags),
		Event: func(reason, msg string) {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "DNS", "%s", msg)
		},
		Warning: func(reason, msg string) {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "DNS", "%s", msg)
		},
	}
}

// slotTarget is the engine's view of a slot, through the API of the
// slot's subscription with the slot's identity.
func (r *Reconciler) slotTarget(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, s slot) (dnsengine.Target, error) {
	d, err := api.dnsFor(ctx, s.zone.Subscription, s.ref)
	if err != nil {
		return dnsengine.Target{}, err
	}
	return r.dnsTarget(obj, d, s.zone), nil
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
		c.ObservedGeneration == obj.Generation && c.Reason == ReasonReady && len(stale(obj)) == 0 {
		r.dnsEngine().Spread(&r.dnsSeen, dnsMemo(obj), fp)
	}
	return r.dnsEngine().Fresh(&r.dnsSeen, dnsMemo(obj), fp)
}

// dnsInfra prepares every zone of the object and its links whatever the
// connection's state (by themselves they point nowhere), so that the
// records can be written the moment the connection is Approved. It
// releases first what the spec no longer asks for (no DNS, a zone moved
// or removed). It reports whether every zone is ready for records and
// whether every link is. Without spec.dns both are true. ok is false when
// a failure was recorded on DNSReady.
func (r *Reconciler) dnsInfra(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (res ctrl.Result, zoneReady, linked, ok bool, err error) {
	cond := v1alpha1.ConditionDNSReady
	fail := func(err error) (ctrl.Result, bool, bool, bool, error) {
		res, err := r.fail(ctx, obj, cond, err)
		return res, false, false, false, err
	}
	for ss := stale(obj); len(ss) > 0; ss = stale(obj) {
		// One at a time: a released additional zone's status entry goes,
		// which moves the others.
		if done, res, err := r.releaseSlot(ctx, obj, api, ss[0]); !done || err != nil {
			return res, false, false, err == nil, err
		}
	}
	if obj.Spec.DNS == nil {
		setCondition(obj, cond, metav1.ConditionTrue, ReasonNotRequested, "spec.dns is not set")
		return ctrl.Result{}, true, true, true, nil
	}
	if r.dnsInPlace(obj) {
		return ctrl.Result{}, true, true, true, nil
	}
	zoneReady, linked = true, true
	for _, s := range wanted(obj) {
		if err := r.Opts.ZoneGuard.Check(s.zone.Name); err != nil {
			// The spec is the tenant's: a zone that would take Azure's own
			// names away from the linked networks is never created or adopted.
			return fail(&azure.ClassifiedError{Classification: azure.Classification{
				Class: azure.ClassTerminal, Reason: ReasonZoneNameRefused, Message: "the private DNS zone " + s.zone.Name + " of spec.dns is refused: " + err.Error(),
			}})
		}
		ready, l, err := r.slotInfra(ctx, obj, api, s)
		if err != nil {
			return fail(err)
		}
		zoneReady, linked = zoneReady && ready, linked && l
	}
	if !zoneReady || !linked {
		return r.requeueSoon(ctx), zoneReady, linked, true, nil
	}
	return ctrl.Result{}, true, true, true, nil
}

// slotInfra makes sure one zone exists and is linked; it reports whether
// the zone is ready and whether every link is, and says on DNSReady what
// Azure is doing while not.
func (r *Reconciler) slotInfra(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, s slot) (bool, bool, error) {
	cond := v1alpha1.ConditionDNSReady
	t, err := r.slotTarget(ctx, obj, api, s)
	if err != nil {
		return false, false, err
	}
	existing := strings.EqualFold(*s.st.id, s.zone.ID()) && (len(*s.st.fqdns) > 0 || len(*s.st.links) > 0)
	// The status names the zone (and the identity it is written with)
	// before the create: a release finds it.
	*s.st.id, *s.st.ref = s.zone.ID(), s.ref
	st, err := r.dnsEngine().EnsureZone(ctx, t, existing)
	var full *dnsengine.ZoneLimitError
	if errors.As(err, &full) {
		return false, false, terminal(ReasonZoneLimit,
			"private DNS zone %s is not created: subscription %s holds %d private DNS zones, the limit of %d (Azure allows %d per subscription), so the object's names do not resolve; "+
				"share a zone between objects (zoneMode Shared, or one spec.dns.zoneName), put the zone in another subscription, or delete zones no one needs",
			full.Zone, full.Subscription, full.Used, full.Limit, dnsengine.AzureZonesPerSubscription)
	}
	if err != nil {
		return false, false, err
	}
	if !st.Ready {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, st.Progress)
		return false, false, nil
	}
	if c := meta.FindStatusCondition(obj.Status.Conditions, cond); st.Foreign && (c == nil || c.Status != metav1.ConditionTrue) {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneNotOwned, "Use",
			"private DNS zone %s exists and is not this object's (owner %q): the records go into it, and the operator never deletes it", s.zone.Name, st.Owner)
	}
	linked, err := r.links(ctx, obj, t, s)
	if err != nil {
		return true, false, err
	}
	if !linked {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "linking private DNS zone "+s.zone.Name+" to the virtual networks")
	}
	return true, linked, nil
}

// dnsRecords writes the records of an Approved endpoint with an address in
// every zone, each only when missing or different, and never over a
// record set someone else wrote; DNSReady is True once they and every
// link are in place. An object whose DNS is in place is looked at again
// only every DNSCheck.
func (r *Reconciler) dnsRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, linked bool) (ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	if obj.Spec.DNS == nil || r.dnsEngine().Fresh(&r.dnsSeen, dnsMemo(obj), fingerprint(obj)) {
		return ctrl.Result{}, nil
	}
	var taken []string
	for _, s := range wanted(obj) {
		t, err := r.slotTarget(ctx, obj, api, s)
		if err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		by, err := r.writeRecords(ctx, obj, t, s)
		if err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		taken = append(taken, by...)
	}
	if len(taken) > 0 {
		return r.fail(ctx, obj, cond, terminal(ReasonRecordNotOwned, "record set(s) %s exist and were not written for this object (metadata %s); the operator leaves them alone: remove them, pick other spec.dns.records, or set spec.adopt",
			strings.Join(taken, ", "), dns.OwnerMetadata))
	}
	if !linked {
		return r.requeueSoon(ctx), nil
	}
	fqdns := allFQDNs(obj)
	setCondition(obj, cond, metav1.ConditionTrue, ReasonReady,
		fmt.Sprintf("%s resolve to %s from %d linked virtual network(s)", strings.Join(fqdns, ", "), strings.Join(obj.Status.IPAddresses, ", "), len(vnets(obj))))
	r.dnsEngine().Mark(&r.dnsSeen, dnsMemo(obj), fingerprint(obj))
	return ctrl.Result{}, nil
}

// links makes sure a zone is linked to every virtual network the object
// needs (any link to the network will do, whoever made it), and removes
// the links it used before and no longer needs. It reports whether every
// needed link is provisioned.
func (r *Reconciler) links(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target, s slot) (bool, error) {
	ready, used := true, []string{}
	for _, v := range vnets(obj) {
		if !containsFold(*s.st.links, linkID(t.Zone, v)) {
			// A new link: within Azure's links per zone (linklimit.go).
			if err := r.admitLink(ctx, obj, t.Zone, v); err != nil {
				return false, err
			}
		}
		l, err := r.dnsEngine().EnsureLink(ctx, t, v, t.Zone.Owner(t.Owner))
		if err != nil {
			return false, err
		}
		used, ready = append(used, l.ID), ready && l.Ready
	}
	if slices.ContainsFunc(*s.st.links, func(id string) bool { return !containsFold(used, id) }) {
		if err := r.dropUnusedLinks(ctx, t, *s.st.links, used); err != nil {
			return false, err
		}
	}
	*s.st.links = used
	return ready, nil
}

// dropUnusedLinks drops the links the object used before (had) and no
// longer uses, unless another live object on the zone needs their
// network (the engine decides, from zoneUsers).
func (r *Reconciler) dropUnusedLinks(ctx context.Context, t dnsengine.Target, had, used []string) error {
	existing, err := r.dnsEngine().Links(ctx, t)
	if err != nil {
		return err
	}
	for _, l := range existing {
		id := ptr.Deref(l.ID, "")
		if !containsFold(had, id) || containsFold(used, id) {
			continue
		}
		if _, err := r.dnsEngine().DropLink(ctx, t, l); err != nil {
			return err
		}
	}
	return nil
}

// writeRecords writes each record set of a slot with the endpoint's
// address, and deletes the ones the object wrote there before and no
// longer names. A record set the operator did not write is left alone
// unless the spec adopts it: it returns those, with their owners. A new
// record set in a zone that holds Azure's maximum is not created: the
// others are written, and the error is the terminal
// PrivateDNSRecordSetLimit.
func (r *Reconciler) writeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target, s slot) ([]string, error) {
	ips, ttl, zone := obj.Status.IPAddresses, ttl(obj.Spec.DNS), t.Zone
	var written, taken, full []string
	var limit *dnsengine.RecordSetLimitError
	for _, rel := range s.records {
		fqdn := dns.FQDN(rel, zone.Name)
		by, err := r.dnsEngine().WriteRecord(ctx, t, rel, ips, ttl, slices.Contains(*s.st.fqdns, fqdn))
		if errors.As(err, &limit) {
			full = append(full, fqdn)
			continue
		}
		if err != nil {
			return nil, err
		}
		if by != nil {
			taken = append(taken, fmt.Sprintf("%s (owner %q)", fqdn, by.Owner))
			continue
		}
		written = append(written, fqdn)
	}
	for _, fqdn := range *s.st.fqdns {
		if slices.Contains(written, fqdn) || !strings.HasSuffix(fqdn, zone.Name) {
			continue
		}
		if err := r.dnsEngine().DeleteRecord(ctx, t, dns.RelativeName(fqdn, zone.Name), ""); err != nil {
			return nil, err
		}
	}
	*s.st.fqdns = written
	if limit != nil {
		return taken, terminal(ReasonRecordSetLimit,
			"record set(s) %s are not created: private DNS zone %s holds %d record sets, Azure's maximum for a zone (%d, its SOA record set included), so those names do not resolve; "+
				"put the names beyond it in another zone (another spec.dns.zoneName, or zoneMode Own), or remove record sets no one needs from the zone",
			strings.Join(full, ", "), zone.Name, limit.Used, limit.Limit)
	}
	return taken, nil
}

// removeRecords deletes the records the object wrote, in every zone: the
// rule "a record exists only while an Approved endpoint of its owner holds
// that address".
//
// DNSReady stops saying the records are in place when it did (a caller
// that knows why says so first): a DNSReady that still said so would let
// the next pass take the records as written (dnsInPlace), and an endpoint
// made again with the same address would be left without them.
func (r *Reconciler) removeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	removed := false
	for _, s := range held(obj) {
		if len(*s.st.fqdns) == 0 {
			continue
		}
		t, err := r.slotTarget(ctx, obj, api, s)
		if err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		if err := r.deleteRecords(ctx, obj, t, s); err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		removed = true
	}
	forgetObject(&r.dnsSeen, owner(obj))
	if c := meta.FindStatusCondition(obj.Status.Conditions, cond); removed && c != nil && c.Status == metav1.ConditionTrue {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonRecordsRemoved,
			"the records were removed with the endpoint they pointed at; they are written again with the address of its successor once it is Approved")
	}
	return ctrl.Result{}, nil
}

// deleteRecords deletes the records the object wrote in a slot: with one
// list of the zone when the spec makes the zone the object's own (few
// other record sets), else one read each (a shared zone holds every
// object's).
func (r *Reconciler) deleteRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, t dnsengine.Target, s slot) error {
	rels := make([]string, 0, len(*s.st.fqdns))
	for _, fqdn := range *s.st.fqdns {
		rels = append(rels, dns.RelativeName(fqdn, s.zone.Name))
	}
	own := slices.ContainsFunc(zonesOf(obj), func(z dns.Zone) bool { return z.Key() == s.zone.Key() && !z.Shared })
	var err error
	if own {
		err = r.dnsEngine().DeleteRecords(ctx, t, rels, "")
	} else {
		for _, rel := range rels {
			if err = r.dnsEngine().DeleteRecord(ctx, t, rel, ""); err != nil {
				break
			}
		}
	}
	if err == nil {
		*s.st.fqdns = nil
	}
	return err
}

// releaseDNS undoes the object's DNS in every zone it holds something in.
// It reports whether everything is released.
func (r *Reconciler) releaseDNS(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (bool, ctrl.Result, error) {
	for hs := held(obj); len(hs) > 0; hs = held(obj) {
		if done, res, err := r.releaseSlot(ctx, obj, api, hs[0]); !done || err != nil {
			return false, res, err
		}
	}
	forgetObject(&r.dnsSeen, owner(obj))
	return true, ctrl.Result{}, nil
}

// releaseSlot undoes the object's DNS in one zone, in order: its records,
// the links it used that nobody else needs, then the zone if the operator
// made it for this object (or it is shared and unused) and it is empty.
// It reports whether everything is released; the slot's status is then
// empty (an additional zone's entry is removed).
//
// A shared zone is deleted by the last object that leaves it: an object
// waits while others being deleted still hold records or links in the
// zone, instead of leaving the zone to them — two objects that each saw
// the other's records and left would leave it behind for good. A stale
// view of the others only makes it wait longer.
func (r *Reconciler) releaseSlot(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, s slot) (bool, ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	zone := s.zone
	zone.Shared = true // the zone's tag says what it is; Shared only widens the checks
	failed := func(err error) (bool, ctrl.Result, error) {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	t, err := r.slotTarget(ctx, obj, api, slot{zone: zone, ref: s.ref})
	if err != nil {
		return failed(err)
	}
	if err := r.deleteRecords(ctx, obj, t, s); err != nil {
		return failed(err)
	}
	forgetObject(&r.dnsSeen, owner(obj))
	others, err := r.zoneUsers(ctx, dnsOwner(obj), zone)
	if err != nil {
		return failed(err)
	}
	if len(*s.st.links) == 0 && others.waiting() {
		// Nothing of this object's is left in the zone: wait for the others
		// without reading Azure. Every read counts against the
		// subscription's Private DNS window, which they need to finish.
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, waitingMessage(zone, others))
		return false, r.requeueSoon(ctx), nil
	}
	pending, err := r.dropSlotLinks(ctx, t, s)
	if err != nil {
		return failed(err)
	}
	if pending {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "removing virtual network links of private DNS zone "+zone.Name)
		return false, r.requeueSoon(ctx), nil
	}
	if others.waiting() {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, waitingMessage(zone, others))
		return false, r.requeueSoon(ctx), nil
	}
	done, err := r.dnsEngine().DropZone(ctx, t, -1)
	if err != nil {
		return failed(err)
	}
	if !done {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting private DNS zone "+zone.Name)
		return false, r.requeueSoon(ctx), nil
	}
	if s.st.id == &obj.Status.DNSZoneID {
		obj.Status.DNSZoneID, obj.Status.DNSIdentityRef = "", nil
	} else {
		dropEntry(obj, *s.st.id)
	}
	return true, ctrl.Result{}, nil
}

// dropSlotLinks starts deleting the links of a slot the object used and
// no other live object needs (the engine decides, from zoneUsers); it
// reports whether any is going. The links are listed once and not
// watched: the zone's own link count says when they are gone (DropZone),
// which saves a subscription's scarce reads.
func (r *Reconciler) dropSlotLinks(ctx context.Context, t dnsengine.Target, s slot) (bool, error) {
	if len(*s.st.links) == 0 {
		return false, nil
	}
	existing, err := r.dnsEngine().Links(ctx, t)
	if err != nil {
		return false, err
	}
	pending := false
	for _, l := range existing {
		if !containsFold(*s.st.links, ptr.Deref(l.ID, "")) {
			continue
		}
		going, err := r.dnsEngine().DropLink(ctx, t, l)
		if err != nil {
			return false, err
		}
		pending = pending || going
	}
	*s.st.links = nil
	return pending, nil
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

// waiting says whether a release waits for others to leave: nobody live
// keeps the zone, and someone being deleted still holds something in it.
func (u users) waiting() bool { return !u.live && len(u.leaving)+u.leavingElsewhere > 0 }

// zoneUsers reads the other objects on a zone than self from the cache
// (read only: a shared zone's objects are listed on every release). An
// object of self's namespace and name is self: DNS is owned by name.
func (r *Reconciler) zoneUsers(ctx context.Context, self dns.Owner, zone dns.Zone) (users, error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{zoneIndex: zone.Key()}, client.UnsafeDisableDeepCopy); err != nil {
		return users{}, err
	}
	var u users
	for i := range list.Items {
		o := &list.Items[i]
		switch {
		case o.Namespace == self.Namespace && o.Name == self.Name || !names(o, zone):
		case o.DeletionTimestamp == nil:
			u.live, u.nets = true, append(u.nets, vnets(o)...)
		case !holds(o, zone):
		case o.Namespace == self.Namespace:
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

// dnsEngine is the process's Private DNS engine; Setup tells it who uses
// a zone among the AzurePrivateEndpoints (zoneUsersOf): it alone decides
// when a shared zone or link may go.
func (r *Reconciler) dnsEngine() *dnsengine.Engine { return r.Opts.DNSEngine }

// zoneUsersOf answers the DNS engine who else uses a zone among the
// AzurePrivateEndpoints (dnsengine.Users).
type zoneUsersOf struct{ r *Reconciler }

// Others implements dnsengine.Users.
func (z zoneUsersOf) Others(ctx context.Context, self dns.Owner, zone dns.Zone) (dnsengine.ZoneUsers, error) {
	u, err := z.r.zoneUsers(ctx, self, zone)
	return dnsengine.ZoneUsers{Live: u.live, Networks: u.nets}, err
}

// Live implements dnsengine.Users.
func (z zoneUsersOf) Live(ctx context.Context, o dns.Owner) (bool, error) {
	return z.r.liveOwner(ctx, o)
}

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
