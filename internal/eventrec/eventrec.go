// Package eventrec is the operator's Event recorder: it writes Events to
// the API server (events.k8s.io/v1) with Kubernetes' series, keeping for
// each series only what it needs, and makes what the series lose visible.
//
// Series, as client-go's events broadcaster makes them
// (k8s.io/client-go v0.37.1, tools/events/event_broadcaster.go
// recordToSink, getKey, finishSeries, refreshExistingEventSeries): an
// Event whose type, reason, action and objects (their references, with
// the resource version) are those of a series still observed joins it.
// The API server gets the Event when it is first recorded, its series
// (count 2) when it is recorded a second time, and the series' count when
// the series ends, 6 minutes after its last Event, or every 30 minutes
// while it goes on. The notes of the Events after the first are not
// written: Recorder logs each at the default level and counts it
// (azure_private_endpoint_operator_event_notes_merged_total), so that
// nothing an Event said is lost.
//
// client-go keeps a whole copy of every Event for 6 to 12 minutes, and
// one more while it is written, from a goroutine of its own per Event: at
// 1,000 workload clusters in DNS mode about 7,000 Events, the largest
// item of the operator's live heap at its peak (docs/benchmarks-dns.md).
// Recorder keeps per series its key, its first note, its Event's name and
// counts, forgets it at most a minute after it ends, and builds an Event
// only to write it, from a bounded number of workers.
//
// The API server refuses an Event whose note is longer than 1,024 bytes
// ("can have at most 1024 characters", NoteLimit). Recorder cuts such a
// note to fit, ending it with "…", and logs it whole.
package eventrec

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Name is the reporting controller of every Event the operator records.
const Name = "azure-private-endpoint-operator"

// NoteLimit is the longest note, in bytes, the API server takes
// (k8s.io/kubernetes v1.37.1, pkg/apis/core/validation/events.go:
// NoteLengthLimit, checked with len(), so bytes).
const NoteLimit = 1024

const (
	// seriesWindow is client-go's finishTime: a series ends once it has
	// not been observed for this long, and its count is written.
	seriesWindow = 6 * time.Minute
	// refreshTime is client-go's: the count of a series that goes on is
	// written at least this often (an Event lives an hour in the API
	// server, --event-ttl; a write renews it).
	refreshTime = 30 * time.Minute
	// tickEvery is how often series are looked at to end or refresh them
	// (client-go: every 6 minutes, so a series lives 6 to 12).
	tickEvery = time.Minute
	// maxTries is client-go's maxTriesPerEvent, retryAfter its
	// defaultSleepDuration.
	maxTries   = 12
	retryAfter = 10 * time.Second
	// writers write one recorder's Events in parallel; the client's QPS
	// paces them.
	writers = 2
)

var (
	// Recorded counts the Events the operator recorded, by type and reason.
	Recorded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_events_total",
		Help: "Events the operator recorded, by type and reason (before their aggregation into series).",
	}, []string{"type", "reason"})
	// NotesMerged counts the Events whose note an earlier Event's series
	// swallowed (logged instead), by type and reason.
	NotesMerged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_event_notes_merged_total",
		Help: "Events whose note was lost to the series of an earlier Event of the same object, type and reason (the API server keeps the series' first note and its count); each such note is logged at the default level.",
	}, []string{"type", "reason"})
)

func init() { metrics.Registry.MustRegister(Recorded, NotesMerged) }

// Writer writes Events to the API server: Create makes one, PatchSeries
// sets the series of an existing one.
type Writer interface {
	Create(ctx context.Context, ev *eventsv1.Event) error
	PatchSeries(ctx context.Context, namespace, name string, series eventsv1.EventSeries) error
}

// For returns a recorder writing the operator's Events with the manager's
// configuration, run by the manager (its writers start with it and stop
// with it; Events recorded before it starts wait). Each controller gets
// its own: a process-wide one would keep every manager of a test process
// alive, and the Events two controllers record on one object with one
// reason are few.
func For(mgr ctrl.Manager) (*Recorder, error) {
	c, err := eventsv1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("the Events client: %w", err)
	}
	r := New(APIWriter{Client: c}, mgr.GetScheme(), ctrl.Log.WithName("events"), clock.RealClock{})
	if err := mgr.Add(r); err != nil {
		return nil, err
	}
	return r, nil
}

// New returns a recorder writing with w; log gets the notes the series
// lose. Start runs its writers.
func New(w Writer, scheme *k8sruntime.Scheme, log logr.Logger, clk clock.WithTicker) *Recorder {
	host, _ := os.Hostname()
	return &Recorder{
		w: w, scheme: scheme, log: log, clock: clk,
		instance: Name + "-" + host,
		series:   map[key]*series{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[key](retryAfter, retryAfter),
			workqueue.TypedRateLimitingQueueConfig[key]{Clock: clk}),
	}
}

