package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestContainerLimit: cgroup v2's memory.max and cgroup v1's
// memory.limit_in_bytes, with their ways of saying "no limit", and files
// that make no sense.
func TestContainerLimit(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                int64
		wantErr             bool
	}{
		{name: "v2 limit", file: "memory.max", content: "536870912\n", want: 512 << 20},
		{name: "v2 no limit", file: "memory.max", content: "max\n"},
		{name: "v1 limit", file: "memory/memory.limit_in_bytes", content: "268435456\n", want: 256 << 20},
		{name: "v1 no limit", file: "memory/memory.limit_in_bytes", content: "9223372036854771712\n"},
		{name: "no cgroup files"},
		{name: "garbage", file: "memory.max", content: "lots\n", wantErr: true},
		{name: "zero", file: "memory.max", content: "0\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				path := filepath.Join(root, tc.file)
				if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, _, err := ContainerLimit(root)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ContainerLimit = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestSet: 90 % of a 512 MiB container becomes the runtime's limit;
// GOMEMLIMIT, a fraction of 0 and no container limit leave it alone.
func TestSet(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "memory.max"), []byte("536870912\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	container, fraction := int64(512<<20), 0.9
	want := int64(float64(container) * fraction)
	r, err := Set(fraction, root)
	if err != nil || r.Limit != want || r.Container != 512<<20 || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("Set = %+v, %v; runtime limit %d, want %d", r, err, debug.SetMemoryLimit(-1), want)
	}
	debug.SetMemoryLimit(before)
	for _, tc := range []struct {
		name, env, root string
		fraction        float64
		why             string
	}{
		{name: "GOMEMLIMIT wins", env: "300MiB", root: root, fraction: 0.9, why: "GOMEMLIMIT"},
		{name: "off", root: root, why: "turned off"},
		{name: "outside a container", root: t.TempDir(), fraction: 0.9, why: "no container memory limit"},
	} {
		t.Setenv("GOMEMLIMIT", tc.env)
		r, err := Set(tc.fraction, tc.root)
		if err != nil || r.Limit != 0 || !strings.Contains(r.Why, tc.why) || debug.SetMemoryLimit(-1) != before {
			t.Errorf("%s: Set = %+v, %v; runtime limit %d", tc.name, r, err, debug.SetMemoryLimit(-1))
		}
	}
}

// TestSetGCPercent: without GOGC the runtime's target becomes the one
// given; with GOGC set (the runtime applied it at start) it is left as it
// is, and the result says why.
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	if r := SetGCPercent(60); r.Percent != 60 || r.Why != "--gc-percent" || currentGCPercent() != 60 {
		t.Fatalf("SetGCPercent(60) = %+v; runtime target %d, want 60", r, currentGCPercent())
	}

	debug.SetGCPercent(130) // what GOGC=130 set at start
	t.Setenv("GOGC", "130")
	if r := SetGCPercent(60); r.Percent != 130 || !strings.Contains(r.Why, "GOGC=130") || currentGCPercent() != 130 {
		t.Errorf("with GOGC=130: SetGCPercent(60) = %+v; runtime target %d, want 130 left alone", r, currentGCPercent())
	}
}
