package privatelinkservice

import (
	"testing"
	"time"
)

func TestFailureBackoff(t *testing.T) {
	var b failureBackoff
	var got []time.Duration
	for range 5 {
		got = append(got, b.next("ns/a", time.Second, 5*time.Second))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	if d := b.next("ns/b", time.Second, 5*time.Second); d != time.Second {
		t.Errorf("another object starts at the base: %v", d)
	}
	b.reset("ns/a")
	if d := b.next("ns/a", time.Second, 5*time.Second); d != time.Second {
		t.Errorf("after a success the wait starts over: %v", d)
	}
}
