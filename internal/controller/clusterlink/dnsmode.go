package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// DNSReconciler is the wiring's DNS mode (--wiring-dns), a controller of
// its own: it follows what the wiring publishes on each workload
// cluster's AzureCluster — the IP annotations, and the endpoints the MC
// and the WC hold — and writes the Private DNS those addresses need,
// through the process's DNS engine. The wiring does no DNS: a slow,
// throttled or failing Private DNS never holds a cluster's endpoints or
// annotations back. What the records hold comes back to the wiring through
// the hand-off (dnshandoff.go), for the steps that must wait for it.
type DNSReconciler struct {
	Client client.Client
	// APIReader reads past the cache before a condition write; Client
	// when nil.
	APIReader client.Reader
	Opts      Options
	Recorder  events.EventRecorder
	// DNS gives the Private DNS API of a set's zone.
	DNS dnsClients
	// Clock drives the memo; the real clock when nil.
	Clock clock.PassiveClock

	handOff *dnsHandOff
	// mc is the wiring's snapshot of the management cluster.
	mc     *mcSnapshot
	memory eventMemory
	seen   memo.Memo
	// zones counts the per-cluster layout's MC-side zones (zonelimit.go).
	zones zoneLimit
	once  sync.Once
}

// Reconcile brings one workload cluster's DNS in line with what the wiring
// published, in phases: read, pause, deletion (the DNS goes first, then
// the wiring lets the cluster go), what the wiring serves, then the DNS
// pass. It reads the cluster and the MC from the cache, as the wiring
// does, and Azure only through the DNS engine.
func (r *DNSReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.once.Do(func() {
		if r.Clock == nil {
			r.Clock = clock.RealClock{}
		}
	})
	u, wc, errs, err := readActiveWC(ctx, r.Client, req, r.Opts.ManagementCluster)
	if err != nil || u == nil {
		return ctrl.Result{}, err
	}
	mcs, err := r.mc.read(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wc.Deleting {
		return r.release(ctx, u, wc, mcs)
	}
	// The wiring reports what keeps a cluster from being wired (an
	// invalid spec, a missing MC, a load balancer type it does not know);
	// its DNS waits for the same.
	if !r.Opts.selected(u) || len(errs) > 0 || mcs.u == nil || !knownLBType(mcs.view.APIServerLBType) {
		return ctrl.Result{}, nil
	}
	wired, err := linksAsWired(ctx, r.Client, wc, r.Opts)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := planEndpoints(u, wired, mcs, r.Opts)
	res, err := r.reconcileDNS(ctx, u, wired, mcs.view, p.toWC, p.toMC, u.GetAnnotations())
	if err != nil {
		return ctrl.Result{}, err
	}
	// DNS in place is looked at again with the wiring's drift check (the
	// memo skips it within DNS.Check).
	return lowestNonZeroResult(res, ctrl.Result{RequeueAfter: r.Opts.driftCheck()}), nil
}

func (r *DNSReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	warnOnce(r.Recorder, &r.memory, u, reason, msg)
}

// release removes a deleted WC's DNS while the wiring holds its finalizer,
// and tells the wiring when it is gone. An error a person must fix is
// reported and lets the cluster go (releaseDNS): DNS never blocks a
// deletion.
func (r *DNSReconciler) release(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(u, Finalizer) || r.handOff.releasedAlready(key(wc), u.GetUID()) {
		// Released already: the MC's and the wiring's writes while the
		// cluster goes bring it back here, and Azure is not read again.
		return ctrl.Result{}, nil
	}
	done, err := r.releaseDNS(ctx, u, wc, mcs.view)
	if err != nil {
		return classifyAndReport(ctx, r.Recorder, u, r.Opts, "removing the private DNS of the cluster", err)
	}
	if !done {
		return ctrl.Result{RequeueAfter: r.Opts.pendingRecheck()}, nil
	}
	r.handOff.markReleased(key(wc), u.GetUID())
	r.memory.forget(key(wc))
	return ctrl.Result{}, nil
}

// reconcileDNS brings the WC's DNS sets (DesiredDNS) in place and sets
// GSDNSZoneReady once every direction's records are written and linked.
// DNS in place is read again only every DNS.Check (a memo per WC and side).
func (r *DNSReconciler) reconcileDNS(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, toWC, toMC []Endpoint, ann map[string]string) (ctrl.Result, error) {
	hadDNS := hasCondition(u, ConditionGSDNSZoneReady)
	sets, problems := DesiredDNS(mc, wc, r.Opts.DNS, toWC, toMC, ann, r.Opts.annotation, hadDNS)
	problems, err := r.refuseConflict(ctx, u, wc, mc, sets, problems)
	if err != nil {
		return ctrl.Result{}, err
	}
	sets, problems = r.checkZoneLimit(u, sets, problems, key(wc), hadDNS)
	for _, p := range problems {
		r.warnOnce(u, p.Reason, p.Message)
	}
	ready := len(sets) > 0 && len(problems) == 0
	summary := dnsSummary(sets)
	r.seedDNSMemo(u, sets, summary)
	result := ctrl.Result{}
	if slices.ContainsFunc(sets, func(s DNSSet) bool { return s.Refused }) {
		// Looked at again when the cluster that holds the names may be gone.
		result = ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck}
	}
	r.noteNoDNS(key(wc), sets)
	for _, set := range sets {
		if set.IP == "" && !hadDNS && !set.Refused && !wroteRecord(&r.seen, set) {
			// Not approved yet, and no record was ever written: nothing to
			// remove, and no read to spend on finding that out.
			r.handOff.note(key(wc), set.Side, "", true)
			ready = false
			continue
		}
		state, err := r.ensureDNS(ctx, u, set)
		r.handOff.note(key(wc), set.Side, set.IP, err == nil && state != dnsWaiting)
		if err != nil {
			res, err := classifyAndReport(ctx, r.Recorder, u, r.Opts, fmt.Sprintf("writing the %s-side private DNS of %s", set.Side, set.Zone.Name), err)
			if err != nil {
				return ctrl.Result{}, err
			}
			result, ready = lowestNonZeroResult(result, res), false
			continue
		}
		switch state {
		case dnsDone:
		case dnsWaiting:
			result = lowestNonZeroResult(result, ctrl.Result{RequeueAfter: r.Opts.pendingRecheck()})
		case dnsBlocked:
			result = lowestNonZeroResult(result, ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck})
		}
		ready = ready && state == dnsDone && set.IP != ""
	}
	if ready {
		if err := setTrueCondition(ctx, r.Client, r.APIReader, u, ConditionGSDNSZoneReady, "PrivateDNSRecordsReady", summary, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	return result, nil
}

// refuseConflict refuses the WC-side set when another WC of the resource
// group holds those names (WCSideConflict): the set is marked Refused, and
// its records go. It returns problems with the conflict added.
func (r *DNSReconciler) refuseConflict(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, sets []DNSSet, problems []Problem) ([]Problem, error) {
	i := slices.IndexFunc(sets, func(s DNSSet) bool { return s.Side == DNSSideWC })
	if i < 0 {
		return problems, nil
	}
	peers, err := r.dnsPeers(ctx, wc)
	if err != nil {
		return nil, err
	}
	if p := WCSideConflict(mc, wc, u.GetCreationTimestamp().Time, peers, r.Opts.DNS, r.Opts.annotation); p != nil {
		problems = append(problems, *p)
		sets[i].IP, sets[i].Refused = "", true // what this cluster wrote there goes
	}
	return problems, nil
}

// noteNoDNS tells the wiring that the sides of a WC without a set hold
// nothing.
func (r *DNSReconciler) noteNoDNS(wc string, sets []DNSSet) {
	for _, side := range []DNSSide{DNSSideMC, DNSSideWC} {
		if !slices.ContainsFunc(sets, func(s DNSSet) bool { return s.Side == side }) {
			r.handOff.note(wc, side, heldNothing, true)
		}
	}
}

// dnsSummary is GSDNSZoneReady's message: every name, its address and the
// network it resolves from. It is also what a restarted operator compares
// with: a cluster whose condition says what its DNS should be is not read
// again at once (seedDNSMemo).
func dnsSummary(sets []DNSSet) string {
	parts := make([]string, 0, len(sets))
	for _, s := range sets {
		parts = append(parts, fmt.Sprintf("%s -> %s from %s", strings.Join(dns.FQDNs(s.Records, s.Zone.Name), ", "), s.IP, s.VNet[strings.LastIndex(s.VNet, "/")+1:]))
	}
	return reasonDNSZoneReadyMessage + ": " + strings.Join(parts, "; ")
}

// seedDNSMemo: a process that starts finds every cluster's DNS unread. A
// cluster whose GSDNSZoneReady says its DNS is what it should be gets its
// first check at a random point of the check interval instead of at once,
// so that a restart does not read every cluster's DNS in one go (Azure
// Private DNS allows 500 reads per 5 minutes and subscription).
func (r *DNSReconciler) seedDNSMemo(u *unstructured.Unstructured, sets []DNSSet, summary string) {
	if conditionMessage(u, ConditionGSDNSZoneReady) != summary || !hasCondition(u, ConditionGSDNSZoneReady) {
		return
	}
	now := r.Clock.Now()
	for _, set := range sets {
		r.seen.Spread(set.Owner+"|"+string(set.Side), set.Fingerprint(r.Opts.DNS.TTL), now, r.Opts.DNS.Check)
	}
}
