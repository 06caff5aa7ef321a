package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Safety state on objects (docs/design.md, *Safety state lives on
// objects*). What decides whether an endpoint may be deleted is what its
// address is published in; that is written on the workload cluster's
// AzureCluster, so that the wiring, the MC reconcile and DNS mode — and a
// restarted operator, or a new leader — read the same truth:
//
//   - <prefix>/private-link-apiserver-ip (the wiring): the address of the
//     MC's endpoint to the WC's API server, and
//     <prefix>/private-link-apiserver-endpoint: the MC entry it belongs to;
//   - <prefix>/private-dns (DNS mode): what each side's records hold.
//
// An endpoint goes (a heal, a retired layout, an entry the MC drops) only
// once nothing publishes its address: Azure gives a freed address to the
// next endpoint of the subnet, which may be another tenant's.
const (
	// AnnotationAPIServerEndpoint names the MC entry whose address
	// AnnotationAPIServerIP holds; AnnotationMCIngressEndpoint the WC's
	// entry whose address AnnotationMCIngressIP holds.
	AnnotationAPIServerEndpoint = "private-link-apiserver-endpoint"
	AnnotationMCIngressEndpoint = "private-link-mc-ingress-endpoint"
	// AnnotationPrivateDNS is DNS mode's record of the addresses each
	// side's records may hold, e.g. "mc=10.0.128.4,wc=-", or
	// "mc=10.0.128.4|10.0.128.9" while they move from one to the other;
	// "released" once a deleted cluster's DNS is gone; "mczone=own" while
	// a zone of the cluster's own may exist on the MC side (the
	// per-cluster layout, whose zones count against Azure's limit).
	AnnotationPrivateDNS = "private-dns"
	// DNSFieldManager writes AnnotationPrivateDNS.
	DNSFieldManager = "azure-private-endpoint-operator-dns"
)

// What a side of DNSHeld holds besides an address.
const (
	// heldNothing: the operator writes no records on that side (no
	// endpoints, or names it cannot build).
	heldNothing = "-"
	// heldUnknown: a write is under way, or a pass did not finish: the
	// records may hold anything the operator wrote before.
	heldUnknown = "?"
	dnsReleased = "released"
	// mcZoneKey carries DNSHeld.MCZone.
	mcZoneKey = "mczone"
)

// MCZoneOwn is DNSHeld.MCZone of a cluster the operator may have made a
// zone of its own on the MC side: it says so before it makes the zone, and
// until the cluster's DNS is released (the zone stays while its records
// come and go).
const MCZoneOwn = "own"

// DNSHeld is AnnotationPrivateDNS, parsed. A side missing from it is
// unknown; "" is a side whose records hold no address.
type DNSHeld struct {
	// Recorded: the annotation exists (this operator wrote DNS mode's
	// state for the object at least once).
	Recorded bool
	Sides    map[DNSSide]string
	Released bool
	// MCZone is MCZoneOwn, or "" when the annotation does not say so (no
	// such zone was made, or an earlier version of the operator, which did
	// not record it, wrote the annotation).
	MCZone string
}

// parseDNSHeld reads the annotation's value.
func parseDNSHeld(v string) DNSHeld {
	st := DNSHeld{Recorded: true, Sides: map[DNSSide]string{}}
	for part := range strings.SplitSeq(v, ",") {
		part = strings.TrimSpace(part)
		if part == dnsReleased {
			st.Released = true
			continue
		}
		side, held, ok := strings.Cut(part, "=")
		if side == mcZoneKey {
			if held == MCZoneOwn {
				st.MCZone = held
			}
			continue
		}
		if !ok || held == heldUnknown {
			continue
		}
		st.Sides[DNSSide(side)] = held
	}
	return st
}

func (s DNSHeld) String() string {
	parts := make([]string, 0, len(s.Sides)+1)
	for _, side := range []DNSSide{DNSSideMC, DNSSideWC} {
		held, ok := s.Sides[side]
		if !ok {
			held = heldUnknown
		}
		parts = append(parts, string(side)+"="+held)
	}
	if s.Released {
		parts = append(parts, dnsReleased)
	}
	if s.MCZone != "" {
		parts = append(parts, mcZoneKey+"="+s.MCZone)
	}
	return strings.Join(parts, ",")
}

func (s DNSHeld) clone() DNSHeld {
	out := s
	out.Sides = make(map[DNSSide]string, len(s.Sides))
	for k, v := range s.Sides {
		out.Sides[k] = v
	}
	return out
}

// DNSHeldOf reads a WC's DNS state. A cluster without the annotation whose
// GSDNSZoneReady was ever written had DNS from an operator before this
// state existed: every side is unknown. One without either never had any:
// every side holds nothing.
func DNSHeldOf(u *unstructured.Unstructured, annotation func(string) string) DNSHeld {
	v, ok := u.GetAnnotations()[annotation(AnnotationPrivateDNS)]
	if ok {
		return parseDNSHeld(v)
	}
	st := DNSHeld{Sides: map[DNSSide]string{}}
	if !HasCondition(u, ConditionGSDNSZoneReady) {
		st.Sides[DNSSideMC], st.Sides[DNSSideWC] = heldNothing, heldNothing
	}
	return st
}

// MayHold says whether records the operator wrote may hold an address
// (a side unknown or holding one).
func (s DNSHeld) MayHold() bool {
	if !s.Recorded {
		return false
	}
	return s.SideMayHold(DNSSideMC) || s.SideMayHold(DNSSideWC)
}

// SideMayHold is MayHold for one side.
func (s DNSHeld) SideMayHold(side DNSSide) bool {
	held, known := s.Sides[side]
	return s.Recorded && (!known || len(addresses(held)) > 0)
}

// addresses are the addresses a side's value says its records may hold.
func addresses(held string) []string {
	if held == "" || held == heldNothing {
		return nil
	}
	return strings.Split(held, "|")
}

// mayHoldEither is the value of a side whose records may hold was's
// addresses or ip, while they move from one to the other.
func mayHoldEither(was, ip string) string {
	out := addresses(was)
	if ip != "" && !slices.Contains(out, ip) {
		out = append(out, ip)
	}
	if len(out) == 0 {
		return was
	}
	return strings.Join(out, "|")
}

// allowsDelete says whether an endpoint of direction d whose address is
// ip may be deleted: its side's records are known not to hold ip.
func (s DNSHeld) allowsDelete(d Direction, ip string) bool {
	held, known := s.Sides[dnsSide(d)]
	as := addresses(held)
	return known && (len(as) == 0 || ip != "" && !slices.Contains(as, ip))
}

// holds says whether d's side's records are known to hold ip and nothing
// else (or that the operator writes none there), so that the endpoint
// they held before may go.
func (s DNSHeld) holds(d Direction, ip string) bool {
	held, known := s.Sides[dnsSide(d)]
	return known && (held == heldNothing || held == ip)
}

// caughtUp says whether the MC side's records hold no address but ip, the
// one the API server annotation holds now.
func (s DNSHeld) caughtUp(ip string) bool {
	held, known := s.Sides[DNSSideMC]
	return known && (len(addresses(held)) == 0 || held == ip)
}

// dnsSide is the side whose records take the IP of a direction's
// endpoints: the MC's network resolves the WC's API (MC→WC endpoints), the
// WC's network the MC's ingress (WC→MC endpoints).
func dnsSide(d Direction) DNSSide {
	if d == DirectionMCToWC {
		return DNSSideMC
	}
	return DNSSideWC
}

// WriteDNSHeld records st on the WC (a merge patch of the one annotation,
// by DNS mode's field manager) when it differs from what is there.
func WriteDNSHeld(ctx context.Context, c client.Client, u *unstructured.Unstructured, annotation func(string) string, st DNSHeld) error {
	name := annotation(AnnotationPrivateDNS)
	if v, ok := u.GetAnnotations()[name]; ok && v == st.String() || !ok && st.String() == DNSHeldOf(u, annotation).String() {
		return nil // recorded already, or what a cluster without the annotation is taken to hold
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         u.GetUID(), // never onto a recreated cluster of that name
		"annotations": map[string]string{name: st.String()},
	}})
	if err != nil {
		return err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(u.GroupVersionKind())
	target.SetNamespace(u.GetNamespace())
	target.SetName(u.GetName())
	if err := c.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(DNSFieldManager)); err != nil {
		return fmt.Errorf("recording the private DNS state of %s/%s: %w", u.GetNamespace(), u.GetName(), client.IgnoreNotFound(err))
	}
	anns := u.GetAnnotations()
	if anns == nil {
		anns = map[string]string{}
	}
	anns[name] = st.String()
	u.SetAnnotations(anns)
	return nil
}

