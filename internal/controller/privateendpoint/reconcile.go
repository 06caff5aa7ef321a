package privateendpoint

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/admission"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// Condition reasons beside azure's (NotFound, AuthorizationFailed, ...).
// They are constant: alerts and scripts may match them.
const (
	ReasonReady              = "Ready"
	ReasonPaused             = "Paused"
	ReasonProvisioning       = "Provisioning"
	ReasonProvisioningFailed = "ProvisioningFailed"
	ReasonNotOwned           = "NotOwned"
	ReasonImmutableChanged   = "ImmutableFieldChanged"
	ReasonTargetNotReady     = "TargetNotReady"
	ReasonNoAddress          = "NoAddress"
	ReasonPending            = "Pending"
	ReasonApproved           = "Approved"
	ReasonRejected           = "Rejected"
	ReasonDisconnected       = "Disconnected"
	ReasonNotRequested       = "NotRequested"
	ReasonWaitingForApproval = "WaitingForApproval"
	ReasonRecordNotOwned     = "RecordSetNotOwned"
	ReasonZoneNameRefused    = "DNSZoneNameRefused"
	ReasonTargetAmbiguous    = "TargetAmbiguous"
	ReasonTargetMoved        = "TargetMoved"
	ReasonRecordsRemoved     = "RecordsRemoved"
)

// Event reasons.
const (
	EventCreated       = "PrivateEndpointCreated"
	EventRecreated     = "PrivateEndpointRecreated"
	EventUpdated       = "PrivateEndpointUpdated"
	EventDeleted       = "PrivateEndpointDeleted"
	EventOrphaned      = "PrivateEndpointOrphaned"
	EventMovedAway     = "PrivateEndpointMovedAway"
	EventHealed        = "PrivateEndpointHealed"
	EventAskedAgain    = "ConnectionRequestedAgain"
	EventRetargeted    = "PrivateEndpointRetargeted"
	EventZoneCreated   = dnsengine.ReasonZoneCreated
	EventZoneDeleted   = dnsengine.ReasonZoneDeleted
	EventZoneAdopted   = dnsengine.ReasonZoneAdopted
	EventZoneNotOwned  = dnsengine.ReasonZoneNotOwned
	EventLinkCreated   = dnsengine.ReasonLinkCreated
	EventLinkDeleted   = dnsengine.ReasonLinkDeleted
	EventRecordWritten = dnsengine.ReasonRecordWritten
	EventRecordDeleted = dnsengine.ReasonRecordDeleted
	EventIdentity      = "IdentityUnavailable"
)

// Reconciler reconciles one AzurePrivateEndpoint: resolve the target,
// observe the endpoint and write it only when it is missing or differs,
// follow its connection (heal it when Disconnected), then write the private
// DNS while the connection is Approved, publish the result where
// spec.publish says; record status.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (a workload cluster
	// with an object's name, when DNS carries an owner value of earlier
	// versions); Client is used when it is nil.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Opts      Options
	Azure     func(context.Context, *v1alpha1.AzurePrivateEndpoint) (azureAPI, error)
	Clock     clock.PassiveClock

	heal    heal.Tracker
	dnsSeen memo.Memo
	// linkRoom admits new links to a zone (linklimit.go).
	linkRoom admission.Room
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Reconcile is the controller's entry point.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &v1alpha1.AzurePrivateEndpoint{}
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
	pres, perr := r.publish(ctx, obj)
	if err == nil {
		res, err = lowest(res, pres), perr
	}
	obj.Status.ObservedGeneration = obj.Generation
	summarize(obj)
	if werr := r.writeStatus(ctx, before, obj); werr != nil {
		return ctrl.Result{}, werr
	}
	return res, err
}

// reconcileAzure runs the phases in order: target, endpoint, connection,
// DNS. Each either is done or says what to wait for.
func (r *Reconciler) reconcileAzure(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (ctrl.Result, error) {
	api, err := r.Azure(ctx, obj)
	if err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionPrivateEndpointReady, err)
	}
	target, err := r.target(ctx, obj, api)
	if err != nil {
		res, err := r.fail(ctx, obj, v1alpha1.ConditionPrivateEndpointReady, err)
		if err != nil {
			return res, err
		}
		rres, rerr := r.untargeted(ctx, obj, api)
		return lowest(res, rres), rerr
	}
	obj.Status.Target = target
	zres, zoneReady, linked, dnsOK, err := r.dnsInfra(ctx, obj, api)
	if err != nil {
		return zres, err
	}
	res, ready, err := r.endpoint(ctx, obj, api, target)
	if !ready || err != nil {
		return lowest(res, zres), err
	}
	res, approved, err := r.connection(ctx, obj, api, dnsOK)
	if !approved || err != nil || !zoneReady {
		return lowest(res, zres), err
	}
	dres, err := r.dnsRecords(ctx, obj, api, linked)
	if err != nil {
		return dres, err
	}
	return lowest(lowest(res, zres), dres), nil
}

