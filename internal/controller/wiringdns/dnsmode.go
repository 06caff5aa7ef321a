package wiringdns

import (
	"context"
	"errors"
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

	"github.com/giantswarm/azure-private-endpoint-operator/internal/admission"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// DNSReconciler is the wiring's DNS mode (--wiring-dns), a controller of
// its own: it follows what the wiring publishes on each workload
// cluster's AzureCluster — the IP annotations, and the endpoints the MC
// and the WC hold — and writes the Private DNS those addresses need,
// through the process's DNS engine. The wiring does no DNS: a slow,
// throttled or failing Private DNS never holds a cluster's endpoints or
// annotations back. What the records hold goes back to the wiring and the
// MC reconcile on the cluster itself (clusterlink.AnnotationPrivateDNS,
// written through clusterlink.DNSPass), for the steps that must wait for
// it.
type DNSReconciler struct {
	Client client.Client
	// APIReader reads past the cache before a condition write; Client
	// when nil.
	APIReader client.Reader
	Opts      clusterlink.Options
	Recorder  events.EventRecorder
	// DNS gives the Private DNS API of a set's zone.
	DNS dnsClients
	// Clock drives the memo; the real clock when nil.
	Clock clock.PassiveClock

	// Wiring reads what the wiring serves each cluster.
	Wiring *clusterlink.Wiring

	memory clusterlink.EventMemory
	seen   memo.Memo
	// zoneRoom admits the per-cluster layout's MC-side zones (zonelimit.go).
	zoneRoom admission.Room
	once     sync.Once
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
	u, wc, errs, err := clusterlink.ReadActiveWC(ctx, r.Client, req, r.Opts.ManagementCluster)
	if err != nil || u == nil {
		return ctrl.Result{}, err
	}
	if wc.Deleting {
		mc, err := r.Wiring.MC(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		return r.release(ctx, u, wc, mc)
	}
	// What keeps the wiring from serving a cluster (an invalid spec, a
	// missing MC, a load balancer type it does not know) it reports; the
	// cluster's DNS waits for the same.
	served, ok, err := r.Wiring.Serves(ctx, u, wc, errs)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	res, err := r.reconcileDNS(ctx, u, served.Wired, served.MC, served.ToWC, served.ToMC, u.GetAnnotations())
	if err != nil {
		return ctrl.Result{}, err
	}
	// DNS in place is looked at again with the wiring's drift check (the
	// memo skips it within DNS.Check).
	return clusterlink.LowestNonZeroResult(res, ctrl.Result{RequeueAfter: r.Opts.DriftCheckInterval()}), nil
}

func (r *DNSReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	clusterlink.WarnOnce(r.Recorder, &r.memory, u, reason, msg)
}

// release removes a deleted WC's DNS while the wiring holds its finalizer,
// and tells the wiring when it is gone. An error a person must fix is
// reported and lets the cluster go (releaseDNS): DNS never blocks a
// deletion.
func (r *DNSReconciler) release(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster) (ctrl.Result, error) {
	held := clusterlink.DNSHeldOf(u, r.Opts.Annotation)
	if !controllerutil.ContainsFinalizer(u, clusterlink.Finalizer) || held.Released {
		// Released already: the MC's and the wiring's writes while the
		// cluster goes bring it back here, and Azure is not read again.
		return ctrl.Result{}, nil
	}
	done, err := r.releaseDNS(ctx, u, wc, mc)
	if err != nil {
		return clusterlink.ClassifyAndReport(ctx, r.Recorder, u, r.Opts, "removing the private DNS of the cluster", err)
	}
	if !done {
		return ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()}, nil
	}
	// On the cluster: the MC reconcile lets its endpoints go, then the
	// wiring its finalizer.
	held.Released, held.Sides = true, map[clusterlink.DNSSide]string{clusterlink.DNSSideMC: "", clusterlink.DNSSideWC: ""}
	held.MCZone = "" // released: the zone is gone, and the cluster no longer counts (holdsMCZone)
	if err := clusterlink.WriteDNSHeld(ctx, r.Client, u, r.Opts.Annotation, held); err != nil {
		return ctrl.Result{}, err
	}
	r.memory.Forget(key(wc))
	return ctrl.Result{}, nil
}

// reconcileDNS brings the WC's DNS sets (DesiredDNS) in place and sets
// GSDNSZoneReady once every direction's records are written and linked.
// DNS in place is read again only every DNS.Check (a memo per WC and side).
//
// What each side's records may hold is recorded on the cluster
// (AnnotationPrivateDNS), before Azure is written: a side that takes a new
// address says it may hold the old one or the new one until the write is
// done, so that a crash in between never leaves the cluster saying less
// than the records hold. A side that only gains an address from none, or
// only loses one, costs one write of the annotation; a move from one
// address to another two.
func (r *DNSReconciler) reconcileDNS(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, toWC, toMC []clusterlink.Endpoint, ann map[string]string) (ctrl.Result, error) {
	held := clusterlink.DNSHeldOf(u, r.Opts.Annotation)
	sets, problems, ownZone, err := r.desiredSets(ctx, u, wc, mc, toWC, toMC, ann, held)
	if err != nil {
		return ctrl.Result{}, err
	}
	summary := dnsSummary(sets)
	r.seedDNSMemo(u, sets, summary)
	result := ctrl.Result{}
	if slices.ContainsFunc(sets, func(s DNSSet) bool { return s.Refused }) {
		// Looked at again when the cluster that holds the names may be gone.
		result = ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck}
	}
	pass := clusterlink.NewDNSPass(held, writesOf(sets))
	if ownZone {
		pass.OwnMCZone() // before the zone is made: it counts against the limit from now on
	}
	if err := clusterlink.WriteDNSHeld(ctx, r.Client, u, r.Opts.Annotation, pass.Before()); err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		// What the records hold after this pass, also when it failed.
		if werr := clusterlink.WriteDNSHeld(ctx, r.Client, u, r.Opts.Annotation, pass.After()); werr != nil {
			ctrl.LoggerFrom(ctx).Error(werr, "recording the private DNS state")
		}
	}()
	res, written, taken, err := r.writeSets(ctx, u, sets, &pass)
	if err != nil {
		return ctrl.Result{}, err
	}
	result = clusterlink.LowestNonZeroResult(result, res)
	problems = append(problems, taken...)
	return result, r.reportDNS(ctx, u, written && len(sets) > 0 && len(problems) == 0, summary, problems)
}

