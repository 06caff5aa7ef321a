package capzsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// controllers/helpers.go). capzsim does the same in Upstream and V127
// mode: it removes the finalizer and never adds it. In Fork mode it adds
// it, as the releases before that change did (the fork's base is not on
// record): one write to a shared identity per cluster, what the
// operator's credentials and watches must not turn into a token or a
// reconcile of every cluster each (issue 41).
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
	if prev, ok := r.holding.Load(u.GetUID()); hold && (ok && prev == held || r.Opts.Mode != Fork) {
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
	orig := id.DeepCopy()
	f := identityFinalizer(u.GetNamespace(), u.GetName())
	changed := controllerutil.RemoveFinalizer(id, f)
	if hold {
		// The API server refuses a new finalizer on an object being deleted.
		if id.GetDeletionTimestamp() != nil {
			return nil
		}
		changed = controllerutil.AddFinalizer(id, f)
	}
	if changed {
		if err := r.Client.Patch(ctx, id, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
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
