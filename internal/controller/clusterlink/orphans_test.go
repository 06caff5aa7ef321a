package clusterlink

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
		type result struct {
			Ripe    []string
			Waiting bool
		}
		ripe, waiting := o.ripen(s.prefix, s.candidates, t0.Add(s.at))
		if diff := cmp.Diff(result{s.wantRipe, s.wantWaiting}, result{ripe, waiting}, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d (%s %v at %s) (-want +got):\n%s", i, s.prefix, s.candidates, s.at, diff)
		}
	}
	if diff := cmp.Diff(map[string]time.Time{}, o.seen, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("candidates left behind (-want +got):\n%s", diff)
	}
}
