package memo

import (
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
	m.ForgetPrefix("a|")
	if m.Known("a|x") || m.Known("a|y") || !m.Known("b") {
		t.Error("ForgetPrefix dropped the wrong keys")
	}
}
