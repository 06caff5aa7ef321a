package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// reportProblems emits each new problem once, as a Warning Event.
func (r *WCReconciler) reportProblems(u *unstructured.Unstructured, problems []Problem) {
	key := u.GetNamespace() + "/" + u.GetName()
	current := make([]string, 0, len(problems))
	for _, p := range problems {
		id := p.Reason + ":" + p.Message
		current = append(current, id)
		if r.memory.first(key, id) {
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, p.Reason, "Wire", "%s", p.Message)
		}
	}
	r.memory.keepOnly(key, current)
}

// noteState emits an Event when an endpoint enters a waiting state.
func (r *WCReconciler) noteState(u *unstructured.Unstructured, ep Endpoint, state, note string) {
	key := u.GetNamespace() + "/" + u.GetName()
	if !r.memory.first(key, "state:"+string(ep.Direction)+":"+state) {
		return
	}
	reason := stateReason(state)
	typ := corev1.EventTypeNormal
	if state == stateRejected || state == stateDisconnected || state == statePending || state == stateForeign {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(u, nil, typ, reason, "Observe", "%s", note)
}

// reportTransitions emits an Event for each IP annotation set, changed or
// removed.
func (r *WCReconciler) reportTransitions(u *unstructured.Unstructured, before, after map[string]string) {
	key := u.GetNamespace() + "/" + u.GetName()
	for _, name := range []string{r.Opts.Annotation(AnnotationAPIServerIP), r.Opts.Annotation(AnnotationMCIngressIP)} {
		was, had := before[name]
		now, has := after[name]
		switch {
		case has && (!had || was != now):
			r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonEndpointReady, "Annotate", "private endpoint is approved with IP %s; annotation %s set", now, name)
			r.memory.resetStates(key)
		case had && !has:
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonEndpointNotReady, "Annotate", "annotation %s removed: its private endpoint is no longer ready", name)
		}
	}
}

// stateReason is the reason of an endpoint state that is not ready.
func stateReason(state string) string {
	reason := map[string]string{
		statePending: ReasonEndpointPending, stateRejected: ReasonEndpointRejected,
		stateDisconnected: ReasonEndpointDisconnected, stateProvisioning: ReasonEndpointProvisioning,
		stateForeign: ReasonEndpointTargetMismatch,
	}[state]
	if reason == "" {
		reason = ReasonEndpointNotReady
	}
	return reason
}

// whyWaiting is why a pass did not find the WC ready, for
// GSPrivateLinksReady Unknown: what keeps an endpoint from being planned
// (a name held by another cluster, links not ready), else what the first
// endpoint that is not ready waits for; "" when there is nothing to say: a
// cluster with nothing to wire, or one wired for the first time that only
// waits for CAPZ (links not ready yet, an endpoint not in Azure yet) and
// never had the condition — the common path of every new cluster, which
// would otherwise cost each one a status write for a wait that ends by
// itself.
func whyWaiting(u *unstructured.Unstructured, problems []Problem, o observation, wired int) (string, string) {
	reason, msg := "", ""
	switch {
	case len(problems) > 0:
		// What kept an endpoint back first: it is why the condition is
		// not True (afterApply).
		p := problems[0]
		if i := slices.IndexFunc(problems, func(p Problem) bool { return withheld([]Problem{p}) }); i >= 0 {
			p = problems[i]
		}
		reason, msg = p.Reason, p.Message
	case o.waitReason != "":
		reason, msg = o.waitReason, o.waitMessage
	case o.throttled && ConditionOf(u, ConditionGSPrivateLinksReady) != nil:
		return "", "" // nothing new is known (observation.throttled)
	case o.throttled:
		reason, msg = ReasonAzureReadsPaced, o.throttledMessage
	case wired > 0:
		reason, msg = ReasonEndpointNotReady, "a private endpoint of this cluster is not ready"
	default:
		reason, msg = ReasonNothingToWire, "no private endpoint is wired for this cluster: none of its private links allows the management cluster's subscription, and the management cluster is not private"
	}
	if ConditionOf(u, ConditionGSPrivateLinksReady) == nil && (reason == ReasonNothingToWire || reason == ReasonWaitingForPrivateLinks || reason == ReasonEndpointProvisioning ||
		reason == ReasonMCServiceNotInAzure) {
		return "", ""
	}
	return reason, msg
}

func (r *WCReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	WarnOnce(r.Recorder, &r.memory, u, reason, msg)
}

// WarnOnce emits a Warning Event the first time mem sees it for u.
func WarnOnce(rec events.EventRecorder, mem *EventMemory, u *unstructured.Unstructured, reason, msg string) {
	if mem.first(u.GetNamespace()+"/"+u.GetName(), reason+":"+msg) {
		rec.Eventf(u, nil, corev1.EventTypeWarning, reason, "Wire", "%s", msg)
	}
}

// EventMemory remembers which events a WC has had, so that a state or a
// problem is reported when it begins, not on every reconcile.
type EventMemory struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
}

func (m *EventMemory) first(key, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]map[string]bool{}
	}
	if m.seen[key] == nil {
		m.seen[key] = map[string]bool{}
	}
	if m.seen[key][id] {
		return false
	}
	m.seen[key][id] = true
	return true
}

// keepOnly forgets remembered problems that are gone, so they are reported
// again if they come back.
func (m *EventMemory) keepOnly(key string, ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.seen[key] {
		if !strings.HasPrefix(id, "state:") && !slices.Contains(ids, id) {
			delete(m.seen[key], id)
		}
	}
}

// resetStates forgets waiting states once an endpoint is ready.
func (m *EventMemory) resetStates(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.seen[key] {
		if strings.HasPrefix(id, "state:") {
			delete(m.seen[key], id)
		}
	}
}

// Forget forgets everything reported for key (a cluster that is gone).
func (m *EventMemory) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, key)
}

// ClassifyAndReport turns an Azure error into a result, an event and a log
// line that match its class (docs/design.md, *Classify errors once*).
func ClassifyAndReport(ctx context.Context, rec events.EventRecorder, obj client.Object, opts Options, what string, err error) (ctrl.Result, error) {
	c := azure.Classify(err)
	log := ctrl.LoggerFrom(ctx)
	switch c.Class {
	case azure.ClassWait:
		return ctrl.Result{RequeueAfter: opts.PendingRecheck}, nil
	case azure.ClassTransient:
		if c.HeldBack {
			// Pacing within a budget is how the operator stays inside
			// Azure's limits, not news (metrics count it); a 429 Azure
			// sent is.
			log.V(1).Info("Azure request held back", "what", what, "message", c.Message)
		} else {
			log.Info("Azure is temporarily unavailable", "what", what, "reason", c.Reason, "message", c.Message)
		}
		if c.RetryAfter > 0 {
			return ctrl.Result{RequeueAfter: c.RetryAfter}, nil
		}
		return ctrl.Result{}, fmt.Errorf("%s: %s", what, c.Message)
	default:
		rec.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Observe", "%s: %s", what, c.Message)
		log.Info("Azure refused a request; a person must act", "what", what, "reason", c.Reason, "message", c.Message)
		return ctrl.Result{RequeueAfter: opts.TerminalRecheck}, nil
	}
}
