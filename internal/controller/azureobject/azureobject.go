// Package azureobject holds what the controllers of the operator's own
// Azure-backed objects (AzurePrivateLinkService, AzurePrivateEndpoint)
// share: problems found in a spec, classified like Azure's errors; the one
// place that acts on an error's class; the credential subject of an
// object; and which object changes trigger a reconcile.
package azureobject

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// SpecError is a problem a controller found itself, classified like an
// Azure error.
type SpecError struct {
	Class   azure.Class
	Reason  string
	Message string
	// After is how soon to look again when it is not the controller's
	// usual recheck (a wait that costs an Azure list each time).
	After time.Duration
}

func (e *SpecError) Error() string { return e.Message }

// WaitFor is an expected state that passes by itself (requeue, no Event).
func WaitFor(reason, format string, args ...any) error {
	return &SpecError{Class: azure.ClassWait, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// WaitLonger is a wait that is looked at again only after a while.
func WaitLonger(after time.Duration, reason, format string, args ...any) error {
	return &SpecError{Class: azure.ClassWait, Reason: reason, Message: fmt.Sprintf(format, args...), After: after}
}

// Terminal needs a person (condition, Event, long requeue).
func Terminal(reason, format string, args ...any) error {
	return &SpecError{Class: azure.ClassTerminal, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Classify turns any error into what to do; Azure's errors go through
// azure.Classify, the one place that knows Azure's codes.
func Classify(err error) azure.Classification {
	var se *SpecError
	if errors.As(err, &se) {
		return azure.Classification{Class: se.Class, Reason: se.Reason, Message: se.Message}
	}
	return azure.Classify(err)
}

// SetCondition sets a condition for the object's generation.
func SetCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation})
}

// ReasonNotReady is Ready's reason while a condition it sums up is not
// known yet.
const ReasonNotReady = "NotReady"

// Summarize sets Ready from the given conditions: True (reason Ready, with
// readyMessage) when all are, otherwise False, or Unknown, with the reason
// and message of the first one that is not; NotReady when one is missing.
func Summarize(conds *[]metav1.Condition, generation int64, readyMessage string, types ...string) {
	for _, t := range types {
		c := meta.FindStatusCondition(*conds, t)
		if c == nil {
			SetCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionFalse, ReasonNotReady, t+" is not known yet")
			return
		}
		if c.Status != metav1.ConditionTrue {
			SetCondition(conds, generation, v1alpha1.ConditionReady, c.Status, c.Reason, t+": "+c.Message)
			return
		}
	}
	SetCondition(conds, generation, v1alpha1.ConditionReady, metav1.ConditionTrue, "Ready", readyMessage)
}

// Failer acts on an error's class for one controller.
type Failer struct {
	Recorder events.EventRecorder
	// Recheck is the requeue of a wait; TerminalRecheck that of an error a
	// person must fix.
	Recheck, TerminalRecheck time.Duration
}

// Fail records err on the condition cond and says when to try again: a
// wait sets the condition False and requeues after Recheck; a transient
// error is logged (a request the operator held back, only at debug level)
// and retried (after Azure's Retry-After when it gave one) without
// touching a known condition; anything else sets the condition False,
// emits a Warning Event once per new message, and requeues after
// TerminalRecheck.
func (f Failer) Fail(ctx context.Context, obj k8sruntime.Object, conds *[]metav1.Condition, generation int64, cond string, err error) (ctrl.Result, error) {
	c := Classify(err)
	log := ctrl.LoggerFrom(ctx).WithValues("condition", cond, "reason", c.Reason)
	switch c.Class {
	case azure.ClassWait:
		SetCondition(conds, generation, cond, metav1.ConditionFalse, c.Reason, c.Message)
		if se := (*SpecError)(nil); errors.As(err, &se) && se.After > 0 {
			return ctrl.Result{RequeueAfter: se.After}, nil
		}
		return ctrl.Result{RequeueAfter: f.Recheck}, nil
	case azure.ClassTransient:
		if c.HeldBack {
			log.V(1).Info("Held back, retrying", "message", c.Message)
		} else {
			log.Info("Azure is not ready, retrying", "message", c.Message)
		}
		if meta.FindStatusCondition(*conds, cond) == nil {
			SetCondition(conds, generation, cond, metav1.ConditionUnknown, c.Reason, c.Message)
		}
		if c.RetryAfter > 0 {
			return ctrl.Result{RequeueAfter: c.RetryAfter}, nil
		}
		return ctrl.Result{}, err
	default:
		if old := meta.FindStatusCondition(*conds, cond); old == nil || old.Reason != c.Reason || old.Message != c.Message {
			f.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, cond, "%s", c.Message)
		}
		SetCondition(conds, generation, cond, metav1.ConditionFalse, c.Reason, c.Message)
		log.Info("Needs a person", "message", c.Message)
		return ctrl.Result{RequeueAfter: f.TerminalRecheck}, nil
	}
}

// Subject is the credential subject of an object: its identityRef (the
// namespace defaults to the object's), or the operator's own credential
// where the object's namespace may use it.
func Subject(kind, namespace, name, environment string, ref *v1alpha1.IdentityReference) azure.Subject {
	s := azure.Subject{Kind: kind, Namespace: namespace, Name: name, AzureEnvironment: environment, AllowOwn: true}
	if ref != nil {
		ns := ref.Namespace
		if ns == "" {
			ns = namespace
		}
		s.IdentityRef = &capz.ObjectRef{Name: ref.Name, Namespace: ns}
	}
	return s
}

// Relevant ignores the operator's own status writes: spec (generation),
// annotation (pause) and deletion changes matter.
var Relevant = predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
})
