// Package identityguard keeps an AzureClusterIdentity, and the Secret it
// reads, while an object the operator manages may still need it to delete
// Azure resources: an AzurePrivateEndpoint, an AzurePrivateLinkService, or
// an AzureCluster the wiring holds (docs/design.md, *Identities outlive the
// cleanup that needs them*). Deleting a namespace deletes everything in it
// at once; without this, the identity or its Secret may go first, and the
// objects that needed it stay stuck with their Azure resources left behind.
//
// Two controllers: identity-guard puts Finalizer on an identity while it
// has users and takes it off when it has none; identity-secret-guard does
// the same for the Secret an identity names, while any identity naming it
// has users. Each decides from the users alone, never from the other's
// finalizer, so two identities sharing one Secret cannot hold each other.
package identityguard

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/cacheconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusteridentities,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;patch

// Finalizer is the guard's finalizer on identities and their Secrets.
const Finalizer = "privatelink.giantswarm.io/identity-in-use"

// Reasons of the guard's Events.
const (
	ReasonProtected = "IdentityProtected"
	ReasonReleased  = "IdentityReleased"
)

const (
	userIndex   = "identityguard.identity" // users (APE, APLS, AzureCluster) by identity
	secretIndex = "identityguard.secret"   // identities by Secret
)

// Options configure the guard (--protect-identities).
type Options struct {
	// Protect puts the finalizer on identities in use. Off, the guard
	// still runs, and only takes off the finalizers it put on earlier, so
	// turning it off never leaves an object that cannot be deleted.
	Protect bool
	// ManagementCluster is the MC's AzureCluster: its identity is in use
	// while the wiring holds any cluster (every release reads the MC side).
	ManagementCluster types.NamespacedName
	// WiringIdentities are the other identities the wiring's release needs
	// (the DNS zone identity of --wiring-dns-mc-zone-identity).
	WiringIdentities []types.NamespacedName
	// PrivateEndpoints and PrivateLinkServices say whether those
	// controllers run: only then are their objects users.
	PrivateEndpoints, PrivateLinkServices bool
}

// guard answers whether an identity is in use and sets finalizers.
type guard struct {
	client    client.Client
	apiReader client.Reader // Secrets are not cached
	recorder  events.EventRecorder
	opts      Options
}

// Setup registers the indexes and both controllers.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	g := &guard{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), recorder: rec, opts: opts}
	// allowedNamespaces selectors read namespaces' labels from the cache.
	if err := cacheconfig.Cached(mgr, azure.CachedKinds()...); err != nil {
		return err
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, azureCluster(), userIndex, clusterIdentities); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, identity(), secretIndex, func(o client.Object) []string {
		if s := secretOf(o); s != "" {
			return []string{s}
		}
		return nil
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).Named("identity-guard").For(identity()).
		Watches(azureCluster(), handler.EnqueueRequestsFromMapFunc(g.clusterIdentities), builder.WithPredicates(usesChanged(clusterUses)))
	if opts.PrivateEndpoints {
		if err := idx.IndexField(ctx, &v1alpha1.AzurePrivateEndpoint{}, userIndex, endpointIdentities); err != nil {
			return err
		}
		b = b.Watches(&v1alpha1.AzurePrivateEndpoint{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return requests(endpointIdentities(o))
		}), builder.WithPredicates(usesChanged(endpointIdentities)))
	}
	if opts.PrivateLinkServices {
		if err := idx.IndexField(ctx, &v1alpha1.AzurePrivateLinkService{}, userIndex, serviceIdentities); err != nil {
			return err
		}
		b = b.Watches(&v1alpha1.AzurePrivateLinkService{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return requests(serviceIdentities(o))
		}), builder.WithPredicates(usesChanged(serviceIdentities)))
	}
	if err := b.Complete(reconcile.Func(g.reconcileIdentity)); err != nil {
		return err
	}
	// An identity's events reach its Secret: the finalizer it gained or
	// lost (its users changed), a new spec.clientSecret (old and new are
	// both mapped), its deletion.
	return ctrl.NewControllerManagedBy(mgr).Named("identity-secret-guard").
		Watches(identity(), handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return requests([]string{secretOf(o)})
		}), builder.WithPredicates(secretRelevant())).
		Complete(reconcile.Func(g.reconcileSecret))
}

// usesChanged passes an update of an object that may use identities only
// when what it uses changed (uses: its index values, and for an
// AzureCluster its own identityRef, which the management cluster's
// mapping adds): the guard's answer reads nothing else of it. CAPZ and the
// wiring write every cluster several times while it converges, and each
// write was a reconcile of its identity that listed the identity's users
// (15,513 reconciles for 2,000 clusters, test/scale). Creations and
// deletions always pass; an update is mapped both as it was and as it is.
func usesChanged(uses func(client.Object) []string) predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !slices.Equal(uses(e.ObjectOld), uses(e.ObjectNew))
	}}
}

