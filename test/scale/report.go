package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// pageSize is azuresim's list page size (Azure's is not documented for
// private endpoints; 100 is a common ARM page size).
const pageSize = 100

func pages(n int) int { return max(1, (n+pageSize-1)/pageSize) }

// readFloor is the fewest ARM reads that observe every endpoint once: one
// paged list per subscription (the MC's holds N endpoints, each WC
// subscription N/K). A process new to an endpoint also reads its network
// interface once (nicReads), because Azure gives an endpoint to a private
// link service without FQDNs no customDnsConfigs.
func readFloor(n, k int) int {
	f := pages(n)
	for i := 0; i < k; i++ {
		f += pages(n/k + boolInt(i < n%k))
	}
	return f
}

// nicReads is one network interface read per endpoint (two per WC), once
// per process.
func nicReads(n int) int { return 2 * n }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type metric struct {
	name, target, floor string
	value               func(Result) string
}

func metrics() []metric {
	f1 := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	d := func(v int) string { return fmt.Sprint(v) }
	return []metric{
		{"converge: wall time, to every WC annotated and Ready (s)", "", "", func(r Result) string { return f1(r.Converge.Seconds) }},
		{"converge: every endpoint provisioned in Azure after (s)", "", "", func(r Result) string { return f1(r.CAPZDoneSeconds) }},
		{"converge: after the last endpoint was provisioned (s)", "≤ 60", "0", func(r Result) string { return f1(r.AfterCAPZSeconds) }},
		{"converge: the MC's ingress services / endpoints beyond its AzureCluster (--scale-out)", "", "⌈N/1000⌉ / N − 1000", scaleOutValue(func(r Result) string {
			return fmt.Sprintf("%d / %d", r.IngressServices, r.MCEndpointObjects)
		})},
		{"converge: writes to the MC object", "≤ 50", "1", func(r Result) string { return d(r.Converge.MCWrites) }},
		{"converge: writes to one WC, at most", "≤ 2", "3 (see notes)", func(r Result) string { return d(r.Converge.WCWritesMax) }},
		{"converge: writes to WCs, in all", "", "3N", func(r Result) string { return d(r.Converge.WCWrites) }},
		{"converge: API conflicts (409)", "", "0", func(r Result) string { return d(r.Converge.Conflicts) }},
		{"converge: operator ARM reads", "≤ N/5 + 2N NICs", "see notes", func(r Result) string {
			return fmt.Sprintf("%d (N/5 + 2N = %d, floor %d)", r.Converge.ARMReads, r.N/5+nicReads(r.N), readFloor(r.N, r.Subscriptions)+nicReads(r.N))
		}},
		{"converge: writes to the operator's own objects (AzurePrivateEndpoint, AzurePrivateLinkService)", "", "see notes", func(r Result) string { return d(r.Converge.ObjectWrites) }},
		{"converge: operator ARM writes", "0 in the CAPZ flow", "one per endpoint and service it makes", func(r Result) string { return d(r.Converge.ARMWrites) }},
		{"converge: token requests", "", "1", func(r Result) string { return d(r.Converge.TokenRequests) }},
		{"converge: 429s received", "", "0", func(r Result) string { return d(r.Converge.Throttled) }},
		{"operator requests Azure refused (error answers but 404, 412 and 429): converge / restart / steady / delete; in DNS mode converge / DNS", "0", "0", func(r Result) string {
			parts := make([]string, 0, 4)
			for _, p := range runPhases(r) {
				parts = append(parts, d(p.phase.RefusedOf(sandbox.FleetOperatorClient)))
			}
			return strings.Join(parts, " / ")
		}},
		{"restart: ARM reads, the first drift interval and until no NIC read for another interval and 10 s", "", "see notes", wiringOnly(func(r Result) string {
			return fmt.Sprintf("%d (floor %d)", r.Restart.ARMReads, readFloor(r.N, r.Subscriptions)+nicReads(r.N))
		})},
		{"restart: time until settled (s)", "", "", wiringOnly(func(r Result) string { return f1(r.Restart.Seconds) })},
		{"restart: writes (Kubernetes + ARM)", "0", "0", wiringOnly(func(r Result) string {
			return d(r.Restart.MCWrites + r.Restart.WCWrites + r.Restart.ObjectWrites + r.Restart.ARMWrites)
		})},
		{"steady: writes per hour (Kubernetes + ARM)", "0", "0", wiringOnly(func(r Result) string { return f1(r.SteadyWritesPerHour) })},
		{"steady: ARM reads per hour", "≤ N/10", "see notes", wiringOnly(func(r Result) string {
			return fmt.Sprintf("%.0f (N/10 = %d, floor %d)", r.SteadyReadsPerHour, r.N/10, 6*readFloor(r.N, r.Subscriptions))
		})},
		{"delete: time until the MC holds no endpoint (s)", "", "", wiringOnly(func(r Result) string { return f1(r.DeleteMCEmptySeconds) })},
		{"delete: time until every WC is gone (s)", "", "", wiringOnly(func(r Result) string { return f1(r.Delete.Seconds) })},
		{"delete: writes to the MC object", "", "1", wiringOnly(func(r Result) string { return d(r.Delete.MCWrites) })},
		{"delete: writes to WCs, in all", "", "N", wiringOnly(func(r Result) string { return d(r.Delete.WCWrites) })},
		{"delete: writes to the operator's own objects", "", "see notes", wiringOnly(func(r Result) string { return d(r.Delete.ObjectWrites) })},
		{"delete: API conflicts (409)", "0", "0", wiringOnly(func(r Result) string { return d(r.Delete.Conflicts) })},
		{"MC object size when converged (KiB)", "< 1536 (etcd limit)", "", func(r Result) string {
			return f1(float64(r.MCObjectBytes) / 1024)
		}},
		{"DNS mode: WCs with GSDNSZoneReady, after the wiring converged (s)", "", "", dnsValue(func(r Result) string {
			return fmt.Sprintf("%d of %d after %.0f", r.DNSReady, r.N, r.DNSWatchedSeconds)
		})},
		{"DNS mode: Private DNS requests per WC with GSDNSZoneReady, reads / writes", "", "2 / 6 (see notes)", dnsValue(func(r Result) string {
			reads, writes := 0, 0
			for _, x := range r.DNSRates {
				reads, writes = reads+x.Reads, writes+x.Writes
			}
			return fmt.Sprintf("%.1f / %.1f", float64(reads)/float64(max(1, r.DNSReady)), float64(writes)/float64(max(1, r.DNSReady)))
		})},
		{"DNS mode: busiest 5 min of the MC's subscription, reads / writes", "≤ 400 / 800 (the default budget; Azure: 500 / 1,000)", "", dnsValue(func(r Result) string {
			if len(r.DNSRates) == 0 {
				return "–"
			}
			return fmt.Sprintf("%d / %d", r.DNSRates[0].PeakReads, r.DNSRates[0].PeakWrites)
		})},
		{"DNS mode: busiest 5 min of a WC subscription, reads / writes", "≤ 400 / 800", "", dnsValue(func(r Result) string {
			if len(r.DNSRates) < 2 {
				return "–"
			}
			return fmt.Sprintf("%d / %d", r.DNSRates[1].PeakReads, r.DNSRates[1].PeakWrites)
		})},
		{"operator CPU, whole run (s)", "", "", func(r Result) string { return f1(r.CPUSeconds) }},
		{"operator CPU by phase: converge / restart / steady / delete (s)", "", "", wiringOnly(func(r Result) string {
			return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f", r.Converge.CPUSeconds, r.Restart.CPUSeconds, r.Steady.CPUSeconds, r.Delete.CPUSeconds)
		})},
		{"operator CPU per WC: converge / delete (ms)", "flat in N", "", wiringOnly(func(r Result) string {
			return fmt.Sprintf("%.0f / %.0f", 1000*r.Converge.CPUSeconds/float64(r.N), 1000*r.Delete.CPUSeconds/float64(r.N))
		})},
		{"operator peak RSS (MiB)", "< 200", "", func(r Result) string { return f1(r.PeakRSSMiB) }},
		{"operator peak anonymous RSS, sampled (MiB)", "", "", func(r Result) string { return f1(r.PeakAnonMiB) }},
		{"operator peak Go heap in use (MiB)", "", "", func(r Result) string { return f1(r.PeakHeapMiB) }},
	}
}

