package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
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

	memory eventMemory
	// dns is what the DNS controller says of each cluster's records (DNS
	// mode; nil otherwise).
	dns  *dnsHandOff
	mc   mcSnapshot
	heal heal.Tracker
	once sync.Once
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
		r.heal.Clock, r.heal.Grace = r.Clock, r.Opts.HealDisconnectedAfter
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
		r.memory.forget(key)
		r.heal.ForgetIdle()
		return ctrl.Result{}, nil
	}
	// What could be read is used: deletion needs only names and IDs.
	wc, errs := capz.FromUnstructured(u)
	isPaused, err := paused(ctx, r.Client, u, wc)
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
		if err := r.releaseManagedLink(ctx, u, wc); err != nil {
			return ctrl.Result{}, err
		}
		return r.release(ctx, u, wc, mcs)
	}
	if !r.Opts.selected(u) {
		return ctrl.Result{}, nil
	}
	if len(errs) > 0 {
		r.warnOnce(u, ReasonInvalidSpec, errs.ToAggregate().Error())
		return ctrl.Result{}, nil
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
	toWC, _ := MCToWC(last.view, wc, r.Opts.Config, names(last.owned.Endpoints))
	o := r.observe(ctx, u, wc, last.view, toWC, toMC, nil, current.Annotations)
	want.Annotations = o.annotations
	if err := r.apply(ctx, u, wc, current, want); err != nil {
		return ctrl.Result{}, err
	}
	r.reportTransitions(u, current.Annotations, o.annotations)
	return o.result, o.err
}

