package clusterlink

import (
	"time"

	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// MCReconciler keeps the management cluster's private endpoints to the
// workload clusters' API servers: it computes the complete set for all WCs
// and applies it in one write. Every WC event maps to the one MC key, so a
// burst of events collapses into a few writes (docs/design.md, *One write to the MC*).
type MCReconciler struct {
	Client client.Client
	// APIReader reads past the cache before the MC's condition is
	// written (c when nil).
	APIReader client.Reader
	Opts      Options
	Recorder  events.EventRecorder
	Orphans   orphanSweeper
	// Endpoints reads Azure's endpoints in the MC's resource group: a new
	// entry's name must not be one Azure still gives another service's
	// endpoint (WithoutNamesInAzure). Nil: not asked (unit tests).
	Endpoints mcEndpoints
	// Networks says what each network beyond the MC's AzureCluster takes
	// (networks.go); nil: at most 1,000 each.
	Networks *NetworkCapacities

	memory EventMemory
	// views are the WCs' views of the last pass (views.go).
	views viewMemo
	// shardMemory: the Warnings of the MC's further ingress services
	// (shards.go), kept apart from the pass's own, which report forgets.
	shardMemory EventMemory
	// conditionWritten is when the pass last wrote the MC's condition,
	// or when the process's first pass ran (conditionDue; the MC's passes
	// run one at a time). It decides only when a new message is written,
	// never what.
	conditionWritten time.Time
}

// mcEndpoints is what the MC pass asks of Azure.
type mcEndpoints interface {
	// NamesInAzure returns the service (lower case) each of names connects
	// to in the cluster's resource group, read from Azure now; a name
	// Azure does not have is absent.
	NamesInAzure(ctx context.Context, ac *capz.AzureCluster, names []string) (map[string]string, error)
	// Invalidate makes the next read of the cluster's resource group ask
	// Azure again (the operator removed entries: their endpoints go).
	Invalidate(ctx context.Context, ac *capz.AzureCluster)
}

// Reconcile applies the MC's desired private endpoints, in phases: gather
// (the MC and every selected WC), decide (decideMC, pure; when the set
// would add entries, Azure is read for their names and the pass decided
// again: WithoutNamesInAzure), report, apply (one write of the whole set,
// or the removal of entries an older operator left), sweep (orphaned
// endpoints in Azure).
func (r *MCReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	seen, err := r.gather(ctx)
	if err != nil || seen == nil {
		return ctrl.Result{}, err
	}
	// The networks beyond the MC's AzureCluster with their capacities, as
	// Azure counts them now (networks.go).
	opts := r.Opts
	opts.Beyond = r.Networks.Of(ctx, seen.mc, opts.Beyond)
	plan := decideMC(seen, opts)
	if fresh := freshNames(plan.all(), seen.all()); len(fresh) > 0 && r.Endpoints != nil {
		seen.inAzure, seen.azureErr = r.Endpoints.NamesInAzure(ctx, seen.mc, fresh)
		if seen.azureErr != nil {
			ctrl.LoggerFrom(ctx).Error(seen.azureErr, "Cannot read Azure's private endpoints in the management cluster's resource group: new entries wait", "entries", fresh)
		}
		plan = decideMC(seen, opts)
	}
	use := r.report(ctx, seen, plan, opts.Beyond)
	var res ctrl.Result
	if err := r.ensureShards(ctx, seen, use); err != nil {
		// The further services are objects of their own: one that cannot
		// be applied (its Warning on the MC says why) never holds back
		// the MC's condition and entries, every other cluster's wiring.
		ctrl.LoggerFrom(ctx).Error(err, "Cannot apply the management cluster's further ingress services; the pass goes on, and they are tried again")
		res.RequeueAfter = r.Opts.PendingRecheckInterval()
	}
	wait, err := r.writeCondition(ctx, seen, mcCondition(seen, plan, use, opts))
	if err != nil {
		return ctrl.Result{}, err
	}
	res = LowestNonZeroResult(res, ctrl.Result{RequeueAfter: wait})
	if err := r.ensurePlaced(ctx, seen, plan); err != nil {
		// Like the further services: one object that cannot be written
		// (its Warning on the MC says why) never holds back the entries.
		ctrl.LoggerFrom(ctx).Error(err, "Cannot write the management cluster's endpoints beyond its AzureCluster; the pass goes on, and they are tried again")
		res = LowestNonZeroResult(res, ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()})
	}
	if !plan.want.Equal(seen.current) {
		// seen.u is stale after the apply: the next pass removes what an
		// older operator left and sweeps. It is asked for here rather than
		// left to the MC's own event, which an apply that changes nothing
		// the cache keeps (after TrimCached) does not always bring.
		if err := r.applyMC(ctx, seen.u, seen.mc, seen.current, plan.want); err != nil {
			return ctrl.Result{}, err
		}
		if r.Endpoints != nil && len(freshNames(seen.current.Endpoints, plan.want.Endpoints)) > 0 {
			// Entries went, and with them (through CAPZ) their endpoints:
			// a list of the group asked before this write may lack an
			// endpoint created just before it, and must not answer for a
			// name given again.
			r.Endpoints.Invalidate(ctx, seen.mc)
		}
		return LowestNonZeroResult(res, ctrl.Result{RequeueAfter: max(r.Opts.MCWriteDelay, time.Second)}), nil
	}
	if err := r.removeStale(ctx, seen.u, plan.stale); err != nil {
		return ctrl.Result{}, err
	}
	if plan.recheck {
		res = LowestNonZeroResult(res, ctrl.Result{RequeueAfter: r.Opts.PendingRecheckInterval()})
	}
	if plan.sweep && r.Orphans != nil {
		swept, err := r.Orphans.Sweep(ctx, seen.mc, isMCEndpointName, placedNames(seen, plan)...)
		return LowestNonZeroResult(res, swept), err
	}
	return res, nil
}