// clusterUses is what an AzureCluster's events map to, before the
// wiring's identities are looked up: its index values and its identityRef.
func clusterUses(o client.Object) []string {
	out := clusterIdentities(o)
	if u, ok := o.(*unstructured.Unstructured); ok {
		out = append(out, identityOf(u))
	}
	return out
}

// secretRelevant passes the identity events listed above and no other: a
// CAPZ that writes its identity finalizer adds one for every cluster that
// uses the identity, and each would cost an uncached read of the Secret
// (issue 41).
func secretRelevant() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*unstructured.Unstructured)
		cur, okNew := e.ObjectNew.(*unstructured.Unstructured)
		if !okOld || !okNew {
			return true
		}
		return controllerutil.ContainsFinalizer(old, Finalizer) != controllerutil.ContainsFinalizer(cur, Finalizer) ||
			(old.GetDeletionTimestamp() == nil) != (cur.GetDeletionTimestamp() == nil) ||
			!equality.Semantic.DeepEqual(old.Object["spec"], cur.Object["spec"])
	}}
}

func (g *guard) reconcileIdentity(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := identity()
	if err := g.client.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	user, err := g.user(ctx, u)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, g.hold(ctx, u, user, "AzureClusterIdentity")
}

func (g *guard) reconcileSecret(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ids := capz.List(capz.AzureClusterIdentityGVK)
	if err := g.client.List(ctx, ids, client.MatchingFields{secretIndex: req.String()}); err != nil {
		return reconcile.Result{}, err
	}
	var user string
	for i := range ids.Items {
		u, err := g.user(ctx, &ids.Items[i])
		if err != nil {
			return reconcile.Result{}, err
		}
		if u != "" {
			user = fmt.Sprintf("AzureClusterIdentity %s/%s, used by %s", ids.Items[i].GetNamespace(), ids.Items[i].GetName(), u)
			break
		}
	}
	s := &corev1.Secret{}
	if err := g.apiReader.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, g.hold(ctx, s, user, "Secret")
}

// user names one object that still needs the identity u, or "" when none
// does (or protection is off). An object counts only if the identity
// allows its namespace (spec.allowedNamespaces, the rule the credentials
// follow): naming someone else's identity in a spec never pins it.
func (g *guard) user(ctx context.Context, u *unstructured.Unstructured) (string, error) {
	if !g.opts.Protect {
		return "", nil
	}
	key := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	if id, err := azure.ParseIdentity(u); err == nil { // a malformed identity serves no cleanup
		lists := []userList{{"AzureCluster", azureClusters()}}
		if g.opts.PrivateEndpoints {
			lists = append(lists, userList{"AzurePrivateEndpoint", &v1alpha1.AzurePrivateEndpointList{}})
		}
		if g.opts.PrivateLinkServices {
			lists = append(lists, userList{"AzurePrivateLinkService", &v1alpha1.AzurePrivateLinkServiceList{}})
		}
		for _, l := range lists {
			if name, err := g.allowedUser(ctx, id, l.list, key.String()); err != nil || name != "" {
				return l.kind + " " + name, err
			}
		}
	}
	// The wiring's own identities come from the platform's configuration.
	wiring, err := g.wiringIdentities(ctx)
	if err != nil || !slices.Contains(wiring, key) {
		return "", err
	}
	held := azureClusters()
	if err := g.client.List(ctx, held, client.MatchingFields{userIndex: wiringHolds}, client.UnsafeDisableDeepCopy, client.Limit(1)); err != nil || len(held.Items) == 0 {
		return "", err
	}
	return "the wiring of AzureCluster " + held.Items[0].GetNamespace() + "/" + held.Items[0].GetName(), nil
}

// userList is a kind of user and an empty list of it.
type userList struct {
	kind string
	list client.ObjectList
}

// allowedUser names the first object of list whose userIndex holds value
// and whose namespace the identity allows.
//
// It looks at one object first, and at all of them only when that one's
// namespace is not allowed: an identity thousands of clusters share is
// reconciled on each of their events, and the cache made a list of every
// user each time (4.3 s of the operator's CPU while 2,000 clusters
// converged, test/scale --profile-dir).
func (g *guard) allowedUser(ctx context.Context, id *azure.Identity, list client.ObjectList, value string) (string, error) {
	name, err := g.firstAllowed(ctx, id, list, value, client.Limit(1))
	if err != nil || name != "" || meta.LenList(list) == 0 {
		return name, err
	}
	return g.firstAllowed(ctx, id, list, value)
}

