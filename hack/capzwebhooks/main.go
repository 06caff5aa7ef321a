// Command capzwebhooks serves Cluster API Provider Azure's own admission
// webhooks for AzureCluster and AzureClusterIdentity, so that the project's
// test world (internal/testenv) refuses and defaults what CAPZ refuses and
// defaults in production. The code that validates and defaults is CAPZ's,
// compiled from CAPZ's module at the version pinned here: go.mod pins
// v1.27.0, go.v1.23.0.mod pins v1.23.0 (hack/build-cached.sh picks one with
// -modfile).
//
// Only the webhook server runs: no controller, no cache, no leader
// election. CAPZ's main (registerWebhooks) registers the same two webhooks
// unconditionally, with the same types and paths; the kinds it registers
// besides them (AzureClusterTemplate, AzureMachine, machine pools, managed
// clusters) have no CRD in the test world.
//
// Why the module path is under sigs.k8s.io/cluster-api-provider-azure: in
// both releases the webhooks live in CAPZ's internal/webhooks package, and
// Go lets only import paths under the parent of "internal" import it. This
// module is never published; the path only makes that import legal.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	infrav1 "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-azure/internal/webhooks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "capzwebhooks:", err)
		os.Exit(1)
	}
}

func run() error {
	// A flag set of its own: controller-runtime registers --kubeconfig on
	// the global one in some releases.
	fs := flag.NewFlagSet("capzwebhooks", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server the webhooks serve (required)")
	host := fs.String("host", "127.0.0.1", "address the webhook server listens on")
	port := fs.Int("port", 0, "port the webhook server listens on (required)")
	certDir := fs.String("cert-dir", "", "directory holding tls.crt and tls.key (required)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *kubeconfig == "" || *port == 0 || *certDir == "" {
		fs.Usage()
		return fmt.Errorf("--kubeconfig, --port and --cert-dir are required")
	}
	ctrl.SetLogger(zap.New())

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := infrav1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host:    *host,
			Port:    *port,
			CertDir: *certDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := (&webhooks.AzureClusterWebhook{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("AzureCluster webhook: %w", err)
	}
	if err := (&webhooks.AzureClusterIdentityWebhook{}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("AzureClusterIdentity webhook: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return mgr.Start(ctx)
}
