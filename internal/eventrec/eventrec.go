// Package eventrec is the operator's Event recorder: Kubernetes' own, plus
// what it loses under load made visible.
//
// client-go's events broadcaster (k8s.io/client-go/tools/events,
// event_broadcaster.go recordToSink and getKey) merges every Event whose
// type, reason, action, reporting controller and objects are those of one
// recorded less than 6 minutes before into that Event's series: the
// series count grows (written to the API server only every 30 minutes),
// and the new Event's note is lost. A burst — 198 records removed from one
// zone, each with its record's name — leaves one Event that names one
// record. An Event of another reason keeps its own series, so the rare
// Event is never merged into the burst; but its note, too, is lost if it
// repeats with another note.
//
// Recorder forwards every Event; once Events of one object, type, reason
// and action form a series, it logs every note of the series at the
// default level and counts each Event beyond the first
// (azure_private_endpoint_operator_event_notes_merged_total: the notes the
// series loses), so that nothing an Event said is lost.
//
// The API server refuses an Event whose note is longer than 1,024 bytes
// ("can have at most 1024 characters", NoteLimit), and client-go drops it
// without retrying. Recorder cuts such a note to fit, ending it with "…",
// and logs it whole.
package eventrec

import (
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Name is the reporting controller of every Event the operator records.
const Name = "azure-private-endpoint-operator"

// NoteLimit is the longest note, in bytes, the API server takes
// (k8s.io/kubernetes v1.37.1, pkg/apis/core/validation/events.go:
// NoteLengthLimit, checked with len(), so bytes).
const NoteLimit = 1024

// seriesWindow is client-go's finishTime: an Event isomorphic to one
// observed within it joins that one's series. client-go finishes series
// on a 6-minute tick, so one may live up to twice as long: the count is
// of the notes lost at least.
const seriesWindow = 6 * time.Minute

var (
	// Recorded counts the Events the operator recorded, by type and reason.
	Recorded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_events_total",
		Help: "Events the operator recorded, by type and reason (before the API server's aggregation into series).",
	}, []string{"type", "reason"})
	// NotesMerged counts the Events whose note an earlier Event's series
	// swallowed (logged instead), by type and reason.
	NotesMerged = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_event_notes_merged_total",
		Help: "Events whose note was lost to the series of an earlier Event of the same object, type and reason (client-go's aggregation); each such note is logged at the default level.",
	}, []string{"type", "reason"})
)

func init() { metrics.Registry.MustRegister(Recorded, NotesMerged) }

// For returns the manager's recorder for the operator, wrapped. Each
// controller gets its own (a process-wide one would keep every manager of
// a test process alive); the Events two controllers record on one object
// with one reason are few, and their merges are not counted.
func For(mgr ctrl.Manager) *Recorder {
	return New(mgr.GetEventRecorder(Name), ctrl.Log.WithName("events"), clock.RealClock{})
}

// New wraps a recorder; log gets the notes the series lose.
func New(inner events.EventRecorder, log logr.Logger, clk clock.PassiveClock) *Recorder {
	return &Recorder{inner: inner, log: log, clock: clk, first: map[key]entry{}}
}

// Recorder is an events.EventRecorder.
type Recorder struct {
	inner events.EventRecorder
	log   logr.Logger
	clock clock.PassiveClock

	mu      sync.Mutex
	first   map[key]entry
	sweptAt time.Time
}

var _ events.EventRecorder = (*Recorder)(nil)

// key is client-go's isomorphism, by object identity (the reporting
// controller is the operator's one name).
type key struct {
	typ, reason, action string
	regarding, related  string
}

type entry struct {
	note   string
	at     time.Time
	logged bool // the note is in the log
}

// Eventf records the Event, and logs and counts its note when it joins a
// series. client-go records each Event from a goroutine of its own, so
// which note of a burst the series keeps is not the first one called: the
// first note is logged too when the second Event makes the series, and
// then every note of the series is in the log.
func (r *Recorder) Eventf(regarding, related k8sruntime.Object, eventtype, reason, action, note string, args ...any) {
	msg := fmt.Sprintf(note, args...)
	Recorded.WithLabelValues(eventtype, reason).Inc()
	k := key{typ: eventtype, reason: reason, action: action, regarding: identity(regarding), related: identity(related)}
	now := r.clock.Now()
	r.mu.Lock()
	r.sweep(now)
	e, seen := r.first[k]
	alive := seen && now.Sub(e.at) < seriesWindow
	var notes []string
	if alive {
		if !e.logged {
			notes = append(notes, e.note)
		}
		notes = append(notes, msg)
		// A series lives on while it is observed (client-go finishes it
		// 6 minutes after its last observation).
		r.first[k] = entry{note: e.note, at: now, logged: true}
	} else {
		r.first[k] = entry{note: msg, at: now}
	}
	r.mu.Unlock()
	if alive {
		NotesMerged.WithLabelValues(eventtype, reason).Inc()
		for _, n := range notes {
			r.log.Info("event merged into a series; its note is kept here",
				"object", k.regarding, "type", eventtype, "reason", reason, "action", action, "note", n)
		}
	}
	if cut := fit(msg); cut != msg {
		r.log.Info("event note cut to the API server's 1,024 bytes; its whole note is kept here",
			"object", k.regarding, "type", eventtype, "reason", reason, "action", action, "note", msg)
		msg = cut
	}
	r.inner.Eventf(regarding, related, eventtype, reason, action, "%s", msg)
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

// sweep forgets series older than the window, at most once a window.
// The caller holds r.mu.
func (r *Recorder) sweep(now time.Time) {
	if now.Sub(r.sweptAt) < seriesWindow {
		return
	}
	r.sweptAt = now
	for k, e := range r.first {
		if now.Sub(e.at) >= seriesWindow {
			delete(r.first, k)
		}
	}
}

// identity names an object for the key: namespace, name and UID (what
// client-go's object reference adds, the kind and API version, follows
// from them).
func identity(o k8sruntime.Object) string {
	if o == nil {
		return ""
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return m.GetNamespace() + "/" + m.GetName() + " " + string(m.GetUID())
}
