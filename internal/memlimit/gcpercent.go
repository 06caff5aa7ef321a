package memlimit

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the operator's garbage collection target when GOGC
// is not set: a cycle starts when the heap has grown by 50 % of what the
// last one left live, instead of the Go runtime's 100 %.
//
// Why: the operator's live heap is mostly its cache, and what a reconcile
// allocates is short-lived. At 100 the heap in use reached 2.7 times the
// live heap, and the peak RSS with 1,000 workload clusters in DNS mode was
// 202.6 to 224.9 MiB in three runs, above the 200 MiB the operator is held
// to; at 75, 180.7 to 202.4 in three; at 50, 176.3 and 179.2 MiB, for CPU
// within the spread of the runs at 100 (docs/benchmarks-dns.md, "The
// garbage collector's target"). The cost is in CPU while many objects
// change at once; at rest the operator allocates little and collects
// rarely at any target. Prometheus lowered its default for the same
// trade (to 75 in v2.53.0, prometheus/prometheus#14288).
const DefaultGCPercent = 50

// GCResult says what SetGCPercent did.
type GCResult struct {
	// Percent is the target in effect afterwards; -1 when the collector is
	// off (GOGC=off).
	Percent int
	// Why says where it came from.
	Why string
}

// SetGCPercent sets the garbage collector's target (runtime/debug's
// SetGCPercent, what GOGC sets) to percent, unless GOGC is set: the
// person's choice wins, as GOMEMLIMIT's does in Set.
func SetGCPercent(percent int) GCResult {
	if v := os.Getenv("GOGC"); v != "" {
		return GCResult{Percent: currentGCPercent(), Why: "GOGC=" + v + " is set"}
	}
	debug.SetGCPercent(percent)
	return GCResult{Percent: percent, Why: "--gc-percent"}
}

// currentGCPercent reads the target, setting it to 100 for a moment and
// back: runtime/debug has no getter, and this runs once at start.
func currentGCPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