func (r *WCReconciler) wire(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState) (ctrl.Result, error) {
	mc := mcs.view
	declared := wc // the links the WC declares, before the managed one is added
	wc, err := r.ensureManagedLink(ctx, u, wc, mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := planEndpoints(u, wc, mcs, r.Opts)
	toWC, toMC, wcOwners := p.toWC, p.toMC, p.wcOwners
	r.reportProblems(u, p.problems)

	current := capz.CurrentOwned(u, wc, capz.FieldManager)
	// Entries of an earlier layout stay while the MC cannot be judged (an
	// unknown load balancer type) or until the new layout's annotation
	// source serves and the annotation holds its IP.
	var retiring []Endpoint
	if len(toMC) > 0 || !knownLBType(mc.APIServerLBType) {
		retiring = Retiring(wc, mc, wcOwners, OlderInWC(r.Opts.AdoptFieldManagers, wc, mc), toMC)
	}
	o := r.observe(ctx, u, wc, mc, toWC, toMC, retiring, current.Annotations)
	kept, switched := r.duringSwitch(u, &o, toMC, retiring, current)
	want := capz.Owned{Endpoints: groupBySubnet(kept), Finalizers: []string{Finalizer}, Annotations: o.annotations}
	if len(toMC)+len(toWC) == 0 && !slices.Contains(u.GetFinalizers(), Finalizer) {
		// Nothing to protect yet (CAPZ has not written the subnet IDs, or
		// the links are not ready): the finalizer comes with the first
		// endpoint, in the same write, saving a write per cluster.
		want.Finalizers = nil
	}
	if err := r.apply(ctx, u, wc, current, want); err != nil {
		return ctrl.Result{}, err
	}
	r.reportTransitions(u, current.Annotations, o.annotations)
	if len(retiring) > 0 && switched {
		if err := r.retire(ctx, u, wc, mc, wcOwners, toMC, retiring, want.Equal(current)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.finishHandOver(ctx, u, declared, toWC, o); err != nil {
		return ctrl.Result{}, err
	}
	endpointStates.set(u.GetNamespace()+"/"+u.GetName(), o.states)
	if o.ready && len(toWC)+len(toMC) > 0 {
		if err := r.setCondition(ctx, u, ConditionGSPrivateLinksReady, "PrivateEndpointsReady", "private endpoints are approved and their IPs annotated", false); err != nil {
			return ctrl.Result{}, err
		}
	}
	result, err := r.sweepOrphans(ctx, wc, toMC, o)
	if err != nil {
		return ctrl.Result{}, err
	}
	return result, o.err
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
		result = lowestNonZeroResult(result, res)
	}
	return result, nil
}

// plan is what the wiring serves for one WC: the MC's endpoints to it
// (toWC) and its endpoints to the MC (toMC), each without the entries of
// the operator's name that someone else holds (neither written over nor
// observed as the operator's), the field managers of the WC's entries,
// and the problems found on the way. The DNS controller reads the same
// plan to know which sides have endpoints.
type plan struct {
	toWC, toMC []Endpoint
	wcOwners   map[capz.EndpointKey][]string
	problems   []Problem
}

// planEndpoints computes the plan of wc (as the wiring sees it, with its
// managed private link) against the MC as mcs shows it.
func planEndpoints(u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState, opts Options) plan {
	mc := mcs.view
	toMC, p1 := WCToMC(mc, wc, opts.Config)
	toWC, p2 := MCToWC(mc, wc, opts.Config, names(mcs.owned.Endpoints))
	wcOwners := capz.EndpointOwners(u)
	toMC, p3 := SkipTaken(toMC, TakenNames(wc, wcOwners, OlderInWC(opts.AdoptFieldManagers, wc, mc)), key(wc))
	toWC, p4 := SkipTaken(toWC, TakenNames(mc, mcs.owners, OlderInMC(opts.AdoptFieldManagers)), key(mc))
	return plan{toWC: toWC, toMC: toMC, wcOwners: wcOwners, problems: slices.Concat(p1, p2, p3, p4)}
}

// dnsAllowsHeal says whether an endpoint whose address is ip may be
// deleted: the DNS mode is off, or the DNS controller says the side's
// records do not hold ip (dnsHandOff.allowsHeal).
func (r *WCReconciler) dnsAllowsHeal(wc string, d Direction, ip string) bool {
	return !r.Opts.DNS.Enabled || r.dns.allowsHeal(wc, d, ip)
}

// dnsHolds says whether the records of a direction's side hold ip (or the
// DNS mode is off), so that the endpoint they held before may go.
func (r *WCReconciler) dnsHolds(wc string, d Direction, ip string) bool {
	return !r.Opts.DNS.Enabled || r.dns.holds(wc, d, ip)
}

// uniqueNames lists the endpoints' names, each once.
func uniqueNames(eps []Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		if !slices.Contains(out, ep.Name) {
			out = append(out, ep.Name)
		}
	}
	return out
}

// duringSwitch says which WC→MC entries to apply: toMC, and the operator's
// retiring ones until the switch is done (the new layout's first endpoint
// is ready and the annotation already holds its IP).
func (r *WCReconciler) duringSwitch(u *unstructured.Unstructured, o *observation, toMC, retiring []Endpoint, current capz.Owned) ([]Endpoint, bool) {
	ingress := r.Opts.annotation(AnnotationMCIngressIP)
	// The records follow the annotation (DNS mode): the earlier layout's
	// endpoints go only once they hold the new address.
	switched := len(toMC) > 0 && o.sourceReady && u.GetAnnotations()[ingress] == o.annotations[ingress] &&
		r.dnsHolds(u.GetNamespace()+"/"+u.GetName(), DirectionWCToMC, o.annotations[ingress])
	if len(retiring) == 0 || switched {
		return toMC, switched
	}
	again := r.Opts.pendingRecheck() // the new endpoint is on its way
	if len(toMC) == 0 {
		again = r.Opts.TerminalRecheck // the MC's spec must be fixed first
	}
	o.result = lowestNonZeroResult(o.result, ctrl.Result{RequeueAfter: again})
	return slices.Concat(toMC, ownedOnly(retiring, current.Endpoints)), false
}

// retire finishes a layout switch: the operator's entries of the earlier
// layout have left with the apply; what an older operator wrote is shared,
// so server-side apply cannot remove it, and a guarded patch does once the
// apply has nothing left to change (applied).
func (r *WCReconciler) retire(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, owners map[capz.EndpointKey][]string, toMC, retiring []Endpoint, applied bool) error {
	retired := make([]string, 0, len(retiring))
	for _, ep := range retiring {
		retired = append(retired, ep.Name)
	}
	if r.memory.first(key(wc), "retired:"+strings.Join(retired, ",")) {
		r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonLayoutSwitched, "Wire",
			"private endpoint %s serves the ingress annotation now; removing the endpoints of the earlier layout: %s",
			toMC[0].Name, strings.Join(retired, ", "))
	}
	if !applied {
		return nil // u is stale after the apply: the next reconcile goes on
	}
	stale := StaleEntries(wc, owners, OlderInWC(r.Opts.AdoptFieldManagers, wc, mc), map[string]bool{}, func(pe capz.PrivateEndpoint) bool {
		return slices.Contains(retired, pe.Name)
	})
	wrote, err := removeStale(ctx, r.Client, u, stale)
	if wrote {
		wcWrites.Inc()
	}
	return err
}