type namedPhase struct {
	name  string
	phase Phase
}

// runPhases are the phases a run went through, in order: DNS mode's
// convergence and its DNS window, or the wiring's four.
func runPhases(r Result) []namedPhase {
	if r.DNS {
		out := []namedPhase{{"converge", r.Converge}}
		if r.DNSPhase != nil {
			out = append(out, namedPhase{"DNS", *r.DNSPhase})
		}
		return out
	}
	return fourPhases(r.Converge, r.Restart, r.Steady, r.Delete)
}

// fourPhases names the phases of a run that restarts and deletes.
func fourPhases(converge, restart, steady, del Phase) []namedPhase {
	return []namedPhase{{"converge", converge}, {"restart", restart}, {"steady", steady}, {"delete", del}}
}

// wiringOnly shows a figure of the phases a DNS mode run skips, "–" there.
func wiringOnly(f func(Result) string) func(Result) string {
	return func(r Result) string {
		if r.DNS {
			return "–"
		}
		return f(r)
	}
}

// scaleOutWorld describes the world past 1,000 WCs the runs had, from
// what they recorded ("" without --scale-out).
func scaleOutWorld(results []Result) string {
	var r *Result
	for i := range results {
		if results[i].ScaleOut && len(results[i].ShardFrontends) > 0 {
			r = &results[i]
			break
		}
	}
	if r == nil {
		return ""
	}
	onFirst, others := 0, map[string]int{}
	for _, f := range r.ShardFrontends {
		if lb, _, ok := strings.Cut(f, "/"); ok {
			others[lb]++
			continue
		}
		onFirst++
	}
	where := "on its load balancer"
	if len(others) > 0 {
		n := 0
		for _, c := range others {
			n += c
		}
		where = fmt.Sprintf("%d on its load balancer, %d on %d more", onFirst, n, len(others))
	}
	networks := "a high-scale network (`privateEndpointVNetPolicies: Basic`) with a /17 subnet"
	if r.EndpointNetworks > 1 {
		networks = fmt.Sprintf("%d high-scale networks (`privateEndpointVNetPolicies: Basic`) with a /17 subnet each", r.EndpointNetworks)
	}
	return fmt.Sprintf("- Past 1,000 WCs (`--scale-out`): the MC's ingress has %d further frontends, %s, and the MC's subscription %s; the operator runs with `--mc-ingress-shard-frontends` (all of them), `--mc-ingress-shard-subscriptions` (the WCs' subscriptions) and `--mc-endpoint-subnets`, as docs/operations.md says; the MC's AzureCluster takes 1,000 entries (`--mc-private-endpoint-limit`'s default), the rest are AzurePrivateEndpoint objects\n",
		len(r.ShardFrontends), where, networks)
}

