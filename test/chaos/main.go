// Command chaos runs the real operator binary against the sandbox while a
// schedule injects faults, then checks and reports what the operator
// guarantees (docs/reliability.md). make chaos runs the long version; a
// short one is part of make test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

type options struct {
	cfg      Config
	markdown string
	keep     bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.cfg.N, "n", 200, "Workload clusters.")
	fs.IntVar(&o.cfg.PLS, "pls", 20, "AzurePrivateLinkService objects.")
	fs.DurationVar(&o.cfg.Window, "window", 5*time.Minute, "How long faults are injected.")
	fs.IntVar(&o.cfg.Kills, "kills", 5, "How many times the operator is SIGKILLed during the window (one more inside the token outage).")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "Seed of the fault schedule.")
	fs.StringVar(&o.cfg.OperatorBinary, "operator-binary", "", "Operator binary under test (default: build it).")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 15*time.Minute, "Limit on each convergence and on deletion.")
	fs.StringVar(&o.markdown, "markdown", "", "Write the report here (docs/reliability.md); the notes below its table are kept.")
	fs.BoolVar(&o.keep, "keep-files", false, "Keep the run's directory (operator logs).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.cfg.N < 1 || o.cfg.PLS < 0 || o.cfg.Kills < 0 || o.cfg.Window < 10*time.Second {
		return o, errors.New("--n must be at least 1, --pls and --kills not negative, --window at least 10s")
	}
	return o, nil
}

func main() {
	os.Exit(runWithSignals())
}

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
		_, _ = fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 2
	}
	res, err := runOnce(ctx, &opts, stdout)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	_, _ = fmt.Fprintln(stdout, table(res, opts.cfg))
	if opts.markdown != "" {
		if err := os.WriteFile(opts.markdown, []byte(report(res, opts.cfg, opts.markdown, sandbox.Revision(ctx))), 0o644); err != nil { //nolint:gosec // G306: a report committed with the docs
			_, _ = fmt.Fprintf(stderr, "chaos: %v\n", err)
			return 1
		}
	}
	if err := verdict(res, opts.cfg); err != nil {
		_, _ = fmt.Fprintf(stderr, "chaos: %v\n", err)
		return 1
	}
	return 0
}

func runOnce(ctx context.Context, opts *options, stdout io.Writer) (Result, error) {
	ctrl.SetLogger(logr.Discard())
	start := time.Now()
	opts.cfg.Logf = func(format string, args ...any) {
		_, _ = fmt.Fprintf(stdout, "[%7.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	dir, err := os.MkdirTemp("", "apeo-chaos-")
	if err != nil {
		return Result{}, err
	}
	opts.cfg.Dir = dir
	if opts.cfg.OperatorBinary == "" {
		opts.cfg.Logf("building the operator")
		if opts.cfg.OperatorBinary, err = sandbox.BuildOperator(ctx, dir); err != nil {
			return Result{}, err
		}
	}
	res, err := Run(ctx, opts.cfg)
	if err == nil && verdict(res, opts.cfg) == nil && !opts.keep {
		_ = os.RemoveAll(dir)
	} else {
		opts.cfg.Logf("files kept in %s", dir)
	}
	return res, err
}

// maxConverge is the target for convergence after the last fault: CAPZ's
// sync period (10 s here) plus the heal delay (10 s) plus a pending recheck,
// with room for a loaded machine.
func maxConverge(cfg Config) time.Duration {
	return 3*time.Minute + time.Duration(cfg.N)*100*time.Millisecond
}

// verdict fails when a figure misses its target.
func verdict(res Result, cfg Config) error {
	var missed []string
	for _, f := range res.figures(maxConverge(cfg)) {
		if !f.ok {
			missed = append(missed, fmt.Sprintf("%s: %s (target %s)", f.name, f.value, f.target))
		}
	}
	if len(missed) == 0 {
		return nil
	}
	details := res.Details
	if len(details) > 20 {
		details = append(details[:20:20], fmt.Sprintf("… %d more", len(res.Details)-20))
	}
	return fmt.Errorf("%w: %s; %s; leftovers %v", errFigures, strings.Join(missed, "; "), strings.Join(details, "; "), res.Leftovers)
}

// table is the run's figures and faults as Markdown.
func table(res Result, cfg Config) string {
	var b strings.Builder
	b.WriteString("| Figure | Target | Result | Met |\n| --- | --- | --- | --- |\n")
	for _, f := range res.figures(maxConverge(cfg)) {
		met := "yes"
		if !f.ok {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", f.name, f.target, f.value, met)
	}
	fmt.Fprintf(&b, "| first convergence of %d WCs and %d AzurePrivateLinkServices (s) | – | %.1f | – |\n", res.N, res.PLS, res.FirstConvergeSeconds)
	fmt.Fprintf(&b, "| deletion of every WC and AzurePrivateLinkService (s) | – | %.1f | – |\n", res.DeleteSeconds)
	fmt.Fprintf(&b, "| operator processes (starts after SIGKILL) | – | %d | – |\n", res.OperatorStarts)
	fmt.Fprintf(&b, "| operators that exited by themselves, started again as the kubelet would | – | %d | – |\n", res.OperatorExits)
	b.WriteString("\n| Fault injected | Count |\n| --- | --- |\n")
	for _, k := range slices.Sorted(maps.Keys(res.Faults)) {
		fmt.Fprintf(&b, "| %s | %d |\n", k, res.Faults[k])
	}
	return b.String()
}

const notesMarker = "<!-- notes: kept across runs -->"

// report is docs/reliability.md: settings and tables, then the notes kept
// from the existing file.
func report(res Result, cfg Config, path, revision string) string {
	var b strings.Builder
	b.WriteString("# Reliability\n\n")
	b.WriteString("Generated by `make chaos` (`go run ./test/chaos`); edit the notes below the tables, not the tables.\n\n")
	fmt.Fprintf(&b, "- Date: %s, at commit %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), revision)
	fmt.Fprintf(&b, "- Machine: %d CPUs, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&b, "- World: the real operator binary; 1 private MC and %d private WCs (fork schema, capzsim with a 10 s sync period), %d AzurePrivateLinkService objects; ARM throttling on; long-running operations 0.5 s (5 s for part of the window)\n", res.N, res.PLS)
	fmt.Fprintf(&b, "- Faults for %s (seed %d): see the second table; the schedule is in `test/chaos/faults.go`\n\n", cfg.Window, res.Seed)
	b.WriteString(table(res, cfg))
	b.WriteString("\n" + notesMarker + "\n")
	if old, err := os.ReadFile(filepath.Clean(path)); err == nil {
		if _, notes, ok := strings.Cut(string(old), notesMarker+"\n"); ok {
			b.WriteString(notes)
		}
	}
	return b.String()
}
