// Package memo remembers what a controller last verified in Azure: for
// which fingerprint (a spec generation, an address) and when, so that an
// unchanged object is not read again before its check interval. Azure's
// Private DNS allows few reads; both DNS writers use it.
package memo

import (
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Memo is safe for concurrent use; its zero value is empty.
type Memo struct {
	mu sync.Mutex
	m  map[string]entry
}

type entry struct {
	fingerprint string
	at          time.Time
}

// Fresh reports whether key was set with fp less than ttl before now.
func (m *Memo) Fresh(key, fp string, now time.Time, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return ok && e.fingerprint == fp && now.Sub(e.at) < ttl
}

// Set records key as verified for fp at now.
func (m *Memo) Set(key, fp string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]entry{}
	}
	m.m[key] = entry{fingerprint: fp, at: now}
}

// Known reports whether key has an entry, however old.
func (m *Memo) Known(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.m[key]
	return ok
}

// Value is the fingerprint key was last set with, and whether it has one.
func (m *Memo) Value(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return e.fingerprint, ok
}

// Entry is the fingerprint key was last set with and when, and whether it
// has one.
func (m *Memo) Entry(key string) (string, time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return e.fingerprint, e.at, ok
}

// Forget drops keys.
func (m *Memo) Forget(keys ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.m, k)
	}
}

// ForgetPrefix drops the keys that start with prefix.
func (m *Memo) ForgetPrefix(prefix string) {
	m.ForgetFunc(func(k string) bool { return strings.HasPrefix(k, prefix) })
}

// ForgetFunc drops the keys match accepts.
func (m *Memo) ForgetFunc(match func(key string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.m {
		if match(k) {
			delete(m.m, k)
		}
	}
}

// Get is the fingerprint key was last set with, and whether that was less
// than ttl before now.
func (m *Memo) Get(key string, now time.Time, ttl time.Duration) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	return e.fingerprint, ok && now.Sub(e.at) < ttl
}

// Spread sets key, unless it is known, as verified with fp at a random
// point of the interval before now: its first check falls somewhere in
// the next interval. A process that starts knows nothing; spreading what
// its objects' status says is in place keeps a restart from reading it
// all at once (Azure allows 500 Private DNS reads per 5 minutes and
// subscription).
func (m *Memo) Spread(key, fp string, now time.Time, interval time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[key]; ok || interval <= 0 {
		return
	}
	if m.m == nil {
		m.m = map[string]entry{}
	}
	back := time.Duration(rand.Int64N(int64(interval))) //nolint:gosec // G404: spreads checks; nothing to guess
	m.m[key] = entry{fingerprint: fp, at: now.Add(-back)}
}
