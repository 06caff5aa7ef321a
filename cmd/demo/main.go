// Command demo runs the operator's main job on this machine with nothing but
// Go installed (`make demo`): a real kube-apiserver and etcd, the azuresim ARM
// emulator with realistic latencies, capzsim standing in for CAPZ, and the
// real operator binary as a separate process configured as a user would
// configure it. It applies the samples in config/samples (a private
// management cluster and three workload clusters), shows what it waits for
// while the wiring converges, prints the result, and lets you approve the
// connection that needs manual approval.
//
// Ctrl-C stops every process it started and removes its temporary files.
// With --non-interactive it approves the pending connection itself, waits
// for the wiring to converge again and exits 0 (1 on failure or timeout).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/utils/ptr"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

type options struct {
	operatorBinary string
	samples        string
	nonInteractive bool
	timeout        time.Duration
	latency        time.Duration
	keep           bool
	kubectl        string
	layout         string
	dnsBaseDomain  string
	consumer       bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.operatorBinary, "operator-binary", "bin/azure-private-endpoint-operator",
		"The operator binary to run (make demo builds it).")
	fs.StringVar(&o.samples, "samples", "config/samples", "Directory with the sample manifests.")
	fs.BoolVar(&o.nonInteractive, "non-interactive", false,
		"Approve the pending connection without asking, wait for convergence and exit 0 (1 on failure).")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long to wait for each convergence before giving up.")
	fs.DurationVar(&o.latency, "azure-latency", 3*time.Second,
		"How long Azure's long-running operations take in the emulator (real ones take 30s-2min).")
	fs.BoolVar(&o.keep, "keep-files", false, "Keep the temporary directory (kubeconfig, logs) after stopping.")
	fs.StringVar(&o.kubectl, "kubectl", "kubectl",
		"The kubectl the closing hints name (make demo builds one from the API server's Kubernetes release: make kubectl).")
	fs.StringVar(&o.layout, "layout", string(clusterlink.LayoutIngress),
		"The operator's --wc-to-mc-layout: ingress, ingress+gateway or gateway (the management cluster gets a gateway private link service too).")
	fs.StringVar(&o.dnsBaseDomain, "dns-base-domain", "",
		"Run the operator in DNS mode (--wiring-dns) with this base domain, and show what the names resolve to from each network.")
	fs.BoolVar(&o.consumer, "consumer", true,
		"End with the consumer step (an AzurePrivateLinkService and an AzurePrivateEndpoint with DNS).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if !slices.Contains(clusterlink.Layouts, clusterlink.Layout(o.layout)) {
		return o, fmt.Errorf("--layout=%q: must be ingress, ingress+gateway or gateway", o.layout)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, nil
}

func main() {
	os.Exit(runWithSignals())
}

// runWithSignals is run, stopped by SIGINT or SIGTERM; its deferred
// cleanup runs before main exits.
func runWithSignals() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "demo: %v\n", err)
		return 2
	}
	// capzsim runs in this process; its logs are not the demo's output.
	ctrl.SetLogger(logr.Discard())
	d := &demo{opts: opts, out: stdout, started: time.Now()}
	err = d.run(ctx, stdin)
	if cerr := d.cleanup(); cerr != nil {
		_, _ = fmt.Fprintf(stderr, "demo: cleaning up: %v\n", cerr)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		_, _ = fmt.Fprintln(stdout, "Stopped.")
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
}

type demo struct {
	opts    options
	out     io.Writer
	started time.Time
	dir     string
	sb      *sandbox.Sandbox
	op      *sandbox.Operator
	samples *samples
}

func (d *demo) say(format string, args ...any) {
	_, _ = fmt.Fprintf(d.out, "[%6.1fs] %s\n", time.Since(d.started).Seconds(), fmt.Sprintf(format, args...))
}

func (d *demo) run(ctx context.Context, stdin io.Reader) error {
	s, err := loadSamples(d.opts.samples)
	if err != nil {
		return err
	}
	d.samples = s
	if _, err := os.Stat(d.opts.operatorBinary); err != nil {
		return fmt.Errorf("operator binary: %w (run `make build`, or use `make demo`)", err)
	}
	d.dir, err = os.MkdirTemp("", "apeo-demo-")
	if err != nil {
		return err
	}
	d.say("Starting azuresim (Azure emulator), kube-apiserver + etcd, and capzsim (CAPZ v1.27 stand-in, with an ASO stand-in); files in %s", d.dir)
	d.sb, err = sandbox.Start(ctx, sandbox.Options{
		// Upstream CAPZ v1.27's schema: private links and endpoints through
		// ASO (the samples spell privateLinks as v1.27 does).
		Dir: d.dir, Schema: testenv.SchemaV127, Latency: d.opts.latency, CAPZResync: time.Second,
		Ingress: map[string]capzsim.Ingress{s.mc.GetNamespace() + "/" + s.mc.GetName(): {
			AutoApprovedSubscriptions: s.wcSubscriptions(), Gateway: d.opts.layout != string(clusterlink.LayoutIngress),
		}},
		Principals: []azuresim.Principal{s.principal},
		Logf:       func(f string, a ...any) { d.say(f, a...) },
	})
	if err != nil {
		return err
	}
	d.say("Starting the operator: %s", d.opts.operatorBinary)
	args := []string{
		"--management-cluster-name=" + s.mc.GetName(), "--management-cluster-namespace=" + s.mc.GetNamespace(),
		// Short enough that an approval shows within seconds.
		"--pending-recheck-interval=5s",
		"--wc-to-mc-layout=" + d.opts.layout,
	}
	if d.opts.dnsBaseDomain != "" {
		args = append(args, "--wiring-dns", "--wiring-dns-base-domain="+d.opts.dnsBaseDomain)
	}
	d.op, err = d.sb.StartOperator(d.opts.operatorBinary, filepath.Join(d.dir, "operator.log"), args...)
	if err != nil {
		return err
	}
	d.say("  log: %s   metrics: %s", d.op.LogFile, d.op.MetricsURL)
	if err := d.apply(ctx); err != nil {
		return err
	}
	w := newWatcher(d)
	if err := w.until(ctx, d.opts.timeout, w.convergedBeforeApproval); err != nil {
		return err
	}
	d.say("Converged.")
	w.printTable()
	pending := w.pendingEndpoint()
	if pending == nil {
		return errors.New("no connection waits for approval: the manual-approval sample did not behave as documented")
	}
	if err := d.approve(ctx, stdin, w, pending); err != nil {
		return err
	}
	if err := w.until(ctx, d.opts.timeout, w.convergedAfterApproval); err != nil {
		return err
	}
	d.say("Converged after the approval.")
	w.printTable()
	if err := d.wiringDNS(ctx); err != nil {
		return err
	}
	if d.opts.consumer {
		if err := d.consumer(ctx); err != nil {
			return err
		}
	}
	if d.opts.nonInteractive {
		return nil
	}
	d.explain()
	<-ctx.Done()
	return ctx.Err()
}

