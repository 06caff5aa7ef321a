package wiringdns

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup registers the DNS mode's controller (opts.DNS.Enabled; nothing
// otherwise), which follows what the wiring publishes on the workload
// clusters. It shares the process's DNS engine (opts.DNSEngine), or makes
// one.
func Setup(mgr ctrl.Manager, opts clusterlink.Options, clients *azure.Clients) error {
	if !opts.DNS.Enabled {
		return nil
	}
	opts.SetDefaults()
	if opts.DNSEngine == nil {
		opts.DNSEngine = &dnsengine.Engine{Budget: opts.DNS.Budget(), Reader: mgr.GetAPIReader(), Check: opts.DNS.Check}
	}
	// Workload clusters of one resource group share their WC-side zone
	// (WCSideConflict).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), clusterlink.NewAzureCluster(), groupIndex, resourceGroupOf); err != nil {
		return err
	}
	// A public cluster's domain is not taken by a later private namesake
	// (PublicNamesakes).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), clusterlink.NewAzureCluster(), nameIndex, nameOf); err != nil {
		return err
	}
	// The per-cluster layout's MC-side zones, counted from the clusters'
	// records (zonelimit.go).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), clusterlink.NewAzureCluster(), mcZoneIndex, mcZoneIndexer(opts.DNS, opts.Annotation)); err != nil {
		return err
	}
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	dr := &DNSReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts,
		Recorder: rec,
		DNS:      AzureDNS{Clients: clients, Engine: opts.DNSEngine},
		Wiring:   &clusterlink.Wiring{Client: mgr.GetClient(), Opts: opts}}
	neighbours, released := neighboursOnRelease(mgr.GetClient(), opts.Annotation)
	return clusterlink.WorkloadClusterController(mgr, "wiring-dns", opts).
		Watches(clusterlink.NewAzureCluster(), neighbours, builder.WithPredicates(released)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(dr)
}
