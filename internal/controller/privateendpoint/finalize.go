package privateendpoint

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// finalize deletes in order — the records, the links no other object
// needs, the zone if it is the operator's and empty, then the endpoint —
// each step started and observed on a later pass; 404 is success. Orphan
// releases the object and leaves Azure alone. When the identity cannot be
// used, an Event says how to release the object anyway (deletionPolicy
// Orphan): a broken identity never holds an object forever without a way
// out.
func (r *Reconciler) finalize(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	r.heal.Ready(owner(obj))
	if capz.DeletedForMove(obj) {
		// clusterctl move made the object in another management cluster
		// and deletes this one: the endpoint, its DNS and what it
		// published (moved with it, and deleted here by clusterctl) are
		// the target's now.
		forgetObject(&r.dnsSeen, owner(obj))
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventMovedAway, "Release",
			"deleted by clusterctl move: the private endpoint and its DNS stay in Azure for the management cluster the object moved to")
		return ctrl.Result{}, r.removeFinalizer(ctx, obj)
	}
	if obj.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventOrphaned, "Orphan", "deletionPolicy Orphan: the private endpoint and its DNS stay in Azure")
		return ctrl.Result{}, r.release(ctx, obj)
	}
	before := obj.DeepCopy()
	// What spec.publish wrote goes first: once the endpoint is deleted,
	// Azure gives its address to the next endpoint in the subnet.
	if err := r.unpublish(ctx, obj, v1alpha1.PublishedStatus{}); err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionPrivateEndpointReady, err)
	}
	done, res, err := r.deleteAzure(ctx, obj)
	if !done {
		summarize(obj)
		if werr := r.writeStatus(ctx, before, obj); werr != nil {
			return ctrl.Result{}, werr
		}
		return res, err
	}
	forgetObject(&r.dnsSeen, owner(obj))
	return ctrl.Result{}, r.release(ctx, obj)
}

func (r *Reconciler) deleteAzure(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (bool, ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateEndpointReady
	api, err := r.Azure(ctx, obj)
	if err != nil {
		if c := classify(err); c.Class == azure.ClassTerminal {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventIdentity, "Delete",
				"cannot delete the Azure resources: %s; fix the identity, or set spec.deletionPolicy to Orphan to release the object and leave them in Azure", c.Message)
		}
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	ctx = azure.WithDeletionReason(ctx, "the AzurePrivateEndpoint is deleted")
	if done, res, err := r.releaseDNS(ctx, obj, api); !done || err != nil {
		return false, res, err
	}
	name := obj.AzurePrivateEndpointName()
	if obj.Status.PrivateEndpointID != "" && obj.Status.ProvisioningState != string(armnetwork.ProvisioningStateDeleting) {
		// Seen and not yet being deleted: the next step is the delete,
		// which the budget may hold back; then the read is not spent
		// either. Once Deleting, only reads follow.
		if err := writeHeld(api.endpoints); err != nil {
			res, err := r.fail(ctx, obj, cond, err)
			return false, res, err
		}
	}
	observed, err := api.endpoints.Get(ctx, obj.Spec.ResourceGroup, name)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	if observed == nil {
		return true, ctrl.Result{}, nil
	}
	if pe.Owner(observed) != owner(obj) {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventOrphaned, "Release", "private endpoint %s is not the operator's: left in Azure", name)
		return true, ctrl.Result{}, nil
	}
	if observed.Properties == nil || ptr.Deref(observed.Properties.ProvisioningState, "") != armnetwork.ProvisioningStateDeleting {
		if err := api.endpoints.Delete(ctx, obj.Spec.ResourceGroup, name); err != nil {
			res, err := r.fail(ctx, obj, cond, err)
			return false, res, err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "deleting private endpoint %s", name)
	}
	obj.Status.ProvisioningState = string(armnetwork.ProvisioningStateDeleting)
	setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting")
	return false, r.requeueSoon(ctx), nil
}

// release deletes what the object published (its owner references would
// have the garbage collector do it, later) and removes the finalizer.
func (r *Reconciler) release(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) error {
	if err := r.unpublish(ctx, obj, v1alpha1.PublishedStatus{}); err != nil {
		return err
	}
	return r.removeFinalizer(ctx, obj)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) error {
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.dnsSeen.Forget(approvedKey(obj), readKey(obj))
	return nil
}
