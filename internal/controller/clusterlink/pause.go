package clusterlink

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Paused reports whether Cluster API pauses a cluster: the annotation on the
// AzureCluster, or spec.paused of its Cluster. A Cluster that cannot be read
// is an error, not "not paused": acting on a cluster clusterctl is moving
// would undo the move.
func Paused(ctx context.Context, c client.Reader, u *unstructured.Unstructured, view *capz.AzureCluster) (bool, error) {
	if _, ok := u.GetAnnotations()[capz.PausedAnnotation]; ok || capz.DeletedForMove(u) {
		// clusterctl move pauses the Cluster before it deletes the
		// AzureCluster, and deletes the Cluster last; an AzureCluster it
		// deletes counts as paused whatever its Cluster says.
		return true, nil
	}
	if view.ClusterName == "" {
		return false, nil
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capz.ClusterGVK)
	// Read only, and read for every WC on every MC pass: no deep copy.
	if err := c.Get(ctx, types.NamespacedName{Namespace: view.Namespace, Name: view.ClusterName}, cl, &client.GetOptions{UnsafeDisableDeepCopy: new(true)}); err != nil {
		// A Cluster that does not exist (yet, or any more) pauses nothing.
		return false, client.IgnoreNotFound(err)
	}
	if _, ok := cl.GetAnnotations()[capz.PausedAnnotation]; ok {
		return true, nil
	}
	p, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
	return p, nil
}

// ReadActiveWC is the read and pause phases the WC controllers besides the
// wiring share: the MC's own request, a WC that is gone and a paused one
// are nothing to do (u nil). What could be parsed comes with the parse
// errors: a deletion needs only names and IDs.
func ReadActiveWC(ctx context.Context, c client.Reader, req ctrl.Request, mc types.NamespacedName) (*unstructured.Unstructured, *capz.AzureCluster, field.ErrorList, error) {
	if req.NamespacedName == mc {
		return nil, nil, nil, nil
	}
	u, err := getAzureCluster(ctx, c, req.NamespacedName)
	if err != nil || u == nil {
		return nil, nil, nil, err
	}
	wc, errs := capz.FromUnstructured(u)
	if isPaused, err := Paused(ctx, c, u, wc); err != nil || isPaused {
		return nil, nil, nil, err
	}
	return u, wc, errs, nil
}
