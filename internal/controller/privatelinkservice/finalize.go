package privatelinkservice

import (
	"context"
	"strings"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// finalize deletes in order: the connections (Azure refuses to delete a
// service that has any), the service, then a NAT subnet the operator
// created; each step is started and observed on a later pass. Orphan, or a
// service the operator does not own, just releases the object.
func (r *Reconciler) finalize(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	if capz.DeletedForMove(obj) {
		// clusterctl move made the object in another management cluster
		// and deletes this one: the service and its connections are the
		// target's now.
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventMovedAway, "Release",
			"deleted by clusterctl move: the private link service and its connections stay in Azure for the management cluster the object moved to")
		return ctrl.Result{}, r.release(ctx, obj)
	}
	if obj.Spec.DeletionPolicy == v1alpha1.DeletionPolicyOrphan {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventOrphaned, "Orphan", "deletionPolicy Orphan: the private link service stays in Azure")
		return ctrl.Result{}, r.release(ctx, obj)
	}
	before := obj.DeepCopy()
	ctx = azure.WithDeletionReason(ctx, "the AzurePrivateLinkService is deleted")
	done, res, err := r.deleteAzure(ctx, obj)
	if !done {
		if werr := r.writeStatus(ctx, before, obj); werr != nil {
			return ctrl.Result{}, werr
		}
		return res, err
	}
	return ctrl.Result{}, r.release(ctx, obj)
}

func (r *Reconciler) deleteAzure(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService) (bool, ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	api, err := r.Azure(ctx, obj)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	rg, name := obj.Spec.ResourceGroup, obj.AzurePrivateLinkServiceName()
	observed, err := api.Get(ctx, rg, name)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return false, res, err
	}
	if observed != nil {
		if o, _ := pls.OwnerOf(observed, owner(obj)); o != pls.Ours {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventOrphaned, "Release", "private link service %s is not the operator's: left in Azure", name)
			return r.deleteSubnet(ctx, obj, api)
		}
		res, err := r.deleteService(ctx, obj, api, observed)
		return false, res, err
	}
	return r.deleteSubnet(ctx, obj, api)
}

// deleteService removes the connections first, then the service.
func (r *Reconciler) deleteService(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI, observed *armnetwork.PrivateLinkService) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	rg, name := obj.Spec.ResourceGroup, obj.AzurePrivateLinkServiceName()
	if ptr.Deref(observed.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateDeleting {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting")
		return r.requeueSoon(ctx), nil
	}
	conns := pls.Connections(observed)
	for _, c := range conns {
		if c.Deleting {
			continue // started by an earlier pass
		}
		if err := api.DeleteConnection(ctx, rg, name, c.Name); err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventConnectionRemoved, "Delete", "removing connection %s of private endpoint %s before deleting the service", c.Name, c.PrivateEndpointID)
	}
	if len(conns) > 0 {
		setCondition(obj, cond, metav1.ConditionFalse, azure.ReasonInUse, "deleting: removing the private endpoint connections first")
		return r.requeueSoon(ctx), nil
	}
	if err := api.Delete(ctx, rg, name); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "deleting private link service %s", name)
	setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "deleting")
	return r.requeueSoon(ctx), nil
}

// deleteSubnet deletes the NAT subnet if the operator created it; Azure
// refuses while anything still uses it, which is waited for.
func (r *Reconciler) deleteSubnet(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api networkAPI) (bool, ctrl.Result, error) {
	if !obj.Status.NATSubnetCreated || obj.Status.NATSubnetID == "" {
		return true, ctrl.Result{}, nil
	}
	vnet, err := api.VirtualNetwork(ctx, pls.VNetOf(obj.Status.NATSubnetID))
	if err != nil {
		res, err := r.fail(ctx, obj, v1alpha1.ConditionNATSubnetReady, err)
		return false, res, err
	}
	id := obj.Status.NATSubnetID
	if vnet == nil || findSubnet(vnet, id[strings.LastIndex(id, "/")+1:]) == nil {
		return true, ctrl.Result{}, nil
	}
	if err := api.DeleteSubnet(ctx, id); err != nil {
		res, err := r.fail(ctx, obj, v1alpha1.ConditionNATSubnetReady, err)
		return false, res, err
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventNATSubnetDeleted, "Delete", "deleting NAT subnet %s, which the operator created", id)
	setCondition(obj, v1alpha1.ConditionNATSubnetReady, metav1.ConditionFalse, ReasonProvisioning, "deleting")
	return false, r.requeueSoon(ctx), nil
}

func (r *Reconciler) release(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService) error {
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(obj, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, patch))
}