// ownedOnly returns the endpoints of eps that the operator holds (current):
// the ones it keeps applying; what an older operator holds stays anyway.
func ownedOnly(eps []Endpoint, current map[string][]capz.PrivateEndpoint) []Endpoint {
	held := names(current)
	var out []Endpoint
	for _, ep := range eps {
		if held[ep.Name] {
			out = append(out, ep)
		}
	}
	return out
}

// knownLBType reports whether an API server load balancer type is one the
// wiring understands (unset is public).
func knownLBType(t string) bool {
	return t == capz.LBTypeInternal || t == capz.LBTypePublic || t == ""
}

// lowestNonZeroResult is the sooner of two results: a requeue wins over
// none, and the shorter RequeueAfter over the longer (as Cluster API's
// util.LowestNonZeroResult).
func lowestNonZeroResult(a, b ctrl.Result) ctrl.Result {
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

// observation is what Azure says, turned into annotations and a result.
type observation struct {
	annotations map[string]string
	states      map[Direction]string
	ready       bool
	// sourceReady: the endpoint the ingress annotation takes its IP from
	// in the configured layout is ready (a layout switch may finish);
	// apiSourceReady: the first MC→WC endpoint is (a hand-over may finish).
	sourceReady, apiSourceReady bool
	result                      ctrl.Result
	err                         error
}

// observe reads both directions' endpoints and computes the annotations.
// An annotation takes the IP of its direction's first endpoint, and is set
// only when that endpoint is provisioned, approved and has an IP; it is
// removed when Azure says otherwise; it is left alone when Azure cannot be
// read. Every endpoint of a direction is observed: the cluster is ready only
// when all are, and a broken one is healed (see heal.Tracker). During a
// layout switch the ingress annotation never goes empty: while the first of
// toMC is not ready, it keeps its IP if that is the IP of another ready
// endpoint to the MC, of this layout or of the earlier one (retiring, see
// Retiring). It never moves to an endpoint that is not the first.
func (r *WCReconciler) observe(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, toWC, toMC, retiring []Endpoint, current map[string]string) observation {
	o := observation{annotations: map[string]string{}, states: map[Direction]string{}, ready: true, result: ctrl.Result{RequeueAfter: r.Opts.driftCheck()}}
	for k, v := range current {
		o.annotations[k] = v
	}
	var results []ctrl.Result
	for _, d := range []struct {
		eps, fallback []Endpoint
		owner         *capz.AzureCluster // whose identity and resource group
		annName       string
	}{
		{toWC, tail(toWC), mc, r.Opts.annotation(AnnotationAPIServerIP)},
		{toMC, slices.Concat(tail(toMC), retiring), wc, r.Opts.annotation(AnnotationMCIngressIP)},
	} {
		if len(d.eps)+len(d.fallback) == 0 {
			delete(o.annotations, d.annName)
			continue
		}
		results = append(results, r.observeDirection(ctx, u, &o, d.eps, d.fallback, d.owner, d.annName)...)
	}
	if len(results) > 0 {
		// Something waits: the soonest of its rechecks, not the drift check.
		o.result = ctrl.Result{}
		for _, res := range results {
			o.result = lowestNonZeroResult(o.result, res)
		}
	}
	if o.err != nil {
		o.result = ctrl.Result{} // controller-runtime retries an error with its backoff
	}
	return o
}

// observeDirection observes the endpoints of one direction, held by owner,
// into o, and returns the rechecks they ask for. fallback endpoints may
// keep the annotation (see observe); those not in eps are neither healed
// nor reported.
func (r *WCReconciler) observeDirection(ctx context.Context, u *unstructured.Unstructured, o *observation, eps, fallback []Endpoint, owner *capz.AzureCluster, annName string) []ctrl.Result {
	dir := slices.Concat(eps, fallback)[0].Direction
	obs, err := r.Endpoints.ResourceGroupEndpoints(ctx, owner, uniqueNames(slices.Concat(eps, fallback))...)
	if err != nil {
		o.ready = false
		o.states[dir] = stateUnknown
		res, err := classifyAndReport(ctx, r.Recorder, u, r.Opts, fmt.Sprintf("reading private endpoints of %s/%s", owner.Namespace, owner.Name), err)
		if err != nil {
			o.err = err
		}
		return []ctrl.Result{res}
	}
	var results []ctrl.Result
	for i, ep := range eps {
		results = append(results, r.observeEndpoint(ctx, u, o, ep, i == 0, obs, owner, annName)...)
	}
	if len(fallback) > 0 && (len(eps) == 0 || o.annotations[annName] == "") {
		o.fallBack(obs, fallback, annName, u.GetAnnotations()[annName], len(eps) == 0)
	}
	return results
}

// observeEndpoint records one endpoint of a direction in o (first: the
// one whose IP the direction's annotation takes), heals it when broken long
// enough, and returns the rechecks it asks for.
func (r *WCReconciler) observeEndpoint(ctx context.Context, u *unstructured.Unstructured, o *observation, ep Endpoint, first bool,
	obs map[string]privateendpoints.Observation, owner *capz.AzureCluster, annName string) []ctrl.Result {
	dir := ep.Direction
	ob, exists := obs[strings.ToLower(ep.Name)]
	state, note := endpointState(ob, exists, ep)
	if first || (o.states[dir] == stateReady && state != stateReady) {
		o.states[dir] = state // the first endpoint's, or the first trouble
	}
	healKey := owner.Namespace + "/" + owner.Name + "/" + ep.Name
	if state == stateReady {
		r.heal.Ready(healKey)
		if first {
			o.annotations[annName] = ob.IP
			o.sourceReady = o.sourceReady || dir == DirectionWCToMC
			o.apiSourceReady = o.apiSourceReady || dir == DirectionMCToWC
		}
		return nil
	}
	if first {
		delete(o.annotations, annName)
	}
	o.ready = false
	r.noteState(u, ep, state, note)
	results := []ctrl.Result{{RequeueAfter: r.Opts.pendingRecheck()}}
	if wait := r.maybeHeal(ctx, u, owner, ep, state, ob.IP, healKey); wait > 0 {
		results = append(results, ctrl.Result{RequeueAfter: wait})
	}
	return results
}

// fallBack keeps the annotation on was, the IP it holds, while a ready
// endpoint among eps has it (a layout switch); none is not ready.
func (o *observation) fallBack(obs map[string]privateendpoints.Observation, eps []Endpoint, annName, was string, none bool) {
	if ip := fallbackIP(obs, eps, was); ip != "" {
		o.annotations[annName] = ip
	} else {
		delete(o.annotations, annName)
	}
	if none {
		o.ready = false // nothing of the configured layout is wired
	}
}

// fallbackIP is was, the IP the annotation holds now, when a ready
// endpoint among eps has it; otherwise "".
func fallbackIP(obs map[string]privateendpoints.Observation, eps []Endpoint, was string) string {
	for _, ep := range eps {
		ob, exists := obs[strings.ToLower(ep.Name)]
		if state, _ := endpointState(ob, exists, ep); state == stateReady && was != "" && ob.IP == was {
			return was
		}
	}
	return ""
}

// tail is eps without its first.
func tail(eps []Endpoint) []Endpoint {
	if len(eps) == 0 {
		return nil
	}
	return eps[1:]
}

// maybeHeal heals a broken endpoint when its time has come, and otherwise
// says how long until it may be healed (0: not broken, or healed now). In
// DNS mode the grace period starts only once the records no longer hold
// the endpoint's address ip: deleting it frees that address for the next
// endpoint made in the subnet, anybody's.
func (r *WCReconciler) maybeHeal(ctx context.Context, u *unstructured.Unstructured, owner *capz.AzureCluster, ep Endpoint, state, ip, key string) time.Duration {
	broken := state == stateDisconnected || (state == stateRejected && r.Opts.HealRejected)
	if err := r.followASOHeal(ctx, owner, ep); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "asking CAPZ to make a healed endpoint's ASO object again", "endpoint", ep.Name)
	}
	if broken && r.heal.Grace > 0 && !r.dnsAllowsHeal(u.GetNamespace()+"/"+u.GetName(), ep.Direction, ip) {
		r.warnOnce(u, ReasonHealWaitsForDNS, fmt.Sprintf(
			"private endpoint %s is %s: its records are removed before it may be healed (deleting it frees address %s for the next endpoint in the subnet)", ep.Name, state, ip))
		return r.Opts.pendingRecheck() // the DNS controller removes the records, then wakes this cluster
	}
	heal, wait := r.heal.Observe(key, broken)
	if heal {
		r.healEndpoint(ctx, u, owner, ep, state)
	}
	return wait
}