// Publishing is what a workload cluster publishes of the MC's endpoints to
// it: the entries DesiredMC drops but the MC must keep until nothing
// publishes their addresses.
type Publishing struct {
	// Cluster's entries are those connecting to a service in its
	// resource group.
	Cluster *capz.AzureCluster
	// All: every entry of the cluster stays (which one is published is not
	// known, or DNS mode has not caught up); else only Entry.
	All   bool
	Entry string
}

// publishingOf says which of a WC's MC entries its published addresses may
// hold (nil: none). A live cluster publishes the entry its API server
// annotation names — every entry when the annotation predates the entry's
// name — and, in DNS mode, every entry until the MC side's records hold
// no other address than the annotation. A deleted cluster's annotations go
// with it; in DNS mode its entries stay until its DNS is released. A
// cluster without the operator's finalizer was never wired.
func publishingOf(u *unstructured.Unstructured, view *capz.AzureCluster, opts Options) *Publishing {
	if !controllerutil.ContainsFinalizer(u, Finalizer) {
		return nil
	}
	p := &Publishing{Cluster: view}
	ann := u.GetAnnotations()
	ip := ann[opts.Annotation(AnnotationAPIServerIP)]
	if opts.DNS.Enabled {
		st := DNSHeldOf(u, opts.Annotation)
		if view.Deleting && !st.Released || !view.Deleting && !st.caughtUp(ip) {
			p.All = true
			return p
		}
	}
	if view.Deleting || ip == "" {
		return nil
	}
	if p.Entry = ann[opts.Annotation(AnnotationAPIServerEndpoint)]; p.Entry == "" {
		p.All = true
	}
	return p
}

