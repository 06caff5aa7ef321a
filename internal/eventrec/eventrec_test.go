package eventrec

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
)

// write is one request the recorder made: a create (count 0 for an Event
// without series) or a series patch.
type write struct {
	op, name, note string
	count          int32
}

func (w write) String() string { return fmt.Sprintf("%s %s %q %d", w.op, w.name, w.note, w.count) }

// fakeWriter records the writes and answers with the errors queued for
// them (nil: taken).
type fakeWriter struct {
	mu     sync.Mutex
	writes []write
	errs   []error
}

func (f *fakeWriter) answer(w write) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, w)
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return err
}

func (f *fakeWriter) Create(_ context.Context, ev *eventsv1.Event) error {
	var n int32
	if ev.Series != nil {
		n = ev.Series.Count
	}
	return f.answer(write{op: "create", name: ev.Name, note: ev.Note, count: n})
}

func (f *fakeWriter) PatchSeries(_ context.Context, _, name string, s eventsv1.EventSeries) error {
	return f.answer(write{op: "patch", name: name, count: s.Count})
}

// take returns the writes so far and forgets them.
func (f *fakeWriter) take() []write {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writes
	f.writes = nil
	return w
}

// world is a recorder over a fakeWriter and a fake clock, and its log.
type world struct {
	r     *Recorder
	w     *fakeWriter
	clk   *clocktesting.FakeClock
	mu    sync.Mutex
	lines []string
}

func newWorld() *world {
	wd := &world{w: &fakeWriter{}, clk: clocktesting.NewFakeClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))}
	log := funcr.New(func(_, args string) {
		wd.mu.Lock()
		defer wd.mu.Unlock()
		wd.lines = append(wd.lines, args)
	}, funcr.Options{})
	wd.r = New(wd.w, clientgoscheme.Scheme, log, wd.clk)
	return wd
}

// drain writes everything queued now, in this goroutine.
func (wd *world) drain(ctx context.Context) {
	for wd.r.queue.Len() > 0 {
		wd.r.writeNext(ctx)
	}
}

// notes are the notes logged as merged into a series.
func (wd *world) notes() []string {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	var notes []string
	for _, l := range wd.lines {
		if strings.Contains(l, "merged into a series") {
			i := strings.Index(l, `"note"="`)
			notes = append(notes, l[i+8:i+8+strings.Index(l[i+8:], `"`)])
		}
	}
	return notes
}

func configMap(name, uid string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID(uid), ResourceVersion: "7"}}
}

