package clusterlink

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// duringSwitch says which WC→MC entries to apply: toMC, and the operator's
// retiring ones until the switch is done (the new layout's first endpoint
// is ready and the annotation already holds its IP).
func (r *WCReconciler) duringSwitch(u *unstructured.Unstructured, o *observation, toMC, retiring []Endpoint, current capz.Owned) ([]Endpoint, bool) {
	ingress := r.Opts.Annotation(AnnotationMCIngressIP)
	// The records follow the annotation (DNS mode): the earlier layout's
	// endpoints go only once they hold the new address.
	switched := layoutSwitched(toMC, o.sourceReady, u.GetAnnotations()[ingress], o.annotations[ingress], func() bool {
		return r.dnsHolds(u, DirectionWCToMC, o.annotations[ingress])
	})
	if len(retiring) == 0 || switched {
		return toMC, switched
	}
	again := r.Opts.PendingRecheckInterval() // the new endpoint is on its way
	if len(toMC) == 0 {
		again = r.Opts.TerminalRecheck // the MC's spec must be fixed first
	}
	o.result = LowestNonZeroResult(o.result, ctrl.Result{RequeueAfter: again})
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
	stale := StaleEntries(wc, owners, r.Opts.olderInWC(wc, mc), map[string]bool{}, func(pe capz.PrivateEndpoint) bool {
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
