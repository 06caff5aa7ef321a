package privatedns

import (
	"testing"
	"time"
)

// TestBudgetWindow: a caller taking as fast as the budget allows never
// gets more than the budget in any 5-minute window, and gets most of it.
func TestBudgetWindow(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 250, Writes: 500, Now: func() time.Time { return now }}
	var reads, writes []time.Time
	end := now.Add(30 * time.Minute)
	for now.Before(end) {
		if b.Take("sub", false) == 0 {
			reads = append(reads, now)
		}
		if b.Take("SUB", true) == 0 {
			writes = append(writes, now)
		}
		now = now.Add(100 * time.Millisecond)
	}
	for _, c := range []struct {
		name  string
		times []time.Time
		limit int
	}{{"reads", reads, 250}, {"writes", writes, 500}} {
		peak := 0
		for i := range c.times {
			n := 0
			for j := i; j < len(c.times) && c.times[j].Sub(c.times[i]) < 5*time.Minute; j++ {
				n++
			}
			peak = max(peak, n)
		}
		if peak > c.limit || peak < c.limit*9/10 {
			t.Errorf("%s: busiest 5 minutes %d, want at most %d and close to it", c.name, peak, c.limit)
		}
	}
	if wait := b.Take("other", false); wait != 0 {
		t.Errorf("another subscription's budget was spent: it waits %s", wait)
	}
	if wait := (*Budget)(nil).Take("x", true); wait != 0 {
		t.Errorf("no budget waits %s", wait)
	}
}

// TestBudgetBurst: the whole budget may go at once, as Azure's window
// allows (a token bucket refilling over the window would make 1,000 new
// objects wait minutes for nothing); the next request waits until the
// first leaves the window.
func TestBudgetBurst(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 400, Writes: 800, Now: func() time.Time { return now }}
	for i := range 800 {
		if wait := b.Take("sub", true); wait != 0 {
			t.Fatalf("write %d of a budget of 800 waits %s", i+1, wait)
		}
		now = now.Add(10 * time.Millisecond)
	}
	// The first write was at 0: the 801st waits until 5 minutes after it,
	// and the margin.
	if wait, want := b.Take("sub", true), 5*time.Minute+budgetMargin-8*time.Second; wait != want {
		t.Errorf("the write over the budget waits %s, want %s", wait, want)
	}
	now = time.Unix(0, 0).Add(5*time.Minute + budgetMargin)
	if wait := b.Take("sub", true); wait != 0 {
		t.Errorf("after the first write left the window: waits %s", wait)
	}
}
