package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
)

// WCReconciler wires one workload cluster: its finalizer, its private
// endpoints to the MC's ingress, the IP annotations, the compatibility
// condition and the events that explain what it waits for.
type WCReconciler struct {
	Client client.Client
	// APIReader reads past the cache where a stale object would make a
	// write conflict; Client is used when it is nil.
	APIReader client.Reader
	Opts      Options
	Recorder  events.EventRecorder
	// Endpoints reads what Azure says of the clusters' private endpoints,
	// and deletes the broken ones it heals.
	Endpoints endpointClient
	// Orphans deletes endpoints CAPZ left behind; nil leaves them.
	Orphans orphanSweeper
	// Clock drives healing; the real clock when nil.
	Clock clock.PassiveClock
	// Networks says what each network beyond the MC's AzureCluster takes,
	// shared with the MC's pass (networks.go); nil: at most 1,000 each.
	Networks *NetworkCapacities
	// Services tells whether Azure has the MC's private link service a
	// new endpoint targets (servicecheck.go); nil: not checked.
	Services serviceLooker

	memory EventMemory
	mc     mcSnapshot
	// services admits new endpoints to the MC's services (servicelimit.go).
	services serviceRoom
	heal     heal.Tracker
	seen     firstSeen
	once     sync.Once
	// asoHeals are the ASO objects (namespace/name → UID) deleted to heal
	// an endpoint, until CAPZ has been asked again (healaso.go).
	asoHeals sync.Map
}