// healEndpoint deletes a broken endpoint — through its ASO object where
// CAPZ makes endpoints through ASO (healaso.go), else in Azure; CAPZ, which
// made it from the AzureCluster's spec, makes it again, connected to the
// private link service as it is now, and the new IP is published when it
// is approved.
func (r *WCReconciler) healEndpoint(ctx context.Context, u *unstructured.Unstructured, owner *capz.AzureCluster, ep Endpoint, state string) {
	if done, err := r.healThroughASO(ctx, u, owner, ep, state); done || err != nil {
		if err != nil {
			c := azure.Classify(err)
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, c.Reason, "Heal",
				"cannot delete the ASO PrivateEndpoint of %s private endpoint %s to heal it: %s", state, ep.Name, c.Message)
		}
		return
	}
	if err := r.Endpoints.Delete(ctx, owner, ep.Name); err != nil {
		c := azure.Classify(err)
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, c.Reason, "Heal",
			"cannot delete %s private endpoint %s to heal it: %s", state, ep.Name, c.Message)
		return
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonEndpointHealed, "Heal",
		"private endpoint %s in %s/%s was %s for longer than %s: deleted in Azure so that CAPZ recreates it against private link service %s",
		ep.Name, owner.Namespace, owner.Name, state, r.Opts.HealDisconnectedAfter, ep.Connections[0].PrivateLinkServiceID)
}

