package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"

	"github.com/google/go-cmp/cmp"
)

// TestMain removes the operator binary the smoke runs share after them.
func TestMain(m *testing.M) {
	code := m.Run()
	sandbox.RemoveSharedOperator()
	os.Exit(code)
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || len(o.ns) != 3 || o.ns[2] != 1000 || o.subscriptions != 10 || !o.scaleOut {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--n=100,x"}, {"--n=0"}, {"--subscriptions=0"}, {"--steady-window=10s", "--steady-drift-check-interval=1m"},
		{"--n=1001", "--scale-out=false"}, {"--n=11001"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%v) accepted invalid flags", args)
		}
	}
}

func TestReadFloor(t *testing.T) {
	for _, tc := range []struct{ n, k, want int }{
		{10, 10, 1 + 10},    // 1 MC page, one page per WC subscription
		{1000, 10, 10 + 10}, // 10 MC pages, 100 WCs per subscription
		{500, 3, 5 + 2 + 2 + 2},
		{5, 10, 1 + 10}, // empty subscriptions still cost a list
	} {
		if diff := cmp.Diff(tc.want, readFloor(tc.n, tc.k)); diff != "" {
			t.Errorf("readFloor(%d, %d) (-want +got):\n%s", tc.n, tc.k, diff)
		}
	}
}

// TestKubeQPS: the Kubernetes client's limit the consumer floor divides
// by is the operator's --kube-api-qps, the last one given, or its default.
func TestKubeQPS(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  float64
	}{
		{nil, defaultKubeQPS},
		{[]string{"--kube-api-qps=200", "--kube-api-burst=400"}, 200},
		{[]string{"--kube-api-qps=200", "--kube-api-qps=50"}, 50},
		{[]string{"--kube-api-qps", "150", "--kube-api-burst=300"}, 150},
		{[]string{"--kube-api-qps=x", "--kube-api-qps=0"}, defaultKubeQPS},
	} {
		if got := kubeQPS(tc.flags); got != tc.want {
			t.Errorf("kubeQPS(%v) = %g, want %g", tc.flags, got, tc.want)
		}
	}
}

// TestSmoke runs the whole benchmark at a small N, as make test does: every
// phase completes against the real operator binary, and the invariants that
// hold at any N hold here.
func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{
		N: 8, Subscriptions: 2, OperatorBinary: bin, AzureLatency: time.Second,
		SteadyDrift: 10 * time.Second, SteadyWindow: 20 * time.Second, Timeout: 5 * time.Minute,
		Dir: t.TempDir(), Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"the operator writes nothing to ARM in the CAPZ flow", res.Converge.ARMWrites+res.Restart.ARMWrites+res.Steady.ARMWrites+res.Delete.ARMWrites == 0},
		{"the operator wrote the MC while converging", res.Converge.MCWrites >= 1},
		{"the operator wrote every WC", res.Converge.WCWrites >= res.N},
		{"nothing is written after a restart on a converged world", res.Restart.MCWrites+res.Restart.WCWrites == 0},
		{"nothing is written in the steady state", res.Steady.MCWrites+res.Steady.WCWrites == 0},
		{"the steady state reads Azure (drift checks)", res.Steady.ARMReads > 0},
		{"the deletion wrote the MC", res.Delete.MCWrites >= 1},
		{"the deletion caused no API conflicts", res.Delete.Conflicts == 0},
		{"the operator used a token", res.Converge.TokenRequests >= 1},
		{"CPU and memory were measured", res.CPUSeconds > 0 && res.PeakRSSMiB > 0 && res.PeakAnonMiB > 0 && res.PeakHeapMiB > 0},
	} {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, res)
		}
	}
	checkBounds(t, append(wiringBounds(res),
		bound{"restart and steady: token requests (a new process, one identity)", float64(res.Restart.TokenRequests + res.Steady.TokenRequests), 1},
		bound{"steady: ARM reads per WC", perObject(res.N, res.Steady.ARMReads), 4},
		bound{"delete: token requests", float64(res.Delete.TokenRequests), 0},
		bound{"delete: writes to the MC object", float64(res.Delete.MCWrites), wiringMCWritesMax},
		bound{"delete: writes per WC", perObject(res.N, res.Delete.WCWrites), 3},
		bound{"delete: ARM reads per WC", perObject(res.N, res.Delete.ARMReads), 4},
		bound{"restart, steady and delete: requests Azure refused the operator", float64(refusedInRun(res.Restart, res.Steady, res.Delete)), 0},
	))
	table := markdownTable([]Result{res})
	if !strings.Contains(table, "| N = 8 |") || !strings.Contains(table, "GET privateEndpoints") || !strings.Contains(table, "Requests Azure refused") {
		t.Errorf("table:\n%s", table)
	}
	md := filepath.Join(dir, "benchmarks.md")
	if err := write(options{markdown: md, subscriptions: 2, latency: time.Second, steadyDrift: 10 * time.Second, steadyWindow: 20 * time.Second}, []Result{res}); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(md); err != nil || !strings.Contains(string(raw), notesMarker) {
		t.Errorf("report: %v\n%s", err, raw)
	}
}

