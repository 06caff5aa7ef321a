package heal

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestTracker: the first heal comes after the grace period of an unbroken
// break; later heals back off (2x, 4x, ... up to MaxBackoff); an endpoint
// seen ready starts over; zero grace never heals.
func TestTracker(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	h := &Tracker{Grace: time.Minute, Clock: clk}
	step := func(d time.Duration) { clk.SetTime(clk.Now().Add(d)) }
	if heal, wait := h.Observe("pe", true); heal || wait != time.Minute {
		t.Fatalf("first sighting: heal %v wait %s", heal, wait)
	}
	step(59 * time.Second)
	if heal, _ := h.Observe("pe", true); heal {
		t.Fatal("healed before the grace period")
	}
	step(time.Second)
	if heal, _ := h.Observe("pe", true); !heal {
		t.Fatal("not healed after the grace period")
	}
	// Broken again at once: the next heal waits 2 x grace after the last.
	h.Observe("pe", true)
	step(time.Minute)
	if heal, wait := h.Observe("pe", true); heal || wait != time.Minute {
		t.Fatalf("second heal too early: heal %v wait %s", heal, wait)
	}
	step(time.Minute)
	if heal, _ := h.Observe("pe", true); !heal {
		t.Fatal("second heal not after 2 x grace")
	}
	h.Ready("pe")
	h.Observe("pe", true)
	step(time.Minute)
	if heal, _ := h.Observe("pe", true); !heal {
		t.Fatal("a ready endpoint did not start over")
	}
	off := &Tracker{Clock: clk}
	if heal, wait := off.Observe("pe", true); heal || wait != 0 {
		t.Errorf("zero grace: heal %v wait %s", heal, wait)
	}
}

func TestPolicyBreaks(t *testing.T) {
	for _, tc := range []struct {
		state    string
		rejected bool
		want     bool
	}{
		{"Disconnected", false, true},
		{"disconnected", false, true},
		{"Rejected", false, false},
		{"Rejected", true, true},
		{"rejected", true, true},
		{"Pending", true, false},
		{"Approved", true, false},
		{"", true, false},
	} {
		if got := (Policy{DisconnectedAfter: time.Minute, Rejected: tc.rejected}).Breaks(tc.state); got != tc.want {
			t.Errorf("Breaks(%q) with Rejected=%v = %v, want %v", tc.state, tc.rejected, got, tc.want)
		}
	}
}
