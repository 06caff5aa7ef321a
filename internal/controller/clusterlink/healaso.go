package clusterlink

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Healing on CAPZ versions that make endpoints through ASO (upstream v1.23
// and v1.27). The endpoint belongs to an ASO PrivateEndpoint object that
// CAPZ controls; deleting the endpoint in Azure behind it leaves the object
// Ready, and ASO puts the endpoint back only at its next sync of that
// object (ASO's azureSyncPeriod). So the heal deletes the object instead:
// ASO deletes the endpoint in Azure (reconcile policy "manage"), and CAPZ
// makes the object again — with policy "skip", then "manage" once ASO finds
// nothing in Azure — at its next reconcile of the AzureCluster
// (azure/services/aso/aso.go, CreateOrUpdateResource, v1.23.0 and v1.27.0).
// CAPZ's AzureCluster controller watches no ASO objects
// (controllers/azurecluster_controller.go, SetupWithManager), so the
// operator asks for that reconcile by writing HealRequestedAnnotation on
// the AzureCluster, once when it deletes the object and once when the
// object is gone (CAPZ requeues itself every 20 s while an object it wants
// is not Ready, but not while one is merely being deleted and still Ready).

// HealRequestedAnnotation is written, under the annotation prefix, on an
// AzureCluster whose ASO-backed endpoint the operator healed: "<endpoint>
// <RFC 3339 time>". Its only purpose is the update event that makes CAPZ
// reconcile the cluster now rather than at its sync period.
const HealRequestedAnnotation = "heal-requested"

// healFieldManager writes HealRequestedAnnotation, apart from the fields
// the operator applies.
const healFieldManager = capz.FieldManager + "-heal"

// healThroughASO heals ep through the ASO object that owns it, when there
// is one that is provably CAPZ's for owner and that ASO manages. It
// reports whether it did (or the object is already going); false sends the
// heal to Azure directly.
func (r *WCReconciler) healThroughASO(ctx context.Context, u *unstructured.Unstructured, owner *capz.AzureCluster, ep Endpoint, state string) (bool, error) {
	obj, err := r.asoEndpoint(ctx, owner, ep.Name)
	if err != nil || obj == nil {
		return false, err
	}
	if obj.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] != capz.ASOReconcilePolicyManage {
		// "skip": ASO does not delete the endpoint with the object; once it
		// is gone in Azure, CAPZ adopts the object and ASO makes it again.
		return false, nil
	}
	k := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	r.asoHeals.Store(k, obj.GetUID())
	if obj.GetDeletionTimestamp() != nil {
		return true, nil
	}
	if err := r.Client.Delete(ctx, obj, client.Preconditions{UID: new(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
		return false, err
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonEndpointHealed, "Heal",
		"private endpoint %s in %s/%s was %s for longer than %s: deleted its ASO PrivateEndpoint %s (ASO deletes the endpoint in Azure), so that CAPZ makes it again against private link service %s",
		ep.Name, owner.Namespace, owner.Name, state, r.Opts.Heal.DisconnectedAfter, k, ep.Connections[0].PrivateLinkServiceID)
	return true, r.requestCAPZReconcile(ctx, owner, ep.Name)
}

// asoPaused reports whether CAPZ has paused the ASO object of ep
// (capz.PrePauseReconcilePolicyAnnotation). Deleting the endpoint behind
// it, in Azure, would break what clusterctl move promises (nothing in
// Azure changes while clusters are paused); the heal waits. An object
// that cannot be read is taken as not paused: the heal path reads it
// again and reports the error.
func (r *WCReconciler) asoPaused(ctx context.Context, owner *capz.AzureCluster, ep Endpoint) bool {
	obj, err := r.asoEndpoint(ctx, owner, ep.Name)
	if err != nil || obj == nil {
		return false
	}
	_, paused := obj.GetAnnotations()[capz.PrePauseReconcilePolicyAnnotation]
	return paused
}

// followASOHeal asks CAPZ once more to reconcile owner when the ASO object
// of an endpoint it healed is gone, and forgets the heal.
func (r *WCReconciler) followASOHeal(ctx context.Context, owner *capz.AzureCluster, ep Endpoint) error {
	k := types.NamespacedName{Namespace: owner.Namespace, Name: capz.ASOName(ep.Name)}
	deleted, ok := r.asoHeals.Load(k)
	if !ok {
		return nil
	}
	obj, err := r.asoEndpoint(ctx, owner, ep.Name)
	switch {
	case err != nil:
		return err
	case obj != nil && obj.GetUID() == deleted:
		return nil // still being deleted
	case obj != nil:
		r.asoHeals.Delete(k) // CAPZ made it again
		return nil
	}
	if err := r.requestCAPZReconcile(ctx, owner, ep.Name); err != nil {
		return err
	}
	r.asoHeals.Delete(k)
	return nil
}

// asoEndpoint reads the ASO PrivateEndpoint of an endpoint entry of owner,
// past the cache; nil when there is none, it is not provably CAPZ's for
// owner, or ASO is not installed.
func (r *WCReconciler) asoEndpoint(ctx context.Context, owner *capz.AzureCluster, name string) (*unstructured.Unstructured, error) {
	reader := apiOr(r.APIReader, r.Client)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
	err := reader.Get(ctx, types.NamespacedName{Namespace: owner.Namespace, Name: capz.ASOName(name)}, obj)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	if !ASOOfCluster(capz.ReadASO(obj), owner) {
		return nil, nil // not provably CAPZ's: the heal goes to Azure as on the fork
	}
	return obj, nil
}
