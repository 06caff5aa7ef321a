package privateendpoint

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
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

// dnsInfra prepares the zone and its links whatever the connection's state
// (by themselves they point nowhere), so that the records can be written
// the moment the connection is Approved. It releases the DNS of a spec that
// no longer asks for it (or moved it to another zone) first. It reports
// whether the zone is ready for records and whether every link is. Without
// spec.dns both are true. ok is false when a failure was recorded on
// DNSReady.
func (r *Reconciler) dnsInfra(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (res ctrl.Result, zoneReady, linked, ok bool, err error) {
	cond := v1alpha1.ConditionDNSReady
	spec, key := obj.Spec.DNS, owner(obj)
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
	now := r.clock().Now()
	if r.dnsSeen.Fresh("links|"+key, fmt.Sprint(obj.Generation), now, r.Opts.DNSCheck) {
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
	if !r.dnsSeen.Fresh("zone|"+key, fmt.Sprint(obj.Generation), now, r.Opts.DNSCheck) {
		ready, err := r.ensureZone(ctx, obj, api, zone)
		if err != nil {
			return fail(err)
		}
		if !ready {
			return r.requeueSoon(), false, false, true, nil
		}
		r.dnsSeen.Set("zone|"+key, fmt.Sprint(obj.Generation), now)
	}
	linked, err = r.links(ctx, obj, api, zone)
	if err != nil {
		return fail(err)
	}
	if !linked {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "linking private DNS zone "+zone.Name+" to the virtual networks")
		return r.requeueSoon(), true, false, true, nil
	}
	r.dnsSeen.Set("links|"+key, fmt.Sprint(obj.Generation), now)
	return ctrl.Result{}, true, true, true, nil
}

// ensureZone observes the zone and creates it when missing (or tags it, when
// the spec adopts an untagged one). It reports whether the zone is
// provisioned; while it is not, DNSReady says what Azure is doing.
func (r *Reconciler) ensureZone(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) (bool, error) {
	cond, key := v1alpha1.ConditionDNSReady, dnsOwner(obj)
	z, err := api.Zone(ctx, zone.ResourceGroup, zone.Name)
	if err != nil {
		return false, err
	}
	obj.Status.DNSZoneID = zone.ID()
	if z == nil {
		if err := api.PutZone(ctx, zone.ResourceGroup, zone.Name, dns.ZoneBody(nil, zone.Owner(key.Value()))); err != nil {
			return false, err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneCreated, "Create", "creating private DNS zone %s", zone.Name)
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "creating private DNS zone "+zone.Name)
		return false, nil
	}
	if st := zoneState(z); st != armprivatedns.ProvisioningStateSucceeded {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, fmt.Sprintf("private DNS zone %s is %s", zone.Name, st))
		return false, nil
	}
	zo := dns.TagOwner(z.Tags)
	mine, err := r.claims(ctx, obj, zo)
	if err != nil {
		return false, err
	}
	switch {
	case mine || zone.Shared && zo == dns.SharedOwner:
	case zo == "" && obj.Spec.Adopt:
		if err := api.PutZone(ctx, zone.ResourceGroup, zone.Name, dns.ZoneBody(z, zone.Owner(key.Value()))); err != nil {
			return false, err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneAdopted, "Adopt", "adopting private DNS zone %s (spec.adopt)", zone.Name)
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "adopting private DNS zone "+zone.Name)
		return false, nil
	default:
		if c := meta.FindStatusCondition(obj.Status.Conditions, cond); c == nil || c.Status != metav1.ConditionTrue {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneNotOwned, "Use",
				"private DNS zone %s exists and is not this object's (owner %q): the records go into it, and the operator never deletes it", zone.Name, zo)
		}
	}
	return true, nil
}

// dnsRecords writes the records of an Approved endpoint with an address,
// each only when missing or different, and never over a record set someone
// else wrote; DNSReady is True once they and every link are in place. An
// unchanged object's records are read again only every DNSCheck.
func (r *Reconciler) dnsRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, linked bool) (ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	if obj.Spec.DNS == nil {
		return ctrl.Result{}, nil
	}
	// Records already verified for this spec and address are not read
	// again (writeRecord keeps that per record).
	if err := r.writeRecords(ctx, obj, api, zoneOf(obj)); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if !linked {
		return r.requeueSoon(), nil
	}
	setCondition(obj, cond, metav1.ConditionTrue, ReasonReady,
		fmt.Sprintf("%s resolve to %s from %d linked virtual network(s)", strings.Join(obj.Status.FQDNs, ", "), strings.Join(obj.Status.IPAddresses, ", "), len(obj.Status.VirtualNetworkLinks)))
	return ctrl.Result{}, nil
}