// TestConsumerSmoke runs the consumer scenario at a small N with the real
// operator binary: every object Ready and resolving, exactly the minimum
// ARM writes, none after a restart or in the steady state, no 429, and
// everything gone from Azure after deletion.
func TestConsumerSmoke(t *testing.T) {
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunConsumer(context.Background(), ConsumerConfig{
		N: 6, Subscriptions: 2, OperatorBinary: bin, AzureLatency: time.Second, Concurrency: 4,
		SteadyDrift: 10 * time.Second, SteadyWindow: 20 * time.Second, Timeout: 5 * time.Minute,
		Dir: t.TempDir(), Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"every endpoint cost the minimum writes (endpoint, zone, link, two records)", res.Converge.ARMWrites == 5*res.N && res.MinWritesPerEndpoint == 5},
		{"no 429", res.Converge.Throttled+res.Restart.Throttled+res.Steady.Throttled+res.Delete.Throttled == 0},
		{"nothing is written after a restart", res.Restart.ARMWrites+res.Restart.WCWrites == 0},
		{"nothing is written in the steady state", res.Steady.ARMWrites+res.Steady.WCWrites == 0},
		{"the steady state reads the endpoints", res.Steady.ARMReads > 0},
		{"the operator wrote each object's status", res.KubeWritesPerObject >= 1},
		{"the Kubernetes client's floor is its writes at its default limit", res.KubeFloorSeconds == res.KubeWritesPerObject*float64(res.N)/defaultKubeQPS},
		{"the deletion deleted in Azure", res.Delete.ARMWrites >= 4*res.N},
		{"memory was measured", res.PeakRSSMiB > 0},
	} {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, res)
		}
	}
	checkBounds(t, []bound{
		{"converge: token requests (one identity)", float64(res.Converge.TokenRequests), 1},
		{"converge: writes per AzurePrivateEndpoint", res.KubeWritesPerObject, 6},
		{"converge: ARM reads per AzurePrivateEndpoint", perObject(res.N, res.Converge.ARMReads), 10},
		{"converge: Private DNS requests per AzurePrivateEndpoint", perObject(res.N, dnsRequests(res.Converge)), 10},
		{"restart: ARM reads per AzurePrivateEndpoint", perObject(res.N, res.Restart.ARMReads), 6},
		// The steady window holds endpoint drift checks and, since the
		// restart spreads each object's first Private DNS check over the
		// check interval (60 s here, longer than the window), at most one
		// DNS check per object (the zone, its link, two records): whether
		// it falls in the window is chance, so the two are bounded apart.
		{"steady: endpoint reads per AzurePrivateEndpoint", perObject(res.N, res.Steady.ARMReads-steadyDNSReads(res.Steady)), 4},
		{"steady: Private DNS reads per AzurePrivateEndpoint (one check at most)", perObject(res.N, steadyDNSReads(res.Steady)), 4},
		{"delete: ARM reads per AzurePrivateEndpoint", perObject(res.N, res.Delete.ARMReads), 12},
		{"requests Azure refused the operator, every phase", float64(refusedInRun(res.Converge, res.Restart, res.Steady, res.Delete)), 0},
		{"restart, steady and delete: token requests (a new process, one identity)", float64(res.Restart.TokenRequests + res.Steady.TokenRequests + res.Delete.TokenRequests), 1},
	})
	md := filepath.Join(t.TempDir(), "consumer.md")
	if err := writeConsumers(options{consumerMarkdown: md, subscriptions: 2, latency: time.Second, steadyDrift: 10 * time.Second, consumerConcurrency: 4}, []ConsumerResult{res}); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(md); err != nil || !strings.Contains(string(raw), "N = 6, own zones") {
		t.Errorf("report: %v\n%s", err, raw)
	}
}

