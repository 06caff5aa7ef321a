package azureobject

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// TestFail: each class of error does what the design says to the
// condition, the requeue and the Events.
func TestFail(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	f := Failer{Recorder: rec, Recheck: time.Second, TerminalRecheck: time.Minute}
	obj := &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	conds := &obj.Status.Conditions
	ctx := context.Background()

	res, err := f.Fail(ctx, obj, conds, 3, "X", WaitFor("Waiting", "not yet"))
	if c := meta.FindStatusCondition(*conds, "X"); err != nil || res.RequeueAfter != time.Second || c.Status != metav1.ConditionFalse || c.Reason != "Waiting" || c.ObservedGeneration != 3 {
		t.Errorf("wait: %v %v %+v", res, err, c)
	}
	transient := &azure.ClassifiedError{Classification: azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: 7 * time.Second}}
	res, err = f.Fail(ctx, obj, conds, 3, "X", transient)
	if c := meta.FindStatusCondition(*conds, "X"); err != nil || res.RequeueAfter != 7*time.Second || c.Reason != "Waiting" {
		t.Errorf("transient with Retry-After: %v %v %+v (a known condition stays)", res, err, c)
	}
	plain := &azure.ClassifiedError{Classification: azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonAzureUnavailable}}
	if _, err = f.Fail(ctx, obj, conds, 3, "Y", plain); !errors.Is(err, plain) {
		t.Errorf("transient without Retry-After is returned for backoff: %v", err)
	}
	if c := meta.FindStatusCondition(*conds, "Y"); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("a new condition on a transient error: %+v", c)
	}
	for range 2 {
		res, err = f.Fail(ctx, obj, conds, 3, "X", Terminal("NotOwned", "someone else's"))
	}
	if c := meta.FindStatusCondition(*conds, "X"); err != nil || res.RequeueAfter != time.Minute || c.Reason != "NotOwned" {
		t.Errorf("terminal: %v %v %+v", res, err, c)
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("a terminal error repeated: %d Events, want 1", n)
	}
	// What the operator held back is logged at debug level only; what Azure
	// refused, at the default level.
	var lines []string
	logged := ctrl.LoggerInto(ctx, funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 0}))
	heldBack := &azure.ClassifiedError{Classification: azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: time.Second, HeldBack: true}}
	if res, err = f.Fail(logged, obj, conds, 3, "X", heldBack); err != nil || res.RequeueAfter != time.Second || len(lines) != 0 {
		t.Errorf("held back: %v %v, logged at the default level: %q", res, err, lines)
	}
	if _, _ = f.Fail(logged, obj, conds, 3, "X", transient); len(lines) != 1 || !strings.Contains(lines[0], "Azure is not ready") {
		t.Errorf("Azure's 429: logged %q, want one line at the default level", lines)
	}
	s := Subject("AzurePrivateEndpoint", "team", "hc1", "", &v1alpha1.IdentityReference{Name: "id"})
	if s.IdentityRef == nil || s.IdentityRef.Namespace != "team" || !s.AllowOwn {
		t.Errorf("subject: %+v", s)
	}
}
