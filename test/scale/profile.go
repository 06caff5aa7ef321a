package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Profiles of the operator under test, with --profile-dir: its heap when
// its heap in use is at its peak (what decides the peak RSS), and its CPU
// in each phase (the wiring's convergence as operator-1, the restarted
// operator's restart, steady window and deletion as operator-2-<phase>),
// in consecutive slices (merge them with `go tool pprof -proto a b … >
// all.pprof`; a phase shorter than a slice has none). The operator serves
// them with --pprof-bind-address on a loopback port.

// cpuSlice is how long each CPU profile of the operator runs.
const cpuSlice = time.Minute

// saveProfile writes what the operator's profiler serves at path (e.g.
// heap, or profile?seconds=60) to file.
func saveProfile(ctx context.Context, base, path, file string) error {
	return saveURL(ctx, base+"/debug/pprof/"+path, file)
}

// saveMetrics writes the operator's metrics, as they are now, to
// <name>-n<N>-metrics-<when>.txt beside the profiles (the lists its
// observer asked of Azure, by subscription and reason, and the rest).
func (b *bench) saveMetrics(ctx context.Context, name, when string) {
	if b.op == nil {
		return
	}
	file := filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("%s-n%d-metrics-%s.txt", name, b.cfg.N, when))
	if err := saveURL(ctx, b.op.MetricsURL, file); err != nil {
		b.logf("metrics %s: %v", file, err)
	}
}

// get GETs url; an answer other than 200 is an error.
func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// saveURL writes what url serves to file.
func saveURL(ctx context.Context, url, file string) error {
	resp, err := get(ctx, url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	tmp := file + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp) // a slice cut short by the end of the convergence
		return err
	}
	return os.Rename(tmp, file)
}

// profilePhase profiles the operator's CPU as name (profileCPU) until
// the returned stop is called, with --profile-dir.
func (b *bench) profilePhase(ctx context.Context, name string) (stop func()) {
	if b.pprof == "" {
		return func() {}
	}
	ctx, stop = context.WithCancel(ctx)
	go b.profileCPU(ctx, b.pprof, name)
	return stop
}

// profileCPU records the operator's CPU in slices of cpuSlice until ctx
// ends (the phase), as <name>-n<N>-cpu-<k>.pprof.
func (b *bench) profileCPU(ctx context.Context, base, name string) {
	// A process just started may not serve its profiler yet.
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return answers(ctx, base+"/debug/pprof/cmdline"), nil
	}); err != nil {
		if ctx.Err() == nil {
			b.logf("CPU profile %s: the profiler did not answer: %v", name, err)
		}
		return
	}
	for k := 1; ctx.Err() == nil; k++ {
		file := filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("%s-n%d-cpu-%d.pprof", name, b.cfg.N, k))
		if err := saveProfile(ctx, base, fmt.Sprintf("profile?seconds=%d", int(cpuSlice.Seconds())), file); err != nil {
			if ctx.Err() == nil {
				b.logf("CPU profile %s: %v", file, err)
			}
			return
		}
	}
}

// answers reports whether url answers a GET with 200.
func answers(ctx context.Context, url string) bool {
	resp, err := get(ctx, url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// profileHeap saves the operator's heap as <name>-heap-peak.pprof.
func (b *bench) profileHeap(ctx context.Context, base, name string) {
	file := filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("%s-n%d-heap-peak.pprof", name, b.cfg.N))
	if err := saveProfile(ctx, base, "heap", file); err != nil && ctx.Err() == nil {
		b.logf("heap profile %s: %v", file, err)
	}
}

// profileHarness starts this process's CPU profile into
// dir/harness.cpu.pprof; stop ends it.
func profileHarness(dir string) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: a directory the user names
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "harness.cpu.pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
