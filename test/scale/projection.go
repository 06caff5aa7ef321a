package main

import (
	"fmt"
	"sort"
	"strings"
)

// projectionN is the fleet the report projects to (issue 40's aim: one
// management cluster for 10,000 workload clusters).
const projectionN = 10000

// projected is a figure the projection follows.
type projected struct {
	name  string
	value func(Result) float64
	// perWC: show the marginal cost per WC (else per 1,000 WCs).
	perWC bool
}

func projectedFigures() []projected {
	return []projected{
		{"converge: wall time (s)", func(r Result) float64 { return r.Converge.Seconds }, false},
		{"converge: every endpoint provisioned in Azure after (s)", func(r Result) float64 { return r.CAPZDoneSeconds }, false},
		{"converge: operator ARM reads", func(r Result) float64 { return float64(r.Converge.ARMReads) }, true},
		{"converge: operator ARM writes", func(r Result) float64 { return float64(r.Converge.ARMWrites) }, true},
		{"converge: Kubernetes writes (MC, WCs, own objects)", func(r Result) float64 {
			return float64(r.Converge.MCWrites + r.Converge.WCWrites + r.Converge.ObjectWrites)
		}, true},
		{"converge: writes to the MC object", func(r Result) float64 { return float64(r.Converge.MCWrites) }, true},
		{"restart: ARM reads until settled", func(r Result) float64 { return float64(r.Restart.ARMReads) }, true},
		{"restart: writes (Kubernetes + ARM)", func(r Result) float64 {
			return float64(r.Restart.MCWrites + r.Restart.WCWrites + r.Restart.ObjectWrites + r.Restart.ARMWrites)
		}, true},
		{"steady: ARM reads per hour", func(r Result) float64 { return r.SteadyReadsPerHour }, true},
		{"delete: time until every WC is gone (s)", func(r Result) float64 { return r.Delete.Seconds }, false},
		{"MC object size when converged (KiB)", func(r Result) float64 { return float64(r.MCObjectBytes) / 1024 }, false},
		{"the MC's ingress services", func(r Result) float64 { return float64(r.IngressServices) }, false},
		{"operator CPU, whole run (s)", func(r Result) float64 { return r.CPUSeconds }, false},
		{"operator CPU, converge (s)", func(r Result) float64 { return r.Converge.CPUSeconds }, false},
		{"operator CPU, delete (s)", func(r Result) float64 { return r.Delete.CPUSeconds }, false},
		{"operator peak RSS (MiB)", func(r Result) float64 { return r.PeakRSSMiB }, false},
		{"operator peak Go heap in use (MiB)", func(r Result) float64 { return r.PeakHeapMiB }, false},
	}
}

// projectionTable projects each figure of the wiring's runs to
// projectionN: from the largest run, at the marginal cost between the two
// largest (the regime a growing fleet stays in: past 1,000 WCs the
// endpoints beyond the MC object and the further ingress services), with
// the marginal cost of every step, so that a cost that is not flat shows.
// Empty with fewer than two runs of different N (DNS mode is not
// projected: its runs skip the restart and the deletion).
func projectionTable(results []Result) string {
	rs := make([]Result, 0, len(results))
	for _, r := range results {
		if !r.DNS {
			rs = append(rs, r)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].N < rs[j].N })
	if len(rs) < 2 || rs[len(rs)-1].N == rs[len(rs)-2].N {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| | marginal cost, each step | projected to N = %d |\n|---|---|---|\n", projectionN)
	for _, f := range projectedFigures() {
		steps := make([]string, 0, len(rs)-1)
		var last float64
		for i := 1; i < len(rs); i++ {
			if rs[i].N == rs[i-1].N {
				continue
			}
			last = (f.value(rs[i]) - f.value(rs[i-1])) / float64(rs[i].N-rs[i-1].N)
			steps = append(steps, fmt.Sprintf("%d→%d: %s", rs[i-1].N, rs[i].N, marginal(last, f.perWC)))
		}
		top := rs[len(rs)-1]
		fmt.Fprintf(&b, "| %s | %s | %.0f |\n", f.name, strings.Join(steps, "; "), project(f.value(top), last, top.N))
	}
	return b.String()
}

// project extends value at n to projectionN at slope per WC, never below
// zero.
func project(value, slope float64, n int) float64 {
	return max(0, value+slope*float64(projectionN-n))
}

// marginal says a slope per WC, or per 1,000 WCs for small ones.
func marginal(slope float64, perWC bool) string {
	if perWC {
		return fmt.Sprintf("%s per WC", noNegativeZero(fmt.Sprintf("%.2f", slope)))
	}
	return fmt.Sprintf("%s per 1,000 WCs", noNegativeZero(fmt.Sprintf("%.1f", slope*1000)))
}

// noNegativeZero shows a tiny negative slope rounded to zero as 0.
func noNegativeZero(s string) string {
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	return s
}