// TestSeries: the first Event of a series is created, the second makes it
// a series of 2 at once, the others are counted in memory and written
// when the series ends (6 minutes after its last Event), after which it
// is forgotten. Every note after the first is logged and counted. An
// Event of another reason, another object or another version of the
// object (client-go's key holds the resource version) is its own series.
func TestSeries(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	zone := configMap("app", "u1")
	before := testutil.ToFloat64(NotesMerged.WithLabelValues(corev1.EventTypeNormal, "DNSRecordDeleted"))

	var got []write
	for i := range 5 {
		wd.r.Eventf(zone, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record r%d removed", i)
		wd.drain(ctx)
		got = append(got, wd.w.take()...)
		wd.clk.Step(time.Minute)
	}
	wd.r.Eventf(zone, nil, corev1.EventTypeWarning, "IdentityUnavailable", "Delete", "the identity is gone")
	newer := zone.DeepCopy()
	newer.ResourceVersion = "8"
	wd.r.Eventf(newer, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record r5 removed")
	wd.r.Eventf(configMap("db", "u2"), nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record x removed")
	wd.drain(ctx)
	got = append(got, wd.w.take()...)

	name := "app." + fmt.Sprintf("%x", time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC).UnixNano())
	want := []string{
		`create ` + name + ` "record r0 removed" 0`,
		`patch ` + name + ` "" 2`,
	}
	if len(got) != 5 || got[0].String() != want[0] || got[1].String() != want[1] {
		t.Fatalf("writes %v, want %v then three creates (the rare Event, the newer version's, the other object's)", got, want)
	}
	for _, w := range got[2:] {
		if w.op != "create" || w.count != 0 {
			t.Errorf("write %v, want a create of a new Event", w)
		}
	}
	if got := testutil.ToFloat64(NotesMerged.WithLabelValues(corev1.EventTypeNormal, "DNSRecordDeleted")) - before; got != 4 {
		t.Errorf("notes merged = %v, want 4", got)
	}
	if n := wd.notes(); !slices.Equal(n, []string{"record r0 removed", "record r1 removed", "record r2 removed", "record r3 removed", "record r4 removed"}) {
		t.Errorf("logged notes %q, want r0..r4", n)
	}

	// 6 minutes after its last Event the series ends: its count (5) is
	// written; the single Events had nothing more to say.
	wd.clk.Step(seriesWindow)
	wd.r.tick()
	wd.drain(ctx)
	if got := wd.w.take(); len(got) != 1 || got[0].String() != `patch `+name+` "" 5` {
		t.Errorf("at the end: writes %v, want the series' count, 5", got)
	}
	if n := wd.r.pending(); n != 0 {
		t.Errorf("%d series kept after they ended, want 0", n)
	}
	// A new Event then starts a new series.
	wd.r.Eventf(zone, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record r9 removed")
	wd.drain(ctx)
	if got := wd.w.take(); len(got) != 1 || got[0].op != "create" || got[0].note != "record r9 removed" {
		t.Errorf("after the end: writes %v, want a new Event", got)
	}
}

// TestSeriesRefreshed: a series that goes on has its count written every
// 30 minutes (an Event the API server keeps an hour would otherwise lose
// it), and not when it has not grown.
func TestSeriesRefreshed(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	zone := configMap("app", "u1")
	for range 8 { // 35 minutes, an Event every 5
		wd.r.Eventf(zone, nil, corev1.EventTypeNormal, "Waiting", "Wire", "waiting")
		wd.drain(ctx)
		wd.clk.Step(5 * time.Minute)
		wd.r.tick()
		wd.drain(ctx)
	}
	var counts []int32
	for _, w := range wd.w.take() {
		counts = append(counts, w.count)
	}
	// create, the series of 2 at minute 5, the refresh at minute 35 (30
	// minutes after the last write) of the 7 observed by then.
	if !slices.Equal(counts, []int32{0, 2, 7}) {
		t.Errorf("written counts %v, want [0 2 7]", counts)
	}
	wd.r.tick()
	wd.drain(ctx)
	if got := wd.w.take(); len(got) != 0 {
		t.Errorf("a refresh without a new Event wrote %v", got)
	}
}

// The API server's answers, as client-go takes them (recordEvent),
// except that an overloaded API server (429, 5xx) is tried again: no
// answer is retried 10 s later up to 12 tries; a refusal is final and
// nothing more of the series is written; a series whose Event is gone is
// written as a new Event with its count; a series whose Event was made
// meanwhile is patched.
var (
	gone           = apierrors.NewNotFound(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x")
	exists         = apierrors.NewAlreadyExists(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x")
	refused        = apierrors.NewBadRequest("note too long")
	busy           = apierrors.NewTooManyRequests("slow down", 1)
	errUnreachable = errors.New("connection refused")
)

// TestUnreachableThenTaken: a network error, a 429 and a 500 are each
// tried again; the fourth try is taken.
func TestUnreachableThenTaken(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	wd.w.errs = []error{errUnreachable, busy, apierrors.NewInternalError(errors.New("etcd"))}
	wd.r.Eventf(configMap("app", "u1"), nil, corev1.EventTypeNormal, "R", "A", "n")
	for range 3 {
		wd.drain(ctx)
		wd.retry(t)
	}
	wd.drain(ctx)
	if got := wd.w.take(); len(got) != 4 {
		t.Errorf("%d tries, want 4 (3 failed, the last taken)", len(got))
	}
}

// TestUnreachableTwelveTimes: after 12 tries the Event is dropped.
func TestUnreachableTwelveTimes(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	for range 20 {
		wd.w.errs = append(wd.w.errs, errUnreachable)
	}
	wd.r.Eventf(configMap("app", "u1"), nil, corev1.EventTypeNormal, "R", "A", "n")
	for range maxTries - 1 {
		wd.drain(ctx)
		wd.retry(t)
	}
	wd.drain(ctx)
	if got := len(wd.w.take()); got != maxTries {
		t.Errorf("%d tries, want %d", got, maxTries)
	}
	for k := range wd.r.series {
		if n := wd.r.queue.NumRequeues(k); n != 0 || wd.r.queue.Len() != 0 {
			t.Errorf("after the last try: %d retries pending, %d queued; want the Event dropped", n, wd.r.queue.Len())
		}
	}
}

// TestRefused: a refused Event is not written again, nor its series, and
// the series is forgotten when it ends.
func TestRefused(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	wd.w.errs = []error{refused}
	cm := configMap("app", "u1")
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "n")
	wd.drain(ctx)
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "n2")
	wd.drain(ctx)
	wd.clk.Step(seriesWindow)
	wd.r.tick()
	wd.drain(ctx)
	if got := wd.w.take(); len(got) != 1 {
		t.Errorf("writes %v, want the one refused", got)
	}
	if n := wd.r.pending(); n != 0 {
		t.Errorf("%d series kept, want 0", n)
	}
}

// TestEventGone: a series whose Event the API server no longer has is
// written as a new Event, under its name, with its first note and count.
func TestEventGone(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	cm := configMap("app", "u1")
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "first")
	wd.drain(ctx)
	wd.w.errs = []error{gone}
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "second")
	wd.drain(ctx)
	got := wd.w.take()
	if len(got) != 3 || got[1].op != "patch" || got[2].op != "create" || got[2].count != 2 || got[2].note != "first" || got[2].name != got[0].name {
		t.Errorf("writes %v, want create, patch (gone), create of the series of 2 under its name with its first note", got)
	}
}

// TestEventMadeMeanwhile: a series created whose Event exists is patched.
func TestEventMadeMeanwhile(t *testing.T) {
	ctx := t.Context()
	wd := newWorld()
	cm := configMap("app", "u1")
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "first")
	wd.r.Eventf(cm, nil, corev1.EventTypeNormal, "R", "A", "second")
	wd.w.errs = []error{exists}
	wd.drain(ctx)
	got := wd.w.take()
	if len(got) != 2 || got[0].op != "create" || got[0].count != 2 || got[1].op != "patch" || got[1].count != 2 {
		t.Errorf("writes %v, want the series created (taken as existing), then patched", got)
	}
}

