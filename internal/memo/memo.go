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
//
// Keys are paths of segments joined by "|" ("<step>|<subject>|..."). What
// is forgotten together is found through an index of the keys under each
// "|"-ended prefix, not by a look at every key: objects are forgotten one
// by one as they are deleted, and a look at every key each time made
// deleting n objects cost n² (memo.ForgetFunc, 0.93 s of the operator's
// CPU deleting 2,000 workload clusters, test/scale --profile-dir).
type Memo struct {
	mu sync.Mutex
	m  map[string]entry
	// under holds, for every "|"-ended prefix of a key, the keys below it.
	under map[string]map[string]struct{}
	// steps are the first segments of the keys that have more than one,
	// as a set: a step is in it while under holds its "<step>|" prefix.
	steps map[string]struct{}
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
	m.put(key, entry{fingerprint: fp, at: now})
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
		m.drop(k)
	}
}

// ForgetTree drops key and every key below it (key + "|" + ...).
func (m *Memo) ForgetTree(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropTree(key)
}

// ForgetSubject drops, for every step (a key's first segment), the key
// "<step>|<subject>" and every key below it: all that is known of one
// subject (an object, a zone) whatever was verified of it.
func (m *Memo) ForgetSubject(subject string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for step := range m.steps { // dropTree may delete from steps: allowed while ranging
		m.dropTree(step + "|" + subject)
	}
}

// put sets key and indexes it when it is new.
func (m *Memo) put(key string, e entry) {
	if m.m == nil {
		m.m = map[string]entry{}
		m.under = map[string]map[string]struct{}{}
		m.steps = map[string]struct{}{}
	}
	if _, ok := m.m[key]; !ok {
		for i := range len(key) {
			if key[i] != '|' {
				continue
			}
			p := key[:i+1]
			if m.under[p] == nil {
				m.under[p] = map[string]struct{}{}
			}
			m.under[p][key] = struct{}{}
		}
		if s, _, ok := strings.Cut(key, "|"); ok {
			m.steps[s] = struct{}{}
		}
	}
	m.m[key] = e
}

// drop removes key and its index entries.
func (m *Memo) drop(key string) {
	if _, ok := m.m[key]; !ok {
		return
	}
	delete(m.m, key)
	for i := range len(key) {
		if key[i] != '|' {
			continue
		}
		p := key[:i+1]
		delete(m.under[p], key)
		if len(m.under[p]) == 0 {
			delete(m.under, p)
		}
	}
	if s, _, ok := strings.Cut(key, "|"); ok && m.under[s+"|"] == nil {
		delete(m.steps, s)
	}
}

// dropTree removes key and the keys below it.
func (m *Memo) dropTree(key string) {
	m.drop(key)
	for k := range m.under[key+"|"] { // drop deletes from this map: allowed while ranging
		m.drop(k)
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
	back := time.Duration(rand.Int64N(int64(interval))) //nolint:gosec // G404: spreads checks; nothing to guess
	m.put(key, entry{fingerprint: fp, at: now.Add(-back)})
}
