// Package privateendpoint reconciles AzurePrivateEndpoint objects: a
// consumer's private endpoint to a private link service, and the private
// DNS zone, virtual network links and records that make names resolve to
// it.
package privateendpoint

import (
	"context"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
)

// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivateendpoints,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivateendpoints/status,verbs=get;patch
// +kubebuilder:rbac:groups=privatelink.giantswarm.io,resources=azureprivateendpoints/finalizers,verbs=update

// Finalizer keeps the object until its Azure resources are gone (or
// released, with deletionPolicy Orphan).
const Finalizer = "privatelink.giantswarm.io/azureprivateendpoint"

// PausedAnnotation pauses reconciliation of one object; Cluster API's
// cluster.x-k8s.io/paused works too.
const PausedAnnotation = "privatelink.giantswarm.io/paused"

// refIndex indexes objects by the AzurePrivateLinkService they name.
const refIndex = "spec.privateLinkServiceRef.name"

// zoneIndex indexes objects by the private DNS zone they use.
const zoneIndex = "spec.dns.zone"

// networkIndex indexes objects with DNS by the virtual networks (lower
// case) their zones are linked to.
const networkIndex = "spec.dns.virtualNetworkLinks"

// Options configure the controller.
type Options struct {
	// DriftInterval is how often a Ready object's endpoint is read again
	// to notice out-of-band changes (jittered by up to +10%).
	DriftInterval time.Duration
	// DNSCheck is how often the private DNS of an object whose endpoint did
	// not change is read again. Private DNS has lower request limits than
	// networking: it is read at once when something may have changed (the
	// IP, the spec), otherwise this rarely.
	DNSCheck time.Duration
	// Recheck is how soon Azure is read again while something is in
	// progress.
	Recheck time.Duration
	// TerminalRecheck is how soon an object whose error needs a person is
	// tried again without a spec change.
	TerminalRecheck time.Duration
	// ConnectionCheck is how often a Pending connection is read again: the
	// provider's decision reaches the consumer only by reading.
	ConnectionCheck time.Duration
	// Heal is when the operator deletes and recreates a broken endpoint
	// (Heal.DisconnectedAfter 0: never).
	Heal heal.Policy
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// DNSEngine is the process's Private DNS engine, shared with the
	// wiring's DNS mode (one request budget, one memo of what is in place);
	// Setup makes one without a budget when it is nil.
	DNSEngine *dnsengine.Engine
	// Tags are the operator's default tags (--azure-tags) on every Azure
	// resource it creates; an object's spec.tags go over them.
	Tags map[string]string
	// PublishSecrets lets spec.publish.secretName write Secrets
	// (--publish-secrets; the chart grants the right only with it).
	PublishSecrets bool
	// ZoneGuard refuses spec.dns zone names that would shadow Azure's own
	// or other protected domains (--dns-denied-zones).
	ZoneGuard dnsguard.Guard
	// ZoneLinkLimit is how many virtual network links the operator gives
	// one private DNS zone (linklimit.go); 0: Azure's AzureLinksPerZone.
	// Not a flag: Azure's figure is fixed; tests lower it.
	ZoneLinkLimit int
	// NetworkZoneLimit is how many private DNS zones the operator links to
	// one virtual network (linklimit.go); 0: Azure's AzureZonesPerNetwork.
	// Not a flag, as ZoneLinkLimit.
	NetworkZoneLimit int
	// AddressRead, when set, is told each network interface address the
	// controller reads from Azure for an object (never one from status):
	// for the management cluster's endpoints beyond its AzureCluster the
	// wiring's observer keeps it, so that their interfaces are read once,
	// not once here and once by the wiring.
	AddressRead func(obj *v1alpha1.AzurePrivateEndpoint, nicID, ip string)
	// Observer, when set, is the process's observer of private endpoint
	// lists, which the wiring fills: the drift check of an endpoint that a
	// list made with the object's own credential shows unchanged since
	// the object last read it does not read it again (listed.go). A read's
	// time (Reconciler.Clock) is compared with a list's (the observer's
	// clock): both are the real clock in the binary, and must be one clock
	// in a test.
	Observer *privateendpoints.Observer
}

