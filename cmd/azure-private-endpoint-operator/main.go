// Command azure-private-endpoint-operator connects private Kubernetes clusters
// on Azure through Private Link: a management cluster running Cluster API
// Provider Azure reaches the private API servers of its workload clusters, and
// the workload clusters reach the management cluster's private ingress.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	uberzap "go.uber.org/zap"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	// The image has no CA bundle (an empty base): fall back to these roots
	// when the system has none, so Azure's certificates verify.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/cacheconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/cpgate"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/identityguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/providerconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/lazylog"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memlimit"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

const userAgent = "azure-private-endpoint-operator"

// version is set at build time (make image: -X main.version=...).
var version = "dev"

func main() {
	os.Exit(run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr))
}

// run is main without the process exit, so tests can drive it.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	opts, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "azure-private-endpoint-operator: %v\nRun with --help for the list of flags.\n", err)
		return exitUsage
	}
	// Loggers encode their values only when they write (lazylog): every
	// reconcile gets a logger with values and most write nothing.
	logger := zap.New(zap.UseFlagOptions(&opts.zap), zap.WriteTo(stderr), zap.RawZapOpts(uberzap.WrapCore(lazylog.Core)))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)
	log := logger.WithName("setup")
	if r, err := memlimit.Set(opts.memoryLimitFraction, memlimit.CgroupRoot); err != nil {
		log.Error(err, "No soft memory limit set")
	} else {
		log.Info("Soft memory limit", "bytes", r.Limit, "containerLimit", r.Container, "why", r.Why)
	}
	gc := memlimit.SetGCPercent(opts.gcPercent)
	log.Info("Garbage collector target", "percent", gc.Percent, "why", gc.Why)
	if opts.kubeAPIQPS == kubeAPIUnlimited {
		log.Info("Kubernetes client limit", "qps", "off", "why", "--kube-api-qps=-1: the API server's priority and fairness sets the pace")
	} else {
		log.Info("Kubernetes client limit", "qps", opts.kubeAPIQPS, "burst", opts.kubeAPIBurst, "per", "client (one per resource type, one per controller's Events)")
	}

	mgr, err := newManager(ctx, opts)
	if err != nil {
		log.Error(err, "Unable to set up the manager")
		return exitError
	}
	log.Info("Starting manager", "version", version, "metricsAddr", opts.metricsAddr, "metricsSecure", opts.metricsSecure, "probeAddr", opts.probeAddr,
		"leaderElection", opts.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Manager stopped with an error")
		return exitError
	}
	log.Info("Manager stopped cleanly")
	return exitOK
}

