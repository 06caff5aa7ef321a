package clusterlink

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestDNSHandOff: what the DNS controller tells the wiring. Unknown holds
// every step back; a heal waits until the records no longer hold the
// endpoint's address, a switch until they hold the new one; a cluster held
// back is woken once, when its state changes.
func TestDNSHandOff(t *testing.T) {
	for _, c := range []handOffCase{
		{name: "never passed", ip: "10.0.0.4"},
		{name: "still holds the broken endpoint's address", notes: []string{"10.0.0.4"}, ip: "10.0.0.4", holds: true},
		{name: "records removed", notes: []string{"10.0.0.4", ""}, ip: "10.0.0.4", heal: true},
		{name: "records hold the next endpoint's address", notes: []string{"10.0.0.5"}, ip: "10.0.0.4", heal: true},
		{name: "no records on that side", notes: []string{heldNothing}, ip: "10.0.0.4", heal: true, holds: true},
		{name: "a pass that did not finish", notes: []string{"", "?"}, ip: "10.0.0.4"},
		{name: "an address unknown to the wiring", notes: []string{"10.0.0.5"}, ip: ""},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t) })
	}
}

// TestDNSHandOffRelease: a deleted cluster's finalizer waits for its DNS;
// the release wakes the wiring and counts for the cluster's UID only.
func TestDNSHandOffRelease(t *testing.T) {
	const wc = "org-a/wc1"
	{
		h := newDNSHandOff()
		h.note(wc, DNSSideWC, "10.1.0.4", true)
		if h.isReleased(wc, "uid-1") {
			t.Fatal("released before the DNS controller said so")
		}
		h.markReleased(wc, "uid-1")
		if len(h.wake) != 1 {
			t.Fatalf("%d wake-ups after the release, want 1", len(h.wake))
		}
		ev := <-h.wake
		if got := (types.NamespacedName{Namespace: ev.Object.GetNamespace(), Name: ev.Object.GetName()}).String(); got != wc {
			t.Errorf("woke %s, want %s", got, wc)
		}
		if !h.releasedAlready(wc, "uid-1") || h.releasedAlready(wc, "uid-2") || len(h.waiting) != 0 {
			t.Error("releasedAlready is for its UID only, and never waits")
		}
		if !h.isReleased(wc, "uid-1") || h.isReleased(wc, "uid-2") {
			t.Error("a release counts for its UID only")
		}
		if h.holds(wc, DirectionWCToMC, "10.1.0.4") {
			t.Error("a released cluster's records are still said to hold an address")
		}
		h.forget(wc)
		if h.isReleased(wc, "uid-1") {
			t.Error("forgotten, still released")
		}
	}
}

// TestDNSHandOffWake: only a cluster the wiring held back is woken, and a
// full queue never blocks the DNS controller.
func TestDNSHandOffWake(t *testing.T) {
	const wc = "org-a/wc1"
	{
		h := newDNSHandOff()
		h.note(wc, DNSSideMC, "10.0.0.4", true)
		h.note(wc, DNSSideMC, "10.0.0.5", true)
		if len(h.wake) != 0 {
			t.Errorf("%d wake-ups for a cluster the wiring never held back", len(h.wake))
		}
	}
	{
		h := newDNSHandOff()
		for i := range cap(h.wake) + 10 {
			k := "org-a/wc" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			h.isReleased(k, "u")
			h.markReleased(k, "u")
		}
		if len(h.wake) != cap(h.wake) {
			t.Errorf("%d wake-ups queued, want the buffer's %d", len(h.wake), cap(h.wake))
		}
	}
}

// handOffCase: the wiring looks at an endpoint of address ip, is held
// back, then the DNS controller notes what the MC side holds, in order
// ("?": a pass that did not finish).
type handOffCase struct {
	name        string
	notes       []string
	ip          string
	heal, holds bool
}

func (c handOffCase) check(t *testing.T) {
	const wc = "org-a/wc1"
	h := newDNSHandOff()
	if h.allowsHeal(wc, DirectionMCToWC, c.ip) || h.holds(wc, DirectionMCToWC, c.ip) {
		t.Fatal("unknown allows a step")
	}
	woken := 0
	for _, n := range c.notes {
		h.note(wc, DNSSideMC, n, n != "?")
		woken += len(h.wake)
		drain(h)
	}
	if got := h.allowsHeal(wc, DirectionMCToWC, c.ip); got != c.heal {
		t.Errorf("allowsHeal = %v, want %v", got, c.heal)
	}
	if got := h.holds(wc, DirectionMCToWC, c.ip); got != c.holds {
		t.Errorf("holds = %v, want %v", got, c.holds)
	}
	if len(c.notes) > 0 && woken != 1 {
		t.Errorf("woken %d times, want once (the first change after the wiring waited)", woken)
	}
	// The other side is not known: its steps stay held.
	if h.allowsHeal(wc, DirectionWCToMC, c.ip) {
		t.Error("the WC side is allowed without a pass")
	}
}

func drain(h *dnsHandOff) {
	for len(h.wake) > 0 {
		<-h.wake
	}
}