// retry moves the fake clock to the retry of a failed write and waits
// (generously: the delaying queue's goroutine moves it) until the write
// is queued again.
func (wd *world) retry(t *testing.T) {
	t.Helper()
	wd.clk.Step(retryAfter)
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return wd.r.queue.Len() > 0, nil
	})
	if err != nil {
		t.Fatalf("the failed write was not queued again within a minute of its retry time (%v on the fake clock): %v", retryAfter, err)
	}
}

// TestNoteCut: a note over 1,024 bytes is cut at a character's boundary
// and ends with "…"; the whole note is logged.
func TestNoteCut(t *testing.T) {
	wd := newWorld()
	long := strings.Repeat("é", 600)
	wd.r.Eventf(configMap("app", "u1"), nil, corev1.EventTypeNormal, "R", "A", "%s", long)
	wd.drain(t.Context())
	got := wd.w.take()
	if len(got) != 1 || len(got[0].note) > NoteLimit || !strings.HasSuffix(got[0].note, "…") {
		t.Fatalf("writes %v, want one note within %d bytes ending with …", got, NoteLimit)
	}
	if !slices.ContainsFunc(wd.lines, func(l string) bool { return strings.Contains(l, long) }) {
		t.Error("the whole note is not logged")
	}
}

// TestNotRecorded: an Event of an unknown type, or on an object the
// scheme does not know, is logged as an error and not written.
func TestNotRecorded(t *testing.T) {
	wd := newWorld()
	var errs int
	wd.r.log = logr.New(funcr.New(func(_, args string) {
		if strings.Contains(args, "not recorded") {
			errs++
		}
	}, funcr.Options{}).GetSink())
	wd.r.Eventf(configMap("app", "u1"), nil, "Critical", "R", "A", "n")
	wd.r.Eventf(&unknown{}, nil, corev1.EventTypeNormal, "R", "A", "n")
	wd.drain(t.Context())
	if got := wd.w.take(); len(got) != 0 || errs != 2 {
		t.Errorf("writes %v, %d errors logged; want none written, 2 errors", got, errs)
	}
}

type unknown struct{ corev1.ConfigMap }

// BenchmarkSeriesKept reports what the recorder keeps per series: 7,000
// Events on distinct objects (what the operator records in its busiest
// minutes at 1,000 workload clusters in DNS mode), written, before their
// series end.
func BenchmarkSeriesKept(b *testing.B) {
	objs := make([]*corev1.ConfigMap, 7000)
	for i := range objs {
		objs[i] = configMap(fmt.Sprintf("wc-%04d", i), fmt.Sprintf("5b0c3e1a-0000-4000-8000-%012d", i))
	}
	for b.Loop() {
		wd := newWorld()
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		for _, o := range objs {
			wd.r.Eventf(o, nil, corev1.EventTypeNormal, "PrivateEndpointReady", "Wire", "the private endpoint %s to %s is connected", o.Name, "mc-ingress-privatelink")
		}
		wd.drain(b.Context())
		wd.w.take()
		runtime.GC()
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(len(objs)), "B/series")
		if wd.r.pending() != len(objs) {
			b.Fatal("series lost")
		}
	}
}