// endpointClient reads, from Azure, the private endpoints in a cluster's
// resource group, keyed by lower-case name, and deletes one (healing).
type endpointClient interface {
	// ResourceGroupEndpoints reads the group's endpoints; the IPs of names
	// are resolved, the others' may be empty.
	ResourceGroupEndpoints(ctx context.Context, ac *capz.AzureCluster, names ...string) (map[string]privateendpoints.Observation, error)
	Delete(ctx context.Context, ac *capz.AzureCluster, name string) error
}

// orphanSweeper deletes endpoints of ac that CAPZ left in Azure: those
// matches accepts that are not wanted.
type orphanSweeper interface {
	Sweep(ctx context.Context, ac *capz.AzureCluster, matches func(capz.PrivateEndpoint) bool, wanted ...string) (ctrl.Result, error)
}

// AzureEndpoints reads a cluster's endpoints with that cluster's identity,
// through the shared observer (one list per subscription or group).
type AzureEndpoints struct {
	Clients  *azure.Clients
	Observer *privateendpoints.Observer
}

// ResourceGroupEndpoints implements endpointClient.
func (a AzureEndpoints) ResourceGroupEndpoints(ctx context.Context, ac *capz.AzureCluster, names ...string) (map[string]privateendpoints.Observation, error) {
	f, cred, err := a.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return nil, err
	}
	obs, err := a.Observer.ResourceGroup(ctx, privateendpoints.NewSDK(f), cred.Key+"|"+ac.SubscriptionID, ac.ResourceGroup, names...)
	if azure.Classify(err).Reason == azure.ReasonAuthenticationFailed {
		a.Clients.Credentials.Forget(cred.Key) // a rotated secret is read again at once
	}
	return obs, err
}