// desiredSets are the WC's DNS sets (DesiredDNS), with the WC-side
// conflict and the zone limit applied, and the problems, reported.
// ownZone: a zone of the cluster's own may exist on the MC side after
// this pass (checkZoneLimit).
func (r *DNSReconciler) desiredSets(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, toWC, toMC []clusterlink.Endpoint, ann map[string]string, held clusterlink.DNSHeld) (sets []DNSSet, problems []clusterlink.Problem, ownZone bool, err error) {
	ready := clusterlink.HasCondition(u, clusterlink.ConditionGSDNSZoneReady)
	public, err := r.publicNamesakes(ctx, u, wc)
	if err != nil {
		return nil, nil, false, err
	}
	sets, problems = DesiredDNS(mc, wc, r.Opts.DNS, toWC, toMC, ann, r.Opts.Annotation, ready || held.MayHold(), public...)
	if problems, err = r.refuseConflict(ctx, u, wc, mc, sets, problems); err != nil {
		return nil, nil, false, err
	}
	sets, problems, ownZone, err = r.checkZoneLimit(ctx, u, sets, problems, key(wc), holdsMCZone(u, r.Opts.DNS, r.Opts.Annotation))
	if err != nil {
		return nil, nil, false, err
	}
	for _, p := range problems {
		r.warnOnce(u, p.Reason, p.Message)
	}
	return sets, problems, ownZone, nil
}

// writeSets brings each set in place through the engine, noting in pass
// what its records hold; written: every set holds its address. It returns
// the problems of sets whose zone another cluster holds.
func (r *DNSReconciler) writeSets(ctx context.Context, u *unstructured.Unstructured, sets []DNSSet, pass *clusterlink.DNSPass) (ctrl.Result, bool, []clusterlink.Problem, error) {
	result, written := ctrl.Result{}, true
	var problems []clusterlink.Problem
	for _, set := range sets {
		if pass.Skip(set.write()) {
			pass.Skipped(set.write())
			written = false
			continue
		}
		state, err := r.ensureDNS(ctx, u, set)
		var held *setProblemError
		if errors.As(err, &held) {
			if held.wrote {
				pass.Done(set.write(), false) // some records may be written
			} else {
				pass.Skipped(set.write()) // nothing was written
			}
			r.warnOnce(u, held.Reason, held.Message)
			problems = append(problems, held.Problem)
			result, written = clusterlink.LowestNonZeroResult(result, ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck}), false
			continue
		}
		pass.Done(set.write(), err == nil && state != dnsWaiting)
		if err != nil {
			res, err := clusterlink.ClassifyAndReport(ctx, r.Recorder, u, r.Opts, fmt.Sprintf("writing the %s-side private DNS of %s", set.Side, set.Zone.Name), err)
			if err != nil {
				return ctrl.Result{}, false, nil, err
			}
			result, written = clusterlink.LowestNonZeroResult(result, res), false
			continue
		}
		switch state {
		case dnsDone:
		case dnsWaiting:
			result = clusterlink.LowestNonZeroResult(result, ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()})
		case dnsBlocked:
			result = clusterlink.LowestNonZeroResult(result, ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck})
		}
		written = written && state == dnsDone && set.IP != ""
	}
	return result, written, problems, nil
}