// mcSeen is what one MC pass reads.
type mcSeen struct {
	// u is the cache's object (gather): never write into it.
	u       *unstructured.Unstructured
	mc      *capz.AzureCluster
	specErr error // the MC's spec could not be read whole
	// active are the WCs to wire (a deleting one gets nothing, so its
	// endpoints go); held are paused or unreadable ones, whose entries
	// stay exactly as they are.
	active, held []*capz.AzureCluster
	// publishing are the entries of active WCs that stay although
	// DesiredMC drops them: their addresses may still be published
	// (publishingOf).
	publishing []Publishing
	current    capz.Owned
	owners     map[capz.EndpointKey][]string
	// inAzure is what Azure has, in the MC's resource group, under the
	// names of new entries (lower-case name -> lower-case target); nil
	// until asked. azureErr: Azure could not be read, new entries wait.
	inAzure  map[string]string
	azureErr error
	// serviceRefused are the WCs whose GSPrivateLinksReady says they got
	// no endpoint to a full MC service ("namespace/name"); serviceWaiting
	// those that wait for a further one (shards.go).
	serviceRefused, serviceWaiting []string
	// placedObjs are the operator's AzurePrivateEndpoints of the MC's
	// endpoints beyond its AzureCluster; placed the same by subnet ID
	// (beyond.go).
	placedObjs []v1alpha1.AzurePrivateEndpoint
	placed     map[string][]capz.PrivateEndpoint
}

// all is what the operator holds of the MC's endpoints, entries and
// placed objects together (keys: subnet names and subnet IDs).
func (s *mcSeen) all() map[string][]capz.PrivateEndpoint {
	return joinPlaced(s.current.Endpoints, s.placed)
}

