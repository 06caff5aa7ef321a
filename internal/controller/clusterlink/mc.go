package clusterlink

import (
	"context"
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
)

// MCReconciler keeps the management cluster's private endpoints to the
// workload clusters' API servers: it computes the complete set for all WCs
// and applies it in one write. Every WC event maps to the one MC key, so a
// burst of events collapses into a few writes (docs/design.md, *One write to the MC*).
type MCReconciler struct {
	Client   client.Client
	Opts     Options
	Recorder events.EventRecorder
	Orphans  orphanSweeper

	memory eventMemory
}

// Reconcile applies the MC's desired private endpoints.
func (r *MCReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	mcU, err := getAzureCluster(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil || mcU == nil {
		return ctrl.Result{}, err
	}
	mc, errs := capz.FromUnstructured(mcU)
	if isPaused, err := paused(ctx, r.Client, mcU, mc); err != nil || isPaused {
		// clusterctl move pauses the MC: nothing is written to it.
		if isPaused {
			log.V(1).Info("The management cluster is paused")
			mcPaused.Inc()
		}
		return ctrl.Result{}, err
	}
	active, held, err := r.workloadClusters(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	current := capz.CurrentOwned(mcU, mc, capz.FieldManager)
	if len(errs) > 0 {
		// Nothing new is wired into a malformed MC, but deleted WCs are
		// still let go: their endpoints leave, the rest stay.
		r.warnOnce(mcU, ReasonInvalidSpec, errs.ToAggregate().Error())
		want := capz.Owned{Endpoints: WithoutEndpointsOf(current.Endpoints, deletingOnly(active))}
		return ctrl.Result{}, r.applyMC(ctx, mcU, mc, current, want)
	}
	owners := capz.EndpointOwners(mcU)
	desired, problems := DesiredMC(mc, active, r.Opts.Config, names(current.Endpoints))
	desired, taken := SkipTaken(desired, TakenNames(mc, owners, OlderInMC(r.Opts.AdoptFieldManagers)), key(mc))
	var reported []string
	for _, p := range problems {
		if p.Reason == ReasonNameConflict {
			r.eventOn(ctx, p)
		}
	}
	for _, p := range taken {
		// The WC's own reconcile reports it on the WC; the MC gets it too,
		// once while it lasts.
		reported = append(reported, p.Reason+":"+p.Message)
		r.warnOnce(mcU, p.Reason, p.Message)
	}
	r.memory.keepOnly(key(mc), reported)
	want := capz.Owned{Endpoints: CarryHeld(groupBySubnet(desired), current.Endpoints, held)}
	if !want.Equal(current) {
		// mcU is stale after the apply: its own event brings the MC back,
		// and the next reconcile removes what an older operator left.
		return ctrl.Result{}, r.applyMC(ctx, mcU, mc, current, want)
	}
	groups := slices.Concat(active, held)
	stale := StaleEntries(mc, owners, OlderInMC(r.Opts.AdoptFieldManagers), names(want.Endpoints), func(pe capz.PrivateEndpoint) bool {
		return isMCEndpointName(pe) && slices.ContainsFunc(groups, func(wc *capz.AzureCluster) bool {
			return targetsGroup(pe.Connections[0].PrivateLinkServiceID, wc.SubscriptionID, wc.ResourceGroup)
		})
	})
	if err := r.removeStale(ctx, mcU, stale); err != nil {
		return ctrl.Result{}, err
	}
	if r.Opts.DeleteOrphanedEndpoints && r.Orphans != nil {
		return r.Orphans.Sweep(ctx, mc, isMCEndpointName)
	}
	return ctrl.Result{}, nil
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

// workloadClusters returns the WCs to wire and, separately, those whose
// current endpoints stay exactly as they are: paused ones, and ones whose
// AzureCluster cannot be read (their own reconcile reports why). A deleting
// WC that is not paused is in neither, so its endpoints go.
func (r *MCReconciler) workloadClusters(ctx context.Context) ([]*capz.AzureCluster, []*capz.AzureCluster, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	// Read only: no deep copy of every WC on every MC reconcile.
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var links map[types.NamespacedName]*v1alpha1.AzurePrivateLinkService
	if r.Opts.PrivateLinkServices {
		var err error
		if links, err = managedLinks(ctx, r.Client); err != nil {
			return nil, nil, err
		}
	}
	var active, held []*capz.AzureCluster
	for i := range list.Items {
		u := &list.Items[i]
		if (types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}) == r.Opts.ManagementCluster || !r.Opts.selected(u) {
			continue
		}
		view, errs := capz.FromUnstructured(u)
		pls := links[types.NamespacedName{Namespace: view.Namespace, Name: view.Name}]
		view = asWired(view, pls, false, r.Opts) // managedLinks holds only the clusters' own
		isPaused, err := paused(ctx, r.Client, u, view)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case isPaused:
			held = append(held, view)
		case view.Deleting:
			active = append(active, view) // DesiredMC gives it nothing
		case len(errs) > 0:
			held = append(held, view)
		default:
			active = append(active, view)
		}
	}
	return active, held, nil
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
