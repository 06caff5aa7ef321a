// Package heal decides when the operator heals a broken private endpoint
// (Disconnected, or Rejected where allowed) by deleting it so that it is
// created again against the private link service as it is now. Both the
// cluster wiring and AzurePrivateEndpoint use it.
package heal

import (
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Policy is what the operator heals, the same for the wiring and
// AzurePrivateEndpoint (--heal-disconnected-after, --heal-rejected).
type Policy struct {
	// DisconnectedAfter is how long an endpoint stays broken before it is
	// healed (the Tracker's Grace); 0 or less: never.
	DisconnectedAfter time.Duration
	// Rejected heals Rejected endpoints too. Off by default: a rejection is
	// usually a person's decision.
	Rejected bool
}

// Breaks says whether an endpoint in a connection state counts as broken:
// Disconnected always (the service's owner removed the connection, or the
// service is gone), Rejected only when the policy says so. States compare
// without case: Azure writes "Disconnected", the wiring's annotations
// "disconnected".
func (p Policy) Breaks(state string) bool {
	return strings.EqualFold(state, "Disconnected") || (p.Rejected && strings.EqualFold(state, "Rejected"))
}

// MaxBackoff bounds the wait between two heals of one endpoint.
const MaxBackoff = time.Hour

// Tracker decides when a broken endpoint is healed (docs/design.md,
// *Keep what works*): only after it has been broken for the grace period
// without a break, and then at most once per backoff step (grace, 2×grace,
// 4×grace, … up to MaxBackoff). An endpoint seen ready again starts
// over. Keys are the endpoint's holder and name; the state lives in memory,
// so a restart waits one grace period again, which errs on the side of
// leaving an endpoint alone.
type Tracker struct {
	// Grace is how long an endpoint stays broken before the first heal.
	Grace time.Duration
	Clock clock.PassiveClock

	mu      sync.Mutex
	since   map[string]time.Time // broken since
	heals   map[string]int       // heals since it was last ready
	lastAt  map[string]time.Time // when it was last healed
	touched map[string]time.Time // last observation, for forgetting
}

// Observe records one observation of an endpoint and says whether to heal
// it now; otherwise, when it is broken, how long until it may be healed.
func (h *Tracker) Observe(key string, broken bool) (heal bool, wait time.Duration) {
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
		if step > MaxBackoff || step <= 0 {
			step = MaxBackoff
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

// Ready forgets an endpoint's heals: it works again.
func (h *Tracker) Ready(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.since, key)
	delete(h.heals, key)
	delete(h.lastAt, key)
}

// ForgetIdle drops what is known of endpoints not observed for longer than
// MaxBackoff (deleted clusters and objects), so memory follows the clusters.
func (h *Tracker) ForgetIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.Clock.Now()
	for k, at := range h.touched {
		if now.Sub(at) > 2*MaxBackoff {
			delete(h.touched, k)
			delete(h.since, k)
			delete(h.heals, k)
			delete(h.lastAt, k)
		}
	}
}
