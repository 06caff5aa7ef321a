package clusterlink

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// How events of the objects the controllers watch become requests: every
// controller of the package maps AzureCluster, Cluster, identity and
// AzurePrivateLinkService events with these.

// wcOfManagedLink maps a managed AzurePrivateLinkService to its WC.
func wcOfManagedLink(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[ManagedForLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// delayed enqueues one fixed request, after a delay, for any event of a
// selected object. The queue keeps one entry per request, so the events of
// the window cost one reconcile.
func delayed(req reconcile.Request, after time.Duration, selected func(client.Object) bool) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o == nil || selected(o) {
			q.AddAfter(req, after)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// An object that lost the label still counts once: its
			// endpoints must leave the MC, or its deletion would wait.
			if e.ObjectOld != nil && selected(e.ObjectOld) {
				q.AddAfter(req, after)
				return
			}
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

func newAzureCluster() *unstructured.Unstructured { return capz.Object(capz.AzureClusterGVK) }

func newCluster() *unstructured.Unstructured { return capz.Object(capz.ClusterGVK) }

func newIdentity() *unstructured.Unstructured { return capz.Object(capz.AzureClusterIdentityGVK) }

// allWCsWhenMC re-evaluates every WC when the MC changes.
func allWCsWhenMC(c client.Client, mc types.NamespacedName) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if (types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}) != mc {
			return nil
		}
		return listAzureClusters(ctx, c, func(*unstructured.Unstructured) bool { return true })
	}
}

// azureClusterOfCluster maps a Cluster (pause changes) to its AzureCluster.
func azureClusterOfCluster(_ context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "name")
	if name == "" {
		name = u.GetName()
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: u.GetNamespace(), Name: name}}}
}

// clustersOfIdentity maps an identity to the clusters that use it.
func clustersOfIdentity(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return listAzureClusters(ctx, c, func(u *unstructured.Unstructured) bool {
			view, _ := capz.FromUnstructured(u)
			return view.IdentityRef != nil && view.IdentityRef.Name == o.GetName() && view.IdentityRef.Namespace == o.GetNamespace()
		})
	}
}

// listAzureClusters maps to the AzureClusters keep accepts; keep must not
// change the object it is given.
func listAzureClusters(ctx context.Context, c client.Client, keep func(*unstructured.Unstructured) bool) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	// The cache's own objects, not copies: keep only reads them. A copy of
	// every cluster on each of the MC's changes was a tenth of the
	// operator's allocations at 1,000 clusters (make bench's profile).
	if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}})
		}
	}
	return out
}

// identitySpecChanged passes creations and deletions, and updates that
// change an identity's spec: what decides whether and how a cluster may use
// it. CAPZ releases that write their identity finalizer (the fork, and
// releases before kubernetes-sigs/cluster-api-provider-azure#3552) add one for every cluster that uses the identity,
// and the identity guard adds its own; mapped to every cluster of the
// identity, N clusters sharing one identity made N² reconciles while they
// were created (issue 41).
func identitySpecChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*unstructured.Unstructured)
		cur, okNew := e.ObjectNew.(*unstructured.Unstructured)
		if !okOld || !okNew {
			return true
		}
		return !equality.Semantic.DeepEqual(old.Object["spec"], cur.Object["spec"])
	}}
}

// subscriptionChanged passes creations and deletions, and updates that
// change an AzureCluster's subscription.
func subscriptionChanged() predicate.Funcs {
	sub := func(o client.Object) string {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return ""
		}
		s, _, _ := unstructured.NestedString(u.Object, "spec", "subscriptionID")
		return s
	}
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld == nil || e.ObjectNew == nil || sub(e.ObjectOld) != sub(e.ObjectNew)
	}}
}
