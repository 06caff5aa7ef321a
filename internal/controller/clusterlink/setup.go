package clusterlink

import (
	"context"
	"errors"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup registers the AzureCluster controllers with a manager.
func Setup(mgr ctrl.Manager, opts Options, clients *azure.Clients, observer *privateendpoints.Observer) error {
	opts.SetDefaults()
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	detector := &Detector{Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper()}
	installed := detector.Get(ctrl.LoggerInto(context.Background(), mgr.GetLogger()))
	orphans := &OrphanCleaner{Client: mgr.GetClient(), Clients: clients, Observer: observer, Recorder: rec, Interval: opts.PendingRecheck, Detector: detector}
	endpoints := AzureEndpoints{Clients: clients, Observer: observer}
	networks := &NetworkCapacities{HighScale: AzureHighScale(clients), TTL: opts.DriftCheckInterval()}
	mcr := &MCReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts, Recorder: rec, Orphans: orphans, Endpoints: endpoints, Networks: networks}
	services := &AzureServices{Clients: clients, TTL: opts.PendingRecheck, MissTTL: opts.mcServiceRecheck() / 2, Clock: clock.RealClock{}}
	wcr := &WCReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts, Recorder: rec, Endpoints: endpoints, Orphans: orphans, Networks: networks, Services: services}

	mcKey := reconcile.Request{NamespacedName: opts.ManagementCluster}
	selected := opts.Selected
	// Every AzureCluster and Cluster event asks for one MC reconcile after
	// MCWriteDelay: events of that window collapse into it.
	mcb := ctrl.NewControllerManagedBy(mgr).Named("management-cluster").
		Watches(newAzureCluster(), delayed(mcKey, opts.MCWriteDelay, selected)).
		Watches(newCluster(), delayed(mcKey, opts.MCWriteDelay, selected))
	wcb := WorkloadClusterController(mgr, "workload-cluster", opts)
	if opts.Sharded() && !opts.PrivateLinkServices {
		return errors.New("the management cluster's further ingress services are AzurePrivateLinkService objects: they need the AzurePrivateLinkService controller")
	}
	if opts.Sharded() {
		// Drift of the MC's further ingress services is put back by the
		// MC's pass (shards.go).
		shard := func(o client.Object) bool { return o.GetLabels()[ShardOfLabel] != "" }
		mcb = mcb.Watches(&v1alpha1.AzurePrivateLinkService{}, delayed(mcKey, opts.MCWriteDelay, shard))
		// Every pass finds the further services in one lookup (shardObjects).
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.AzurePrivateLinkService{}, shardNameIndex,
			shardNames(opts.ManagementCluster, opts.Config)); err != nil {
			return err
		}
	}
	// The MC's endpoints beyond its AzureCluster (beyond.go): their
	// objects' changes come back to the MC's pass (and, through
	// WorkloadClusterController, to the cluster each is for). Watched (and
	// so cached) also without --mc-endpoint-subnets: objects made before
	// it was turned off stay where they are, and both passes read them.
	mcb = mcb.Watches(&v1alpha1.AzurePrivateEndpoint{}, delayed(mcKey, opts.MCWriteDelay, mcOfPlaced(opts.ManagementCluster)))
	if opts.PrivateLinkServices {
		// The WC's managed AzurePrivateLinkService becoming Ready is its
		// "private links ready".
		managed := func(o client.Object) bool { return o.GetLabels()[ManagedForLabel] != "" }
		mcb = mcb.Watches(&v1alpha1.AzurePrivateLinkService{}, delayed(mcKey, opts.MCWriteDelay, managed))
		wcb = wcb.Watches(&v1alpha1.AzurePrivateLinkService{}, handler.EnqueueRequestsFromMapFunc(wcOfManagedLink))
		if err := setupManagedLinks(mgr, opts, rec, wcr); err != nil {
			return err
		}
	}
	// The MC's endpoint objects by service, for a deleted WC's release
	// (placedFor).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.AzurePrivateEndpoint{}, placedServiceIndex, placedService); err != nil {
		return err
	}
	// The clusters connected to each MC service (servicelimit.go).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), newAzureCluster(), targetIndex, endpointTargets); err != nil {
		return err
	}
	if installed.ASO {
		// CAPZ makes endpoints through ASO: an ASO PrivateEndpoint turning
		// Ready is the event Azure never sends.
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), newAzureCluster(), linkIDIndex, linkIDs); err != nil {
			return err
		}
		wcb = wcb.Watches(newASOEndpoint(), asoEvents(mgr.GetClient(), opts.ManagementCluster, &wcr.mc, observer, credentialScope(clients)))
	}
	if err := mcb.WithOptions(controller.Options{MaxConcurrentReconciles: 1}).Complete(mcr); err != nil {
		return err
	}
	return wcb.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).Complete(wcr)
}

// setupManagedLinks registers the controller of the managed private link
// services (managedlink.go), which reads the MC through the wiring's
// snapshot.
func setupManagedLinks(mgr ctrl.Manager, opts Options, rec events.EventRecorder, wcr *WCReconciler) error {
	r := &ManagedLinkReconciler{Client: mgr.GetClient(), Opts: opts, Recorder: rec, mc: &wcr.mc}
	return ctrl.NewControllerManagedBy(mgr).Named("managed-private-link-service").
		For(newAzureCluster()).
		// Drift of the object, and the MC's subscription (the services'
		// visibility): at 1,000 WCs, every other MC change mapped to every
		// WC would be a thousand reconciles for nothing.
		Watches(&v1alpha1.AzurePrivateLinkService{}, handler.EnqueueRequestsFromMapFunc(wcOfManagedLink)).
		Watches(newAzureCluster(), handler.EnqueueRequestsFromMapFunc(allWCsWhenMC(mgr.GetClient(), opts.ManagementCluster)),
			builder.WithPredicates(subscriptionChanged())).
		Watches(newCluster(), handler.EnqueueRequestsFromMapFunc(azureClusterOfCluster)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}