// Delete implements endpointClient: it starts the deletion of an endpoint
// in the cluster's resource group and does not wait for it (the next
// observation shows it gone). Not found is success.
func (a AzureEndpoints) Delete(ctx context.Context, ac *capz.AzureCluster, name string) error {
	f, cred, err := a.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return err
	}
	if _, err := f.NewPrivateEndpointsClient().BeginDelete(ctx, ac.ResourceGroup, name, nil); err != nil && !azure.IsNotFound(err) {
		return err
	}
	a.Observer.Invalidate(cred.Key+"|"+ac.SubscriptionID, ac.ResourceGroup)
	return nil
}

// endpointState says where an endpoint is and who must act.
func endpointState(ob privateendpoints.Observation, exists bool, ep Endpoint) (string, string) {
	pls := ep.Connections[0].PrivateLinkServiceID
	switch {
	case !exists:
		return stateProvisioning, fmt.Sprintf("private endpoint %s is not in Azure yet; CAPZ creates it from the AzureCluster spec", ep.Name)
	case ob.ProvisioningState != "Succeeded":
		return stateProvisioning, fmt.Sprintf("private endpoint %s is being provisioned (%s)", ep.Name, ob.ProvisioningState)
	case ob.ConnectionState == privateendpoints.StatePending:
		return statePending, fmt.Sprintf("the connection of private endpoint %s waits for approval: the owner of private link service %s must approve it", ep.Name, pls)
	case ob.ConnectionState == privateendpoints.StateRejected:
		return stateRejected, fmt.Sprintf("the owner of private link service %s rejected private endpoint %s (%s); approve it there or remove the link", pls, ep.Name, ob.ConnectionDescription)
	case ob.ConnectionState == privateendpoints.StateDisconnected:
		return stateDisconnected, fmt.Sprintf("private endpoint %s was disconnected from private link service %s (removed or deleted by its owner)", ep.Name, pls)
	case ob.IP == "":
		return stateProvisioning, fmt.Sprintf("private endpoint %s has no IP yet", ep.Name)
	case ob.Ready():
		return stateReady, ""
	}
	return stateUnknown, fmt.Sprintf("private endpoint %s is in state %q", ep.Name, ob.ConnectionState)
}

// apply writes the operator's fields of a WC when they differ. Fields an
// older operator wrote with Update are shared, so server-side apply alone
// cannot remove them; a guarded JSON patch removes what must go.
// current is what the operator owns of u now (capz.CurrentOwned).
func (r *WCReconciler) apply(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, current, want capz.Owned) error {
	if !want.Equal(current) {
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.ApplyConfiguration(wc.Namespace, wc.Name, u.GetUID())),
			client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil // deleted or replaced meanwhile: its event brings us back
			}
			return err
		}
		wcWrites.Inc()
	}
	var ops []map[string]any
	for _, name := range []string{r.Opts.annotation(AnnotationAPIServerIP), r.Opts.annotation(AnnotationMCIngressIP)} {
		if _, keep := want.Annotations[name]; !keep {
			if _, present := u.GetAnnotations()[name]; present {
				ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + capz.JSONPointerEscape(name)})
			}
		}
	}
	if !slices.Contains(want.Finalizers, Finalizer) {
		if i := slices.Index(u.GetFinalizers(), Finalizer); i >= 0 {
			ops = append(ops,
				map[string]any{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": Finalizer},
				map[string]any{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)})
		}
	}
	if len(ops) == 0 || !want.Equal(current) {
		// After an apply, u is stale: the next reconcile removes leftovers.
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	wcWrites.Inc()
	return client.IgnoreNotFound(r.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager)))
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
	} else {
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonManagementClusterNotFound, "Release",
			"management cluster %s does not exist; releasing the finalizer without cleaning up its private endpoints", r.Opts.ManagementCluster)
	}
	if r.Opts.DNS.Enabled && !r.dns.isReleased(key(wc), u.GetUID()) {
		// The DNS controller removes the cluster's DNS and wakes this
		// reconcile when it is gone.
		return ctrl.Result{RequeueAfter: r.Opts.pendingRecheck()}, nil
	}
	if err := r.apply(ctx, u, wc, capz.CurrentOwned(u, wc, capz.FieldManager), capz.Owned{}); err != nil {
		return ctrl.Result{}, err
	}
	// An older operator's hold on the finalizer may keep it after the
	// apply: read past the cache, and remove it only if it is still there.
	// Once it is gone the object may be gone too, and an apply to it would
	// be refused (a UID precondition conflict) for nothing.
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
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
	r.memory.forget(key)
	if r.dns != nil {
		r.dns.forget(key)
	}
	return ctrl.Result{}, nil
}

