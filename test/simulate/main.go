// Command simulate hunts violations of the operator's multi-tenant
// invariants (docs/design.md, "Shared names have one owner"): it runs seeded,
// replayable histories of operations by three tenants against the real
// operator binary — colliding cluster and link names, a tenant cluster
// named like the MC, manual approvals, rejections, removed connections,
// withdrawn links, CAPZ condition flaps, watch-filter labels taken off and
// put back, SIGKILLs, Azure faults under Azure's throttling — and checks
// the world from outside every 250 ms. A failing seed prints the history
// that reproduces it. make simulate runs the long version and writes its
// section of docs/reliability.md; a short fixed seed is part of make test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// Config is one simulation: Histories histories from seeds Seed,
// Seed+1, ….
type Config struct {
	Seed       uint64
	Histories  int
	Operations int
	Kills      int
	// Every is how often the world is checked.
	Every time.Duration
	// Grace is how long an out-of-band change excuses an unapproved
	// published address.
	Grace time.Duration
	// Settle is the quiet period before every cluster is deleted.
	Settle time.Duration
	// Timeout bounds the deletions.
	Timeout        time.Duration
	OperatorBinary string
	Dir            string
	Logf           func(format string, args ...any)
}

func (c *Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Result is a whole simulation.
type Result struct {
	Histories []HistoryResult
}

// Totals adds up the histories.
func (r Result) Totals() (ops, checks, violations int) {
	for _, h := range r.Histories {
		ops += h.Operations
		checks += h.Checks
		violations += len(h.Violations)
	}
	return ops, checks, violations
}

// Run runs cfg.Histories histories one after the other, each in a world
// of its own.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	for i := range cfg.Histories {
		seed := cfg.Seed + uint64(i)
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("seed-%d", seed))
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return res, err
		}
		cfg.logf("history %d of %d, seed %d", i+1, cfg.Histories, seed)
		h, err := runHistory(ctx, &cfg, seed, dir)
		res.Histories = append(res.Histories, h)
		if err != nil {
			return res, fmt.Errorf("seed %d: %w", seed, err)
		}
		cfg.logf("seed %d: %d operations, %d checks (%d of endpoint objects' addresses), %d MC ingress services used, %d MC endpoints beyond its AzureCluster at most, %d violations in %.0fs",
			seed, h.Operations, h.Checks, h.ObjectAddresses, h.IngressServices, h.PlacedEndpoints, len(h.Violations), h.Seconds)
	}
	return res, nil
}

