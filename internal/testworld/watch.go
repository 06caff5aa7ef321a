package testworld

import (
	"sync"
	"testing"
	"time"
)

// Watch runs check every 20 ms until the returned function is called (or
// the test ends), and records each description check returns of a state
// that must never be ("" when the state is fine). The function stops the
// watch and returns what was recorded. It is for invariants that must hold
// throughout a sequence (a name never resolving to a freed address, an
// annotation never empty), which a final look cannot prove.
func Watch(t testing.TB, check func() string) func() []string {
	t.Helper()
	stop, done := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if v := check(); v != "" {
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	finish := func() []string {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	t.Cleanup(func() { finish() })
	return finish
}
