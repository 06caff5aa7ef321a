package clusterlink

import (
	"slices"
	"testing"
	"time"
)

// TestOrphanRipening: a candidate is deleted only when found orphaned again
// at least Interval after it was first found, and forgotten when it stops
// being a candidate (CAPZ deleted it, or it returned to spec).
func TestOrphanRipening(t *testing.T) {
	o := &OrphanCleaner{Interval: time.Minute}
	t0 := time.Unix(1_700_000_000, 0)
	steps := []struct {
		at          time.Duration
		prefix      string
		candidates  []string
		wantRipe    []string
		wantWaiting bool
	}{
		{0, "a/", []string{"x", "y"}, nil, true},
		{30 * time.Second, "a/", []string{"x", "y"}, nil, true},
		{30 * time.Second, "b/", []string{"x"}, nil, true},
		{time.Minute, "a/", []string{"x"}, []string{"x"}, false},
		// y left the candidates at 1m, so it starts afresh.
		{70 * time.Second, "a/", []string{"y"}, nil, true},
		// b's x is unaffected by a's sweeps.
		{90 * time.Second, "b/", []string{"x"}, []string{"x"}, false},
		{130 * time.Second, "a/", []string{"y"}, []string{"y"}, false},
		{200 * time.Second, "a/", nil, nil, false},
	}
	for i, s := range steps {
		ripe, waiting := o.ripen(s.prefix, s.candidates, t0.Add(s.at))
		if !slices.Equal(ripe, s.wantRipe) || waiting != s.wantWaiting {
			t.Errorf("step %d (%s %v at %s): ripe %v waiting %v, want %v %v", i, s.prefix, s.candidates, s.at, ripe, waiting, s.wantRipe, s.wantWaiting)
		}
	}
	if len(o.seen) != 0 {
		t.Errorf("candidates left behind: %v", o.seen)
	}
}