func newManager(ctx context.Context, opts *options) (manager.Manager, error) {
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = userAgent
	setClientLimit(cfg, opts.kubeAPIQPS, opts.kubeAPIBurst)
	// Event writes the API server refuses are counted: client-go drops
	// them without a metric.
	eventrec.CountWrites(cfg)

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(opts),
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionNamespace: opts.leaderElectionNamespace,
		LeaderElectionID:        opts.leaderElectionID,
		LeaseDuration:           &opts.leaseDuration,
		RenewDeadline:           &opts.renewDeadline,
		RetryPeriod:             &opts.retryPeriod,
		// The process exits right after the manager stops, so handing the
		// lease over at once is safe and makes rolling updates fast.
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &opts.gracefulShutdownTimeout,
		// Read AzureClusters, Clusters and identities from the cache, never
		// Secrets; a kind no controller declared is not read from the cache
		// (cacheconfig).
		Client: cacheconfig.Client(),
		// The cache keeps only the managedFields entries of the operator, of
		// the older operator it adopts from and of CAPZ.
		Cache: cacheconfig.Cache(clusterlink.TrimCached(opts.linkOptions().KeptFieldManagers()...)),
	})
	if err != nil {
		return nil, err
	}
	// Credentials read identities and namespaces from the cache.
	if err := cacheconfig.Cached(mgr, azure.CachedKinds()...); err != nil {
		return nil, err
	}
	creds := &azure.Credentials{
		Reader:             mgr.GetClient(),
		SecretReader:       mgr.GetAPIReader(),
		Clouds:             opts.clouds(),
		Done:               ctx.Done(),
		SecretRecheckAfter: opts.secretRecheck,
		Log:                ctrl.Log.WithName("credentials"),
	}
	if opts.operatorCredential == "default" {
		creds.Own = azure.OwnDefault
		creds.OwnNamespaces = opts.ownCredentialNamespaces()
	}
	clients := &azure.Clients{Credentials: creds}
	observer := &privateendpoints.Observer{TTL: opts.azureObserveTTL, TTLPer1000: opts.azureObserveTTLPer1000}
	engine := opts.dnsEngine(mgr.GetAPIReader())
	linkOpts := opts.linkOptions()
	linkOpts.DNSEngine = engine
	// Defaulted once: the wiring and its DNS mode share one tick phase.
	linkOpts.SetDefaults()
	if err := clusterlink.Setup(mgr, linkOpts, clients, observer); err != nil {
		return nil, fmt.Errorf("setting up the AzureCluster controllers: %w", err)
	}
	if err := wiringdns.Setup(mgr, linkOpts, clients); err != nil {
		return nil, fmt.Errorf("setting up the DNS mode (--wiring-dns): %w", err)
	}
	if opts.plsController {
		if err := privatelinkservice.Setup(mgr, opts.plsOptions(), clients); err != nil {
			return nil, fmt.Errorf("setting up the AzurePrivateLinkService controller: %w", err)
		}
	}
	if opts.apeController {
		apeOpts := opts.apeOptions()
		apeOpts.DNSEngine = engine
		apeOpts.AddressRead = wiringAddresses(linkOpts.ManagementCluster, observer.Know)
		// The wiring's lists answer drift checks of the endpoints they
		// hold, for objects with the same credential (the MC's beyond its
		// AzureCluster).
		apeOpts.Observer = observer
		if err := privateendpoint.Setup(ctx, mgr, apeOpts, clients); err != nil {
			return nil, fmt.Errorf("setting up the AzurePrivateEndpoint controller: %w", err)
		}
	}
	if err := providerconfig.Setup(mgr, providerconfig.Options{Generate: opts.crossplaneProviderConfigs}); err != nil {
		return nil, fmt.Errorf("setting up the Crossplane ProviderConfig controller (--crossplane-provider-configs): %w", err)
	}
	if err := identityguard.Setup(ctx, mgr, opts.guardOptions()); err != nil {
		return nil, fmt.Errorf("setting up the identity guard (--protect-identities): %w", err)
	}
	// Without gates the gate still runs (when Cluster API's
	// KubeadmControlPlane CRD is installed) to lift the pauses an earlier
	// configuration left.
	if err := cpgate.Setup(mgr, cpgate.Options{Gates: commaList(opts.azureClusterGates), ManagementCluster: opts.linkOptions().ManagementCluster,
		AdoptFieldManagers: opts.linkOptions().AdoptFieldManagers, WatchFilter: opts.watchFilter}); err != nil {
		return nil, fmt.Errorf("setting up the control plane gate (--azure-cluster-gates): %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("informers-synced", cacheSynced(mgr)); err != nil {
		return nil, err
	}
	return mgr, nil
}

// The metrics filter asks the API server who a scraper is and whether it
// may GET /metrics.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves /metrics over HTTPS behind the API server's
// authentication and authorization by default (a scraper needs the
// metrics-reader ClusterRole), or plain HTTP with --metrics-secure=false.
func metricsOptions(opts *options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.metricsAddr, SecureServing: opts.metricsSecure}
	if !opts.metricsSecure {
		return o
	}
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	o.CertDir = opts.metricsCertDir
	if !opts.enableHTTP2 {
		o.TLSOpts = append(o.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return o
}

// cacheSynced reports ready once the manager's informers have synced, so a
// replica takes no traffic (and a rollout does not proceed) before it can
// reconcile from a complete view.
func cacheSynced(mgr manager.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}

// setClientLimit sets the operator's own limit on its Kubernetes
// requests (--kube-api-qps, --kube-api-burst); kubeAPIUnlimited leaves
// none. The limit is per client: controller-runtime makes a REST client
// per resource type from cfg, each controller's Event recorder makes its
// own (eventrec.For), and client-go gives each client without
// cfg.RateLimiter its own token bucket (rest.RESTClientForConfigAndClient).
// client-go's default (5 per second, 10 burst) takes a minute for the
// three writes of 100 workload clusters.
func setClientLimit(cfg *rest.Config, qps float64, burst int) {
	if qps == kubeAPIUnlimited {
		cfg.QPS, cfg.Burst, cfg.RateLimiter = kubeAPIUnlimited, 0, nil
		return
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
}

// restConfig loads the given kubeconfig, or else follows controller-runtime's
// usual order: KUBECONFIG, in-cluster, ~/.kube/config.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return ctrl.GetConfig()
}

// wiringAddresses hands to know the interface addresses the
// AzurePrivateEndpoint controller read from Azure for the wiring's own
// objects, the management cluster mc's endpoints beyond its AzureCluster
// (privateendpoints.Observer.Know), and nothing of any other object: a
// tenant's object never puts anything in what the wiring reads.
func wiringAddresses(mc types.NamespacedName, know func(nicID, ip string)) func(*v1alpha1.AzurePrivateEndpoint, string, string) {
	return func(obj *v1alpha1.AzurePrivateEndpoint, nicID, ip string) {
		if mc.Name != "" && clusterlink.IsMCEndpointObject(mc, obj) {
			know(nicID, ip)
		}
	}
}
