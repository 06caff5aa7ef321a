package clusterlink

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// ReasonEndpointHealed is the Event reason for a Disconnected (or, when
// allowed, Rejected) endpoint the operator asked for that it deleted in
// Azure, so that CAPZ recreates it against the private link service as it
// is now.
const ReasonEndpointHealed = "PrivateEndpointHealed"

// maxHealBackoff bounds the wait between two heals of one endpoint.
const maxHealBackoff = time.Hour

// healTracker decides when a broken endpoint is healed (docs/design.md,
// *Keep what works*): only after it has been broken for the grace period
// without a break, and then at most once per backoff step (grace, 2×grace,
// 4×grace, … up to maxHealBackoff). An endpoint seen ready again starts
// over. Keys are the endpoint's holder and name; the state lives in memory,
// so a restart waits one grace period again, which errs on the side of
// leaving an endpoint alone.
type healTracker struct {
	// Grace is how long an endpoint stays broken before the first heal.
	Grace time.Duration
	Clock clock.PassiveClock

	mu      sync.Mutex
	since   map[string]time.Time // broken since
	heals   map[string]int       // heals since it was last ready
	lastAt  map[string]time.Time // when it was last healed
	touched map[string]time.Time // last observation, for forgetting
}

// observe records one observation of an endpoint and says whether to heal
// it now; otherwise, when it is broken, how long until it may be healed.
func (h *healTracker) observe(key string, broken bool) (heal bool, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Grace <= 0 {
		return false, 0
	}
	now := h.Clock.Now()
	if h.since == nil {
		h.since, h.heals, h.lastAt, h.touched = map[string]time.Time{}, map[string]int{}, map[string]time.Time{}, map[string]time.Time{}
	}
	h.touched[key] = now
	if !broken {
		delete(h.since, key)
		return false, 0
	}
	since, ok := h.since[key]
	if !ok {
		h.since[key] = now
		return false, h.Grace
	}
	due := since.Add(h.Grace)
	if n := h.heals[key]; n > 0 {
		step := h.Grace << min(n, 20)
		if step > maxHealBackoff || step <= 0 {
			step = maxHealBackoff
		}
		if next := h.lastAt[key].Add(step); next.After(due) {
			due = next
		}
	}
	if now.Before(due) {
		return false, due.Sub(now)
	}
	h.heals[key]++
	h.lastAt[key] = now
	delete(h.since, key) // broken again counts from the next sighting
	return true, 0
}

// ready forgets an endpoint's heals: it works again.
func (h *healTracker) ready(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, key)
	delete(h.heals, key)
	delete(h.lastAt, key)
}

// forgetIdle drops what is known of endpoints not observed for longer than
// maxHealBackoff (deleted clusters), so memory follows the clusters.
func (h *healTracker) forgetIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.Clock.Now()
	for k, at := range h.touched {
		if now.Sub(at) > 2*maxHealBackoff {
			delete(h.touched, k)
			delete(h.since, k)
			delete(h.heals, k)
			delete(h.lastAt, k)
		}
	}
}