// firstAllowed lists the objects whose userIndex holds value (more
// options: a limit) and names the first whose namespace the identity
// allows.
func (g *guard) firstAllowed(ctx context.Context, id *azure.Identity, list client.ObjectList, value string, more ...client.ListOption) (string, error) {
	opts := append([]client.ListOption{client.MatchingFields{userIndex: value}, client.UnsafeDisableDeepCopy}, more...)
	if err := g.client.List(ctx, list, opts...); err != nil {
		return "", err
	}
	var name string
	err := meta.EachListItem(list, func(o k8sruntime.Object) error {
		m, ok := o.(metav1.Object)
		if !ok || name != "" {
			return nil
		}
		allowed, err := id.Allows(ctx, azure.NamespaceLabels(g.client), m.GetNamespace())
		var malformed *azure.AllowedNamespacesError
		if err != nil && !errors.As(err, &malformed) {
			// The namespace could not be read (gone: not a user). A
			// malformed allowedNamespaces allows nobody.
			return client.IgnoreNotFound(err)
		}
		if allowed {
			name = m.GetNamespace() + "/" + m.GetName()
		}
		return nil
	})
	return name, err
}

// wiringIdentities are the MC's identity and Options.WiringIdentities.
func (g *guard) wiringIdentities(ctx context.Context) ([]types.NamespacedName, error) {
	out := slices.Clone(g.opts.WiringIdentities)
	if g.opts.ManagementCluster.Name == "" {
		return out, nil
	}
	// Read only, and asked on every event of a held cluster: no copy of
	// the MC's object, which carries an entry per WC.
	mc := azureCluster()
	if err := g.client.Get(ctx, g.opts.ManagementCluster, mc, client.UnsafeDisableDeepCopy); err != nil {
		return out, client.IgnoreNotFound(err)
	}
	if id := identityOf(mc); id != "" {
		out = append(out, parseKey(id))
	}
	return out, nil
}

// clusterIdentities maps an AzureCluster's event to the identities whose
// use it changes: its own while the wiring holds it, and the wiring's
// (the MC's, the DNS zone's) — every cluster the wiring holds or lets go
// changes whether those are in use. The MC's own changes (its identityRef)
// map to its identity.
func (g *guard) clusterIdentities(ctx context.Context, o client.Object) []reconcile.Request {
	keys := clusterIdentities(o)
	if u, ok := o.(*unstructured.Unstructured); ok && client.ObjectKeyFromObject(u) == g.opts.ManagementCluster {
		keys = append(keys, identityOf(u))
	}
	if i := slices.Index(keys, wiringHolds); i >= 0 {
		keys = slices.Delete(keys, i, i+1)
		wiring, err := g.wiringIdentities(ctx)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the management cluster's identity")
		}
		for _, id := range wiring {
			keys = append(keys, id.String())
		}
	}
	return requests(keys)
}

// hold puts Finalizer on obj when user is not "", and takes it off when it
// is. An object already being deleted gets no new finalizer (the API server
// refuses it); the guard says so in an Event.
func (g *guard) hold(ctx context.Context, obj client.Object, user, kind string) error {
	has := controllerutil.ContainsFinalizer(obj, Finalizer)
	want := user != ""
	if has == want {
		return nil
	}
	if want && obj.GetDeletionTimestamp() != nil {
		g.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonProtected, "Protect",
			"%s %s/%s is being deleted while %s still needs it; it was deleted before the operator could protect it", kind, obj.GetNamespace(), obj.GetName(), user)
		return nil
	}
	orig, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("%T cannot be copied as an object", obj)
	}
	if want {
		controllerutil.AddFinalizer(obj, Finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, Finalizer)
	}
	// Locked on the version: the list of finalizers is written whole, and
	// another controller's finalizer must never be lost.
	if err := g.client.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if want {
		log.Info("Protecting an identity while it is in use", "kind", kind, "object", client.ObjectKeyFromObject(obj), "user", user)
		g.recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonProtected, "Protect", "%s stays until no object needs it to delete Azure resources; in use by %s", kind, user)
	} else {
		log.Info("No object needs the identity any more", "kind", kind, "object", client.ObjectKeyFromObject(obj))
		g.recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReleased, "Release", "no object the operator manages needs this %s any more", kind)
	}
	return nil
}

func requests(keys []string) []reconcile.Request {
	var out []reconcile.Request
	for _, k := range keys {
		if k != "" && k != wiringHolds {
			out = append(out, reconcile.Request{NamespacedName: parseKey(k)})
		}
	}
	return out
}

func identity() *unstructured.Unstructured { return capz.Object(capz.AzureClusterIdentityGVK) }

func azureCluster() *unstructured.Unstructured { return capz.Object(capz.AzureClusterGVK) }

func azureClusters() *unstructured.UnstructuredList { return capz.List(capz.AzureClusterGVK) }
