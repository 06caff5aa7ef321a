// Package privatelinkservice reconciles AzurePrivateLinkService objects
// with Azure private link services.
package privatelinkservice

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivatelinkservices,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivatelinkservices/status,verbs=get;patch
// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivatelinkservices/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=services,verbs=get

// Finalizer keeps the object until its Azure resources are gone (or
// released, with deletionPolicy Orphan).
const Finalizer = "privatelink.giantswarm.io/azureprivatelinkservice"

// PausedAnnotation pauses reconciliation of one object; Cluster API's
// cluster.x-k8s.io/paused works too.
const PausedAnnotation = "privatelink.giantswarm.io/paused"

// Options configure the controller.
type Options struct {
	// Tags are the operator's default tags (--azure-tags) on the private
	// link services it creates; an object's spec.tags go over them.
	Tags map[string]string
	// DriftInterval is how often a Ready object is observed again to repair
	// out-of-band changes; each requeue is jittered by up to +10%.
	DriftInterval time.Duration
	// Recheck is how soon Azure is read again while something is in
	// progress (a long-running operation, a load balancer not there yet).
	Recheck time.Duration
	// TerminalRecheck is how soon an object whose error needs a person is
	// tried again without a spec change (a granted role, a fixed subnet).
	TerminalRecheck time.Duration
	// ConnectionCheck is how often an object with a connection approval
	// policy is read again to decide new Pending connections (Azure does
	// not notify the provider). Default 1 minute.
	ConnectionCheck time.Duration
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// SubscriptionLimit is how many private link services a subscription
	// may hold before the operator creates none there (limit.go). 0: no
	// limit.
	SubscriptionLimit int
}

func (o *Options) setDefaults() {
	if o.DriftInterval <= 0 {
		o.DriftInterval = 10 * time.Minute
	}
	if o.Recheck <= 0 {
		o.Recheck = 10 * time.Second
	}
	if o.TerminalRecheck <= 0 {
		o.TerminalRecheck = 5 * time.Minute
	}
	if o.ConnectionCheck <= 0 {
		o.ConnectionCheck = time.Minute
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
}

func (o *Options) drift() time.Duration {
	return o.DriftInterval + rand.N(o.DriftInterval/10+1) //nolint:gosec // G404: jitter spreads requeues; nothing to guess
}

// azureAPI is what the controller needs from Azure for one object.
type azureAPI interface {
	plsAPI
	networkAPI
}

// plsAPI reads and writes private link services and their connections.
type plsAPI interface {
	Get(ctx context.Context, rg, name string) (*armnetwork.PrivateLinkService, error)
	// Interface reads a network interface of the service by ID (nil when
	// gone): Azure gives dynamic NAT addresses only there.
	Interface(ctx context.Context, id string) (*armnetwork.Interface, error)
	Put(ctx context.Context, rg, name string, body armnetwork.PrivateLinkService) error
	// Count is how many private link services the subscription holds.
	Count(ctx context.Context) (int, error)
	Delete(ctx context.Context, rg, name string) error
	SetConnection(ctx context.Context, rg, name string, d pls.Decision) error
	DeleteConnection(ctx context.Context, rg, name, conn string) error
}

// networkAPI reads load balancers and virtual networks, and writes subnets.
type networkAPI interface {
	LoadBalancer(ctx context.Context, rg, name string) (*armnetwork.LoadBalancer, error)
	LoadBalancers(ctx context.Context, rg string) ([]*armnetwork.LoadBalancer, error)
	VirtualNetwork(ctx context.Context, id string) (*armnetwork.VirtualNetwork, error)
	PutSubnet(ctx context.Context, id string, body armnetwork.Subnet) error
	DeleteSubnet(ctx context.Context, id string) error
}

// Setup registers the controller with a manager.
func Setup(mgr ctrl.Manager, opts Options, clients *azure.Clients) error {
	opts.setDefaults()
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts,
		Recorder: rec,
		Azure:    sdkFor(clients),
	}
	return ctrl.NewControllerManagedBy(mgr).Named("azureprivatelinkservice").
		For(&v1alpha1.AzurePrivateLinkService{}, builder.WithPredicates(azureobject.Relevant)).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// sdkFor builds the Azure API of an object from the shared client cache.
func sdkFor(clients *azure.Clients) func(context.Context, *v1alpha1.AzurePrivateLinkService) (azureAPI, error) {
	return func(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService) (azureAPI, error) {
		subject := SubjectOf(obj)
		// Resolved once per reconcile, so identity problems surface here.
		primary, _, err := clients.NetworkFor(ctx, subject, obj.Spec.SubscriptionID)
		if err != nil {
			return nil, err
		}
		return pls.SDK{Subscription: obj.Spec.SubscriptionID, Primary: primary, Factories: func(ctx context.Context, sub string) (*armnetwork.ClientFactory, error) {
			f, _, err := clients.NetworkFor(ctx, subject, sub)
			return f, err
		}}, nil
	}
}