// CarryPublished adds to want the current entries that published
// addresses may hold (publishingOf), unless want has their names.
func CarryPublished(want, current map[string][]capz.PrivateEndpoint, pubs []Publishing) map[string][]capz.PrivateEndpoint {
	if len(pubs) == 0 {
		return want
	}
	return carry(want, current, func(ep capz.PrivateEndpoint) bool {
		return len(ep.Connections) > 0 && slices.ContainsFunc(pubs, func(p Publishing) bool {
			return (p.All || p.Entry == ep.Name) &&
				targetsGroup(ep.Connections[0].PrivateLinkServiceID, p.Cluster.SubscriptionID, p.Cluster.ResourceGroup)
		})
	})
}

// DNSWrite is what a DNS pass is about to do on one side of a cluster:
// make its records hold IP ("" removes them), or remove them because the
// names are refused.
type DNSWrite struct {
	Side    DNSSide
	IP      string
	Refused bool
}

// DNSPass is what one DNS pass records of a cluster's records: before,
// written before Azure is, says the records may hold the old address or
// the new one of every side about to change; after, written at the end,
// what they hold then. The DNS mode writes both (WriteDNSHeld); the
// wiring reads them (DNSHeldOf).
type DNSPass struct {
	held, before, after DNSHeld
}

// NewDNSPass starts a pass over writes from what the cluster says its
// records hold.
func NewDNSPass(held DNSHeld, writes []DNSWrite) DNSPass {
	p := DNSPass{held: held, after: noteNoDNS(held, writes)}
	p.before = p.after.clone()
	for _, w := range writes {
		if was, known := held.Sides[w.Side]; known && !p.Skip(w) && was != w.IP {
			p.before.Sides[w.Side] = mayHoldEither(was, w.IP)
		}
	}
	return p
}

// OwnMCZone records, before Azure is written, that a zone of the
// cluster's own may exist on the MC side (MCZoneOwn).
func (p *DNSPass) OwnMCZone() { p.before.MCZone, p.after.MCZone = MCZoneOwn, MCZoneOwn }

// Before is what to record before Azure is written.
func (p *DNSPass) Before() DNSHeld { return p.before }

// After is what the records hold once the pass is over (also when it
// failed).
func (p *DNSPass) After() DNSHeld { return p.after }

// Skip reports a side not approved yet whose records the cluster says
// hold no address: nothing to remove, and no read to spend on finding
// that out.
func (p *DNSPass) Skip(w DNSWrite) bool {
	was, known := p.held.Sides[w.Side]
	return w.IP == "" && !w.Refused && known && len(addresses(was)) == 0
}

// Skipped notes a side left as it was.
func (p *DNSPass) Skipped(w DNSWrite) { p.after.Sides[w.Side] = p.held.Sides[w.Side] }

// Done notes a side's write: in place (ok) it holds its address;
// otherwise what before said (either address), or unknown.
func (p *DNSPass) Done(w DNSWrite, ok bool) {
	was, known := p.before.Sides[w.Side]
	switch {
	case ok:
		p.after.Sides[w.Side] = w.IP
	case known:
		p.after.Sides[w.Side] = was
	default:
		delete(p.after.Sides, w.Side)
	}
}

// noteNoDNS is held with the sides of a WC without a set holding
// nothing — unless their records may hold an address: a side whose names
// can no longer be built (a refused base domain) keeps what it wrote, so
// it keeps saying so, and what publishes that address stays.
func noteNoDNS(held DNSHeld, writes []DNSWrite) DNSHeld {
	out := held.clone()
	out.Released = false
	for _, side := range []DNSSide{DNSSideMC, DNSSideWC} {
		if !slices.ContainsFunc(writes, func(w DNSWrite) bool { return w.Side == side }) && !held.SideMayHold(side) {
			out.Sides[side] = heldNothing
		}
	}
	return out
}