// TestScaleOutSmoke runs the whole benchmark in the world past 1,000 WCs
// (--scale-out) with the limits lowered to 3, so that a small N crosses
// both: the MC's AzureCluster takes 3 entries and the rest of its
// endpoints are AzurePrivateEndpoint objects in the high-scale network,
// and the ingress service takes 3 WCs and the operator makes the next.
// The operator writes Azure only for what it makes, nothing after a
// restart, and the deletion removes its endpoints.
func TestScaleOutSmoke(t *testing.T) {
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{
		N: 6, Subscriptions: 2, OperatorBinary: bin, AzureLatency: time.Second, ScaleOut: true,
		OperatorFlags: []string{"--mc-private-endpoint-limit=3", "--mc-service-connection-limit=3"},
		SteadyDrift:   10 * time.Second, SteadyWindow: 20 * time.Second, Timeout: 5 * time.Minute,
		Dir: t.TempDir(), Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	put := func(p Phase, resource string) int { return p.ARMByOperation["PUT Microsoft.Network/"+resource] }
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"3 endpoints beyond the MC's AzureCluster", res.MCEndpointObjects == 3},
		// Service 3 is made once services 1 and 2 have 90 % of 3.
		{"2 or 3 ingress services", res.IngressServices == 2 || res.IngressServices == 3},
		{"one PUT per endpoint beyond the MC object", put(res.Converge, "privateEndpoints") == 3},
		{"one PUT per further ingress service", put(res.Converge, "privateLinkServices") == res.IngressServices-1},
		{"the operator wrote its objects", res.Converge.ObjectWrites >= 3+res.IngressServices-1},
		{"nothing is written after a restart", res.Restart.MCWrites+res.Restart.WCWrites+res.Restart.ARMWrites == 0},
		// A further service's status lists its connections as its last
		// look at Azure found them: the clusters connected after it was
		// Ready, and the first process would have written them at its
		// next drift check; the restarted one does at its first look.
		{"after a restart, at most the further services' connection lists", res.Restart.ObjectWrites <= res.IngressServices-1},
		{"nothing is written in the steady state", res.Steady.MCWrites+res.Steady.WCWrites+res.Steady.ObjectWrites+res.Steady.ARMWrites == 0},
		{"the deletion deleted the endpoints beyond in Azure", res.Delete.ARMByOperation["DELETE Microsoft.Network/privateEndpoints"] >= 3},
		{"no 429", res.Converge.Throttled+res.Restart.Throttled+res.Steady.Throttled+res.Delete.Throttled == 0},
		{"Azure refused no request of the operator (its limits are below Azure's; it waits for load balancers and operations)", refusedInRun(res.Converge, res.Restart, res.Steady, res.Delete) == 0},
		{"CAPZ got no entry to a service Azure did not have or show", refusedWith(res.Converge, thirdPartyNotVisible) == 0},
	} {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, res)
		}
	}
	if table := markdownTable([]Result{res}); !strings.Contains(table, fmt.Sprintf("| %d / 3 |", res.IngressServices)) {
		t.Errorf("table:\n%s", table)
	}
}

// TestProjectionTable: each figure goes on from the largest run at the
// marginal cost of the last step, every step's marginal cost is shown,
// and one run (or DNS mode's) projects nothing.
func TestProjectionTable(t *testing.T) {
	run := func(n int, seconds float64, reads int, rss float64) Result {
		return Result{N: n, Converge: Phase{Seconds: seconds, ARMReads: reads}, PeakRSSMiB: rss, IngressServices: 1 + (n-1)/1000}
	}
	table := projectionTable([]Result{run(3000, 500, 9000, 300), run(1000, 100, 3000, 200), run(2000, 300, 6000, 250)})
	for _, want := range []string{
		"| converge: wall time (s) | 1000→2000: 200.0 per 1,000 WCs; 2000→3000: 200.0 per 1,000 WCs | 1900 |",
		"| converge: operator ARM reads | 1000→2000: 3.00 per WC; 2000→3000: 3.00 per WC | 30000 |",
		"| operator peak RSS (MiB) | 1000→2000: 50.0 per 1,000 WCs; 2000→3000: 50.0 per 1,000 WCs | 650 |",
		"| the MC's ingress services | 1000→2000: 1.0 per 1,000 WCs; 2000→3000: 1.0 per 1,000 WCs | 10 |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("projection lacks %q:\n%s", want, table)
		}
	}
	for slope, want := range map[float64]string{-0.0001: "0.00 per WC", -0.5: "-0.50 per WC", 0.004: "0.00 per WC"} {
		if got := marginal(slope, true); got != want {
			t.Errorf("marginal(%v) = %q, want %q", slope, got, want)
		}
	}
	if got := projectionTable([]Result{run(1000, 100, 3000, 200)}); got != "" {
		t.Errorf("one run projected: %s", got)
	}
	dns := run(2000, 300, 6000, 250)
	dns.DNS = true
	if got := projectionTable([]Result{run(1000, 100, 3000, 200), dns}); got != "" {
		t.Errorf("DNS mode projected: %s", got)
	}
}

// TestRenderJSON: --render-json writes the report from saved results,
// projection included, naming the revision given, and measures nothing.
func TestRenderJSON(t *testing.T) {
	dir := t.TempDir()
	world := func(r Result) Result {
		r.ScaleOut, r.ShardFrontends, r.EndpointNetworks = true, []string{"ingress-2", "ingress-3", "lb-2/ingress-4"}, 2
		return r
	}
	raw, err := json.Marshal([]Result{world(Result{N: 1000, IngressServices: 2}), world(Result{N: 2000, IngressServices: 3})})
	if err != nil {
		t.Fatal(err)
	}
	in, md := filepath.Join(dir, "results.json"), filepath.Join(dir, "benchmarks.md")
	if err := os.WriteFile(in, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"--render-json=" + in, "--markdown=" + md, "--revision=abc1234"}, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at commit abc1234", "| N = 1000 | N = 2000 |", "Projection to N = 10000", "| 2 / 0 | 3 / 0 |",
		// The world the runs recorded, not the harness's.
		"3 further frontends, 2 on its load balancer, 1 on 1 more, and the MC's subscription 2 high-scale networks"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if code := run(context.Background(), []string{"--render-json=" + in}, io.Discard, io.Discard); code != 1 {
		t.Errorf("--render-json without --markdown: exit %d, want 1", code)
	}
}
