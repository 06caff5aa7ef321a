// Package memlimit sets the Go runtime's memory settings: a soft memory
// limit below the container's, so that the garbage collector works harder
// as the heap nears what the kernel allows instead of the process being
// OOM-killed (Set), and the garbage collector's target (SetGCPercent,
// gcpercent.go).
//
// Why: the Go runtime lets the heap grow to twice what is live before it
// collects (GOGC=100) and returns freed memory to the kernel slowly, and
// it knows nothing of the container's memory limit. With 1,000 workload
// clusters in DNS mode the operator's anonymous memory peaked at 262 MiB,
// above the chart's former 256 MiB limit, and at 216 MiB with a soft limit
// of 230 MiB (docs/benchmarks-dns.md). A soft limit
// (runtime/debug.SetMemoryLimit, the GOMEMLIMIT of the Go runtime) makes
// the collector keep the whole Go memory under it while the live heap
// fits.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// CgroupRoot is where the container's cgroup is mounted (with a cgroup
// namespace, as container runtimes set up, the container's own cgroup).
const CgroupRoot = "/sys/fs/cgroup"

// Where a cgroup keeps its memory limit: cgroup v2's memory.max ("max" for
// none), cgroup v1's memory controller memory.limit_in_bytes (a value near
// the largest int64, rounded to the page size, for none). Linux
// Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/memory.rst.
var limitFiles = []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")}

// unlimitedV1 is the smallest cgroup v1 value taken for "no limit" (the
// kernel reports LONG_MAX rounded down to the page size).
const unlimitedV1 = math.MaxInt64 / 2

// Result says what Set did.
type Result struct {
	// Limit is the soft limit set in bytes; 0 when none was set.
	Limit int64
	// Container is the container's limit in bytes; 0 when none was found.
	Container int64
	// Why says where the limit came from, or why none was set.
	Why string
}

// Set sets the runtime's soft memory limit to fraction of the container's
// memory limit read under root. It sets nothing when GOMEMLIMIT is set
// (the person's choice wins), when fraction is 0, or when no limit is
// found (outside a container, or a container without one). An unreadable
// or malformed limit file is an error, and nothing is set.
func Set(fraction float64, root string) (Result, error) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		return Result{Why: "GOMEMLIMIT=" + v + " is set"}, nil
	}
	if fraction <= 0 {
		return Result{Why: "turned off (--memory-limit-fraction=0)"}, nil
	}
	limit, file, err := ContainerLimit(root)
	if err != nil {
		return Result{}, err
	}
	if limit == 0 {
		return Result{Why: "no container memory limit found under " + root}, nil
	}
	soft := int64(float64(limit) * fraction)
	debug.SetMemoryLimit(soft)
	return Result{Limit: soft, Container: limit, Why: fmt.Sprintf("%.0f%% of the container's limit (%s)", fraction*100, file)}, nil
}

// ContainerLimit reads the memory limit of the cgroup mounted at root: the
// limit in bytes and the file it came from, or 0 when there is none.
func ContainerLimit(root string) (int64, string, error) {
	for _, name := range limitFiles {
		path := filepath.Join(root, name)
		raw, err := os.ReadFile(path) //nolint:gosec // a fixed file under the cgroup mount
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading the container's memory limit: %w", err)
		}
		v := strings.TrimSpace(string(raw))
		if v == "max" {
			return 0, path, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, "", fmt.Errorf("the container's memory limit in %s is %q, not a number of bytes", path, v)
		}
		if n >= unlimitedV1 {
			return 0, path, nil
		}
		return n, path, nil
	}
	return 0, "", nil
}
