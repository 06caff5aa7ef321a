// Command capzmanager runs Cluster API Provider Azure's (CAPZ) own
// AzureCluster and ASOSecret controllers, compiled from CAPZ's module at
// the release its module file pins (go.mod: v1.27.0; go.v1.23.0.mod:
// v1.23.0, whose controllers package has the same API), for the project's
// real-controller test world (test/realcapz): the code that makes a
// cluster's network, load balancers, private endpoints and private link
// services in Azure, and the credential secret Azure Service Operator
// (ASO) uses, is CAPZ's.
//
// CAPZ's own main also registers the AzureMachine, machine pool, AKS and
// AzureJSON controllers and CAPZ's webhooks. None of them touches a
// self-managed AzureCluster's network, and each needs CRDs of its own
// (machines, KubeadmConfig, ASO's AKS groups); the webhooks run in the
// test world already (hack/capzwebhooks). The manager options that matter
// for the wiring are CAPZ's, with CAPZ's flag names and defaults:
// --sync-period, --reconcile-timeout, --api-call-timeout,
// --reconciler-requeue, and CAPZ's user agent on the API server.
//
// CAPZ knows only Azure's well-known clouds: the test world makes the
// emulator reachable as management.azure.com and login.microsoftonline.com
// through HTTPS_PROXY and SSL_CERT_FILE.
//
// The module path is under sigs.k8s.io/cluster-api-provider-azure as
// hack/capzwebhooks' is (which needs it for CAPZ's internal packages);
// this one imports only CAPZ's public packages. It is never published.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	asonetworkv1api20201101 "github.com/Azure/azure-service-operator/v2/api/network/v1api20201101"
	asonetworkv1api20220701 "github.com/Azure/azure-service-operator/v2/api/network/v1api20220701"
	asoresourcesv1 "github.com/Azure/azure-service-operator/v2/api/resources/v1api20200601"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	infrav1 "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-azure/azure"
	"sigs.k8s.io/cluster-api-provider-azure/controllers"
	"sigs.k8s.io/cluster-api-provider-azure/pkg/coalescing"
	"sigs.k8s.io/cluster-api-provider-azure/util/reconciler"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "capzmanager:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("capzmanager", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (required)")
	syncPeriod := fs.Duration("sync-period", 10*time.Minute, "CAPZ's --sync-period: how often every AzureCluster is reconciled again")
	debounce := fs.Duration("debouncing-timer", 10*time.Second, "CAPZ's --debouncing-timer: the least time between two reconciles of one object")
	var timeouts reconciler.Timeouts
	fs.DurationVar(&timeouts.Loop, "reconcile-timeout", reconciler.DefaultLoopTimeout, "CAPZ's --reconcile-timeout")
	fs.DurationVar(&timeouts.AzureServiceReconcile, "service-reconcile-timeout", reconciler.DefaultAzureServiceReconcileTimeout, "CAPZ's --service-reconcile-timeout")
	fs.DurationVar(&timeouts.AzureCall, "api-call-timeout", reconciler.DefaultAzureCallTimeout, "CAPZ's --api-call-timeout")
	fs.DurationVar(&timeouts.Requeue, "reconciler-requeue", reconciler.DefaultReconcilerRequeue, "CAPZ's --reconciler-requeue")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *kubeconfig == "" {
		fs.Usage()
		return fmt.Errorf("--kubeconfig is required")
	}
	ctrl.SetLogger(zap.New())

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *kubeconfig, err)
	}
	cfg.UserAgent = "cluster-api-provider-azure-manager" // CAPZ's main sets the same
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme,
		asoresourcesv1.AddToScheme, asonetworkv1api20201101.AddToScheme, asonetworkv1api20220701.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{SyncPeriod: syncPeriod},
		// As CAPZ's main: Secrets and ConfigMaps are read from the API
		// server, not cached.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}}}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	creds := azure.NewCredentialCache()
	clusterCache, err := coalescing.NewRequestCache(*debounce)
	if err != nil {
		return err
	}
	// 10 workers: CAPZ's --azurecluster-concurrency default (its main.go).
	if err := controllers.NewAzureClusterReconciler(mgr.GetClient(), mgr.GetEventRecorderFor("azurecluster-reconciler"),
		timeouts, "", creds,
	).SetupWithManager(ctx, mgr, controllers.Options{Options: controller.Options{MaxConcurrentReconciles: 10}, Cache: clusterCache}); err != nil {
		return fmt.Errorf("AzureCluster controller: %w", err)
	}
	if err := (&controllers.ASOSecretReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("asosecret-reconciler"),
		Timeouts: timeouts, CredentialCache: creds,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 10}); err != nil {
		return fmt.Errorf("ASOSecret controller: %w", err)
	}
	return mgr.Start(ctx)
}
