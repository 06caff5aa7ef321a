package privatelinkservice

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
)

// Reconciler reconciles one AzurePrivateLinkService: observe the frontend,
// the NAT subnet and the service in Azure, write only what differs, decide
// Pending connections, record status.
type Reconciler struct {
	Client client.Client
	// APIReader reads Services uncached: the operator does not watch every
	// Service of the cluster for the few objects that name one.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Opts      Options
	Azure     func(context.Context, *v1alpha1.AzurePrivateLinkService) (azureAPI, error)

	failures failureBackoff
	ranges   rangeReservations
	// creating serializes creations per subscription (limit.go).
	creating sync.Map // subscription → *sync.Mutex
}

// SubjectOf is the credential subject of an object: its identityRef, or the
// operator's own credential where allowed.
func SubjectOf(obj *v1alpha1.AzurePrivateLinkService) azure.Subject {
	return azureobject.Subject("AzurePrivateLinkService", obj.Namespace, obj.Name, obj.Spec.AzureEnvironment, obj.Spec.IdentityRef)
}

// Reconcile is the controller's entry point.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.AzurePrivateLinkService{}
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := obj.DeepCopy()
	if isPaused(obj) {
		setCondition(obj, v1alpha1.ConditionReady, metav1.ConditionUnknown, ReasonPaused, "reconciliation is paused by an annotation")
		return ctrl.Result{}, r.writeStatus(ctx, before, obj)
	}
	if obj.DeletionTimestamp != nil {
		return r.finalize(ctx, obj)
	}
	// The operations this reconcile starts say when to look again
	// (requeueSoon). Not while deleting: deletion is bounded by the
	// Private DNS read budget, not by waiting, and keeps the recheck
	// interval (docs/design.md, Never block on Azure).
	ctx, _ = azure.WithOperationHints(ctx)
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.Client.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		before.Finalizers, before.ResourceVersion = obj.Finalizers, obj.ResourceVersion
	}
	res, err := r.reconcileAzure(ctx, obj)
	obj.Status.ObservedGeneration = obj.Generation
	summarize(obj)
	if werr := r.writeStatus(ctx, before, obj); werr != nil {
		return ctrl.Result{}, werr
	}
	return res, err
}

// reconcileAzure runs the phases in order; each either is done or says
// what to wait for.
func (r *Reconciler) reconcileAzure(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService) (ctrl.Result, error) {
	api, err := r.Azure(ctx, obj)
	if err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionLoadBalancerFound, err)
	}
	fe, err := r.frontend(ctx, obj, api)
	if err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionLoadBalancerFound, err)
	}
	if fe.status.DestinationIPAddress != "" {
		setCondition(obj, v1alpha1.ConditionLoadBalancerFound, metav1.ConditionTrue, ReasonDirectConnect, "no load balancer: Direct Connect to "+fe.status.DestinationIPAddress)
	} else {
		setCondition(obj, v1alpha1.ConditionLoadBalancerFound, metav1.ConditionTrue, ReasonFound, "frontend "+fe.status.FrontendIPConfigurationID)
	}
	obj.Status.Frontend = &fe.status
	subnetID, err := r.natSubnet(ctx, obj, api, fe)
	if err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionNATSubnetReady, err)
	}
	return r.service(ctx, obj, api, fe, subnetID)
}

// fail records an error on a condition and says when to try again
// (azureobject.Failer: the one place that acts on an error's class).
func (r *Reconciler) fail(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, cond string, err error) (ctrl.Result, error) {
	f := azureobject.Failer{Recorder: r.Recorder, Recheck: r.Opts.Recheck, TerminalRecheck: r.Opts.TerminalRecheck}
	return f.Fail(ctx, obj, &obj.Status.Conditions, obj.Generation, cond, err)
}

// writeStatus patches the status when it changed: one write per reconcile
// at most.
func (r *Reconciler) writeStatus(ctx context.Context, before, obj *v1alpha1.AzurePrivateLinkService) error {
	if equality.Semantic.DeepEqual(before.Status, obj.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func isPaused(obj *v1alpha1.AzurePrivateLinkService) bool {
	_, a := obj.Annotations[PausedAnnotation]
	_, b := obj.Annotations[capz.PausedAnnotation]
	return a || b
}

// requeueSoon is the result while Azure works on something: back when
// Azure asked to be asked again about the operations this reconcile
// started, never later than the recheck interval.
func (r *Reconciler) requeueSoon(ctx context.Context) ctrl.Result {
	return ctrl.Result{RequeueAfter: azure.RecheckAfter(ctx, r.Opts.Recheck)}
}
