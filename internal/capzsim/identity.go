package capzsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// identityFinalizer is the finalizer CAPZ puts on a cluster's
// AzureClusterIdentity: its AzureCluster finalizer, "/", and the hex
// SHA-224 of "<namespace>-<name>" of the cluster (CAPZ's
// controllers/helpers.go, clusterIdentityFinalizer, since v1.5.1 and v1.4.4;
// kubernetes-sigs/cluster-api-provider-azure#2661). CAPZ adds it in
// EnsureClusterIdentity before it provisions anything, and removes it in the
// AzureCluster's reconcileDelete right after its own finalizer: the identity
// is unprotected from then on, whatever other controllers still hold the
// cluster (the operator's wiring does).
//
// In v1.23.0 and v1.27.0, EnsureClusterIdentity makes its patch helper
// after it added the finalizer (a change of
// kubernetes-sigs/cluster-api-provider-azure#3552), so the helper sees no
// change and sends nothing: those releases never write the finalizer, while
// RemoveClusterIdentityFinalizer does remove one (read in both modules'
// controllers/helpers.go). capzsim keeps writing it, as the releases
// before that change did and a fixed one would: it is the harder case for
// the operator, one write to a shared identity per cluster (issue 41).
func identityFinalizer(namespace, name string) string {
	sum := sha256.Sum224([]byte(namespace + "-" + name))
	return capzFinalizer + "/" + hex.EncodeToString(sum[:])
}

// holdIdentity adds (hold) or removes CAPZ's finalizer on the cluster's
// identity. A missing identity is CAPZ's error on create (it reports it in
// a condition) and nothing to do on delete.
//
// CAPZ ensures the finalizer on every reconcile; capzsim does it once per
// cluster and identity (r.holding), so that a thousand clusters sharing one
// identity do not read and patch it on every pass of a benchmark.
func (r *Reconciler) holdIdentity(ctx context.Context, u *unstructured.Unstructured, spec *clusterSpec, hold bool) error {
	ref := spec.view.IdentityRef
	if ref == nil {
		return nil
	}
	held := ref.Namespace + "/" + ref.Name
	if prev, ok := r.holding.Load(u.GetUID()); hold && ok && prev == held {
		return nil
	}
	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, id); err != nil {
		return client.IgnoreNotFound(err)
	}
	if hold && !r.identityAllows(ctx, id, u.GetNamespace()) {
		return nil // CAPZ refuses the cluster (NamespaceNotAllowedByIdentity) before it adds the finalizer
	}
	f := identityFinalizer(u.GetNamespace(), u.GetName())
	// The API server refuses a new finalizer on an object being deleted.
	if hold && id.GetDeletionTimestamp() != nil {
		return nil
	}
	patch, err := finalizerPatch(id, f, hold)
	if err != nil {
		return err
	}
	if patch != nil {
		if err := r.Client.Patch(ctx, id, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if hold {
		r.holding.Store(u.GetUID(), held)
	} else {
		r.holding.Delete(u.GetUID())
	}
	return nil
}

// finalizerPatch adds (hold) or removes f on the identity without a
// conflict. CAPZ's patch helper sends a merge patch that is not locked on
// the version, so a thousand clusters sharing an identity never conflict
// on it; capzsim's JSON patches neither conflict nor lose another
// cluster's finalizer, as a merge patch of the whole list from a stale
// cache could. Only the very first finalizer, on an empty list, is a
// locked merge patch. Nil when there is nothing to do.
func finalizerPatch(id *unstructured.Unstructured, f string, hold bool) (client.Patch, error) {
	fins := id.GetFinalizers()
	i := slices.Index(fins, f)
	switch {
	case hold && i >= 0, !hold && i < 0:
		return nil, nil
	case hold && len(fins) == 0:
		orig := id.DeepCopy()
		controllerutil.AddFinalizer(id, f)
		return client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), nil
	}
	var ops []map[string]any
	if hold {
		ops = []map[string]any{{"op": "add", "path": "/metadata/finalizers/-", "value": f}}
	} else {
		// The test fails the patch (422) when a stale cache gave the wrong
		// index; the cluster is reconciled again.
		at := fmt.Sprintf("/metadata/finalizers/%d", i)
		ops = []map[string]any{{"op": "test", "path": at, "value": f}, {"op": "remove", "path": at}}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return client.RawPatch(types.JSONPatchType, raw), nil
}

// identityAllows applies the identity's spec.allowedNamespaces to the
// cluster's namespace, as CAPZ's EnsureClusterIdentity does first.
func (r *Reconciler) identityAllows(ctx context.Context, id *unstructured.Unstructured, namespace string) bool {
	parsed, err := azure.ParseIdentity(id)
	if err != nil {
		return false
	}
	var labels map[string]string
	if parsed.UsesSelector() {
		ns := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
			return false
		}
		labels = ns.Labels
	}
	ok, _ := parsed.AllowedIn(namespace, labels)
	return ok
}
