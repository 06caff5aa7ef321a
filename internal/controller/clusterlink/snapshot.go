package clusterlink

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// mcSnapshot reads the management cluster for WC reconciles: from the cache
// without copying it, and parsed once per resourceVersion. Every MC change
// reconciles every WC, and at 1,000 WCs the MC object is about 450 KiB, so a
// copy and a parse per WC reconcile would dominate the operator's CPU.
// Callers must not modify what it returns.
type mcSnapshot struct {
	mu   sync.Mutex
	u    *unstructured.Unstructured
	view *capz.AzureCluster
}

func (s *mcSnapshot) get(ctx context.Context, c client.Reader, key types.NamespacedName) (*unstructured.Unstructured, *capz.AzureCluster, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.List(ctx, list, client.InNamespace(key.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var u *unstructured.Unstructured
	for i := range list.Items {
		if list.Items[i].GetName() == key.Name {
			u = &list.Items[i]
		}
	}
	if u == nil {
		return nil, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.u == nil || s.u.GetUID() != u.GetUID() || s.u.GetResourceVersion() != u.GetResourceVersion() {
		// What could be read is used even when some field is malformed;
		// the MC reconcile reports the errors.
		s.view, _ = capz.FromUnstructured(u)
		s.u = u
	}
	return s.u, s.view, nil
}
