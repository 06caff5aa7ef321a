package clusterlink

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// What the wiring offers the other controllers of workload clusters (the
// DNS mode, package wiringdns): the endpoints it serves each cluster, read
// as it reads them, and the watches every such controller needs. They
// hand work to each other through the cluster object only: the wiring's
// annotations and entries, the DNS mode's AnnotationPrivateDNS
// (safety.go).

// Served is what the wiring serves one workload cluster.
type Served struct {
	// MC is the management cluster.
	MC *capz.AzureCluster
	// Wired is the workload cluster as the wiring sees it: with the
	// private link the operator manages for it, if any.
	Wired *capz.AzureCluster
	// ToWC are the MC's endpoints to the workload cluster, ToMC the
	// cluster's endpoints to the MC, as the wiring plans them (without the
	// entries of its names that someone else holds).
	ToWC, ToMC []Endpoint
}

// Wiring reads what the wiring serves, from the cache, with a snapshot of
// the MC of its own (parsed once per resourceVersion, as the wiring's).
type Wiring struct {
	Client client.Reader
	Opts   Options
	mc     mcSnapshot
}

// MC is the management cluster, nil when it does not exist.
func (w *Wiring) MC(ctx context.Context) (*capz.AzureCluster, error) {
	st, err := w.mc.read(ctx, w.Client, w.Opts.ManagementCluster)
	return st.view, err
}

// Serves is what the wiring serves u (wc, parsed with errs). ok is false
// while the wiring does not serve it, for what it reports on the cluster:
// not selected by the watch filter, an invalid spec, no MC, an API server
// load balancer type it does not know.
func (w *Wiring) Serves(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, errs field.ErrorList) (s Served, ok bool, err error) {
	mcs, err := w.mc.read(ctx, w.Client, w.Opts.ManagementCluster)
	if err != nil || !w.Opts.Selected(u) || len(errs) > 0 || mcs.u == nil || !knownLBType(mcs.view.APIServerLBType) {
		return Served{}, false, err
	}
	wired, err := linksAsWired(ctx, w.Client, wc, w.Opts)
	if err != nil {
		return Served{}, false, err
	}
	p := planEndpoints(u, wired, mcs, w.Opts)
	// Without the networks' capacities (nil: 1,000 each): an endpoint the
	// MC's pass has placed is found by its object whatever they are.
	if p.toWC, _, err = onMCRoom(ctx, w.Client, mcs, p.toWC, w.Opts, nil); err != nil {
		return Served{}, false, err
	}
	// The wiring's limit on the MC's services and its choice of ingress
	// service, as the wiring decides them (without its admissions the
	// cache does not show yet).
	p.toMC, _, err = onShards(ctx, w.Client, mcs.view, wired, w.Opts.Config, p.toMC, func(toMC []Endpoint) ([]Endpoint, []Problem, error) {
		return withinServiceLimitNow(ctx, w.Client, wired, toMC, w.Opts.MCServiceConnectionLimit)
	})
	if err != nil {
		return Served{}, false, err
	}
	return Served{MC: mcs.view, Wired: wired, ToWC: p.toWC, ToMC: p.toMC}, true, nil
}

// WorkloadClusterController is a controller of workload clusters'
// AzureClusters with the watches each of them needs: the cluster, the MC
// (a change of the MC reconciles every workload cluster), the cluster's
// Cluster, and the spec of its identity.
func WorkloadClusterController(mgr ctrl.Manager, name string, opts Options) *builder.Builder {
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(newAzureCluster()).
		Watches(newAzureCluster(), wcsOnMCChange(mgr.GetClient(), opts.ManagementCluster)).
		Watches(newCluster(), handler.EnqueueRequestsFromMapFunc(azureClusterOfCluster)).
		Watches(newIdentity(), handler.EnqueueRequestsFromMapFunc(clustersOfIdentity(mgr.GetClient())), builder.WithPredicates(identitySpecChanged())).
		// The MC's endpoint objects beyond its AzureCluster (beyond.go),
		// which onMCRoom reads: one changing is news to its cluster.
		Watches(&v1alpha1.AzurePrivateEndpoint{}, handler.EnqueueRequestsFromMapFunc(wcOfPlaced(opts.ManagementCluster)))
}

// NewAzureCluster is an empty AzureCluster to watch or read into.
func NewAzureCluster() *unstructured.Unstructured { return newAzureCluster() }
