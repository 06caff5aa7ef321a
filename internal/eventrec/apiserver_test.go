package eventrec_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestBurstAgainstAPIServer checks the recorder's series against a real
// API server: a burst of 20 Events of one reason on one object leaves one
// Event with the first note, a series of 2 at once and of 20 once the
// series ends; the rare Event of another reason keeps its own; every note
// after the first is in the log, each once.
func TestBurstAgainstAPIServer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx := t.Context()
	clk := clocktesting.NewFakeClock(time.Now())
	r, logs := logged(t, env.Config, clk)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace(t, env.Client, "burst"), Name: "zone"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		r.Eventf(cm, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record r%02d removed", i)
	}
	r.Eventf(cm, nil, corev1.EventTypeWarning, "IdentityUnavailable", "Delete", "the identity is gone")

	defer func() {
		for _, l := range logs() {
			if t.Failed() && !strings.Contains(l, "merged into") {
				t.Log(l)
			}
		}
	}()
	checkEvents(t, env.Client, cm.Namespace, 2)
	// 6 minutes without the reason: the series ends with its count.
	clk.Step(6*time.Minute + time.Second)
	r.Tick()
	checkEvents(t, env.Client, cm.Namespace, 20)

	var notes []string
	for _, l := range logs() {
		if i := strings.Index(l, `"note"="`); i >= 0 && strings.Contains(l, "merged into a series") {
			notes = append(notes, l[i+8:i+8+strings.Index(l[i+8:], `"`)])
		}
	}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("record r%02d removed", i))
	}
	slices.Sort(notes)
	if !slices.Equal(notes, want) {
		t.Errorf("logged notes %q, want r00..r19 once each", notes)
	}
}

// checkEvents waits for the burst's series, of count at least n, and the
// rare Event in the API server and checks their notes.
func checkEvents(t *testing.T, c client.Client, ns string, n int32) {
	t.Helper()
	var got []eventsv1.Event
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("the API server's Events, the series of %d", n), func(ctx context.Context) (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		got = list.Items
		for _, e := range got {
			if e.Reason == "DNSRecordDeleted" && (e.Series == nil || e.Series.Count < n) {
				return false, fmt.Sprintf("series %+v", e.Series)
			}
		}
		var says []string
		for _, e := range got {
			says = append(says, fmt.Sprintf("%s %q %+v", e.Reason, e.Note, e.Series))
		}
		return len(got) == 2, fmt.Sprintf("%d events: %s", len(got), says)
	})
	for _, e := range got {
		switch {
		case e.Reason == "DNSRecordDeleted" && e.Note != "record r00 removed":
			t.Errorf("the burst's Event says %q, not its first note", e.Note)
		case e.Reason == "DNSRecordDeleted" && e.Series.Count != n && n > 2:
			t.Errorf("the series' count is %d, want %d", e.Series.Count, n)
		case e.Reason == "IdentityUnavailable" && e.Note != "the identity is gone":
			t.Errorf("the rare Event says %q", e.Note)
		case e.Reason != "DNSRecordDeleted" && e.Reason != "IdentityUnavailable":
			t.Errorf("unexpected Event %s: %s", e.Reason, e.Note)
		}
	}
}

// TestWritesFailedAgainstAPIServer: an Event the API server refuses (its
// namespace does not exist: 404) is dropped and counted, as rejected; an
// Event it takes is not counted.
func TestWritesFailedAgainstAPIServer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx := t.Context()
	cfg := rest.CopyConfig(env.Config)
	eventrec.CountWrites(cfg)
	r := started(t, cfg, clock.RealClock{}, logr.Discard())
	rejected := testutil.ToFloat64(eventrec.WritesFailed.WithLabelValues("rejected"))

	ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "no-such-namespace", Name: "zone", UID: "u1"}}
	r.Eventf(ghost, nil, corev1.EventTypeWarning, "DNSRecordConflict", "Write", "refused")
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace(t, env.Client, "written"), Name: "zone"}}
	if err := env.Client.Create(ctx, kept); err != nil {
		t.Fatal(err)
	}
	r.Eventf(kept, nil, corev1.EventTypeNormal, "DNSRecordWritten", "Write", "taken")
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctx, list, client.InNamespace(kept.Namespace)); err != nil {
			return false, err
		}
		return len(list.Items) == 1 && testutil.ToFloat64(eventrec.WritesFailed.WithLabelValues("rejected")) == rejected+1, nil
	})
	if err != nil {
		t.Fatalf("want the refused Event counted once and the other written: %v (rejected: %v)", err,
			testutil.ToFloat64(eventrec.WritesFailed.WithLabelValues("rejected"))-rejected)
	}
	if got := testutil.ToFloat64(eventrec.WritesFailed.WithLabelValues("retried")); got != 0 {
		t.Errorf("retried = %v, want 0 (the API server answered every write)", got)
	}
}

// started is the package's recorder writing to the API server of cfg
// until the test ends.
func started(t *testing.T, cfg *rest.Config, clk clock.WithTicker, log logr.Logger) *eventrec.Recorder {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := eventrec.New(eventrec.APIWriter{Client: cs.EventsV1()}, clientgoscheme.Scheme, log, clk)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	return r
}

// TestLongNoteAgainstAPIServer: a note longer than the API server's 1,024
// bytes (a WC waiting for 13 further ingress services named each; the API
// server refused 318 such Events in a benchmark at N = 2,000) is cut to
// fit at a character's boundary, so the Event is written; the whole note
// is logged.
func TestLongNoteAgainstAPIServer(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx := t.Context()
	r, logs := logged(t, env.Config, clock.RealClock{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace(t, env.Client, "long-note"), Name: "wc"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// 2-byte characters, so the limit falls inside one.
	long := "waiting: " + strings.Repeat("é", 600) + " end"
	r.Eventf(cm, nil, corev1.EventTypeNormal, "WaitingForIngressService", "Wire", "%s", long)
	var note string
	testworld.Eventually(t, testworld.Timeout, "the Event in the API server", func(ctx context.Context) (bool, string) {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctx, list, client.InNamespace(cm.Namespace)); err != nil {
			return false, err.Error()
		}
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d events", len(list.Items))
		}
		note = list.Items[0].Note
		return true, ""
	})
	if len(note) > eventrec.NoteLimit || !strings.HasSuffix(note, "…") || !strings.HasPrefix(long, strings.TrimSuffix(note, "…")) || !utf8.ValidString(note) {
		t.Errorf("note of %d bytes, want a valid prefix of the note ending with … within %d: %q", len(note), eventrec.NoteLimit, note)
	}
	if !slices.ContainsFunc(logs(), func(l string) bool { return strings.Contains(l, long) }) {
		t.Errorf("the whole note is not in the log: %q", logs())
	}
}

// namespace makes a namespace of the test's own: the API server records
// Events of its own in "default" (its Service IP repair, "Cluster IP
// [IPv4]: 10.0.0.1 is not allocated; repairing"), which a count of the
// Events there would take for the test's.
func namespace(t *testing.T, c client.Client, name string) string {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// logged is the package's recorder writing to the API server of cfg,
// and what it has logged so far.
func logged(t *testing.T, cfg *rest.Config, clk clock.WithTicker) (*eventrec.Recorder, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	r := started(t, cfg, clk, log)
	return r, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
}
