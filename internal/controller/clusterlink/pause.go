package clusterlink

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// paused reports whether Cluster API pauses a cluster: the annotation on the
// AzureCluster, or spec.paused of its Cluster.
func paused(ctx context.Context, c client.Reader, u *unstructured.Unstructured, view *capz.AzureCluster) bool {
	if _, ok := u.GetAnnotations()[capz.PausedAnnotation]; ok {
		return true
	}
	if view.ClusterName == "" {
		return false
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capz.ClusterGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: view.Namespace, Name: view.ClusterName}, cl); err != nil {
		return false
	}
	if _, ok := cl.GetAnnotations()[capz.PausedAnnotation]; ok {
		return true
	}
	p, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
	return p
}
