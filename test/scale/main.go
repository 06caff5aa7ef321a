// Command scale is the operator's scale and efficiency benchmark (`make
// bench`): a real kube-apiserver, azuresim with ARM throttling and
// long-running operations that take time, capzsim, and the real operator
// binary. For each N it creates one private management cluster and N private
// workload clusters at once, measures convergence, a restart, a
// time-compressed steady state and the deletion of every workload cluster,
// and writes the figures as JSON and as the markdown of docs/benchmarks.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

type options struct {
	ns             []int
	subscriptions  int
	capz           string
	operatorBinary string
	gomemlimit     string
	operatorFlags  []string
	latency        time.Duration
	steadyDrift    time.Duration
	steadyWindow   time.Duration
	timeout        time.Duration
	markdown       string
	jsonOut        string
	keep           bool

	scenario             string
	dns                  bool
	dnsWindow            time.Duration
	dnsPerCluster        bool
	consumerN            int
	consumerConcurrency  int
	consumerZones        []string
	consumerConvergeOnly bool
	consumerMarkdown     string
	consumerJSON         string

	profileDir string
	scaleOut   bool
	// renderJSON re-renders the wiring report from a results file
	// instead of measuring (the report's code changed, not the figures).
	renderJSON string

	revision string // the commit measured, named in the reports
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{}
	var ns string
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&ns, "n", "100,500,1000", "Comma-separated numbers of workload clusters, one run each.")
	fs.IntVar(&o.subscriptions, "subscriptions", 10, "Subscriptions the workload clusters are spread over.")
	fs.StringVar(&o.capz, "capz", string(testenv.SchemaV127), "The CAPZ capzsim mimics in the wiring scenario: v1.27 (private links and endpoints through ASO) or fork.")
	fs.StringVar(&o.operatorBinary, "operator-binary", "", "Operator binary to measure (default: build it).")
	var operatorFlags string
	fs.StringVar(&operatorFlags, "operator-flags", "", "Further flags for the operator in every scenario, space-separated (e.g. --kube-api-qps=100); they come after the scenario's own.")
	fs.StringVar(&o.gomemlimit, "operator-gomemlimit", "", "GOMEMLIMIT for the operator in the wiring scenario (e.g. 230MiB, what the binary sets in a 256Mi container); empty: none, as outside a container.")
	fs.DurationVar(&o.latency, "azure-latency", 5*time.Second, "How long Azure's long-running operations take.")
	fs.DurationVar(&o.steadyDrift, "steady-drift-check-interval", time.Minute,
		"--drift-check-interval in the steady phase (default 10m: the phase is compressed by 10m/this).")
	fs.DurationVar(&o.steadyWindow, "steady-window", 3*time.Minute, "How long the steady phase is measured.")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "Limit on convergence and on deletion, per run.")
	fs.StringVar(&o.markdown, "markdown", "", "Write the report here (e.g. docs/benchmarks.md).")
	fs.StringVar(&o.jsonOut, "json", "", "Write the results as JSON here.")
	fs.StringVar(&o.profileDir, "profile-dir", "", "Write profiles here: this process's CPU (azuresim, capzsim, ASO's stand-in; harness.cpu.pprof) over the whole run, and in the wiring scenario the operator's heap at its peak and its CPU while the wiring converges, in 1-minute slices (operator-1-n<N>-*.pprof; read with go tool pprof), and its metrics when it has converged (operator-1-n<N>-metrics-converged.txt).")
	fs.BoolVar(&o.scaleOut, "scale-out", true, fmt.Sprintf("Wiring scenario: give the MC's ingress %d further frontends on two load balancers and the MC's subscription %d high-scale networks, and the operator the flags that use them (--mc-ingress-shard-frontends, --mc-endpoint-subnets), as docs/operations.md says to past 1,000 WCs; below 900 WCs they change nothing. Needed for --n above 1000; at most %d.", shardFrontends, beyondNetworks, scaleOutMaxN))
	fs.StringVar(&o.renderJSON, "render-json", "", "Measure nothing: write --markdown from the wiring results of this file (as --json wrote them), with the settings given by the other flags and --revision; for a report whose code changed after the run.")
	fs.StringVar(&o.revision, "revision", "", "The commit the reports name as measured (default: the clone's HEAD, +changes when it has any).")
	fs.BoolVar(&o.keep, "keep-files", false, "Keep each run's directory (operator logs, audit log).")
	fs.StringVar(&o.scenario, "scenario", "all", "wiring (MC and WCs), consumer (AzurePrivateEndpoint objects with DNS, own and shared zones), or all.")
	fs.BoolVar(&o.dns, "wiring-dns", false, "Run the wiring scenario with the operator in DNS mode: converge, then watch DNS for --dns-window (no restart, steady or delete phase).")
	fs.DurationVar(&o.dnsWindow, "dns-window", 10*time.Minute, "With --wiring-dns, how long DNS is watched after the wiring converged.")
	fs.BoolVar(&o.dnsPerCluster, "dns-per-cluster-zones", false, "With --wiring-dns, keep DNS mode's default layout (a zone per WC in the MC's subscription) instead of one shared MC-side zone.")
	fs.IntVar(&o.consumerN, "consumer-n", 1000, "AzurePrivateEndpoint objects in the consumer scenario.")
	fs.IntVar(&o.consumerConcurrency, "consumer-concurrency", 4, "--private-endpoint-concurrency in the consumer scenario (the operator's default is 4).")
	var zones string
	fs.StringVar(&zones, "consumer-zones", "own,shared", "The consumer scenario's zone layouts, comma-separated: own (a zone per object), shared (one zone per subscription).")
	fs.BoolVar(&o.consumerConvergeOnly, "consumer-converge-only", false, "Stop each consumer run after the convergence (no restart, steady state or deletion): a quick measurement while working on the operator; its report leaves those phases empty.")
	fs.StringVar(&o.consumerMarkdown, "consumer-markdown", "", "Write the consumer scenario's report here (e.g. docs/benchmarks-consumer.md).")
	fs.StringVar(&o.consumerJSON, "consumer-json", "", "Write the consumer scenario's results as JSON here.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.operatorFlags = strings.Fields(operatorFlags)
	var err error
	if o.ns, err = parseNs(ns, o.scaleOut); err != nil {
		return o, err
	}
	if o.scenario != "all" && o.scenario != "wiring" && o.scenario != "consumer" {
		return o, fmt.Errorf("--scenario=%q: want wiring, consumer or all", o.scenario)
	}
	for _, z := range strings.Split(zones, ",") {
		if z = strings.TrimSpace(z); z != "own" && z != "shared" {
			return o, fmt.Errorf("--consumer-zones: %q is neither own nor shared", z)
		}
		o.consumerZones = append(o.consumerZones, strings.TrimSpace(z))
	}
	if o.consumerN < 1 || o.consumerConcurrency < 1 {
		return o, errors.New("--consumer-n and --consumer-concurrency must be at least 1")
	}
	if o.subscriptions < 1 {
		return o, errors.New("--subscriptions must be at least 1")
	}
	if o.capz != string(testenv.SchemaV127) && o.capz != string(testenv.SchemaFork) {
		return o, fmt.Errorf("--capz must be %s or %s, not %q", testenv.SchemaV127, testenv.SchemaFork, o.capz)
	}
	if o.steadyDrift <= 0 || o.steadyWindow < o.steadyDrift {
		return o, errors.New("--steady-window must hold at least one --steady-drift-check-interval")
	}
	return o, nil
}

