// Package admission admits objects to a limit counted from the objects
// themselves, through the cache, covering the cache's lag behind the
// process's own writes.
package admission

import (
	"sync"
	"time"
)

// Room is what a limit counted from the objects cannot see yet: the
// admissions this process made whose writes the cache does not show. A
// limit counts the holders of each scope from the cache (a field index on
// the objects, so that a restart loses nothing); a cluster admitted here
// is counted besides them until the cache shows it as a holder, or
// pendingFor passes (the write did not happen). Admit runs one decision at
// a time, so that two workers cannot both take the last place.
//
// Used by the MC services' connection limit (clusterlink), DNS mode's
// per-cluster zone limit (wiringdns) and the links per private DNS zone
// of AzurePrivateEndpoints (privateendpoint).
type Room struct {
	mu      sync.Mutex
	pending map[string]map[string]time.Time // scope → cluster → admitted at
}

// pendingFor bounds how long an admission waits for the cache to show it.
const pendingFor = 2 * time.Minute

// Holders are the holders of places in each scope as the cache shows
// them, self left out.
//
// Admit asks Holds of each of a scope's pending admissions before it asks
// Count of that scope, so that a Holders that reads the cache as it is
// asked (the cache moving on between the reads) counts an admission whose
// write the cache shows in between twice — once too many — and never not
// at all: asked the other way round, the count missed the write and Holds
// then saw it and dropped the admission, and one cluster too many took
// the last place (make bench at N = 3,000: 1,001 clusters on a service of
// 1,000, and Azure refused the last endpoint).
type Holders interface {
	// Count is how many hold a place in scope.
	Count(scope string) int
	// Holds says whether key holds a place in scope. Admit asks it only
	// of this process's admissions that wait for the cache (a few), so a
	// limit of thousands of holders can count them without a set of
	// their keys (Sets).
	Holds(scope, key string) bool
}

// Sets are Holders as the set of the holders' keys in each scope.
type Sets map[string]map[string]bool

// Count is the size of scope's set.
func (s Sets) Count(scope string) int { return len(s[scope]) }

// Holds says whether key is in scope's set.
func (s Sets) Holds(scope, key string) bool { return s[scope][key] }

// Admit decides self's admission to scopes. holders reads, from the cache,
// the clusters holding a place in each scope, self left out; decide gets
// the count of each scope, holders plus this process's admissions the
// cache does not show yet (self's own never counts against it), and
// reports whether self is admitted. An admission is noted in every scope
// until the cache shows it.
func (a *Room) Admit(self string, scopes []string, now time.Time,
	holders func() (Holders, error), decide func(use map[string]int) bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	held, err := holders()
	if err != nil {
		return err
	}
	if a.pending == nil {
		a.pending = map[string]map[string]time.Time{}
	}
	use := make(map[string]int, len(scopes))
	for _, scope := range scopes {
		// The pending first, then the count (Holders).
		for k, at := range a.pending[scope] {
			if held.Holds(scope, k) || now.Sub(at) > pendingFor {
				delete(a.pending[scope], k) // the cache shows it, or it never came
			} else if k != self {
				use[scope]++
			}
		}
		use[scope] += held.Count(scope)
	}
	if !decide(use) {
		return nil
	}
	for _, scope := range scopes {
		if a.pending[scope] == nil {
			a.pending[scope] = map[string]time.Time{}
		}
		a.pending[scope][self] = now
	}
	return nil
}

// Pending is how many admissions of scope wait for the cache (tests).
func (a *Room) Pending(scope string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending[scope])
}
