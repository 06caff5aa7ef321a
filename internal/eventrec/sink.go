package eventrec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
)

// APIWriter writes Events with a typed client of events.k8s.io/v1.
type APIWriter struct {
	Client eventsv1client.EventsV1Interface
}

// Create implements Writer.
func (a APIWriter) Create(ctx context.Context, ev *eventsv1.Event) error {
	_, err := a.Client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	return err
}

// PatchSeries implements Writer: a merge patch of the series alone (what
// client-go's two-way strategic merge patch of the Event amounts to).
func (a APIWriter) PatchSeries(ctx context.Context, namespace, name string, s eventsv1.EventSeries) error {
	data, err := json.Marshal(map[string]eventsv1.EventSeries{"series": s})
	if err != nil {
		return err
	}
	_, err = a.Client.Events(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}

// NeedLeaderElection is false: every replica writes the Events it records (a
// webhook's, a standby's).
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start writes the recorded Events until ctx ends, and ends and refreshes
// series every minute. Events still queued then are not written.
func (r *Recorder) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for r.writeNext(ctx) {
			}
		})
	}
	t := r.clock.NewTicker(tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.queue.ShutDown()
			wg.Wait()
			return nil
		case <-t.C():
			r.tick()
		}
	}
}

// tick ends the series not observed for seriesWindow (their count is
// written if the API server does not have it, then they are forgotten)
// and queues the count of a series that has gone on for refreshTime since
// it was last written.
func (r *Recorder) tick() {
	now := r.clock.Now()
	var due []key
	r.mu.Lock()
	for k, s := range r.series {
		switch {
		case now.Sub(s.last) >= seriesWindow:
			if s.rejected || s.written >= s.count {
				delete(r.series, k)
				continue
			}
			s.ended = true
			due = append(due, k)
		case !s.rejected && s.written > 1 && s.count > s.written && now.Sub(s.writtenAt) >= refreshTime:
			due = append(due, k)
		}
	}
	r.mu.Unlock()
	for _, k := range due {
		r.queue.Add(k)
	}
}

// writeNext writes what one series needs; false once the queue is shut
// down.
func (r *Recorder) writeNext(ctx context.Context) bool {
	k, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(k)
	r.write(ctx, k)
	return true
}

// write brings the API server's Event of the series k up to date: the
// Event if it has none (with its series if there is one), else the
// series' count. One series is never written by two writers at once (the
// queue's guarantee), so the snapshot taken here is the last write's
// base.
func (r *Recorder) write(ctx context.Context, k key) {
	r.mu.Lock()
	s, ok := r.series[k]
	if !ok || s.rejected || s.written > 0 && s.written >= s.count {
		r.mu.Unlock()
		r.queue.Forget(k)
		return
	}
	snap := *s
	r.mu.Unlock()

	var err error
	if snap.written == 0 {
		err = r.w.Create(ctx, r.event(k, &snap))
	} else {
		err = r.w.PatchSeries(ctx, snap.namespace, snap.name, eventsv1.EventSeries{Count: snap.count, LastObservedTime: metav1.MicroTime{Time: snap.last}})
	}
	requeue := r.settle(k, snap, err)
	switch {
	case requeue == again:
		r.queue.Forget(k)
		r.queue.Add(k)
	case requeue == later && r.queue.NumRequeues(k) < maxTries-1:
		r.queue.AddRateLimited(k)
	case requeue == later:
		r.log.Error(err, "event not written: the API server could not be reached in 12 tries", "object", ident(&k.regarding), "reason", k.reason, "note", snap.note)
		r.queue.Forget(k)
		r.forgetIfEnded(k)
	default:
		r.queue.Forget(k)
	}
}

type next int

const (
	done  next = iota // written, or refused for good
	again             // write once more now (the Event is gone, or was made meanwhile)
	later             // the API server did not answer: retry after retryAfter
)

// settle records the outcome of a write of snap. The API server's
// answers are client-go's (recordEvent): a series whose Event is gone is
// written as a new Event with its series; an Event made meanwhile under
// the series' name is patched; any other refusal is final (and counted by
// WritesFailed); no answer (a network error, 429, 5xx) is retried.
func (r *Recorder) settle(k key, snap series, err error) next {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.series[k]
	if !ok {
		return done
	}
	switch {
	case err == nil:
		s.written, s.writtenAt = max(snap.count, 1), r.clock.Now()
		if s.ended && s.written >= s.count {
			delete(r.series, k)
		}
		return done
	case snap.written > 0 && apierrors.IsNotFound(err):
		s.written = 0
		return again
	case snap.written == 0 && snap.count > 1 && apierrors.IsAlreadyExists(err):
		s.written = 1
		return again
	case retriable(err):
		return later
	default:
		r.log.Error(err, "event refused by the API server; it is not written again", "object", ident(&k.regarding), "reason", k.reason, "note", snap.note)
		s.rejected = true
		if s.ended {
			delete(r.series, k)
		}
		return done
	}
}

func (r *Recorder) forgetIfEnded(k key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.series[k]; ok && s.ended {
		delete(r.series, k)
	}
}

// retriable: no answer from the API server, or one that says to come
// back (client-go retries only the former; an overloaded API server's 429
// or 5xx is not the Event's fault).
func retriable(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return true
	}
	code := st.Status().Code
	return code == 429 || code >= 500
}

// event is the API server's Event of a series, as client-go makes it
// (tools/events/event_recorder.go makeEvent).
func (r *Recorder) event(k key, s *series) *eventsv1.Event {
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: s.name, Namespace: s.namespace},
		EventTime:           metav1.MicroTime{Time: s.first},
		ReportingController: Name,
		ReportingInstance:   r.instance,
		Action:              k.action,
		Reason:              k.reason,
		Regarding:           k.regarding,
		Note:                s.note,
		Type:                k.typ,
	}
	if k.related != (corev1.ObjectReference{}) {
		rel := k.related
		ev.Related = &rel
	}
	if s.count > 1 {
		ev.Series = &eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.MicroTime{Time: s.last}}
	}
	return ev
}

// String names the recorder in the manager's logs.
func (r *Recorder) String() string { return fmt.Sprintf("event recorder %s", r.instance) }

// pending is how many series the recorder keeps (for tests).
func (r *Recorder) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.series)
}