// parseNs parses --n: the numbers of WCs, each within what the world
// takes.
func parseNs(ns string, scaleOut bool) ([]int, error) {
	var out []int
	for _, s := range strings.Split(ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--n: %q is not a positive number", s)
		}
		if n > 1000 && !scaleOut {
			return nil, fmt.Errorf("--n=%d: past 1,000 WCs Azure takes no more endpoints on one private link service or in one network; leave --scale-out on", n)
		}
		if n > scaleOutMaxN {
			return nil, fmt.Errorf("--n=%d: the world takes at most %d WCs (1,000 entries in the MC's AzureCluster, 5,000 endpoints in each of its %d networks beyond it)", n, scaleOutMaxN, beyondNetworks)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	os.Exit(runWithSignals())
}

// runWithSignals is run, stopped by SIGINT or SIGTERM; its deferred
// cleanup runs before main exits.
func runWithSignals() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "scale: %v\n", err)
		return 2
	}
	if opts.revision == "" {
		opts.revision = sandbox.Revision(ctx)
	}
	if opts.renderJSON != "" {
		if err := render(opts); err != nil {
			_, _ = fmt.Fprintf(stderr, "scale: %v\n", err)
			return 1
		}
		return 0
	}
	results, consumers, err := runAll(ctx, opts, stdout)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "scale: %v\n", err)
		return 1
	}
	if opts.scenario != "consumer" {
		if err := write(opts, results); err != nil {
			_, _ = fmt.Fprintf(stderr, "scale: %v\n", err)
			return 1
		}
	}
	if opts.scenario != "wiring" {
		if err := writeConsumers(opts, consumers); err != nil {
			_, _ = fmt.Fprintf(stderr, "scale: %v\n", err)
			return 1
		}
	}
	return 0
}