func zoneState(z *armprivatedns.PrivateZone) armprivatedns.ProvisioningState {
	if z.Properties == nil {
		return ""
	}
	return ptr.Deref(z.Properties.ProvisioningState, "")
}

// links makes sure the zone is linked to every virtual network the object
// needs (any link to the network will do, whoever made it), and removes
// the links it used before and no longer needs. It reports whether every
// needed link is provisioned.
func (r *Reconciler) links(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) (bool, error) {
	key := dnsOwner(obj).Value()
	existing, err := api.Links(ctx, zone.ResourceGroup, zone.Name)
	if err != nil {
		return false, err
	}
	ready, used := true, []string{}
	want := vnets(obj)
	for _, v := range want {
		l := dns.LinkTo(existing, v)
		if l == nil || dns.RewriteFailedLink(l, zone.Owner(key)) {
			name := dns.LinkName(v)
			if l != nil {
				name = ptr.Deref(l.Name, name)
			}
			if err := api.PutLink(ctx, zone.ResourceGroup, zone.Name, name, dns.LinkBody(v, zone.Owner(key))); err != nil {
				return false, err
			}
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventLinkCreated, "Create", "linking private DNS zone %s to virtual network %s", zone.Name, v)
			used, ready = append(used, zone.ID()+"/virtualNetworkLinks/"+name), false
			continue
		}
		used = append(used, ptr.Deref(l.ID, ""))
		if dns.LinkState(l) != armprivatedns.ProvisioningStateSucceeded {
			ready = false
		}
	}
	if err := r.dropUnusedLinks(ctx, obj, api, zone, existing, used); err != nil {
		return false, err
	}
	obj.Status.VirtualNetworkLinks = used
	return ready, nil
}

// dropUnusedLinks drops the links the object used before (status) and no
// longer uses; the zone's other objects are read once, when one is found.
func (r *Reconciler) dropUnusedLinks(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone, existing []*armprivatedns.VirtualNetworkLink, used []string) error {
	var others *users
	for _, l := range existing {
		id := ptr.Deref(l.ID, "")
		if !containsFold(obj.Status.VirtualNetworkLinks, id) || containsFold(used, id) {
			continue
		}
		if others == nil {
			u, err := r.zoneUsers(ctx, obj, zone)
			if err != nil {
				return err
			}
			others = &u
		}
		if _, err := r.dropLink(ctx, obj, api, zone, l, *others); err != nil {
			return err
		}
	}
	return nil
}

// dropLink deletes a link the object used, if the operator made it (for
// this object, or shared) and no other live object on the zone (others)
// needs its network: another object uses any link to its network, whoever
// made it, so a link made for this object may serve others too. It reports
// whether the link is going (its delete started now or before), so that a
// release waits for it.
func (r *Reconciler) dropLink(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone, l *armprivatedns.VirtualNetworkLink, others users) (bool, error) {
	o, v := dns.TagOwner(l.Tags), dns.LinkedVNet(l)
	if mine, err := r.claims(ctx, obj, o); err != nil || !mine && o != dns.SharedOwner {
		return false, err // not made for this object or shared: it stays
	}
	if others.needs(v) {
		return false, nil
	}
	if l.Properties != nil && ptr.Deref(l.Properties.ProvisioningState, "") == armprivatedns.ProvisioningStateDeleting {
		return true, nil
	}
	if err := api.DeleteLink(ctx, zone.ResourceGroup, zone.Name, ptr.Deref(l.Name, "")); err != nil {
		return false, err
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventLinkDeleted, "Delete", "unlinking private DNS zone %s from virtual network %s", zone.Name, v)
	return true, nil
}

// claims says whether an owner value marks what was made for obj: its
// kind-qualified value, or the "namespace/name" of earlier versions when no
// workload cluster has obj's namespace and name (the wiring wrote that same
// value for its clusters; docs/security.md, *Shared DNS objects*).
func (r *Reconciler) claims(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, value string) (bool, error) {
	o := dnsOwner(obj)
	if !o.IsLegacy(value) {
		return o.Claim(value, false), nil
	}
	other, err := clusterExists(ctx, r.reader(), obj.Namespace, obj.Name)
	return o.Claim(value, other), err
}

