package privatelinkservice

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
)

// TestRangeReservations: two NAT subnets chosen in one VNet before Azure
// lists either get different ranges; a range Azure lists, a released one
// and one held too long are free for the reservations again.
func TestRangeReservations(t *testing.T) {
	space := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}
	used := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/26")}
	pick := func(used []netip.Prefix) (netip.Prefix, bool) { return pls.FreePrefix(space, used, 26) }
	var rr rangeReservations
	now := time.Unix(1000, 0)
	a, ok, _ := rr.reserve("/vnets/V", used, now, pick)
	b, ok2, releaseB := rr.reserve("/vnets/v", used, now, pick)
	if !ok || !ok2 || a == b {
		t.Fatalf("two concurrent choices in one VNet: %s and %s", a, b)
	}
	if other, _, _ := rr.reserve("/vnets/other", used, now, pick); other != a {
		t.Errorf("another VNet is not affected by this one's reservations: got %s, want %s", other, a)
	}
	releaseB()
	if c, _, _ := rr.reserve("/vnets/v", used, now, pick); c != b {
		t.Errorf("a released range is chosen again: got %s, want %s", c, b)
	}
	// Azure now lists a and b: their reservations go, the next choice is past them.
	listed := slices.Concat(used, []netip.Prefix{a, b})
	if d, _, _ := rr.reserve("/vnets/v", listed, now, pick); d == a || d == b {
		t.Errorf("got %s again", d)
	}
	if n := len(rr.byVNet["/vnets/v"]); n != 1 {
		t.Errorf("%d reservations kept after Azure listed the subnets, want the newest only", n)
	}
	// A reservation held longer than rangeHold is given up.
	later := now.Add(rangeHold + time.Second)
	if e, _, _ := rr.reserve("/vnets/v", used, later, pick); e != a {
		t.Errorf("after rangeHold the first free range is %s again, got %s", a, e)
	}
}
