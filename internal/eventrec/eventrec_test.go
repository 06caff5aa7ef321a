package eventrec

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
)

type recorded struct{ reason, note string }

type fakeRecorder struct{ got []recorded }

func (f *fakeRecorder) Eventf(_, _ k8sruntime.Object, _, reason, _, note string, args ...any) {
	f.got = append(f.got, recorded{reason, fmt.Sprintf(note, args...)})
}

// TestNotesMergedAreLogged: a burst of one reason on one object forms a
// series that keeps one note (client-go); every note of the series is
// logged (the first when the second comes) and each Event beyond the
// first counted. The rare Event of another reason is its own series and
// is not logged; another object is another series; after 6 minutes
// without the reason a new series starts.
func TestNotesMergedAreLogged(t *testing.T) {
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	inner := &fakeRecorder{}
	r := New(inner, log, clk)
	zone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app", UID: "u1"}}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db", UID: "u2"}}
	before := testutil.ToFloat64(NotesMerged.WithLabelValues(corev1.EventTypeNormal, "DNSRecordDeleted"))

	for i := range 5 {
		r.Eventf(zone, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record %s removed", fmt.Sprint("r", i))
		clk.SetTime(clk.Now().Add(time.Minute)) // each within 6 minutes of the last
	}
	r.Eventf(zone, nil, corev1.EventTypeWarning, "IdentityUnavailable", "Delete", "the identity is gone")
	r.Eventf(zone, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record %s removed", "r5")
	r.Eventf(other, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record x removed")
	clk.SetTime(clk.Now().Add(7 * time.Minute))
	r.Eventf(zone, nil, corev1.EventTypeNormal, "DNSRecordDeleted", "Delete", "record %s removed", "r9")

	if len(inner.got) != 9 {
		t.Fatalf("forwarded %d Events, want every one (9): %v", len(inner.got), inner.got)
	}
	// The series of r0..r5 keeps one note: 5 lost.
	if got := testutil.ToFloat64(NotesMerged.WithLabelValues(corev1.EventTypeNormal, "DNSRecordDeleted")) - before; got != 5 {
		t.Errorf("notes merged = %v, want 5", got)
	}
	var logged []string
	for _, l := range lines {
		if i := strings.Index(l, `"note"="`); i >= 0 {
			logged = append(logged, l[i+8:i+8+strings.Index(l[i+8:], `"`)])
		}
		if !strings.Contains(l, "apps/app u1") {
			t.Errorf("a logged note lacks its object: %s", l)
		}
	}
	want := []string{"record r0 removed", "record r1 removed", "record r2 removed", "record r3 removed", "record r4 removed", "record r5 removed"}
	if strings.Join(logged, ",") != strings.Join(want, ",") {
		t.Errorf("logged notes %q, want %q", logged, want)
	}
}

// TestSweepForgetsOldSeries: keys of finished series are dropped, so the
// memory is bounded by the Events of the last minutes.
func TestSweepForgetsOldSeries(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	r := New(&fakeRecorder{}, funcr.New(func(string, string) {}, funcr.Options{}), clk)
	for i := range 100 {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("o", i)}}
		r.Eventf(obj, nil, corev1.EventTypeNormal, "R", "A", "n")
	}
	clk.SetTime(clk.Now().Add(13 * time.Minute))
	r.Eventf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new"}}, nil, corev1.EventTypeNormal, "R", "A", "n")
	if n := len(r.first); n != 1 {
		t.Errorf("%d series remembered, want 1", n)
	}
}