// Recorder is an events.EventRecorder and a manager's Runnable.
type Recorder struct {
	w        Writer
	scheme   *k8sruntime.Scheme
	log      logr.Logger
	clock    clock.WithTicker
	instance string // the reporting instance: client-go's, the name and the host's
	queue    workqueue.TypedRateLimitingInterface[key]

	mu     sync.Mutex
	series map[key]*series
	stamp  int64 // the last Event name's time
}

var (
	_ events.EventRecorder           = (*Recorder)(nil)
	_ manager.LeaderElectionRunnable = (*Recorder)(nil)
)

// key is client-go's isomorphism (getKey): the reporting controller and
// instance are the recorder's own.
type key struct {
	typ, reason, action string
	regarding, related  corev1.ObjectReference
}

// series is what the recorder keeps of one: enough to write its Event
// again if the API server lost it.
type series struct {
	name, namespace string
	note            string    // the first note, the one the Event keeps
	first, last     time.Time // observed
	count           int32     // Events observed
	written         int32     // what the API server has: 0 nothing, 1 the Event, n > 1 the series of n
	writtenAt       time.Time
	logged          bool // the first note is in the log
	ended           bool // written once more, then forgotten
	rejected        bool // the API server refused the Event: nothing more is written
}

// Eventf records the Event: a new series is written at once, the second
// Event of a series as its count; the note of every Event after the first
// of its series is logged and counted.
func (r *Recorder) Eventf(regarding, related k8sruntime.Object, eventtype, reason, action, note string, args ...any) {
	msg := fmt.Sprintf(note, args...)
	Recorded.WithLabelValues(eventtype, reason).Inc()
	if eventtype != corev1.EventTypeNormal && eventtype != corev1.EventTypeWarning {
		r.log.Error(nil, "event not recorded: its type is neither Normal nor Warning", "type", eventtype, "reason", reason, "note", msg)
		return
	}
	reg, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log.Error(err, "event not recorded: no reference to its object", "type", eventtype, "reason", reason, "note", msg)
		return
	}
	k := key{typ: eventtype, reason: reason, action: action, regarding: *reg}
	if related != nil {
		if rel, err := reference.GetReference(r.scheme, related); err == nil {
			k.related = *rel
		}
	}
	if cut := fit(msg); cut != msg {
		r.log.Info("event note cut to the API server's 1,024 bytes; its whole note is kept here",
			"object", ident(reg), "type", eventtype, "reason", reason, "action", action, "note", msg)
		msg = cut
	}
	r.log.V(1).Info("event", "object", ident(reg), "kind", reg.Kind, "type", eventtype, "reason", reason, "action", action, "note", msg)

	now := r.clock.Now()
	r.mu.Lock()
	s, joined := r.series[k]
	var notes []string
	if joined {
		s.count++
		s.last, s.ended = now, false
		if !s.logged {
			notes = append(notes, s.note)
			s.logged = true
		}
		notes = append(notes, msg)
	} else {
		ns := reg.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		// client-go's name (tools/record/util GenerateEventName), the
		// object's and the time's in nanoseconds, made unique among the
		// recorder's: two Events on one object in one tick of a coarse
		// clock would otherwise have one name, and the second would be
		// refused as existing.
		r.stamp = max(now.UnixNano(), r.stamp+1)
		s = &series{name: fmt.Sprintf("%v.%x", reg.Name, r.stamp), namespace: ns, note: msg, first: now, last: now, count: 1}
		r.series[k] = s
	}
	due := s.count <= 2 && !s.rejected
	r.mu.Unlock()
	if joined {
		NotesMerged.WithLabelValues(eventtype, reason).Inc()
		for _, n := range notes {
			r.log.Info("event merged into a series; its note is kept here",
				"object", ident(reg), "type", eventtype, "reason", reason, "action", action, "note", n)
		}
	}
	if due {
		r.queue.Add(k)
	}
}

// fit cuts a note longer than NoteLimit to it, at a character's
// boundary, ending with "…".
func fit(note string) string {
	if len(note) <= NoteLimit {
		return note
	}
	const ellipsis = "…"
	end := NoteLimit - len(ellipsis)
	for end > 0 && !utf8.RuneStart(note[end]) {
		end--
	}
	return note[:end] + ellipsis
}

// ident names an object in the log: namespace, name and UID.
func ident(o *corev1.ObjectReference) string {
	return o.Namespace + "/" + o.Name + " " + string(o.UID)
}