// lowest is the sooner of two requeues (zero means none).
func lowest(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	default:
		return b
	}
}

// target is what to connect to: the private link service's ID or alias,
// an Azure service's resource ID, the referenced AzurePrivateLinkService's
// resource ID once it has one, or the service cloud-provider-azure made for
// a Service.
func (r *Reconciler) target(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (string, error) {
	s := obj.Spec
	switch {
	case s.PrivateLinkServiceID != "":
		return s.PrivateLinkServiceID, nil
	case s.PrivateLinkServiceAlias != "":
		return s.PrivateLinkServiceAlias, nil
	case s.PrivateLinkResourceID != "":
		return s.PrivateLinkResourceID, nil
	case s.CloudProviderService != nil:
		return r.serviceTarget(ctx, obj, api)
	case s.PrivateLinkServiceRef == nil:
		return "", terminal(ReasonTargetNotReady, "spec names no private link service")
	}
	pls := &v1alpha1.AzurePrivateLinkService{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: s.PrivateLinkServiceRef.Name}, pls)
	if apierrors.IsNotFound(err) {
		return "", waitFor(ReasonTargetNotReady, "AzurePrivateLinkService %s/%s does not exist yet", obj.Namespace, s.PrivateLinkServiceRef.Name)
	}
	if err != nil {
		return "", err
	}
	if pls.Status.ResourceID == "" {
		return "", waitFor(ReasonTargetNotReady, "AzurePrivateLinkService %s/%s has no private link service in Azure yet", obj.Namespace, pls.Name)
	}
	return pls.Status.ResourceID, nil
}

// fail records an error on a condition and says when to try again
// (azureobject.Failer: the one place that acts on an error's class).
func (r *Reconciler) fail(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, cond string, err error) (ctrl.Result, error) {
	f := azureobject.Failer{Recorder: r.Recorder, Recheck: r.Opts.Recheck, TerminalRecheck: r.Opts.TerminalRecheck}
	return f.Fail(ctx, obj, &obj.Status.Conditions, obj.Generation, cond, err)
}

// writeStatus patches the status when it changed: one write per reconcile
// at most.
func (r *Reconciler) writeStatus(ctx context.Context, before, obj *v1alpha1.AzurePrivateEndpoint) error {
	if equality.Semantic.DeepEqual(before.Status, obj.Status) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func isPaused(obj *v1alpha1.AzurePrivateEndpoint) bool {
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

// owner is the owner value written on what the object creates.
func owner(obj *v1alpha1.AzurePrivateEndpoint) string { return obj.Namespace + "/" + obj.Name }

// dnsOwner is whom the object's zones, links and record sets are marked
// for (kind-qualified: a workload cluster of the same name is another
// owner).
func dnsOwner(obj *v1alpha1.AzurePrivateEndpoint) dns.Owner {
	return dns.Owner{Kind: dns.KindAzurePrivateEndpoint, Namespace: obj.Namespace, Name: obj.Name}
}

var (
	waitFor  = azureobject.WaitFor
	waitLong = azureobject.WaitLonger
	terminal = azureobject.Terminal
	classify = azureobject.Classify
)

func setCondition(obj *v1alpha1.AzurePrivateEndpoint, typ string, status metav1.ConditionStatus, reason, message string) {
	azureobject.SetCondition(&obj.Status.Conditions, obj.Generation, typ, status, reason, message)
}

// summarize sets Ready from the other three conditions.
func summarize(obj *v1alpha1.AzurePrivateEndpoint) {
	msg := "the private endpoint is approved"
	if obj.Spec.DNS != nil {
		msg += " and its names resolve to it from the linked virtual networks"
	}
	if obj.Spec.Publish != nil {
		msg += "; its addresses are published"
	}
	azureobject.Summarize(&obj.Status.Conditions, obj.Generation, msg,
		v1alpha1.ConditionPrivateEndpointReady, v1alpha1.ConditionConnectionApproved, v1alpha1.ConditionDNSReady, v1alpha1.ConditionPublished)
}