// writeRecords writes each record set the spec names with the endpoint's
// address, and deletes the ones the object wrote before and no longer
// names. A record set the operator did not write is left alone unless the
// spec adopts it.
func (r *Reconciler) writeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) error {
	ips, t := obj.Status.IPAddresses, ttl(obj.Spec.DNS)
	want := records(obj.Spec.DNS)
	var written, taken []string
	for _, rel := range want {
		by, err := r.writeRecord(ctx, obj, api, zone, rel, ips, t)
		if err != nil {
			return err
		}
		fqdn := dns.FQDN(rel, zone.Name)
		if by != nil {
			taken = append(taken, fmt.Sprintf("%s (owner %q)", fqdn, *by))
			continue
		}
		written = append(written, fqdn)
	}
	for _, fqdn := range obj.Status.FQDNs {
		if slices.Contains(written, fqdn) || !strings.HasSuffix(fqdn, zone.Name) {
			continue
		}
		if err := r.deleteRecord(ctx, obj, api, zone, dns.RelativeName(fqdn, zone.Name)); err != nil {
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

// writeRecord makes one record set point at ips, unless someone else wrote
// it (then it returns who). A record verified in a pass that stopped later
// (held back by the pacer, say) is not read again.
func (r *Reconciler) writeRecord(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone, rel string, ips []string, ttl int64) (*string, error) {
	key, now, fp := dnsOwner(obj).Value(), r.clock().Now(), fingerprint(obj)
	memo := "record|" + owner(obj) + "|" + rel
	if r.dnsSeen.Fresh(memo, fp, now, r.Opts.DNSCheck) {
		return nil, nil
	}
	rs, err := api.Record(ctx, zone.ResourceGroup, zone.Name, rel)
	if err != nil {
		return nil, err
	}
	o := dns.RecordOwner(rs)
	mine, err := r.claims(ctx, obj, o)
	if err != nil {
		return nil, err
	}
	switch {
	case rs != nil && !mine && (o != "" || !obj.Spec.Adopt):
		return &o, nil
	case dns.RecordMatches(rs, ips, ttl, key):
	default:
		etag := ""
		if rs != nil {
			etag = ptr.Deref(rs.Etag, "")
		}
		if err := api.PutRecord(ctx, zone.ResourceGroup, zone.Name, rel, etag, dns.RecordBody(rs, ips, ttl, key)); err != nil {
			return nil, err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRecordWritten, "Write", "%s now resolves to %s", dns.FQDN(rel, zone.Name), strings.Join(ips, ", "))
	}
	r.dnsSeen.Set(memo, fp, now)
	return nil, nil
}

// deleteRecord deletes a record set if the object wrote it.
func (r *Reconciler) deleteRecord(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone, rel string) error {
	rs, err := api.Record(ctx, zone.ResourceGroup, zone.Name, rel)
	if err != nil || rs == nil {
		return err
	}
	if mine, err := r.claims(ctx, obj, dns.RecordOwner(rs)); err != nil || !mine {
		return err
	}
	if err := api.DeleteRecord(ctx, zone.ResourceGroup, zone.Name, rel, ptr.Deref(rs.Etag, "")); err != nil {
		return err
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRecordDeleted, "Delete", "deleted record %s", dns.FQDN(rel, zone.Name))
	return nil
}

// removeRecords deletes the records the object wrote (status.fqdns).
func (r *Reconciler) removeRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (ctrl.Result, error) {
	zone, ok := dns.ZoneFromID(obj.Status.DNSZoneID)
	if !ok || len(obj.Status.FQDNs) == 0 {
		return ctrl.Result{}, nil
	}
	for _, fqdn := range obj.Status.FQDNs {
		if err := r.deleteRecord(ctx, obj, api, zone, dns.RelativeName(fqdn, zone.Name)); err != nil {
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
func (r *Reconciler) releaseDNS(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI) (bool, ctrl.Result, error) {
	cond := v1alpha1.ConditionDNSReady
	zone, ok := dns.ZoneFromID(obj.Status.DNSZoneID)
	if !ok {
		return true, ctrl.Result{}, nil
	}
	zone.Shared = true // the zone's tag says what it is; Shared only widens the checks
	if res, err := r.removeRecords(ctx, obj, api); err != nil {
		return false, res, err
	}
	others, err := r.zoneUsers(ctx, obj, zone)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	if len(obj.Status.VirtualNetworkLinks) == 0 && others.waiting() {
		// Nothing of this object's is left in the zone: wait for the others
		// without reading Azure. Every read counts against the
		// subscription's Private DNS window, which they need to finish.
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, waitingMessage(zone, others))
		return false, r.requeueSoon(), nil
	}
	existing, err := api.Links(ctx, zone.ResourceGroup, zone.Name)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	pending := false
	for _, l := range existing {
		if !containsFold(obj.Status.VirtualNetworkLinks, ptr.Deref(l.ID, "")) {
			continue
		}
		going, err := r.dropLink(ctx, obj, api, zone, l, others)
		if err != nil {
			res, err := r.fail(ctx, obj, cond, err)
			return false, res, err
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
	done, err := r.dropZone(ctx, obj, api, zone, len(existing), others.live)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	if !done {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting private DNS zone "+zone.Name)
		return false, r.requeueSoon(), nil
	}
	obj.Status.DNSZoneID = ""
	return true, ctrl.Result{}, nil
}

// dropZone deletes the zone if the operator made it for this object, or
// made it shared and no other object uses it (othersLive: a live one
// does), and it holds nothing but its SOA record and no links. It reports
// whether the zone is gone or stays for good.
//
// A shared zone is deleted by the last object that leaves it: releaseDNS
// makes an object wait while others being deleted still hold records or
// links in the zone, instead of leaving the zone to them — two objects
// that each saw the other's records and left would leave it behind for
// good. A stale view of the others only makes it wait longer.
func (r *Reconciler) dropZone(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone, links int, othersLive bool) (bool, error) {
	z, err := api.Zone(ctx, zone.ResourceGroup, zone.Name)
	if err != nil || z == nil {
		return z == nil, err
	}
	o := dns.TagOwner(z.Tags)
	if mine, err := r.claims(ctx, obj, o); err != nil || !mine && o != dns.SharedOwner {
		return err == nil, err
	}
	if o == dns.SharedOwner && othersLive {
		return true, nil
	}
	if zoneState(z) == armprivatedns.ProvisioningStateDeleting {
		return false, nil
	}
	recordSets := recordSetCount(z)
	if o == dns.SharedOwner && links == 0 && recordSets > 1 {
		// Nobody uses the zone any more: records the operator wrote for
		// objects that are gone (or going) are garbage, whatever their
		// objects' status said.
		swept, err := r.sweepRecords(ctx, obj, api, zone)
		if err != nil || swept > 0 {
			return false, err
		}
	}
	if links > 0 || recordSets > 1 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneNotOwned, "Keep",
			"private DNS zone %s still holds other records or links: it stays", zone.Name)
		return true, nil
	}
	if err := api.DeleteZone(ctx, zone.ResourceGroup, zone.Name); err != nil {
		return false, err
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventZoneDeleted, "Delete", "deleting private DNS zone %s", zone.Name)
	return false, nil
}

// sweepRecords deletes the A record sets of a shared zone that nobody
// uses any more which the operator wrote for an AzurePrivateEndpoint that
// is gone or being deleted (obj included): a record a status write lost,
// say, would otherwise keep the zone for good. Record sets of anyone else
// (no owner, an earlier version's value, a workload cluster, a live
// object) stay. It returns how many it deleted.
func (r *Reconciler) sweepRecords(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api dnsAPI, zone dns.Zone) (int, error) {
	sets, err := api.Records(ctx, zone.ResourceGroup, zone.Name)
	if err != nil {
		return 0, err
	}
	swept, live := 0, map[dns.Owner]bool{dnsOwner(obj): false}
	for _, rs := range sets {
		o, ok := dns.ParseOwner(dns.RecordOwner(rs))
		if !ok || o.Kind != dns.KindAzurePrivateEndpoint {
			continue
		}
		if _, seen := live[o]; !seen {
			// Read from the API server, not the cache: an object the cache
			// does not hold yet must not lose its records.
			other := &v1alpha1.AzurePrivateEndpoint{}
			err := r.reader().Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, other)
			if err != nil && !apierrors.IsNotFound(err) {
				return swept, err
			}
			live[o] = err == nil && other.DeletionTimestamp == nil
		}
		if live[o] {
			continue // a live object's: it stays
		}
		rel := ptr.Deref(rs.Name, "")
		if err := api.DeleteRecord(ctx, zone.ResourceGroup, zone.Name, rel, ptr.Deref(rs.Etag, "")); err != nil {
			return swept, err
		}
		swept++
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRecordDeleted, "Delete",
			"deleted record %s, written for %s/%s, which no longer needs it, so that the unused shared zone can go", dns.FQDN(rel, zone.Name), o.Namespace, o.Name)
	}
	return swept, nil
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

// recordSetCount is the zone's number of record sets, its SOA included.
func recordSetCount(z *armprivatedns.PrivateZone) int64 {
	if z.Properties == nil {
		return 0
	}
	return ptr.Deref(z.Properties.NumberOfRecordSets, 0)
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

func (r *Reconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// clusterExists says whether a workload cluster (a CAPZ AzureCluster) has
// the namespace and name; without CAPZ's CRDs, none has.
func clusterExists(ctx context.Context, c client.Reader, namespace, name string) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}
