package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// bound is a count the operator must stay within in a small run of the
// benchmark: only what does not depend on the machine's speed (requests,
// writes, tokens), never a time. Each bound sits about 1.5-2x above what
// the operator does at that N (the measured figures are in
// docs/benchmarks.md, "Counts held by make test"), so a change that
// multiplies one fails make test instead of waiting for the next benchmark
// run (issue 41: 611 token requests and 5x the MC writes went unnoticed for
// 39 commits).
type bound struct {
	what     string
	got, max float64
}

func checkBounds(t *testing.T, bounds []bound) {
	t.Helper()
	for _, b := range bounds {
		t.Logf("count: %s = %.2f (bound %.2f)", b.what, b.got, b.max)
		if b.got > b.max {
			t.Errorf("%s: %.2f, above its bound %.2f: a change multiplied the operator's work (see docs/benchmarks.md before raising a bound)", b.what, b.got, b.max)
		}
	}
}

func perObject(n, count int) float64 { return float64(count) / float64(n) }

// dnsOps adds up the phase's Private DNS requests by method.
func dnsOps(p Phase) (reads, writes int) {
	for op, n := range p.ARMByOperation {
		method, resource, _ := strings.Cut(op, " ")
		if !strings.HasPrefix(resource, "Microsoft.Network/privateDnsZones") {
			continue
		}
		if method == "GET" {
			reads += n
		} else {
			writes += n
		}
	}
	return reads, writes
}

// wiringBounds are the counts of the wiring that hold in both modes.
func wiringBounds(res Result) []bound {
	n := res.N
	return []bound{
		// One identity: one token for each operator process.
		{"converge: token requests (one identity)", float64(res.Converge.TokenRequests), 1},
		{"converge: writes to the MC object", float64(res.Converge.MCWrites), wiringMCWritesMax},
		// The WC writes follow the wait states a WC passes through, and a
		// loaded machine shows it more of them: with clusterlink's tests
		// beside it (make test), TestDNSSmoke converged in 96 s with 4 MC
		// writes instead of 1 and 5.88 writes per WC, 7 to one WC (quiet:
		// 3.62 and 4). The bounds sit above the loaded figures and still
		// catch a doubling of the quiet ones.
		{"converge: writes to one WC, at most", float64(res.Converge.WCWritesMax), 10},
		{"converge: writes per WC", perObject(n, res.Converge.WCWrites), 8},
		{"converge: ARM reads per WC (Private DNS aside)", perObject(n, res.Converge.ARMReads-dnsReads(res.Converge)), 6},
		{"converge: API conflicts", float64(res.Converge.Conflicts), 0},
		{"converge: 429s", float64(res.Converge.Throttled), 0},
	}
}

func dnsReads(p Phase) int {
	r, _ := dnsOps(p)
	return r
}

// steadyDNSReads are a phase's Private DNS reads.
func steadyDNSReads(p Phase) int {
	r, _ := dnsOps(p)
	return r
}

func dnsRequests(p Phase) int {
	r, w := dnsOps(p)
	return r + w
}

// wiringMCWritesMax bounds the MC writes while N WCs converge at once:
// the writes coalesce behind --mc-write-delay, so they follow capzsim's
// pace, not N.
const wiringMCWritesMax = 8

// TestDNSSmoke runs the wiring in DNS mode at a small N with the real
// operator binary, until every WC has GSDNSZoneReady, and holds its counts.
func TestDNSSmoke(t *testing.T) {
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{
		N: 8, Subscriptions: 2, OperatorBinary: bin, AzureLatency: time.Second, DNS: true, DNSWindow: 5 * time.Minute,
		SteadyDrift: 10 * time.Second, SteadyWindow: 20 * time.Second, Timeout: 5 * time.Minute,
		Dir: t.TempDir(), Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.DNSReady != res.N || res.DNSPhase == nil {
		t.Fatalf("%d of %d WCs have GSDNSZoneReady after %.0fs", res.DNSReady, res.N, res.DNSWatchedSeconds)
	}
	dns := *res.DNSPhase
	reads, writes := dnsOps(res.Converge)
	r2, w2 := dnsOps(dns)
	checkBounds(t, append(wiringBounds(res),
		bound{"DNS: token requests after the wiring converged", float64(dns.TokenRequests), 0},
		bound{"DNS: Private DNS reads per WC", perObject(res.N, reads+r2), 8},
		bound{"DNS: Private DNS writes per WC", perObject(res.N, writes+w2), 8},
		bound{"DNS: writes to one WC after the wiring converged, at most", float64(dns.WCWritesMax), 2},
		bound{"DNS: 429s", float64(dns.Throttled), 0},
	))
}
