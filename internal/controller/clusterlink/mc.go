package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
}

// Reconcile applies the MC's desired private endpoints.
func (r *MCReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	mcU, err := getAzureCluster(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil || mcU == nil {
		return ctrl.Result{}, err
	}
	mc, errs := capz.FromUnstructured(mcU)
	if len(errs) > 0 {
		r.Recorder.Eventf(mcU, nil, corev1.EventTypeWarning, ReasonInvalidSpec, "Validate", "%s", errs.ToAggregate().Error())
		return ctrl.Result{}, nil
	}
	wcs, pausedWCs, err := r.workloadClusters(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	desired, problems := DesiredMC(mc, wcs, r.Opts.Config)
	for _, p := range problems {
		if p.Reason == ReasonNameConflict {
			r.eventOn(ctx, p)
		}
	}
	current := capz.CurrentOwned(mcU, mc, capz.FieldManager)
	want := capz.Owned{Endpoints: groupBySubnet(desired)}
	keepPaused(want.Endpoints, current.Endpoints, pausedWCs)
	if !want.Equal(current) {
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.ApplyConfiguration(mc.Namespace, mc.Name, mcU.GetUID())),
			client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return ctrl.Result{}, nil // the MC was deleted or replaced: its event brings us back
			}
			return ctrl.Result{}, err
		}
		mcWrites.Inc()
		log.Info("Applied the management cluster's private endpoints", "endpoints", len(desired))
		// mcU is stale now: the apply's own event brings the MC back, and
		// the next reconcile removes what an older operator left.
		return ctrl.Result{}, nil
	}
	if err := r.removeStale(ctx, mcU, mc, want, wcs); err != nil {
		return ctrl.Result{}, err
	}
	if r.Opts.DeleteOrphanedEndpoints && r.Orphans != nil {
		return r.Orphans.Sweep(ctx, mc, isMCEndpointName)
	}
	return ctrl.Result{}, nil
}

// workloadClusters returns the WCs to wire and, separately, the paused ones
// whose current endpoints stay as they are.
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
	var active, pausedWCs []*capz.AzureCluster
	for i := range list.Items {
		u := &list.Items[i]
		if (types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}) == r.Opts.ManagementCluster || !r.Opts.selected(u) {
			continue
		}
		view, errs := capz.FromUnstructured(u)
		if len(errs) > 0 {
			continue // reported on the WC by its own reconcile
		}
		if ManagesLink(view, r.Opts) {
			view = WithManagedLink(view, links[types.NamespacedName{Namespace: view.Namespace, Name: view.Name}])
		}
		if paused(ctx, r.Client, u, view) {
			pausedWCs = append(pausedWCs, view)
			continue
		}
		active = append(active, view)
	}
	return active, pausedWCs, nil
}

// keepPaused carries the current endpoints of paused WCs into the desired
// set: pausing must not tear anything down.
func keepPaused(want, current map[string][]capz.PrivateEndpoint, pausedWCs []*capz.AzureCluster) {
	for subnet, eps := range current {
		for _, ep := range eps {
			for _, wc := range pausedWCs {
				if len(ep.Connections) > 0 && targetsGroup(ep.Connections[0].PrivateLinkServiceID, wc.SubscriptionID, wc.ResourceGroup) {
					want[subnet] = append(want[subnet], ep)
				}
			}
		}
	}
}

// removeStale removes entries that look like the operator's (an older
// operator wrote them with Update, so they are not ours under server-side
// apply) but are no longer wanted: a private link a WC no longer has. Each
// removal is guarded by a test of the entry's name, so a concurrent change
// fails the patch instead of removing the wrong entry.
func (r *MCReconciler) removeStale(ctx context.Context, mcU *unstructured.Unstructured, mc *capz.AzureCluster, want capz.Owned, wcs []*capz.AzureCluster) error {
	wanted := map[string]bool{}
	for _, eps := range want.Endpoints {
		for _, ep := range eps {
			wanted[ep.Name] = true
		}
	}
	var ops []map[string]any
	for si, s := range mc.Subnets {
		for pi := len(s.PrivateEndpoints) - 1; pi >= 0; pi-- {
			pe := s.PrivateEndpoints[pi]
			if wanted[pe.Name] || !isMCEndpointName(pe) || !targetsAny(pe, wcs) {
				continue
			}
			path := fmt.Sprintf("/spec/networkSpec/subnets/%d/privateEndpoints/%d", si, pi)
			ops = append(ops,
				map[string]any{"op": "test", "path": path + "/name", "value": pe.Name},
				map[string]any{"op": "remove", "path": path})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, mcU, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager)); err != nil {
		return err
	}
	mcWrites.Inc()
	return nil
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

func targetsAny(pe capz.PrivateEndpoint, wcs []*capz.AzureCluster) bool {
	for _, wc := range wcs {
		if targetsGroup(pe.Connections[0].PrivateLinkServiceID, wc.SubscriptionID, wc.ResourceGroup) {
			return true
		}
	}
	return false
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
