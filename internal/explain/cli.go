package explain

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Exit codes.
const (
	exitWired    = 0
	exitError    = 1
	exitUsage    = 2
	exitNotWired = 3
)

const usage = `Usage: kubectl apeo explain <namespace>/<cluster> [flags]

Walks the wiring of one workload cluster — the cluster, the management
cluster, its private links, CAPZ's report, the endpoint entries on both
sides, the IP annotations, the operator's conditions and DNS — and prints
where it stops and what to change. Exit code 0: wired; 3: not wired (yet);
1: an error; 2: wrong usage.

Flags:
`

// Connect gives the client of a kubeconfig (path, "" for the default) and
// context ("" for its current one).
type Connect func(kubeconfig, context string) (client.Reader, error)

// invocation is one parsed command line.
type invocation struct {
	key                     types.NamespacedName
	kubeconfig, kubeContext string
	managementCluster       string
	opts                    Options
	output                  string
	timeout                 time.Duration
}

// Main is the plugin (kubectl-apeo): args without the program's name; it
// returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, connect Connect) int {
	inv, code := parseArgs(args, stderr)
	if code >= 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, inv.timeout)
	defer cancel()
	c, err := connect(inv.kubeconfig, inv.kubeContext)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return exitError
	}
	if code := managementCluster(ctx, c, &inv, stderr); code >= 0 {
		return code
	}
	r, err := Explain(ctx, c, inv.key, inv.opts)
	if err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return exitError
	}
	if inv.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			_, _ = fmt.Fprintln(stderr, err)
			return exitError
		}
	} else {
		printText(stdout, r)
	}
	if !r.Wired {
		return exitNotWired
	}
	return exitWired
}

// parseArgs reads the command line; code is the exit code when it ends
// the run there, -1 otherwise.
func parseArgs(args []string, stderr io.Writer) (invocation, int) {
	var inv invocation
	if len(args) == 0 || args[0] != "explain" {
		_, _ = fmt.Fprint(stderr, usage)
		return inv, exitUsage
	}
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { _, _ = fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&inv.kubeconfig, "kubeconfig", "", "Path to the kubeconfig (default: KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&inv.kubeContext, "context", "", "The kubeconfig context to use.")
	fs.StringVar(&inv.managementCluster, "management-cluster", "", "The management cluster's AzureCluster, <namespace>/<name> (the operator's --management-cluster-namespace/-name). Default: the AzureCluster whose endpoint entries connect to the cluster's services.")
	fs.StringVar(&inv.opts.WatchFilter, "watch-filter", "", "The operator's --watch-filter, if it runs with one.")
	fs.StringVar(&inv.opts.AnnotationPrefix, "annotation-prefix", "", "The operator's --annotation-prefix, if not the default.")
	fs.StringVar(&inv.output, "o", "text", "Output: text or json.")
	fs.DurationVar(&inv.timeout, "timeout", 30*time.Second, "How long the reads may take.")
	// Flags may follow the cluster, as with kubectl.
	var positional []string
	for rest := args[1:]; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return inv, exitWired
			}
			return inv, exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
	}
	if len(positional) != 1 || inv.output != "text" && inv.output != "json" {
		fs.Usage()
		return inv, exitUsage
	}
	var err error
	if inv.key, err = parseKey(positional[0]); err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return inv, exitUsage
	}
	if inv.managementCluster != "" {
		if inv.opts.ManagementCluster, err = parseKey(inv.managementCluster); err != nil {
			_, _ = fmt.Fprintln(stderr, "--management-cluster:", err)
			return inv, exitUsage
		}
	}
	return inv, -1
}

// managementCluster finds the management cluster when the command line
// names none; code as parseArgs's.
func managementCluster(ctx context.Context, c client.Reader, inv *invocation, stderr io.Writer) int {
	if inv.managementCluster != "" {
		return -1
	}
	mc, found, err := FindManagementCluster(ctx, c, inv.key)
	switch {
	case err != nil:
		_, _ = fmt.Fprintln(stderr, err)
		return exitError
	case !found:
		_, _ = fmt.Fprintln(stderr, "no AzureCluster has an endpoint entry to "+inv.key.String()+"'s services yet: pass --management-cluster=<namespace>/<name> (the operator's --management-cluster-namespace/-name)")
		return exitUsage
	}
	inv.opts.ManagementCluster = mc
	return -1
}

func parseKey(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("%q: want <namespace>/<name>", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// stateMarks are how the text output marks each step's state.
var stateMarks = map[string]string{
	StateOK: "ok", StateWaiting: "..", StateStop: "!!", StateSkipped: "--",
}

func printText(w io.Writer, r Report) {
	if r.Wired {
		_, _ = fmt.Fprintf(w, "%s is wired.\n\n", r.Cluster)
	} else {
		_, _ = fmt.Fprintf(w, "%s stops at %q.\n  reason:  %s\n", r.Cluster, r.StoppedAt, r.Reason)
		if r.Message != "" {
			_, _ = fmt.Fprintf(w, "  message: %s\n", r.Message)
		}
		if r.Fix != "" {
			_, _ = fmt.Fprintf(w, "  fix:     %s\n", r.Fix)
		}
		_, _ = fmt.Fprintln(w)
	}
	var steps strings.Builder
	tw := tabwriter.NewWriter(&steps, 0, 0, 2, ' ', 0)
	for _, s := range r.Steps {
		_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\n", stateMarks[s.State], s.Name, s.Detail)
	}
	_ = tw.Flush()
	for line := range strings.Lines(steps.String()) {
		_, _ = fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}
