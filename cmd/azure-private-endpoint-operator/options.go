package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// inClusterNamespaceFile exists in every pod that mounts a service account
// token; leader election defaults to that namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// options are the operator's command-line settings. Every flag is documented
// in the README's configuration table; keep the two in step.
type options struct {
	kubeconfig              string
	metricsAddr             string
	probeAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	gracefulShutdownTimeout time.Duration
	zap                     zap.Options

	// inCluster reports whether the process runs in a pod; a field so tests
	// can set it.
	inCluster bool
}

// errUsage marks errors caused by the command line, which exit with code 2.
var errUsage = errors.New("invalid command line")

// parseFlags parses and validates args. It returns flag.ErrHelp for -h/--help
// after printing usage to out.
func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{inCluster: fileExists(inClusterNamespaceFile)}
	fs := flag.NewFlagSet("azure-private-endpoint-operator", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Only needed out of cluster; otherwise KUBECONFIG, the in-cluster config, then ~/.kube/config are used.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080",
		"Address (host:port) the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address (host:port) the /healthz and /readyz endpoints bind to; \"0\" disables them.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica reconciles. Enable when running more than one replica.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Default: the pod's namespace; required out of cluster.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "azure-private-endpoint-operator.giantswarm.io",
		"Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long non-leaders wait before they try to take over an unrenewed lease.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How long leader election clients wait between tries.")
	fs.DurationVar(&o.gracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second,
		"How long running reconciles may take to finish after SIGTERM before the process exits.")
	o.zap.BindFlags(fs)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q (every setting is a --flag)", errUsage, fs.Args())
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return o, nil
}

func (o *options) validate() error {
	var errs []error
	for _, a := range []struct{ flag, value string }{
		{"--metrics-bind-address", o.metricsAddr},
		{"--health-probe-bind-address", o.probeAddr},
	} {
		if err := validateBindAddress(a.value); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", a.flag, a.value, err))
		}
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--leader-election-lease-duration", o.leaseDuration},
		{"--leader-election-renew-deadline", o.renewDeadline},
		{"--leader-election-retry-period", o.retryPeriod},
		{"--graceful-shutdown-timeout", o.gracefulShutdownTimeout},
	} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("%s=%s: must be positive", d.flag, d.value))
		}
	}
	if o.leaderElect {
		if o.renewDeadline >= o.leaseDuration {
			errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be shorter than --leader-election-lease-duration (%s)",
				o.renewDeadline, o.leaseDuration))
		}
		if o.retryPeriod >= o.renewDeadline {
			errs = append(errs, fmt.Errorf("--leader-election-retry-period (%s) must be shorter than --leader-election-renew-deadline (%s)",
				o.retryPeriod, o.renewDeadline))
		}
		if o.leaderElectionNamespace == "" && !o.inCluster {
			errs = append(errs, errors.New("--leader-election-namespace is required with --leader-elect when running outside a cluster"))
		}
		if o.leaderElectionID == "" {
			errs = append(errs, errors.New("--leader-election-id must not be empty with --leader-elect"))
		}
	}
	return errors.Join(errs...)
}

// validateBindAddress accepts "0" (disabled) or host:port with a numeric port.
func validateBindAddress(addr string) error {
	if addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New(`want host:port, ":port" or "0" to disable`)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