// setCondition writes a compatibility condition (GSPrivateLinksReady,
// GSDNSZoneReady) True, with a merge patch guarded by resourceVersion so a
// concurrent CAPZ status write is not lost. It is never written False:
// CAPZ's Ready summary includes every condition. A True condition is
// written again only when exact and its message differs.
func (r *WCReconciler) setCondition(ctx context.Context, u *unstructured.Unstructured, typ, reason, message string, exact bool) error {
	return setTrueCondition(ctx, r.Client, r.APIReader, u, typ, reason, message, exact)
}

// setTrueCondition is setCondition for either controller that writes a
// WC's conditions; reader (c when nil) reads past the cache.
func setTrueCondition(ctx context.Context, c client.Client, reader client.Reader, u *unstructured.Unstructured, typ, reason, message string, exact bool) error {
	current := func(o *unstructured.Unstructured) bool {
		return hasCondition(o, typ) && (!exact || conditionMessage(o, typ) == message)
	}
	if current(u) {
		return nil
	}
	// Right after the annotations were applied the cache is stale, and an
	// optimistically locked patch of a stale object fails: read the API.
	if reader == nil {
		reader = c
	}
	fresh, err := getAzureCluster(ctx, reader, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
	if err != nil || fresh == nil || current(fresh) {
		return err
	}
	before := fresh.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(fresh.Object, "status", "conditions")
	var kept []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); !ok || m["type"] != typ {
			kept = append(kept, c)
		}
	}
	kept = append(kept, map[string]any{
		"type": typ, "status": "True",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		"reason":             reason,
		"message":            message,
	})
	_ = unstructured.SetNestedSlice(fresh.Object, kept, "status", "conditions")
	if err := c.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
		client.FieldOwner(capz.FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	wcWrites.Inc()
	return nil
}

// reportProblems emits each new problem once, as a Warning Event.
func (r *WCReconciler) reportProblems(u *unstructured.Unstructured, problems []Problem) {
	key := u.GetNamespace() + "/" + u.GetName()
	current := make([]string, 0, len(problems))
	for _, p := range problems {
		id := p.Reason + ":" + p.Message
		current = append(current, id)
		if r.memory.first(key, id) {
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, p.Reason, "Wire", "%s", p.Message)
		}
	}
	r.memory.keepOnly(key, current)
}