func (o *Options) setDefaults() {
	if o.DriftInterval <= 0 {
		o.DriftInterval = 10 * time.Minute
	}
	if o.DNSCheck <= 0 {
		o.DNSCheck = time.Hour
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

// endpointAPI reads and writes private endpoints and reads their NICs.
type endpointAPI interface {
	Get(ctx context.Context, rg, name string) (*armnetwork.PrivateEndpoint, error)
	Put(ctx context.Context, rg, name string, body armnetwork.PrivateEndpoint) error
	Delete(ctx context.Context, rg, name string) error
	InterfaceIP(ctx context.Context, nicID string) (string, error)
}

// dnsAPI reads and writes private DNS zones, links and A record sets.
type dnsAPI = privatedns.API

// serviceLister lists the private link services of a resource group, in
// any subscription the object's identity reaches.
type serviceLister interface {
	List(ctx context.Context, subscription, rg string) ([]*armnetwork.PrivateLinkService, error)
}

// azureAPI is what the controller needs from Azure for one object.
type azureAPI struct {
	endpoints endpointAPI
	// services finds the private link service of spec.cloudProviderService.
	services serviceLister
	// dnsFor is the Private DNS API of a subscription with an identity
	// (nil: the object's own), within the process's budget.
	dnsFor func(ctx context.Context, subscription string, ref *v1alpha1.IdentityReference) (dnsAPI, error)
	// listed is what the newest list of the object's subscription made
	// with its credential says of an endpoint of a resource group, when
	// Azure answered it after since (privateendpoints.Observer.Listed);
	// nil without an observer.
	listed func(rg, name string, since time.Time) (privateendpoints.Observation, time.Time, bool)
}

// SubjectOf is the credential subject of an object: its identityRef, or the
// operator's own credential where allowed.
func SubjectOf(obj *v1alpha1.AzurePrivateEndpoint) azure.Subject {
	return azureobject.Subject("AzurePrivateEndpoint", obj.Namespace, obj.Name, obj.Spec.AzureEnvironment, obj.Spec.IdentityRef)
}

// Setup registers the controller with a manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options, clients *azure.Clients) error {
	opts.setDefaults()
	if opts.DNSEngine == nil {
		opts.DNSEngine = &dnsengine.Engine{Reader: mgr.GetAPIReader(), Check: opts.DNSCheck}
	}
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts,
		Recorder: rec,
		Azure:    sdkFor(clients, opts.DNSEngine, opts.Observer),
	}
	r.heal.Clock, r.heal.Grace = r.clock(), opts.Heal.DisconnectedAfter
	opts.DNSEngine.Register(privatedns.KindAzurePrivateEndpoint, zoneUsersOf{r})
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.AzurePrivateEndpoint{}, refIndex, func(o client.Object) []string {
		if e, ok := o.(*v1alpha1.AzurePrivateEndpoint); ok && e.Spec.PrivateLinkServiceRef != nil {
			return []string{e.Spec.PrivateLinkServiceRef.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.AzurePrivateEndpoint{}, zoneIndex, func(o client.Object) []string {
		e, ok := o.(*v1alpha1.AzurePrivateEndpoint)
		if !ok {
			return nil
		}
		var keys []string
		for _, z := range zonesOf(e) {
			keys = append(keys, z.Key())
		}
		return keys
	}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.AzurePrivateEndpoint{}, networkIndex, networksOf); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("azureprivateendpoint").
		For(&v1alpha1.AzurePrivateEndpoint{}, builder.WithPredicates(azureobject.Relevant)).
		Watches(&v1alpha1.AzurePrivateLinkService{}, handler.EnqueueRequestsFromMapFunc(r.referrers),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(r)
}

// networksOf is the network index's function: the networks (lower case)
// an object with DNS links its zones to.
func networksOf(o client.Object) []string {
	e, ok := o.(*v1alpha1.AzurePrivateEndpoint)
	if !ok || e.Spec.DNS == nil {
		return nil
	}
	var keys []string
	for _, v := range vnets(e) {
		keys = append(keys, strings.ToLower(v))
	}
	return keys
}

// referrers are the objects that target an AzurePrivateLinkService by
// reference: its resource ID may have appeared or changed.
func (r *Reconciler) referrers(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{refIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing AzurePrivateEndpoints that reference an AzurePrivateLinkService")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.Name}})
	}
	return out
}

// sdkFor builds the Azure API of an object from the shared client cache.
func sdkFor(clients *azure.Clients, engine *dnsengine.Engine, observer *privateendpoints.Observer) func(context.Context, *v1alpha1.AzurePrivateEndpoint) (azureAPI, error) {
	return func(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (azureAPI, error) {
		subject := SubjectOf(obj)
		nf, cred, err := clients.NetworkFor(ctx, subject, obj.Spec.SubscriptionID)
		if err != nil {
			return azureAPI{}, err
		}
		dnsFor := func(ctx context.Context, subscription string, ref *v1alpha1.IdentityReference) (dnsAPI, error) {
			s := subject
			if ref != nil {
				// A zone's own identity (central DNS), with the same
				// namespace rules as spec.identityRef.
				s = azureobject.Subject("AzurePrivateEndpoint", obj.Namespace, obj.Name, obj.Spec.AzureEnvironment, ref)
			}
			df, err := clients.PrivateDNSFor(ctx, s, subscription)
			if err != nil {
				return nil, err
			}
			return engine.Paced(privatedns.SDK{Factory: df}, subscription), nil
		}
		services := privatelinkservices.SDK{Primary: nf, Subscription: obj.Spec.SubscriptionID,
			Factories: func(ctx context.Context, subscription string) (*armnetwork.ClientFactory, error) {
				f, _, err := clients.NetworkFor(ctx, subject, subscription)
				return f, err
			}}
		endpoints := budgetedEndpoints{endpointAPI: privateendpoints.NewSDK(nf), budget: engine.Budget, sub: obj.Spec.SubscriptionID}
		api := azureAPI{endpoints: endpoints, services: services, dnsFor: dnsFor}
		if observer != nil {
			// Only lists made with this object's own credential in its
			// subscription answer it.
			scope := privateendpoints.Scope(cred, obj.Spec.SubscriptionID)
			api.listed = func(rg, name string, since time.Time) (privateendpoints.Observation, time.Time, bool) {
				return observer.Listed(scope, rg, name, since)
			}
		}
		return api, nil
	}
}

// budgetedEndpoints takes each endpoint write from the subscription's
// budget of writes (--private-dns-max-writes-per-5m), which the Private
// DNS writes share: Azure counts a subscription's Microsoft.Network
// writes together, 1,000 in 5 minutes, and the consumer benchmark drew
// 429s from that window when only the DNS writes were counted. Reads are
// Microsoft.Network's own window (10,000), not the budget's.
type budgetedEndpoints struct {
	endpointAPI
	budget *privatedns.Budget
	sub    string
}

func (b budgetedEndpoints) Put(ctx context.Context, rg, name string, body armnetwork.PrivateEndpoint) error {
	if err := b.budget.Wait(b.sub, true, "private endpoint"); err != nil {
		return err
	}
	return b.endpointAPI.Put(ctx, rg, name, body)
}

// WriteHeld is whether a write would be held back now, without taking
// from the budget (writeHeld).
func (b budgetedEndpoints) WriteHeld() error {
	return b.budget.Held(b.sub, true, "private endpoint")
}

// writeHeld is the budget's answer to an endpoint write now (nil: room, or
// no budget), asked before a read whose purpose is a write: an object
// that has never seen its endpoint (it will create it) or that will delete
// it. While the subscription's budget is spent, each of the objects
// waiting for it would otherwise read its endpoint every time a place
// frees, though only one gets it: 2,000 objects past the MC's AzureCluster
// read theirs 5.4 times each at N = 3,000 (docs/benchmarks.md).
func writeHeld(api endpointAPI) error {
	if h, ok := api.(interface{ WriteHeld() error }); ok {
		return h.WriteHeld()
	}
	return nil
}

func (b budgetedEndpoints) Delete(ctx context.Context, rg, name string) error {
	if err := b.budget.Wait(b.sub, true, "private endpoint"); err != nil {
		return err
	}
	return b.endpointAPI.Delete(ctx, rg, name)
}
