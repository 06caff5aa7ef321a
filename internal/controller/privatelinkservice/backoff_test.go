package privatelinkservice

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFailureBackoff(t *testing.T) {
	var b failureBackoff
	got := make([]time.Duration, 0, 5)
	for range 5 {
		got = append(got, b.next("ns/a", time.Second, 5*time.Second))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits after failures in a row (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(time.Second, b.next("ns/b", time.Second, 5*time.Second)); diff != "" {
		t.Errorf("another object starts at the base (-want +got):\n%s", diff)
	}
	b.reset("ns/a")
	if diff := cmp.Diff(time.Second, b.next("ns/a", time.Second, 5*time.Second)); diff != "" {
		t.Errorf("after a success the wait starts over (-want +got):\n%s", diff)
	}
}