// noteState emits an Event when an endpoint enters a waiting state.
func (r *WCReconciler) noteState(u *unstructured.Unstructured, ep Endpoint, state, note string) {
	key := u.GetNamespace() + "/" + u.GetName()
	if !r.memory.first(key, "state:"+string(ep.Direction)+":"+state) {
		return
	}
	reason := map[string]string{
		statePending: ReasonEndpointPending, stateRejected: ReasonEndpointRejected,
		stateDisconnected: ReasonEndpointDisconnected, stateProvisioning: ReasonEndpointProvisioning,
	}[state]
	if reason == "" {
		reason = ReasonEndpointNotReady
	}
	typ := corev1.EventTypeNormal
	if state == stateRejected || state == stateDisconnected || state == statePending {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(u, nil, typ, reason, "Observe", "%s", note)
}

// reportTransitions emits an Event for each IP annotation set, changed or
// removed.
func (r *WCReconciler) reportTransitions(u *unstructured.Unstructured, before, after map[string]string) {
	key := u.GetNamespace() + "/" + u.GetName()
	for _, name := range []string{r.Opts.annotation(AnnotationAPIServerIP), r.Opts.annotation(AnnotationMCIngressIP)} {
		was, had := before[name]
		now, has := after[name]
		switch {
		case has && (!had || was != now):
			r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonEndpointReady, "Annotate", "private endpoint is approved with IP %s; annotation %s set", now, name)
			r.memory.resetStates(key)
		case had && !has:
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonEndpointNotReady, "Annotate", "annotation %s removed: its private endpoint is no longer ready", name)
		}
	}
}

func (r *WCReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	warnOnce(r.Recorder, &r.memory, u, reason, msg)
}

// warnOnce emits a Warning Event the first time mem sees it for u.
func warnOnce(rec events.EventRecorder, mem *eventMemory, u *unstructured.Unstructured, reason, msg string) {
	if mem.first(u.GetNamespace()+"/"+u.GetName(), reason+":"+msg) {
		rec.Eventf(u, nil, corev1.EventTypeWarning, reason, "Wire", "%s", msg)
	}
}

// wcEndpointName matches the operator's WC-side naming contract.
func wcEndpointName(wcName string) func(capz.PrivateEndpoint) bool {
	return func(pe capz.PrivateEndpoint) bool {
		return strings.HasPrefix(pe.Name, wcName+"-to-") && strings.HasSuffix(pe.Name, "-privateendpoint")
	}
}

// eventMemory remembers which events a WC has had, so that a state or a
// problem is reported when it begins, not on every reconcile.
type eventMemory struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
}

func (m *eventMemory) first(key, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]map[string]bool{}
	}
	if m.seen[key] == nil {
		m.seen[key] = map[string]bool{}
	}
	if m.seen[key][id] {
		return false
	}
	m.seen[key][id] = true
	return true
}

// keepOnly forgets remembered problems that are gone, so they are reported
// again if they come back.
func (m *eventMemory) keepOnly(key string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.seen[key] {
		if !strings.HasPrefix(id, "state:") && !slices.Contains(ids, id) {
			delete(m.seen[key], id)
		}
	}
}

// resetStates forgets waiting states once an endpoint is ready.
func (m *eventMemory) resetStates(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.seen[key] {
		if strings.HasPrefix(id, "state:") {
			delete(m.seen[key], id)
		}
	}
}

func (m *eventMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, key)
}

// classifyAndReport turns an Azure error into a result, an event and a log
// line that match its class (docs/design.md, *Classify errors once*).
func classifyAndReport(ctx context.Context, rec events.EventRecorder, obj client.Object, opts Options, what string, err error) (ctrl.Result, error) {
	c := azure.Classify(err)
	log := ctrl.LoggerFrom(ctx)
	switch c.Class {
	case azure.ClassWait:
		return ctrl.Result{RequeueAfter: opts.PendingRecheck}, nil
	case azure.ClassTransient:
		if c.Reason == azure.ReasonThrottled && c.RetryAfter > 0 {
			// Pacing within a budget is how the operator stays inside
			// Azure's limits, not news (metrics count it).
			log.V(1).Info("Azure request held back", "what", what, "message", c.Message)
		} else {
			log.Info("Azure is temporarily unavailable", "what", what, "reason", c.Reason, "message", c.Message)
		}
		if c.RetryAfter > 0 {
			return ctrl.Result{RequeueAfter: c.RetryAfter}, nil
		}
		return ctrl.Result{}, fmt.Errorf("%s: %s", what, c.Message)
	default:
		rec.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Observe", "%s: %s", what, c.Message)
		log.Info("Azure refused a request; a person must act", "what", what, "reason", c.Reason, "message", c.Message)
		return ctrl.Result{RequeueAfter: opts.TerminalRecheck}, nil
	}
}
