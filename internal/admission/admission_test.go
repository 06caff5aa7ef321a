package admission

import (
	"errors"
	"testing"
	"time"
)

// TestRoom: an admission counts against others until the cache shows it
// or pendingFor passes, never against itself; a refusal notes nothing;
// an error from the count decides nothing.
func TestRoom(t *testing.T) {
	var room Room
	now := time.Now()
	cache := map[string]map[string]bool{"s": {"a": true}}
	var cacheErr error
	holders := func() (Holders, error) { return Sets(cache), cacheErr }
	admit := func(self string, at time.Time, limit int) (int, bool) {
		t.Helper()
		var n int
		var ok bool
		if err := room.Admit(self, []string{"s"}, at, holders, func(use map[string]int) bool {
			n, ok = use["s"], use["s"] < limit
			return ok
		}); err != nil {
			t.Fatal(err)
		}
		return n, ok
	}
	if n, ok := admit("b", now, 2); !ok || n != 1 {
		t.Fatalf("b: %d used, admitted %v; want 1, true", n, ok)
	}
	if n, ok := admit("c", now, 2); ok || n != 2 {
		t.Fatalf("c: %d used, admitted %v; want 2 (a, and b pending), false", n, ok)
	}
	if room.Pending("s") != 1 {
		t.Fatalf("%d pending, want b only (a refusal notes nothing)", room.Pending("s"))
	}
	if n, ok := admit("b", now, 2); !ok || n != 1 {
		t.Fatalf("b again: %d used, admitted %v; its own admission must not count against it", n, ok)
	}
	// b's write never reached the cache: after pendingFor it no longer counts.
	if n, ok := admit("c", now.Add(pendingFor+time.Second), 2); !ok || n != 1 {
		t.Fatalf("c later: %d used, admitted %v; want 1, true", n, ok)
	}
	// The cache shows c: counted once, and no longer pending.
	cache["s"]["c"] = true
	if n, _ := admit("d", now.Add(pendingFor+2*time.Second), 5); n != 2 {
		t.Fatalf("d: %d used, want 2 (a and c)", n)
	}
	if room.Pending("s") != 1 { // d's own
		t.Fatalf("%d pending, want d's only", room.Pending("s"))
	}
	cacheErr = errors.New("cache not synced")
	called := false
	err := room.Admit("e", []string{"s"}, now, holders, func(map[string]int) bool { called = true; return true })
	if !errors.Is(err, cacheErr) || called {
		t.Fatalf("an error from the count: err %v, decided %v", err, called)
	}
}

// movingCache is Holders over a cache that shows one more write, key's,
// from the first read after the first Count: the write lands between the
// reads of one admission.
type movingCache struct {
	base    int
	key     string
	counted bool
}

func (m *movingCache) Count(string) int {
	n := m.base
	if m.counted {
		n++
	}
	m.counted = true
	return n
}

func (m *movingCache) Holds(_, key string) bool { return m.counted && key == m.key }

// TestRoomCacheMovesOn: an admission whose write the cache shows between
// the count and the look at the pending admissions is counted, never
// lost: b's write lands while c is being decided, at the last place.
func TestRoomCacheMovesOn(t *testing.T) {
	var room Room
	now := time.Now()
	const limit = 3
	decide := func(n *int) func(map[string]int) bool {
		return func(use map[string]int) bool { *n = use["s"]; return use["s"] < limit }
	}
	var n int
	// Two hold places; b takes the last one.
	if err := room.Admit("b", []string{"s"}, now, func() (Holders, error) { return Sets{"s": {"x": true, "y": true}}, nil }, decide(&n)); err != nil || n != 2 {
		t.Fatalf("b: %d used, err %v", n, err)
	}
	cache := &movingCache{base: 2, key: "b"}
	if err := room.Admit("c", []string{"s"}, now, func() (Holders, error) { return cache, nil }, decide(&n)); err != nil {
		t.Fatal(err)
	}
	if n < limit {
		t.Fatalf("c saw %d used of %d: b's place was counted neither as pending nor from the cache", n, limit)
	}
}