func runAll(ctx context.Context, opts options, stdout io.Writer) ([]Result, []ConsumerResult, error) {
	ctrl.SetLogger(logr.Discard())
	start := time.Now()
	logf := func(format string, args ...any) {
		_, _ = fmt.Fprintf(stdout, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if opts.profileDir != "" {
		stop, err := profileHarness(opts.profileDir)
		if err != nil {
			return nil, nil, err
		}
		defer stop()
	}
	bin := opts.operatorBinary
	if bin == "" {
		dir, err := os.MkdirTemp("", "apeo-scale-bin-")
		if err != nil {
			return nil, nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		logf("building the operator")
		if bin, err = sandbox.BuildOperator(ctx, dir); err != nil {
			return nil, nil, err
		}
	}
	var results []Result
	for _, n := range opts.ns {
		if opts.scenario == "consumer" {
			break
		}
		dir, err := os.MkdirTemp("", fmt.Sprintf("apeo-scale-%d-", n))
		if err != nil {
			return nil, nil, err
		}
		logf("N=%d: files in %s", n, dir)
		res, err := Run(ctx, Config{
			N: n, Subscriptions: opts.subscriptions, Schema: testenv.Schema(opts.capz), OperatorBinary: bin, OperatorEnv: operatorEnv(opts), OperatorFlags: opts.operatorFlags, AzureLatency: opts.latency,
			SteadyDrift: opts.steadyDrift, SteadyWindow: opts.steadyWindow, Timeout: opts.timeout, Dir: dir, Logf: logf,
			DNS: opts.dns, DNSWindow: opts.dnsWindow, DNSPerCluster: opts.dnsPerCluster, ProfileDir: opts.profileDir, ScaleOut: opts.scaleOut,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("run with n=%d: %w (files kept in %s)", n, err, dir)
		}
		results = append(results, res)
		if !opts.keep {
			_ = os.RemoveAll(dir)
		}
		_, _ = fmt.Fprintln(stdout, markdownTable(results))
	}
	if opts.scenario == "wiring" {
		return results, nil, nil
	}
	consumers, err := runConsumers(ctx, opts, bin, logf)
	if err != nil {
		return nil, nil, err
	}
	_, _ = fmt.Fprintln(stdout, consumerTable(consumers))
	return results, consumers, nil
}

func write(opts options, results []Result) error {
	if opts.jsonOut != "" {
		raw, err := json.MarshalIndent(results, "", "  ")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(opts.jsonOut), 0o755); err != nil { //nolint:gosec // G301: a docs directory of the clone
			return err
		}
		if err := os.WriteFile(opts.jsonOut, append(raw, '\n'), 0o644); err != nil { //nolint:gosec // G306: a report committed with the docs
			return err
		}
	}
	if opts.markdown != "" {
		if err := os.MkdirAll(filepath.Dir(opts.markdown), 0o755); err != nil { //nolint:gosec // G301: a docs directory of the clone
			return err
		}
		return os.WriteFile(opts.markdown, []byte(report(opts, results)), 0o644) //nolint:gosec // G306: a report committed with the docs
	}
	return nil
}

// render writes --markdown from the results in --render-json.
func render(opts options) error {
	if opts.markdown == "" {
		return errors.New("--render-json needs --markdown")
	}
	raw, err := os.ReadFile(opts.renderJSON)
	if err != nil {
		return err
	}
	var results []Result
	if err := json.Unmarshal(raw, &results); err != nil {
		return fmt.Errorf("%s: %w", opts.renderJSON, err)
	}
	opts.jsonOut = ""
	return write(opts, results)
}

// operatorEnv is the environment --operator-gomemlimit asks for.
func operatorEnv(o options) []string {
	if o.gomemlimit == "" {
		return nil
	}
	return []string{"GOMEMLIMIT=" + o.gomemlimit}
}
