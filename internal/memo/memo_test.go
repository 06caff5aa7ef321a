package memo

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestMemo(t *testing.T) {
	var m Memo
	t0 := time.Unix(1000, 0)
	if m.Fresh("a", "1", t0, time.Hour) || m.Known("a") {
		t.Fatal("an empty memo knows a")
	}
	m.Set("a|x", "1", t0)
	m.Set("a|y", "1", t0)
	m.Set("b", "2", t0)
	for _, c := range []struct {
		key, fp string
		at      time.Time
		want    bool
	}{
		{"a|x", "1", t0.Add(59 * time.Minute), true},
		{"a|x", "1", t0.Add(time.Hour), false},   // too old
		{"a|x", "2", t0.Add(time.Minute), false}, // another fingerprint
	} {
		if got := m.Fresh(c.key, c.fp, c.at, time.Hour); got != c.want {
			t.Errorf("Fresh(%s, %s, +%s) = %v", c.key, c.fp, c.at.Sub(t0), got)
		}
	}
	if v, ok := m.Value("b"); !ok || v != "2" {
		t.Errorf("Value(b) = %q, %v", v, ok)
	}
	if _, ok := m.Value("c"); ok {
		t.Error("Value(c) of a key never set")
	}
	m.ForgetTree("a")
	if m.Known("a|x") || m.Known("a|y") || !m.Known("b") {
		t.Error("ForgetTree dropped the wrong keys")
	}
}

// TestForget: ForgetTree drops a key and the keys below it, not a key
// that only starts with the same letters; ForgetSubject drops a subject's
// keys of every step; what is dropped leaves nothing in the index.
func TestForget(t *testing.T) {
	var m Memo
	t0 := time.Unix(1000, 0)
	for _, k := range []string{
		"record|z|api", "record|z|api|x", "record|z|api2", // a tree, and a sibling that shares its first letters
		"dns|ns/a", "read|ns/a", "link|ns/a|vnet", // subject ns/a in three steps
		"dns|ns/ab", "read|ns/a2", "ns/a", // other subjects; a key of one segment
	} {
		m.Set(k, "", t0)
	}
	m.Spread("wait|ns/a", "", t0, time.Minute)
	m.ForgetTree("record|z|api")
	m.ForgetSubject("ns/a")
	var left []string
	for k := range m.m {
		left = append(left, k)
	}
	slices.Sort(left)
	if want := []string{"dns|ns/ab", "ns/a", "read|ns/a2", "record|z|api2"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	m.Forget(left...)
	if len(m.m) != 0 || len(m.under) != 0 || len(m.steps) != 0 {
		t.Errorf("an empty memo indexes %v, steps %v", m.under, m.steps)
	}
	m.ForgetTree("gone") // nothing to forget: no panic, nothing changes
	m.ForgetSubject("gone")
}

// BenchmarkForgetSubject forgets one object's keys (three steps, as the
// endpoint controller keeps) in a memo of n objects: flat in n, where a
// look at every key was linear.
func BenchmarkForgetSubject(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var m Memo
			t0 := time.Unix(1000, 0)
			set := func(i int) {
				for _, step := range []string{"dns", "read", "endpoint"} {
					m.Set(fmt.Sprintf("%s|ns/o%05d", step, i), "1|10.0.0.4", t0)
				}
			}
			for i := range n {
				set(i)
			}
			i := 0
			for b.Loop() {
				m.ForgetSubject(fmt.Sprintf("ns/o%05d", i%n))
				set(i % n)
				i++
			}
		})
	}
}