// reportDNS writes GSDNSZoneReady: True when ready; Unknown with the first
// problem's reason when a person must act (a refused name, a conflict, a
// limit), so that a control plane gated on it does not wait without a
// word. Waiting for the wiring is GSPrivateLinksReady's to say.
func (r *DNSReconciler) reportDNS(ctx context.Context, u *unstructured.Unstructured, ready bool, summary string, problems []clusterlink.Problem) error {
	switch {
	case ready:
		return clusterlink.SetTrueCondition(ctx, r.Client, r.APIReader, u, clusterlink.ConditionGSDNSZoneReady, "PrivateDNSRecordsReady", summary, true)
	case len(problems) > 0:
		return clusterlink.SetWaitingCondition(ctx, r.Client, r.APIReader, u, clusterlink.ConditionGSDNSZoneReady, problems[0].Reason, problems[0].Message)
	}
	return nil
}

// refuseConflict refuses the WC-side set when another WC of the resource
// group holds those names (WCSideConflict): the set is marked Refused, and
// its records go. It returns problems with the conflict added.
func (r *DNSReconciler) refuseConflict(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, sets []DNSSet, problems []clusterlink.Problem) ([]clusterlink.Problem, error) {
	i := slices.IndexFunc(sets, func(s DNSSet) bool { return s.Side == clusterlink.DNSSideWC })
	if i < 0 {
		return problems, nil
	}
	peers, err := r.dnsPeers(ctx, wc)
	if err != nil {
		return nil, err
	}
	if p := WCSideConflict(mc, wc, u.GetCreationTimestamp().Time, peers, r.Opts.DNS, r.Opts.Annotation); p != nil {
		problems = append(problems, *p)
		sets[i].IP, sets[i].Refused = "", true // what this cluster wrote there goes
	}
	return problems, nil
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

// SummaryEntry is one part of GSDNSZoneReady's True message: names, the
// address their records hold, and the network they resolve from.
type SummaryEntry struct {
	FQDNs []string
	IP    string
	VNet  string
}

// ParseSummary reads GSDNSZoneReady's True message (dnsSummary); ok is
// false for any other message. kubectl apeo explain reads it to find the
// records in Azure.
func ParseSummary(msg string) (entries []SummaryEntry, ok bool) {
	rest, ok := strings.CutPrefix(msg, reasonDNSZoneReadyMessage+": ")
	if !ok {
		return nil, false
	}
	for part := range strings.SplitSeq(rest, "; ") {
		names, target, ok1 := strings.Cut(part, " -> ")
		ip, vnet, ok2 := strings.Cut(target, " from ")
		if !ok1 || !ok2 || names == "" || ip == "" {
			return nil, false
		}
		entries = append(entries, SummaryEntry{FQDNs: strings.Split(names, ", "), IP: ip, VNet: vnet})
	}
	return entries, true
}

// seedDNSMemo: a process that starts finds every cluster's DNS unread. A
// cluster whose GSDNSZoneReady says its DNS is what it should be gets its
// first check at a random point of the check interval instead of at once,
// so that a restart does not read every cluster's DNS in one go (Azure
// Private DNS allows 500 reads per 5 minutes and subscription).
func (r *DNSReconciler) seedDNSMemo(u *unstructured.Unstructured, sets []DNSSet, summary string) {
	if clusterlink.ConditionMessage(u, clusterlink.ConditionGSDNSZoneReady) != summary || !clusterlink.HasCondition(u, clusterlink.ConditionGSDNSZoneReady) {
		return
	}
	now := r.Clock.Now()
	for _, set := range sets {
		r.seen.Spread(set.Owner+"|"+string(set.Side), set.Fingerprint(r.Opts.DNS.TTL), now, r.Opts.DNS.Check)
	}
}