// gather reads the MC and the selected WCs; nil when there is nothing to
// do: the MC does not exist, or it is paused (clusterctl move pauses it:
// nothing is written to it).
func (r *MCReconciler) gather(ctx context.Context) (*mcSeen, error) {
	// The cache's own object, not a copy: with an entry per WC a copy
	// was megabytes per pass (make bench at N = 1,000: 4 MiB of the live
	// heap at its peak). The pass only reads it; writes go to the API
	// server (applyMC, removeStale, writeCondition), never into it.
	u, err := getAzureCluster(ctx, r.Client, r.Opts.ManagementCluster, client.UnsafeDisableDeepCopy)
	if err != nil || u == nil {
		return nil, err
	}
	mc, errs := capz.FromUnstructured(u)
	if isPaused, err := Paused(ctx, r.Client, u, mc); err != nil || isPaused {
		if isPaused {
			ctrl.LoggerFrom(ctx).V(1).Info("The management cluster is paused")
			mcPaused.Inc()
		}
		return nil, err
	}
	wcs, err := r.workloadClusters(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := placedObjects(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil {
		return nil, err
	}
	return &mcSeen{
		u: u, mc: mc, specErr: errs.ToAggregate(), active: wcs.active, held: wcs.held, publishing: wcs.publishing,
		serviceRefused: wcs.serviceRefused, serviceWaiting: wcs.serviceWaiting,
		current: capz.CurrentOwned(u, mc, capz.FieldManager), owners: capz.EndpointOwners(u),
		placedObjs: objs, placed: placedOf(objs),
	}, nil
}

// mcPlan is what one MC pass does: apply want when it differs from what the
// operator holds; otherwise remove stale entries and sweep.
type mcPlan struct {
	want capz.Owned
	// placed are the MC's endpoints beyond its AzureCluster, by subnet ID
	// (beyond.go); placedFor the cluster each new one is for (by name).
	placed    map[string][]capz.PrivateEndpoint
	placedFor map[string]string
	stale     []StaleEntry // only once want is applied
	sweep     bool         // the orphan sweep runs: only once want is applied
	// recheck: new entries wait for Azure (a name it still gives another
	// service's endpoint, or it could not be read); nothing on the
	// objects changes when Azure does, so the pass comes back by itself.
	recheck   bool
	conflicts []Problem // two WCs needing one name: a Warning on the WC
	taken     []Problem // a name held by someone else: a Warning on the MC
	// problems are the WCs kept from new entries by the MC's side (its
	// limit, names held for others), for the MC's condition; unread are
	// the WCs whose new entries wait because Azure could not be read.
	problems []Problem
	unread   []string
}

// all is what the plan holds of the MC's endpoints, entries and placed
// objects together.
func (p mcPlan) all() map[string][]capz.PrivateEndpoint {
	return joinPlaced(p.want.Endpoints, p.placed)
}

// decideMC decides an MC pass. Nothing new is wired into a malformed MC,
// but deleted WCs are still let go: their endpoints leave, the rest stay.
func decideMC(seen *mcSeen, opts Options) mcPlan {
	if seen.specErr != nil {
		all := seen.all()
		entries, placed := splitPlaced(CarryPublished(WithoutEndpointsOf(all, deletingOnly(seen.active)), all, seen.publishing))
		return mcPlan{want: capz.Owned{Endpoints: entries}, placed: placed}
	}
	older := opts.olderInMC()
	held := heldTargets(seen.all())
	claims, problems := claimsMC(seen.mc, seen.active, opts.Config, held)
	desired, full := fitInMC(onPlacedSubnets(claims, seen.placed), held, EntryCount(seen.mc), opts.Config, networkUse(seen.placed))
	desired, problems = sortedByName(desired), append(problems, full...)
	recheck := false
	var unread []string
	switch {
	case seen.azureErr != nil:
		desired = slices.DeleteFunc(desired, func(ep Endpoint) bool {
			if _, ok := held[ep.Name]; ok {
				return false
			}
			unread = append(unread, ep.Cluster)
			return true
		})
		recheck = true
	case seen.inAzure != nil:
		var inUse []Problem
		desired, inUse = WithoutNamesInAzure(desired, held, seen.inAzure)
		problems = append(problems, inUse...)
		recheck = len(inUse) > 0
	}
	desired, taken := SkipTaken(desired, TakenNames(seen.mc, seen.owners, older), key(seen.mc))
	all := seen.all()
	entries, placed := splitPlaced(CarryPublished(CarryHeld(groupBySubnet(desired), all, seen.held), all, seen.publishing))
	plan := mcPlan{want: capz.Owned{Endpoints: entries}, placed: placed, placedFor: map[string]string{}, taken: taken, recheck: recheck, unread: unread}
	for _, ep := range desired {
		if ep.placed() {
			plan.placedFor[ep.Name] = ep.Cluster
		}
	}
	for _, p := range problems {
		// The others (waiting for private links, a WC's own spec) are the
		// WC's own reconcile's to report, and not the MC's doing.
		switch p.Reason {
		case ReasonNameConflict:
			plan.conflicts = append(plan.conflicts, p)
			plan.problems = append(plan.problems, p)
		case ReasonEndpointLimit:
			plan.problems = append(plan.problems, p)
		}
	}
	if !plan.want.Equal(seen.current) {
		return plan
	}
	groups := slices.Concat(seen.active, seen.held)
	plan.stale = StaleEntries(seen.mc, seen.owners, older, names(plan.all()), func(pe capz.PrivateEndpoint) bool {
		return isMCEndpointName(pe) && slices.ContainsFunc(groups, func(wc *capz.AzureCluster) bool {
			return targetsGroup(pe.Connections[0].PrivateLinkServiceID, wc.SubscriptionID, wc.ResourceGroup)
		})
	})
	plan.sweep = opts.DeleteOrphanedEndpoints
	return plan
}

// writeCondition writes the MC's condition want when it is due
// (conditionDue), and otherwise returns how long until it is: the pass
// asks to come back then, so the last message is written.
func (r *MCReconciler) writeCondition(ctx context.Context, seen *mcSeen, want wantCondition) (time.Duration, error) {
	now := time.Now()
	if r.conditionWritten.IsZero() {
		// A new process's first passes may see less than the last one did
		// (a network whose read is held back counts as 1,000 until it is
		// read): a new message from them waits like any other, and is not
		// written if a pass within the interval says the old one again.
		r.conditionWritten = now
	}
	if want.current(seen.u) {
		return 0, nil
	}
	if due, wait := conditionDue(seen.u, want, r.conditionWritten, now, r.Opts.MCConditionInterval); !due {
		return wait, nil
	}
	if err := writeCondition(ctx, r.Client, r.APIReader, seen.u, want, mcWrites); err != nil {
		return 0, err
	}
	r.conditionWritten = now
	return 0, nil
}

// report emits the pass's Warnings: a malformed MC and taken names on the
// MC, once while they last; name conflicts on the WC concerned. It returns
// the connections of each MC service a WC connects to (mcServiceUse; nil
// for a malformed or public MC).
func (r *MCReconciler) report(ctx context.Context, seen *mcSeen, plan mcPlan, beyond Beyond) map[string]int {
	if seen.specErr != nil {
		r.warnOnce(seen.u, ReasonInvalidSpec, seen.specErr.Error())
		return nil
	}
	for _, p := range plan.conflicts {
		r.eventOn(ctx, p)
	}
	reported := make([]string, 0, len(plan.taken)+1)
	for _, p := range plan.taken {
		// The WC's own reconcile reports it on the WC; the MC gets it too.
		reported = append(reported, p.Reason+":"+p.Message)
		r.warnOnce(seen.u, p.Reason, p.Message)
	}
	// Near the limit: once while it lasts, not at every entry added (the
	// message carries the count).
	setLimitMetrics(seen.mc, r.Opts.MCEndpointLimit)
	if msg := nearLimit(EntryCount(seen.mc), r.Opts.MCEndpointLimit); msg != "" && !r.Opts.Beyond.On() {
		// With Beyond the entries' limit is where objects begin, not a wall.
		reported = append(reported, ReasonEndpointLimitNear)
		if r.memory.first(key(seen.mc), ReasonEndpointLimitNear) {
			r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonEndpointLimitNear, "Wire", "%s", msg)
		}
	}
	var use map[string]int
	if seen.mc.APIServerLBType == capz.LBTypeInternal { // a public MC: no WC connects to its services
		use = mcServiceUse(seen.mc, slices.Concat(seen.active, seen.held), r.Opts.mcServices(seen.mc.Name))
	}
	reported = append(reported, r.reportServices(seen, use)...)
	reported = append(reported, r.reportNetworks(seen, beyond)...)
	r.memory.keepOnly(key(seen.mc), reported)
	return use
}

// reportServices publishes the connections of the MC's services a WC
// connects to (use), and warns once per service from 90 % of the limit; it
// returns the memory keys of the Warnings that last.
func (r *MCReconciler) reportServices(seen *mcSeen, use map[string]int) []string {
	var reported []string
	scope := key(seen.mc)
	for _, link := range slices.Sorted(maps.Keys(use)) {
		limitmetrics.Set(limitmetrics.MCServiceConnections, scope+"/"+link, use[link], r.Opts.MCServiceConnectionLimit)
		if !r.Opts.warnsNear(seen.mc.Name, link) {
			continue
		}
		if msg := nearServiceLimit(link, use[link], r.Opts.MCServiceConnectionLimit); msg != "" {
			memKey := ReasonServiceLimitNear + ":" + link
			reported = append(reported, memKey)
			if r.memory.first(scope, memKey) {
				r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonServiceLimitNear, "Wire", "%s", msg)
			}
		}
	}
	return reported
}