// Reconcile wires one workload cluster, in phases (docs/design.md,
// *Reconcile phases*): read, pause, deletion (before validation and the
// watch filter, so that nothing blocks a deletion), validation, then
// wiring with or without the MC. Each phase returns the one result.
func (r *WCReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.once.Do(func() {
		if r.Clock == nil {
			r.Clock = clock.RealClock{}
		}
		r.heal.Clock, r.heal.Grace = r.Clock, r.Opts.Heal.DisconnectedAfter
	})
	key := req.String()
	if req.NamespacedName == r.Opts.ManagementCluster {
		return ctrl.Result{}, nil
	}
	u, err := getAzureCluster(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if u == nil {
		endpointStates.set(key, nil)
		r.memory.Forget(key)
		r.seen.forget(req.NamespacedName)
		r.heal.ForgetIdle()
		return ctrl.Result{}, nil
	}
	// What could be read is used: deletion needs only names and IDs.
	wc, errs := capz.FromUnstructured(u)
	isPaused, err := Paused(ctx, r.Client, u, wc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if isPaused {
		ctrl.LoggerFrom(ctx).V(1).Info("Cluster is paused")
		return ctrl.Result{}, nil
	}
	mcs, err := r.mc.read(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wc.Deleting {
		return r.release(ctx, u, wc, mcs)
	}
	if !r.Opts.Selected(u) {
		return ctrl.Result{}, nil
	}
	if len(errs) > 0 {
		r.warnOnce(u, ReasonInvalidSpec, errs.ToAggregate().Error())
		return ctrl.Result{}, SetWaitingCondition(ctx, r.Client, r.APIReader, u, ConditionGSPrivateLinksReady, ReasonInvalidSpec,
			"the AzureCluster's spec cannot be read, nothing is wired until it is fixed: "+errs.ToAggregate().Error())
	}
	if mcs.u == nil {
		return r.wireWithoutMC(ctx, u, wc)
	}
	return r.wire(ctx, u, wc, mcs)
}

// wireWithoutMC: the MC may be missing for a moment (clusterctl move), so
// the WC keeps its entries and finalizer; its annotations still follow
// Azure, read with the MC as it was last seen. Without that (the operator
// restarted meanwhile) they are left as they are: Azure cannot be read.
func (r *WCReconciler) wireWithoutMC(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster) (ctrl.Result, error) {
	r.warnOnce(u, ReasonManagementClusterNotFound, fmt.Sprintf("management cluster %s does not exist; nothing can be wired until it does", r.Opts.ManagementCluster))
	current := capz.CurrentOwned(u, wc, capz.FieldManager)
	want := current
	want.Finalizers = []string{Finalizer}
	last := r.mc.last()
	if last.view == nil {
		return ctrl.Result{}, r.apply(ctx, u, wc, current, want)
	}
	toMC, _ := WCToMC(last.view, wc, r.Opts.Config)
	toWC, _ := MCToWC(last.view, wc, r.Opts.Config, last.held)
	o := r.observe(ctx, u, wc, last.view, toWC, toMC, nil, current.Annotations)
	want.Annotations = o.annotations
	if err := r.apply(ctx, u, wc, current, want); err != nil {
		return ctrl.Result{}, err
	}
	r.reportTransitions(u, current.Annotations, o.annotations)
	return o.result, o.err
}

// wiring is what one pass of wire gathers and decides for a WC.
type wiring struct {
	u        *unstructured.Unstructured
	declared *capz.AzureCluster // the links the WC declares
	wc, mc   *capz.AzureCluster // wc with its managed link, if any
	plan
	// retiring are the entries of an earlier WC-side layout (layout.go).
	retiring []Endpoint
	current  capz.Owned
	o        observation
	// kept are the WC's entries to apply; switched: a layout switch may
	// retire the earlier layout's (duringSwitch).
	kept     []Endpoint
	switched bool
}

// wire is the wiring of a WC whose MC exists, in phases: gather (what the
// WC and the MC declare, and what Azure says of the endpoints), decide
// (the WC's entries, annotations and finalizer), apply (one write of the
// WC), then the steps that follow a write (a layout switch, a hand-over,
// GSPrivateLinksReady, the orphans CAPZ left), and the one result.
func (r *WCReconciler) wire(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState) (ctrl.Result, error) {
	w, err := r.gather(ctx, u, wc, mcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	want := r.decide(&w)
	if err := r.apply(ctx, u, w.wc, w.current, want); err != nil {
		return ctrl.Result{}, err
	}
	r.reportTransitions(u, w.current.Annotations, w.o.annotations)
	if err := r.afterApply(ctx, &w, want); err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.sweepOrphans(ctx, w.wc, w.toMC, w.o)
	if err != nil {
		return ctrl.Result{}, err
	}
	return result, w.o.err
}

// gather reads what the wiring of a WC depends on: its managed private
// link (as the managed-link controller keeps it), the plan of both
// directions, the entries of an earlier layout, and Azure's observation.
func (r *WCReconciler) gather(ctx context.Context, u *unstructured.Unstructured, declared *capz.AzureCluster, mcs mcState) (wiring, error) {
	wc, err := linksAsWired(ctx, r.Client, declared, r.Opts)
	if err != nil {
		return wiring{}, err
	}
	w := wiring{u: u, declared: declared, wc: wc, mc: mcs.view, plan: planEndpoints(u, wc, mcs, r.Opts)}
	// The MC's pass decides the same, and may fill the last room with
	// clusters served before this one: this cluster then waits one more
	// pass and sees the limit reached.
	toWC, full, err := onMCRoom(ctx, r.Client, mcs, w.toWC, r.Opts, r.Networks)
	if err != nil {
		return wiring{}, err
	}
	w.toWC, w.problems = toWC, append(w.problems, full...)
	// Before the admission: an endpoint withheld for a service Azure does
	// not have yet takes no room and is given no other service
	// (servicecheck.go).
	toMC, missing := onServicesInAzure(ctx, r.Services, mcs.view, wc, w.toMC, r.Opts.shardFirsts(mcs.view.Name))
	w.problems = append(w.problems, missing...)
	toMC, limited, err := onShards(ctx, r.Client, mcs.view, wc, r.Opts.Config, toMC, func(toMC []Endpoint) ([]Endpoint, []Problem, error) {
		return r.services.admit(ctx, r.Client, wc, toMC, r.Opts.MCServiceConnectionLimit, r.Clock.Now())
	})
	if err != nil {
		return wiring{}, err
	}
	w.toMC, w.problems = toMC, append(w.problems, limited...)
	r.reportProblems(u, w.problems)
	w.current = capz.CurrentOwned(u, wc, capz.FieldManager)
	// Entries of an earlier layout stay while the MC cannot be judged (an
	// unknown load balancer type) or until the new layout's annotation
	// source serves and the annotation holds its IP.
	if len(w.toMC) > 0 || !knownLBType(w.mc.APIServerLBType) {
		w.retiring = Retiring(wc, w.mc, w.wcOwners, r.Opts.olderInWC(wc, w.mc), w.toMC)
	}
	w.o = r.observe(ctx, u, wc, w.mc, w.toWC, w.toMC, w.retiring, w.current.Annotations)
	// Nothing on the cluster changes when the next service turns Ready or
	// Azure has the MC's service: the cluster looks again.
	if slices.ContainsFunc(w.problems, func(p Problem) bool {
		return p.Reason == ReasonIngressServiceWaiting || p.Reason == ReasonMCServiceNotVisible
	}) {
		w.o.result = LowestNonZeroResult(w.o.result, ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()})
	}
	if slices.ContainsFunc(missing, func(p Problem) bool { return p.Reason == ReasonMCServiceNotInAzure }) {
		w.o.result = LowestNonZeroResult(w.o.result, ctrl.Result{RequeueAfter: r.Opts.MCServiceRecheckInterval()})
	}
	return w, nil
}

// decide is what the operator holds of the WC after this pass: the
// entries (with the earlier layout's while a switch is on), the
// annotations observed, and the finalizer once there is something to
// protect.
func (r *WCReconciler) decide(w *wiring) capz.Owned {
	w.kept, w.switched = r.duringSwitch(w.u, &w.o, w.toMC, w.retiring, w.current)
	want := capz.Owned{Endpoints: groupBySubnet(w.kept), Finalizers: []string{Finalizer}, Annotations: w.o.annotations}
	if len(w.toMC)+len(w.toWC) == 0 && !slices.Contains(w.u.GetFinalizers(), Finalizer) {
		// Nothing to protect yet (CAPZ has not written the subnet IDs, or
		// the links are not ready): the finalizer comes with the first
		// endpoint, in the same write, saving a write per cluster.
		want.Finalizers = nil
	}
	return want
}

// afterApply takes the steps that need the WC written: the end of a layout
// switch, the end of a hand-over, and GSPrivateLinksReady.
func (r *WCReconciler) afterApply(ctx context.Context, w *wiring, want capz.Owned) error {
	if len(w.retiring) > 0 && w.switched {
		if err := r.retire(ctx, w.u, w.wc, w.mc, w.wcOwners, w.toMC, w.retiring, want.Equal(w.current)); err != nil {
			return err
		}
	}
	if err := r.finishHandOver(ctx, w.u, w.declared, w.toWC, w.o); err != nil {
		return err
	}
	endpointStates.set(key(w.wc), w.o.states)
	if w.o.ready && len(w.toWC)+len(w.toMC) > 0 && !heldBack(w.wc, w.problems, w.toWC) {
		return r.setCondition(ctx, w.u, ConditionGSPrivateLinksReady, "PrivateEndpointsReady", "private endpoints are approved and their IPs annotated", false)
	}
	if reason, msg := whyWaiting(w.u, w.problems, w.o, len(w.toWC)+len(w.toMC)); reason != "" {
		return SetWaitingCondition(ctx, r.Client, r.APIReader, w.u, ConditionGSPrivateLinksReady, reason, msg)
	}
	return nil
}

// heldBack says the pass kept back something the cluster needs, so that
// GSPrivateLinksReady says why rather than True although every endpoint
// it has is ready: a limit kept one of its endpoints back (a test saw a
// cluster at the MC's limit True), or the MC gets no endpoint to its
// private API server because no declared link allows the MC's
// subscription or each one's name is held by someone else (explain's test
// saw such clusters True, their endpoint to the MC's ingress being
// ready). Other problems, such as one link of several that does not allow
// the MC's subscription (another consumer's), leave it True as before.
func heldBack(wc *capz.AzureCluster, problems []Problem, toWC []Endpoint) bool {
	if withheld(problems) {
		return true
	}
	if len(toWC) > 0 || wc.APIServerLBType != capz.LBTypeInternal || len(wc.PrivateLinks) == 0 {
		return false
	}
	return slices.ContainsFunc(problems, func(p Problem) bool {
		return p.Reason == ReasonSubscriptionNotAllowed || p.Reason == ReasonNameConflict || p.Reason == ReasonPrivateEndpointNameTaken
	})
}

// withheldByLimit says a limit kept back one of the cluster's endpoints
// (limits.go, servicelimit.go, shards.go).
func withheldByLimit(problems []Problem) bool {
	return slices.ContainsFunc(problems, func(p Problem) bool {
		return p.Reason == ReasonEndpointLimit || p.Reason == ReasonServiceLimit || p.Reason == ReasonIngressServiceWaiting
	})
}

// withheld says one of the cluster's endpoints was kept back: by a limit,
// or because the MC's service it needs is not in Azure or not visible to
// the cluster (servicecheck.go).
func withheld(problems []Problem) bool {
	return withheldByLimit(problems) || slices.ContainsFunc(problems, func(p Problem) bool {
		return p.Reason == ReasonMCServiceNotInAzure || p.Reason == ReasonMCServiceNotVisible
	})
}

// sweepOrphans comes after the WC's write: it deletes the WC's endpoints
// to the MC that CAPZ left in Azure, and returns the sooner of its result
// and o's.
func (r *WCReconciler) sweepOrphans(ctx context.Context, wc *capz.AzureCluster, toMC []Endpoint, o observation) (ctrl.Result, error) {
	result := o.result
	if r.Opts.DeleteOrphanedEndpoints && r.Orphans != nil && len(toMC) > 0 {
		res, err := r.Orphans.Sweep(ctx, wc, wcEndpointName(wc.Name), uniqueNames(toMC)...)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = LowestNonZeroResult(result, res)
	}
	return result, nil
}

// dnsAllowsHeal says whether an endpoint whose address is ip may be
// deleted: nothing publishes ip — not the direction's annotation on the
// WC as applied, nor, in DNS mode, the side's records (the DNS state the
// DNS controller records on the WC, safety.go).
func (r *WCReconciler) dnsAllowsHeal(u *unstructured.Unstructured, d Direction, ip string) bool {
	ann := AnnotationAPIServerIP
	if d == DirectionWCToMC {
		ann = AnnotationMCIngressIP
	}
	if ip != "" && u.GetAnnotations()[r.Opts.Annotation(ann)] == ip {
		return false
	}
	return !r.Opts.DNS.Enabled || DNSHeldOf(u, r.Opts.Annotation).allowsDelete(d, ip)
}

// dnsHolds says whether the records of a direction's side hold ip (or the
// DNS mode is off), so that the endpoint they held before may go.
func (r *WCReconciler) dnsHolds(u *unstructured.Unstructured, d Direction, ip string) bool {
	return !r.Opts.DNS.Enabled || DNSHeldOf(u, r.Opts.Annotation).holds(d, ip)
}

// knownLBType reports whether an API server load balancer type is one the
// wiring understands (unset is public).
func knownLBType(t string) bool {
	return t == capz.LBTypeInternal || t == capz.LBTypePublic || t == ""
}

// LowestNonZeroResult is the sooner of two results: a requeue wins over
// none, and the shorter RequeueAfter over the longer (as Cluster API's
// util.LowestNonZeroResult).
func LowestNonZeroResult(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0:
		return a
	case b.RequeueAfter < a.RequeueAfter:
		return b
	}
	return a
}

// release lets a deleted WC go once the MC no longer holds its endpoints
// (the MC reconcile removes them), or at once when the MC is gone. It needs
// only the WC's names and IDs, so a malformed WC is released too.
func (r *WCReconciler) release(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(u, Finalizer) {
		return ctrl.Result{}, nil
	}
	if mcs.u != nil {
		if HoldsEndpointsOf(mcs.owned.Endpoints, wc) {
			return ctrl.Result{RequeueAfter: r.Opts.MCWriteDelay + time.Second}, nil
		}
		// The MC's objects beyond its AzureCluster, which its pass deletes
		// (beyond.go); the object's deletion brings this cluster back.
		if placed, err := placedFor(ctx, r.Client, r.Opts.ManagementCluster, wc); err != nil || placed {
			return ctrl.Result{RequeueAfter: r.Opts.MCWriteDelay + time.Second}, err
		}
	} else {
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonManagementClusterNotFound, "Release",
			"management cluster %s does not exist; releasing the finalizer without cleaning up its private endpoints", r.Opts.ManagementCluster)
	}
	if r.Opts.DNS.Enabled && !DNSHeldOf(u, r.Opts.Annotation).Released {
		// The DNS controller removes the cluster's DNS and records that on
		// the cluster, whose update brings this reconcile back.
		return ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()}, nil
	}
	if err := r.apply(ctx, u, wc, capz.CurrentOwned(u, wc, capz.FieldManager), capz.Owned{}); err != nil {
		return ctrl.Result{}, err
	}
	// An older operator's hold on the finalizer may keep it after the
	// apply: read past the cache, and remove it only if it is still there.
	// Once it is gone the object may be gone too, and an apply to it would
	// be refused (a UID precondition conflict) for nothing.
	reader := apiOr(r.APIReader, r.Client)
	if u2, err := getAzureCluster(ctx, reader, types.NamespacedName{Namespace: wc.Namespace, Name: wc.Name}); err == nil && u2 != nil &&
		u2.GetUID() == u.GetUID() && controllerutil.ContainsFinalizer(u2, Finalizer) {
		if err := r.apply(ctx, u2, wc, capz.CurrentOwned(u2, wc, capz.FieldManager), capz.Owned{}); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonFinalizerReleased, "Release",
		"the management cluster's private endpoints to this cluster are removed; finalizer %s released", Finalizer)
	key := wc.Namespace + "/" + wc.Name
	endpointStates.set(key, nil)
	r.memory.Forget(key)
	return ctrl.Result{}, nil
}