// scaleOutValue shows a figure of the world past 1,000 WCs, "–" without it.
func scaleOutValue(f func(Result) string) func(Result) string {
	return func(r Result) string {
		if !r.ScaleOut {
			return "–"
		}
		return f(r)
	}
}

// dnsValue shows a DNS mode figure, "–" for a run without it.
func dnsValue(f func(Result) string) func(Result) string {
	return func(r Result) string {
		if !r.DNS {
			return "–"
		}
		return f(r)
	}
}

// markdownTable is the results as a table, one column per N.
func markdownTable(results []Result) string {
	var b strings.Builder
	b.WriteString("| | target (N = 1,000) | floor |")
	for _, r := range results {
		fmt.Fprintf(&b, " N = %d |", r.N)
	}
	b.WriteString("\n|---|---|---|")
	for range results {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, m := range metrics() {
		fmt.Fprintf(&b, "| %s | %s | %s |", m.name, orDash(m.target), orDash(m.floor))
		for _, r := range results {
			fmt.Fprintf(&b, " %s |", m.value(r))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nOperator ARM requests while converging, by operation:\n\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- N = %d: %s\n", r.N, operations(r.Converge))
	}
	b.WriteString("\nOperator ARM requests in the steady window, by operation:\n\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- N = %d: %s\n", r.N, operations(r.Steady))
	}
	b.WriteString("\nRequests Azure refused (error answers but 404, 412 and 429), of every principal, by phase:\n\n")
	for _, r := range results {
		parts := make([]string, 0, 4)
		for _, p := range runPhases(r) {
			parts = append(parts, p.name+": "+refusals(p.phase))
		}
		fmt.Fprintf(&b, "- N = %d: %s\n", r.N, strings.Join(parts, "; "))
	}
	if p := projectionTable(results); p != "" {
		fmt.Fprintf(&b, "\nProjection to N = %d, from the largest run at the marginal cost of the last step (see notes for what the world needs there):\n\n%s", projectionN, p)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// report is docs/benchmarks.md: machine, settings, table. The analysis
// below the marker is kept from the existing file.
func report(opts options, results []Result) string {
	var b strings.Builder
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Generated by `make bench` (`go run ./test/scale`); edit the notes below the table, not the table.\n\n")
	fmt.Fprintf(&b, "- Date: %s, at commit %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), opts.revision)
	fmt.Fprintf(&b, "- Machine: %d CPUs (%s), %s memory, %s/%s, %s\n", runtime.NumCPU(), cpuModel(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- World: 1 private MC and N private WCs created at once; WCs spread over %d subscriptions and 10 namespaces; one identity\n", opts.subscriptions)
	fmt.Fprintf(&b, "- CAPZ (capzsim): %s\n", capzDescription(opts.capz))
	if world := scaleOutWorld(results); world != "" {
		b.WriteString(world)
	}
	fmt.Fprintf(&b, "- Azure (azuresim): ARM throttling on for the operator (reads 250 burst / 25 per s, writes 200 / 10 per s, per subscription and principal) and the resource providers' windows per subscription; Azure's resource-count limits; CAPZ's principal exempt; long-running operations take %s; list pages of %d\n", opts.latency, pageSize)
	b.WriteString("- Operator: the real binary, default flags (4 workers, 10 s observation TTL, 10 s per 1,000 endpoints of a larger list, 30 s pending recheck, 2 s MC write delay)")
	if opts.dns {
		layout := "one shared MC-side zone (`--wiring-dns-mc-zone={{.BaseDomain}} --wiring-dns-mc-records=api.{{.Cluster}}`) and one zone in each WC's group"
		if opts.dnsPerCluster {
			layout = "default zones: one per WC in the MC's subscription, one in each WC's group"
		}
		b.WriteString(", in DNS mode (`--wiring-dns --wiring-dns-base-domain=" + DNSBaseDomain + "`, " + layout + "); the convergence rows include the wait for every WC's GSDNSZoneReady; the emulator enforces the Private DNS and Network request windows per subscription (500 DNS reads, 1,000 Network writes per 5 minutes), the rows show the busiest window against them")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "- Steady state: the operator restarted with `--drift-check-interval=%s`; the restart is measured for that interval and then until the operator has read no network interface for another interval and 10 s (its one read of each endpoint's address), the steady state for %s after that, i.e. time-compressed %.0f× against the default 10 minutes; per-hour figures are scaled to the default. `--private-endpoint-drift-interval` is compressed as far: the AzurePrivateEndpoints beyond the MC's AzureCluster check their endpoints in the window, against the wiring's list of the MC's subscription (the MC's ingress services keep `--private-link-service-drift-interval` at its default)\n\n",
		opts.steadyDrift, opts.steadyWindow, (10*time.Minute).Seconds()/opts.steadyDrift.Seconds())
	b.WriteString(markdownTable(results))
	b.WriteString("\n" + notesMarker + "\n")
	if old, err := os.ReadFile(opts.markdown); err == nil {
		if _, notes, ok := strings.Cut(string(old), notesMarker+"\n"); ok {
			b.WriteString(notes)
		}
	}
	return b.String()
}

const notesMarker = "<!-- notes: kept across runs -->"

func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	raw, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			var kb int
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "unknown"
}

// capzDescription says what capzsim did in the run.
func capzDescription(capz string) string {
	if capz == "fork" {
		return "the fork's schema; private link services and endpoints written straight to Azure"
	}
	return "v" + strings.TrimPrefix(capz, "v") + "'s schema; private link services and endpoints as ASO objects, made in Azure by the ASO stand-in, whose status changes the operator watches"
}
