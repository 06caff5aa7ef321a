package privatelinkservice

import (
	"net/netip"
	"strings"
	"sync"
	"time"
)

// rangeHold is how long a chosen NAT subnet range stays reserved while
// Azure does not list the subnet yet.
const rangeHold = 5 * time.Minute

// rangeReservations remembers the ranges this process chose for NAT
// subnets until Azure lists them, so that two objects creating a subnet in
// one virtual network at once (each reading the VNet before the other's
// subnet exists) never pick the same range.
type rangeReservations struct {
	mu     sync.Mutex
	byVNet map[string]map[netip.Prefix]time.Time // lower VNet ID -> range -> reserved at
}

// reserve picks a range with pick, given the ranges Azure lists (used) plus
// those reserved and not yet listed, and reserves it. release gives it back
// (the PUT failed).
func (rr *rangeReservations) reserve(vnetID string, used []netip.Prefix, now time.Time, pick func(used []netip.Prefix) (netip.Prefix, bool)) (p netip.Prefix, ok bool, release func()) {
	k := strings.ToLower(vnetID)
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.byVNet == nil {
		rr.byVNet = map[string]map[netip.Prefix]time.Time{}
	}
	held := rr.byVNet[k]
	all := append([]netip.Prefix(nil), used...)
	for r, at := range held {
		if now.Sub(at) > rangeHold || overlapsAny(r, used) {
			delete(held, r) // listed by Azure now, or given up
			continue
		}
		all = append(all, r)
	}
	p, ok = pick(all)
	if !ok {
		return p, false, func() {}
	}
	if held == nil {
		held = map[netip.Prefix]time.Time{}
		rr.byVNet[k] = held
	}
	held[p] = now
	return p, true, func() {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		delete(rr.byVNet[k], p)
	}
}

func overlapsAny(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}