// approve asks the user (or, non-interactively, does not ask) and then
// approves the pending connection as the private link service's owner would.
func (d *demo) approve(ctx context.Context, stdin io.Reader, w *watcher, p *row) error {
	conn, err := w.connection(ctx, p)
	if err != nil {
		return err
	}
	id := ptr.Deref(conn.conn.ID, "")
	d.explainCluster(ctx, p.cluster)
	_, _ = fmt.Fprintf(d.out, `The management cluster's endpoint %q waits for approval by the owner
of the workload cluster's private link service (Event PrivateEndpointPendingApproval
on %s). In Azure, the owner runs:

  az network private-endpoint-connection approve --id %s

`, p.endpoint, p.cluster, id)
	if !d.opts.nonInteractive {
		_, _ = fmt.Fprint(d.out, "Press Enter to approve it in the emulator as that owner (Ctrl-C stops the demo): ")
		if err := waitForEnter(ctx, stdin); err != nil {
			return err
		}
	}
	d.say("Approving %s", id)
	if err := conn.approve(ctx); err != nil {
		return fmt.Errorf("approving %s: %w", id, err)
	}
	d.say("Approved; the operator sees it at its next check (--pending-recheck-interval=5s).")
	return nil
}

// explainCluster prints what the kubectl plugin says of a cluster
// ("namespace/name"), as `kubectl apeo explain` would.
func (d *demo) explainCluster(ctx context.Context, cluster string) {
	mc := d.samples.mc.GetNamespace() + "/" + d.samples.mc.GetName()
	d.say("Why it waits, as the kubectl plugin (bin/kubectl-apeo) tells it:")
	// The clusters' identities read azuresim, the operator's custom cloud.
	_, _ = fmt.Fprintf(d.out, "\n$ kubectl apeo explain %s --management-cluster %s --azure-custom-cloud %s\n", cluster, mc, d.sb.CloudFile)
	connect := func(string, string) (client.Reader, error) { return d.sb.Client, nil }
	explain.Main(ctx, []string{"explain", cluster, "--management-cluster", mc, "--azure-custom-cloud", d.sb.CloudFile}, d.out, d.out, connect)
	_, _ = fmt.Fprintln(d.out)
}

func waitForEnter(ctx context.Context, stdin io.Reader) error {
	line := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(stdin).ReadString('\n')
		line <- err
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-line:
		if err != nil {
			return fmt.Errorf("reading the answer: %w (use --non-interactive without a terminal)", err)
		}
		return nil
	}
}

func (d *demo) explain() {
	_, _ = fmt.Fprint(d.out, hints(d.opts.kubectl, d.sb.Kubeconfig, d.samples.wcs[0].GetNamespace(), d.samples.wcs[0].GetName(),
		d.op.LogFile, d.op.MetricsURL, d.dir))
}

// hints is what the demo suggests once everything runs. Every command in it
// works as printed: kubectl is named by the path make demo built it at, or
// the user is told how to get one.
func hints(kubectl, kubeconfig, ns, name, logFile, metricsURL, dir string) string {
	var b strings.Builder
	b.WriteString("\nEverything keeps running. ")
	if path, err := exec.LookPath(kubectl); err == nil {
		fmt.Fprintf(&b, "Look around with kubectl:\n\n  export KUBECONFIG=%s\n", kubeconfig)
		for _, c := range []string{
			"get azureclusters -A",
			"describe azurecluster -n " + ns + " " + name,
			"get events -A --field-selector reason=PrivateEndpointReady",
		} {
			fmt.Fprintf(&b, "  %s %s\n", path, c)
		}
	} else {
		fmt.Fprintf(&b, "To look around with kubectl, build one (make kubectl) and use the kubeconfig %s.\n", kubeconfig)
	}
	fmt.Fprintf(&b, "\nThe operator's log is %s and its metrics are at %s.\nPress Ctrl-C to stop every process and remove %s.\n",
		logFile, metricsURL, dir)
	return b.String()
}

// cleanup stops what run started, in reverse order, and removes the files.
func (d *demo) cleanup() error {
	var errs []error
	if d.op != nil {
		if err := d.op.Stop(30 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("operator: %w (log: %s)", err, d.op.LogFile))
		}
	}
	if d.sb != nil {
		errs = append(errs, d.sb.Stop())
	}
	if d.dir != "" && !d.opts.keep {
		errs = append(errs, os.RemoveAll(d.dir))
	}
	return errors.Join(errs...)
}
