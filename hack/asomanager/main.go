// Command asomanager runs Azure Service Operator v2's own controllers and
// webhooks for the resources Cluster API Provider Azure (CAPZ) v1.23 and
// v1.27 make through ASO for a self-managed AzureCluster, so that the
// project's real-controller test world (test/realcapz) runs the ASO our
// users run instead of the stand-in in internal/capzsim.
//
// ASO's own manager (cmd/controller) compiles every Azure service ASO
// supports: about 300 MB of generated Go, longer than CI's budget on two
// cores. This one is built from the same packages (ASO's generic ARM
// reconciler, its credential provider, its resource extensions, its
// conversion, defaulting and validating webhooks) but registers only:
//
//   - resources.azure.com ResourceGroup (the resource group);
//   - network.azure.com VirtualNetwork, VirtualNetworksSubnet, NatGateway,
//     BastionHost, PrivateEndpoint and PrivateLinkService (what CAPZ's
//     azure/services/{virtualnetworks,subnets,natgateways,bastionhosts,
//     privateendpoints,privatelinks} write).
//
// Left out, because no self-managed AzureCluster uses them: the AKS groups
// (containerservice, kubernetesconfiguration), the MySQL and PostgreSQL
// user reconcilers, the Entra reconcilers, CRD management (the test world
// installs the CRDs, as with ASO's --crd-management=none) and leader
// election. Configuration is ASO's: the same environment variables
// (POD_NAMESPACE, AZURE_RESOURCE_MANAGER_ENDPOINT, AZURE_AUTHORITY_HOST,
// AZURE_SYNC_PERIOD, ...), read by ASO's own config package.
//
// Why the module path is under github.com/Azure/azure-service-operator/v2:
// the reconcilers live in ASO's internal packages, and Go lets only import
// paths under the parent of "internal" import them. This module is never
// published; the path only makes those imports legal.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	network "github.com/Azure/azure-service-operator/v2/api/network/customizations"
	network20201101 "github.com/Azure/azure-service-operator/v2/api/network/v1api20201101"
	network20201101s "github.com/Azure/azure-service-operator/v2/api/network/v1api20201101/storage"
	network20201101w "github.com/Azure/azure-service-operator/v2/api/network/v1api20201101/webhook"
	network20220701 "github.com/Azure/azure-service-operator/v2/api/network/v1api20220701"
	network20220701s "github.com/Azure/azure-service-operator/v2/api/network/v1api20220701/storage"
	network20220701w "github.com/Azure/azure-service-operator/v2/api/network/v1api20220701/webhook"
	network20240301 "github.com/Azure/azure-service-operator/v2/api/network/v1api20240301"
	network20240301s "github.com/Azure/azure-service-operator/v2/api/network/v1api20240301/storage"
	network20240301w "github.com/Azure/azure-service-operator/v2/api/network/v1api20240301/webhook"
	network20250301 "github.com/Azure/azure-service-operator/v2/api/network/v20250301"
	network20250301s "github.com/Azure/azure-service-operator/v2/api/network/v20250301/storage"
	network20250301w "github.com/Azure/azure-service-operator/v2/api/network/v20250301/webhook"
	resources "github.com/Azure/azure-service-operator/v2/api/resources/customizations"
	resources20200601 "github.com/Azure/azure-service-operator/v2/api/resources/v1api20200601"
	resources20200601s "github.com/Azure/azure-service-operator/v2/api/resources/v1api20200601/storage"
	resources20200601w "github.com/Azure/azure-service-operator/v2/api/resources/v1api20200601/webhook"

	"github.com/Azure/azure-service-operator/v2/internal/config"
	"github.com/Azure/azure-service-operator/v2/internal/identity"
	asometrics "github.com/Azure/azure-service-operator/v2/internal/metrics"
	"github.com/Azure/azure-service-operator/v2/internal/reconcilers"
	"github.com/Azure/azure-service-operator/v2/internal/reconcilers/arm"
	"github.com/Azure/azure-service-operator/v2/internal/reconcilers/generic"
	"github.com/Azure/azure-service-operator/v2/internal/resolver"
	asocel "github.com/Azure/azure-service-operator/v2/internal/util/cel"
	"github.com/Azure/azure-service-operator/v2/internal/util/interval"
	"github.com/Azure/azure-service-operator/v2/internal/util/kubeclient"
	"github.com/Azure/azure-service-operator/v2/internal/util/lockedrand"
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime"
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime/conditions"
	"github.com/Azure/azure-service-operator/v2/pkg/genruntime/registration"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "asomanager:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("asomanager", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (required)")
	host := fs.String("webhook-host", "127.0.0.1", "address the webhook server listens on")
	port := fs.Int("webhook-port", 0, "port the webhook server listens on (required)")
	certDir := fs.String("webhook-cert-dir", "", "directory holding tls.crt and tls.key (required)")
	health := fs.String("health-addr", "0", "address of the health probes (0: off)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if *kubeconfig == "" || *port == 0 || *certDir == "" {
		fs.Usage()
		return fmt.Errorf("--kubeconfig, --webhook-port and --webhook-cert-dir are required")
	}
	ctrl.SetLogger(zap.New())

	cfg, err := config.ReadAndValidate()
	if err != nil {
		return fmt.Errorf("ASO's configuration: %w", err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *kubeconfig, err)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	cacheOpts := cache.Options{ReaderFailOnMissingInformer: true} // as ASO's manager: a read outside the cache is a bug
	if len(cfg.TargetNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range cfg.TargetNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: *health,
		WebhookServer:          webhook.NewServer(webhook.Options{Host: *host, Port: *port, CertDir: *certDir}),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := registerControllers(mgr, cfg); err != nil {
		return err
	}
	for _, t := range knownTypes() {
		if err := ctrl.NewWebhookManagedBy(mgr, t.Obj).WithCustomDefaulter(t.Defaulter).WithCustomValidator(t.Validator).Complete(); err != nil {
			return fmt.Errorf("webhooks of %T: %w", t.Obj, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return mgr.Start(ctx)
}

// newScheme holds every version of the kinds served, so that the
// conversion webhook finds each kind's hub (the newest storage version).
func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensions.AddToScheme,
		resources20200601.AddToScheme, resources20200601s.AddToScheme,
		network20201101.AddToScheme, network20201101s.AddToScheme,
		network20220701.AddToScheme, network20220701s.AddToScheme,
		network20240301.AddToScheme, network20240301s.AddToScheme,
		network20250301.AddToScheme, network20250301s.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// storageTypes are the hub versions ASO reconciles (ASO v2.20.0's
// internal/controllers/controller_resources_gen.go, getKnownStorageTypes,
// registers the same ones), for the kinds CAPZ v1.27.0's AzureCluster
// controller asks ASO for (its RBAC markers in
// controllers/azurecluster_controller.go: resourcegroups; natgateways,
// bastionhosts, privateendpoints, privatelinkservices, virtualnetworks,
// virtualnetworkssubnets).
func storageTypes() []*registration.StorageType {
	return []*registration.StorageType{
		{Obj: new(resources20200601s.ResourceGroup)},
		{Obj: new(network20250301s.VirtualNetwork)},
		{Obj: new(network20250301s.VirtualNetworksSubnet)},
		{Obj: new(network20250301s.NatGateway)},
		{Obj: new(network20250301s.BastionHost)},
		{Obj: new(network20250301s.PrivateEndpoint)},
		{Obj: new(network20250301s.PrivateLinkService)},
	}
}

// extensions are ASO's per-kind customizations of those kinds (for
// example, a PrivateEndpoint whose connection waits for approval is not
// Ready).
func extensions() []genruntime.ResourceExtension {
	return []genruntime.ResourceExtension{
		&resources.ResourceGroupExtension{},
		&network.VirtualNetworkExtension{},
		&network.VirtualNetworksSubnetExtension{},
		&network.NatGatewayExtension{},
		&network.BastionHostExtension{},
		&network.PrivateEndpointExtension{},
		&network.PrivateLinkServiceExtension{},
	}
}

// knownTypes are the versions with webhooks: defaulting and validation for
// the API versions, conversion for all.
func knownTypes() []*registration.KnownType {
	return []*registration.KnownType{
		{Obj: new(resources20200601.ResourceGroup), Defaulter: &resources20200601w.ResourceGroup{}, Validator: &resources20200601w.ResourceGroup{}},
		{Obj: new(resources20200601s.ResourceGroup)},
		{Obj: new(network20201101.VirtualNetwork), Defaulter: &network20201101w.VirtualNetwork{}, Validator: &network20201101w.VirtualNetwork{}},
		{Obj: new(network20201101s.VirtualNetwork)},
		{Obj: new(network20201101.VirtualNetworksSubnet), Defaulter: &network20201101w.VirtualNetworksSubnet{}, Validator: &network20201101w.VirtualNetworksSubnet{}},
		{Obj: new(network20201101s.VirtualNetworksSubnet)},
		{Obj: new(network20220701.NatGateway), Defaulter: &network20220701w.NatGateway{}, Validator: &network20220701w.NatGateway{}},
		{Obj: new(network20220701s.NatGateway)},
		{Obj: new(network20220701.BastionHost), Defaulter: &network20220701w.BastionHost{}, Validator: &network20220701w.BastionHost{}},
		{Obj: new(network20220701s.BastionHost)},
		{Obj: new(network20220701.PrivateEndpoint), Defaulter: &network20220701w.PrivateEndpoint{}, Validator: &network20220701w.PrivateEndpoint{}},
		{Obj: new(network20220701s.PrivateEndpoint)},
		{Obj: new(network20220701.PrivateLinkService), Defaulter: &network20220701w.PrivateLinkService{}, Validator: &network20220701w.PrivateLinkService{}},
		{Obj: new(network20220701s.PrivateLinkService)},
		{Obj: new(network20240301.VirtualNetwork), Defaulter: &network20240301w.VirtualNetwork{}, Validator: &network20240301w.VirtualNetwork{}},
		{Obj: new(network20240301s.VirtualNetwork)},
		{Obj: new(network20240301.VirtualNetworksSubnet), Defaulter: &network20240301w.VirtualNetworksSubnet{}, Validator: &network20240301w.VirtualNetworksSubnet{}},
		{Obj: new(network20240301s.VirtualNetworksSubnet)},
		{Obj: new(network20240301.NatGateway), Defaulter: &network20240301w.NatGateway{}, Validator: &network20240301w.NatGateway{}},
		{Obj: new(network20240301s.NatGateway)},
		{Obj: new(network20240301.BastionHost), Defaulter: &network20240301w.BastionHost{}, Validator: &network20240301w.BastionHost{}},
		{Obj: new(network20240301s.BastionHost)},
		{Obj: new(network20240301.PrivateEndpoint), Defaulter: &network20240301w.PrivateEndpoint{}, Validator: &network20240301w.PrivateEndpoint{}},
		{Obj: new(network20240301s.PrivateEndpoint)},
		{Obj: new(network20240301.PrivateLinkService), Defaulter: &network20240301w.PrivateLinkService{}, Validator: &network20240301w.PrivateLinkService{}},
		{Obj: new(network20240301s.PrivateLinkService)},
		{Obj: new(network20250301.VirtualNetwork), Defaulter: &network20250301w.VirtualNetwork{}, Validator: &network20250301w.VirtualNetwork{}},
		{Obj: new(network20250301.VirtualNetworksSubnet), Defaulter: &network20250301w.VirtualNetworksSubnet{}, Validator: &network20250301w.VirtualNetworksSubnet{}},
		{Obj: new(network20250301.NatGateway), Defaulter: &network20250301w.NatGateway{}, Validator: &network20250301w.NatGateway{}},
		{Obj: new(network20250301.BastionHost), Defaulter: &network20250301w.BastionHost{}, Validator: &network20250301w.BastionHost{}},
		{Obj: new(network20250301.PrivateEndpoint), Defaulter: &network20250301w.PrivateEndpoint{}, Validator: &network20250301w.PrivateEndpoint{}},
		{Obj: new(network20250301.PrivateLinkService), Defaulter: &network20250301w.PrivateLinkService{}, Validator: &network20250301w.PrivateLinkService{}},
	}
}

// registerControllers wires ASO's generic ARM reconciler to each storage
// type, as ASO's manager does for every type it knows.
func registerControllers(mgr ctrl.Manager, cfg config.Values) error {
	log := ctrl.Log.WithName("controllers")
	armMetrics := asometrics.NewARMClientMetrics()
	celMetrics := asometrics.NewCEL()
	asometrics.RegisterMetrics(armMetrics, celMetrics)

	kube := kubeclient.NewClient(mgr.GetClient())
	cloud := cfg.Cloud()
	// No global credential: CAPZ points every object at its cluster's
	// credential secret (serviceoperator.azure.com/credential-from).
	creds := identity.NewCredentialProvider(nil, kube, &identity.CredentialProviderOptions{Cloud: &cloud})
	armClients := arm.NewARMClientCache(creds, cloud, nil, armMetrics)
	positive := conditions.NewPositiveConditionBuilder(clock.New())
	cel, err := asocel.NewExpressionEvaluator(asocel.Metrics(celMetrics), asocel.Log(log))
	if err != nil {
		return fmt.Errorf("ASO's expression evaluator: %w", err)
	}
	asocel.RegisterEvaluator(cel)
	if err := mgr.Add(runnable(cel.Start)); err != nil {
		return err
	}
	opts := controllerOptions(cfg)

	types := storageTypes()
	res := resolver.NewResolver(kube)
	if err := res.IndexStorageTypes(mgr.GetScheme(), types); err != nil {
		return fmt.Errorf("indexing the storage types: %w", err)
	}
	exts, err := extensionsByKind(mgr.GetScheme())
	if err != nil {
		return err
	}
	for _, t := range types {
		gvk, err := apiutil.GVKForObject(t.Obj, mgr.GetScheme())
		if err != nil {
			return err
		}
		t.Name = controllerName(t.Obj)
		t.Predicate = predicate.Or(
			predicate.GenerationChangedPredicate{},
			reconcilers.ARMReconcilerAnnotationChangedPredicate(),
			reconcilers.ARMPerResourceSecretAnnotationChangedPredicate(),
		)
		t.Reconciler = arm.NewAzureDeploymentReconciler(armClients.GetConnection, kube, res, positive, cel, cfg, exts[gvk])
	}
	return generic.RegisterAll(mgr, mgr.GetFieldIndexer(), kube, positive, types, opts)
}

func extensionsByKind(scheme *runtime.Scheme) (map[schema.GroupVersionKind]genruntime.ResourceExtension, error) {
	out := map[schema.GroupVersionKind]genruntime.ResourceExtension{}
	for _, ext := range extensions() {
		for _, r := range ext.GetExtendedResources() {
			obj, ok := r.(runtime.Object)
			if !ok {
				return nil, fmt.Errorf("extension %T: resource %T is not a runtime.Object", ext, r)
			}
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				return nil, err
			}
			out[gvk] = ext
		}
	}
	return out, nil
}

var apiGroup = regexp.MustCompile(`/v2/api/([a-zA-Z0-9.]+)/`)

// controllerName is ASO's name for a kind's controller, "<group>_<kind>"
// (network_privateendpoint), which its logs and metrics carry.
func controllerName(obj client.Object) string {
	typ := reflect.TypeOf(obj).Elem()
	kind := strings.ToLower(typ.Name())
	group := "unknown"
	if m := apiGroup.FindStringSubmatch(typ.PkgPath() + "/"); m != nil {
		group = strings.ReplaceAll(m[1], ".", "")
	}
	return group + "_" + kind
}

// controllerOptions are ASO v2.20.0's (cmd/controller/app/setup.go,
// makeControllerOptions, without the optional bucket rate limit):
// exponential back-off from 1 s to 1 min for the happy path (polling
// long-running operations), and its interval calculator for errors (1 s
// base, 30 s fast, 3 min slow, the sync period for very slow) and the
// sync period.
func controllerOptions(cfg config.Values) generic.Options {
	verySlow := config.DefaultSyncInterval
	if cfg.SyncPeriod != nil {
		verySlow = *cfg.SyncPeriod
	}
	return generic.Options{
		Config: cfg,
		Options: controller.Options{
			MaxConcurrentReconciles: cfg.MaxConcurrentReconciles,
			RateLimiter:             generic.NewRateLimiter(time.Second, time.Minute),
		},
		PanicHandler: func() {},
		RequeueIntervalCalculator: interval.NewCalculator(interval.CalculatorParameters{
			Rand:               rand.New(lockedrand.NewSource(time.Now().UnixNano())), //nolint:gosec // jitter, not a secret
			ErrorBaseDelay:     time.Second,
			ErrorMaxFastDelay:  30 * time.Second,
			ErrorMaxSlowDelay:  3 * time.Minute,
			ErrorVerySlowDelay: verySlow,
			SyncPeriod:         cfg.SyncPeriod,
		}),
	}
}

type runnable func()

func (r runnable) Start(ctx context.Context) error {
	r()
	<-ctx.Done()
	return nil
}
