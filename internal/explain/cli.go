package explain

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
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
sides and their endpoints in Azure, the IP annotations, the records in
Azure, the operator's conditions and DNS — and prints where it stops and
what to change. Exit code 0: wired; 3: not wired (yet);
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
	// azure is --azure: identity, own or off; the clouds its clusters'
	// azureEnvironment resolve in.
	azure       string
	customCloud string
	defaultEnv  string
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
	if inv.opts.Azure, err = azureReader(ctx, c, inv); err != nil {
		_, _ = fmt.Fprintln(stderr, err)
		return exitUsage
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
	fs.StringVar(&inv.managementCluster, "management-cluster", "", "The management cluster's AzureCluster, <namespace>/<name> (the operator's --management-cluster-namespace/-name). Default: the AzureCluster whose endpoint entries (or endpoints beyond it, AzurePrivateEndpoints labelled privatelink.giantswarm.io/mc-endpoint-of) connect to the cluster's services.")
	fs.StringVar(&inv.opts.WatchFilter, "watch-filter", "", "The operator's --watch-filter, if it runs with one.")
	fs.StringVar(&inv.opts.AnnotationPrefix, "annotation-prefix", "", "The operator's --annotation-prefix, if not the default.")
	fs.StringVar(&inv.output, "o", "text", "Output: text or json.")
	fs.DurationVar(&inv.timeout, "timeout", 30*time.Second, "How long the reads may take.")
	fs.StringVar(&inv.azure, "azure", azureIdentity, "Read Azure too (each endpoint's connection state and address, the records DNS mode wrote): "+
		"identity (each cluster's AzureClusterIdentity; your kubeconfig must read it and its Secret), "+
		"own (your own credential: environment, workload or managed identity, Azure CLI), or off (Kubernetes only). "+
		"What cannot be read is left out and said so.")
	fs.StringVar(&inv.customCloud, "azure-custom-cloud", "", "The operator's --azure-custom-cloud file, for clusters of a custom cloud.")
	fs.StringVar(&inv.defaultEnv, "default-azure-environment", azure.PublicCloud, "The operator's --default-azure-environment: the cloud of clusters whose spec.azureEnvironment is empty.")
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
	if len(positional) != 1 || inv.output != "text" && inv.output != "json" || !slices.Contains([]string{azureIdentity, azureOwn, azureOff}, inv.azure) {
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

// --azure's values.
const (
	azureIdentity = "identity"
	azureOwn      = "own"
	azureOff      = "off"
)

// azureReader is what --azure asks for: nil for off, else the operator's
// clients with the clusters' identities (read with the caller's
// kubeconfig) or the caller's own credential.
func azureReader(ctx context.Context, c client.Reader, inv invocation) (Azure, error) {
	if inv.azure == azureOff {
		return nil, nil
	}
	clouds := azure.Clouds{Default: inv.defaultEnv}
	if inv.customCloud != "" {
		cc, err := azure.LoadCustomCloud(inv.customCloud)
		if err != nil {
			return nil, fmt.Errorf("--azure-custom-cloud=%s: %w", inv.customCloud, err)
		}
		clouds.Custom = []azure.CustomCloud{cc}
	}
	return NewAzure(ctx, c, clouds, inv.azure == azureOwn), nil
}

// NewAzure reads Azure with the operator's clients: with each cluster's
// AzureClusterIdentity and its Secret, read through c, or (own) with the
// caller's own credential as azidentity's default chain finds it.
func NewAzure(ctx context.Context, c client.Reader, clouds azure.Clouds, own bool) *AzureClients {
	creds := &azure.Credentials{Reader: c, SecretReader: c, Clouds: clouds, Done: ctx.Done(), Log: logr.Discard()}
	if own {
		creds.Own, creds.OwnNamespaces = azure.OwnDefault, []string{"*"}
	}
	return &AzureClients{Clients: &azure.Clients{Credentials: creds}, Own: own}
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