// failure describes every violation with the history that led to it.
func failure(res Result) error {
	var b strings.Builder
	for _, h := range res.Histories {
		if len(h.Violations) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nseed %d: %d violations\n", h.Seed, len(h.Violations))
		for _, v := range h.Violations {
			b.WriteString("  " + v.String() + "\n")
		}
		b.WriteString(" history (replay with --seed=" + fmt.Sprint(h.Seed) + " --histories=1):\n")
		for _, op := range h.Ops {
			b.WriteString("  " + op + "\n")
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return errors.New("invariants violated:" + b.String())
}

type options struct {
	cfg      Config
	markdown string
	keep     bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "Seed of the first history; history i runs seed+i.")
	fs.IntVar(&o.cfg.Histories, "histories", 10, "Histories to run, each in a fresh world.")
	fs.IntVar(&o.cfg.Operations, "operations", 44, "Operations per history.")
	fs.IntVar(&o.cfg.Kills, "kills", 3, "SIGKILLs of the operator per history.")
	fs.DurationVar(&o.cfg.Every, "every", 250*time.Millisecond, "How often the world is checked.")
	fs.DurationVar(&o.cfg.Grace, "grace", time.Minute, "How long an out-of-band change (a connection rejected or removed, a service deleted) excuses an address of an unapproved endpoint.")
	fs.DurationVar(&o.cfg.Settle, "settle", 45*time.Second, "Quiet period before every cluster is deleted.")
	fs.DurationVar(&o.cfg.Timeout, "timeout", 5*time.Minute, "Limit on the deletions.")
	fs.StringVar(&o.cfg.OperatorBinary, "operator-binary", "", "Operator binary under test (default: build it).")
	fs.StringVar(&o.markdown, "markdown", "", "Write the run's section of this file (docs/reliability.md), between its markers.")
	fs.BoolVar(&o.keep, "keep-files", false, "Keep the run's directory (operator logs).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.cfg.Histories < 1 || o.cfg.Operations < 1 || o.cfg.Kills < 0 || o.cfg.Every <= 0 {
		return o, errors.New("--histories and --operations must be at least 1, --kills not negative, --every positive")
	}
	return o, nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
		return 2
	}
	ctrl.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "apeo-simulate-")
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
		return 1
	}
	if opts.keep {
		_, _ = fmt.Fprintf(stdout, "files in %s\n", dir)
	} else {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	opts.cfg.Dir = dir
	opts.cfg.Logf = func(format string, args ...any) { _, _ = fmt.Fprintf(stdout, format+"\n", args...) }
	if opts.cfg.OperatorBinary == "" {
		if opts.cfg.OperatorBinary, err = sandbox.BuildOperator(ctx, dir); err != nil {
			_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
			return 1
		}
	}
	start := time.Now()
	res, err := Run(ctx, opts.cfg)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
		return 1
	}
	_, _ = fmt.Fprint(stdout, "\n"+section(res, opts.cfg, time.Since(start), sandbox.Revision(ctx)))
	if opts.markdown != "" {
		if err := writeSection(opts.markdown, section(res, opts.cfg, time.Since(start), sandbox.Revision(ctx))); err != nil {
			_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
			return 1
		}
	}
	if err := failure(res); err != nil {
		_, _ = fmt.Fprintf(stderr, "simulate: %v\n", err)
		return 1
	}
	return 0
}

// The markers of the simulation's section in docs/reliability.md (in the
// notes make chaos keeps).
const (
	beginMarker = "<!-- simulate: begin (make simulate writes this section) -->"
	endMarker   = "<!-- simulate: end -->"
)

// section is the run's report.
func section(res Result, cfg Config, took time.Duration, revision string) string {
	ops, checks, violations := res.Totals()
	var b strings.Builder
	b.WriteString("### The simulation (`make simulate`)\n\n")
	fmt.Fprintf(&b, "- Date: %s, at commit %s; %d CPUs, %s/%s, %s; %.0f min\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), revision,
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), took.Minutes())
	fmt.Fprintf(&b, "- %d histories (seeds %d–%d) of %d operations and %d SIGKILLs each by three tenants; the world checked every %s; grace after an out-of-band change %s\n\n",
		len(res.Histories), cfg.Seed, cfg.Seed+uint64(max(0, len(res.Histories)-1)), cfg.Operations, cfg.Kills, cfg.Every, cfg.Grace)
	b.WriteString("| Histories | Operations | Invariant checks | Violations (target 0) |\n| --- | --- | --- | --- |\n")
	fmt.Fprintf(&b, "| %d | %d | %d | %d |\n", len(res.Histories), ops, checks, violations)
	if violations > 0 {
		b.WriteString("\n| Seed | At | Invariant | Subject |\n| --- | --- | --- | --- |\n")
		for _, h := range res.Histories {
			for _, v := range h.Violations {
				fmt.Fprintf(&b, "| %d | %.1f s | %s | %s |\n", h.Seed, v.At.Seconds(), v.Invariant, v.Subject)
			}
		}
	}
	return b.String()
}

// writeSection replaces the section between the markers in path, or adds
// it at the end.
func writeSection(path, text string) error {
	old, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return err
	}
	block := beginMarker + "\n\n" + text + "\n" + endMarker + "\n"
	s := string(old)
	before, rest, found := strings.Cut(s, beginMarker)
	if found {
		_, after, ok := strings.Cut(rest, endMarker+"\n")
		if !ok {
			return fmt.Errorf("%s: %q without %q", path, beginMarker, endMarker)
		}
		s = before + block + after
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + block
	}
	return os.WriteFile(path, []byte(s), 0o644) //nolint:gosec // G306: a report committed with the docs
}