// freshNames returns the names of want's entries that current has no
// entry of: the entries a write of want would add (with the arguments
// swapped, the ones it would remove).
func freshNames(want, current map[string][]capz.PrivateEndpoint) []string {
	have := map[string]bool{}
	for _, eps := range current {
		for _, ep := range eps {
			have[ep.Name] = true
		}
	}
	var out []string
	for _, eps := range want {
		for _, ep := range eps {
			if !have[ep.Name] {
				out = append(out, ep.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func deletingOnly(wcs []*capz.AzureCluster) []*capz.AzureCluster {
	var out []*capz.AzureCluster
	for _, wc := range wcs {
		if wc.Deleting {
			out = append(out, wc)
		}
	}
	return out
}

// mcWCs are the workload clusters one MC pass reads.
type mcWCs struct {
	// active are the WCs to wire; held are those whose current endpoints
	// stay exactly as they are.
	active, held []*capz.AzureCluster
	// publishing is what each active WC publishes (publishingOf): the
	// entries that stay until nothing publishes their addresses.
	publishing []Publishing
	// serviceRefused are the WCs refused an endpoint to a full MC service,
	// serviceWaiting those waiting for a further one (servicesSay).
	serviceRefused, serviceWaiting []string
}

// workloadClusters returns the WCs to wire and, separately, those whose
// current endpoints stay exactly as they are: paused ones, ones whose
// AzureCluster cannot be read (their own reconcile reports why), and ones
// the watch filter leaves to someone else — the wiring and DNS mode leave
// their annotations and records as they are, so their endpoints must stay
// too (an endpoint deleted under a published address frees that address
// for the next cluster's endpoint). A deleting WC that is not paused is in
// neither, so its endpoints go (deletion ignores the watch filter, as the
// wiring's and DNS mode's releases do).
func (r *MCReconciler) workloadClusters(ctx context.Context) (mcWCs, error) {
	var out mcWCs
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	// Read only: no deep copy of every WC on every MC reconcile.
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return out, err
	}
	var links map[types.NamespacedName]*v1alpha1.AzurePrivateLinkService
	if r.Opts.PrivateLinkServices {
		var err error
		if links, err = managedLinks(ctx, r.Client); err != nil {
			return out, err
		}
	}
	views := r.views.pass()
	defer views.end()
	for i := range list.Items {
		u := &list.Items[i]
		if (types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}) == r.Opts.ManagementCluster {
			continue
		}
		memo := views.of(u)
		view, errs := memo.view, memo.errs
		pls := links[types.NamespacedName{Namespace: view.Namespace, Name: view.Name}]
		view = asWired(view, pls, false, r.Opts) // managedLinks holds only the clusters' own
		isPaused, err := Paused(ctx, r.Client, u, view)
		if err != nil {
			return out, err
		}
		switch {
		case isPaused:
			out.held = append(out.held, view)
			continue
		case view.Deleting:
			out.active = append(out.active, view) // DesiredMC gives it nothing
		case !r.Opts.Selected(u):
			out.held = append(out.held, view)
			continue
		case len(errs) > 0:
			out.held = append(out.held, view)
			continue
		default:
			out.active = append(out.active, view)
			switch memo.servicesSay {
			case ReasonServiceLimit:
				out.serviceRefused = append(out.serviceRefused, key(view))
			case ReasonIngressServiceWaiting:
				out.serviceWaiting = append(out.serviceWaiting, key(view))
			}
		}
		if p := publishingOf(u, view, r.Opts); p != nil {
			out.publishing = append(out.publishing, *p)
		}
	}
	return out, nil
}

func (r *MCReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	if r.memory.first(u.GetNamespace()+"/"+u.GetName(), reason+":"+msg) {
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, reason, "Wire", "%s", msg)
	}
}

// isMCEndpointName matches the operator's MC-side naming contract:
// <pl>-privateendpoint with one connection to a service named <pl>.
func isMCEndpointName(pe capz.PrivateEndpoint) bool {
	pl, ok := strings.CutSuffix(pe.Name, "-privateendpoint")
	if !ok || len(pe.Connections) != 1 {
		return false
	}
	return strings.HasSuffix(strings.ToLower(pe.Connections[0].PrivateLinkServiceID), "/privatelinkservices/"+strings.ToLower(pl))
}

// eventOn emits a Warning Event on the WC a problem is about.
func (r *MCReconciler) eventOn(ctx context.Context, p Problem) {
	ns, name, _ := strings.Cut(p.Cluster, "/")
	u, err := getAzureCluster(ctx, r.Client, types.NamespacedName{Namespace: ns, Name: name})
	if err != nil || u == nil {
		return
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, p.Reason, "Wire", "%s", p.Message)
}
