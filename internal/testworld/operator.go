package testworld

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/cacheconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// StartOperator runs the AzureCluster controllers in-process against the
// world, configured as the binary's flags would (custom cloud, its CA), with
// short intervals so tests converge fast. Zero fields of opts get those
// test defaults; ManagementCluster is required. It stops with the test, or
// earlier when the returned function is called (a restart).
func (w *World) StartOperator(t testing.TB, opts clusterlink.Options) (stop func()) {
	t.Helper()
	return w.StartOperatorObserving(t, opts, &privateendpoints.Observer{TTL: 200 * time.Millisecond})
}

// StartOperatorObserving is StartOperator with the observer the operator
// reads Azure's private endpoints through (a test that controls its clock
// decides when a list is stale).
func (w *World) StartOperatorObserving(t testing.TB, opts clusterlink.Options, observer *privateendpoints.Observer) (stop func()) {
	t.Helper()
	if opts.PendingRecheck == 0 {
		opts.PendingRecheck = 300 * time.Millisecond
	}
	if opts.MCWriteDelay == 0 {
		opts.MCWriteDelay = 300 * time.Millisecond
	}
	if opts.MCConditionInterval == 0 {
		opts.MCConditionInterval = time.Second
	}
	if opts.DriftCheck == 0 {
		opts.DriftCheck = time.Minute
	}
	if opts.TerminalRecheck == 0 {
		opts.TerminalRecheck = 2 * time.Second
	}
	if opts.AdoptFieldManagers == nil {
		opts.AdoptFieldManagers = clusterlink.DefaultAdoptFieldManagers
	}
	if opts.CAPZFieldManagers == nil {
		opts.CAPZFieldManagers = clusterlink.DefaultCAPZFieldManagers
	}
	// Defaulted once: the wiring and its DNS mode share one tick phase.
	opts.SetDefaults()
	return w.StartManager(t, false, func(mgr ctrl.Manager, clients *azure.Clients) error {
		if err := clusterlink.Setup(mgr, opts, clients, observer); err != nil {
			return err
		}
		return wiringdns.Setup(mgr, opts, clients)
	})
}

// StartPrivateLinkServices runs the AzurePrivateLinkService controller
// in-process with short intervals (zero fields of opts get them). The
// operator's own credential is CAPZ's principal in the emulator.
func (w *World) StartPrivateLinkServices(t testing.TB, opts privatelinkservice.Options) {
	t.Helper()
	if opts.Recheck == 0 {
		opts.Recheck = 200 * time.Millisecond
	}
	if opts.TerminalRecheck == 0 {
		opts.TerminalRecheck = 2 * time.Second
	}
	if opts.DriftInterval == 0 {
		opts.DriftInterval = time.Minute
	}
	if opts.ConnectionCheck == 0 {
		opts.ConnectionCheck = time.Second
	}
	w.StartManager(t, true, func(mgr ctrl.Manager, clients *azure.Clients) error {
		return privatelinkservice.Setup(mgr, opts, clients)
	})
}

// StartPrivateEndpoints runs the AzurePrivateLinkService and
// AzurePrivateEndpoint controllers in-process with short intervals (zero
// fields of opts get them), like StartPrivateLinkServices.
func (w *World) StartPrivateEndpoints(t testing.TB, opts privateendpoint.Options) {
	t.Helper()
	if opts.Recheck == 0 {
		opts.Recheck = 200 * time.Millisecond
	}
	if opts.TerminalRecheck == 0 {
		opts.TerminalRecheck = 2 * time.Second
	}
	if opts.DriftInterval == 0 {
		// Short: an Approved endpoint's connection is read again only at
		// the drift interval (Azure does not notify the consumer).
		opts.DriftInterval = 3 * time.Second
	}
	if opts.ConnectionCheck == 0 {
		opts.ConnectionCheck = 500 * time.Millisecond
	}
	plsOpts := privatelinkservice.Options{Recheck: 200 * time.Millisecond, TerminalRecheck: 2 * time.Second, DriftInterval: time.Minute, ConnectionCheck: time.Second}
	var extra []rbacv1.PolicyRule
	if opts.PublishSecrets {
		extra = append(extra, testenv.PublishSecretsRule)
	}
	w.StartManager(t, true, func(mgr ctrl.Manager, clients *azure.Clients) error {
		if err := privatelinkservice.Setup(mgr, plsOpts, clients); err != nil {
			return err
		}
		return privateendpoint.Setup(context.Background(), mgr, opts, clients)
	}, extra...)
}

// OwnCredentialNamespace is the one namespace whose objects may use the
// operator's own credential in the test world.
const OwnCredentialNamespace = "org-operator-credential" //nolint:gosec // G101: a namespace name, not a credential

// StartManager runs a manager configured like the binary's (custom cloud,
// its CA, caches) with the controllers setup registers; own gives the
// operator its own credential (CAPZ's principal), for objects in
// OwnCredentialNamespace only. It stops with the test, or earlier when the
// returned function is called.
//
// The manager acts as the chart's ServiceAccount under exactly the chart's
// RBAC (testenv.AsOperator), plus extra rules where the chart grants them
// with a value (testenv.PublishSecretsRule): a controller that needs what
// the chart does not grant fails here, not in a cluster.
func (w *World) StartManager(t testing.TB, own bool, setup func(ctrl.Manager, *azure.Clients) error, extra ...rbacv1.PolicyRule) (stop func()) {
	t.Helper()
	cfg, err := w.Env.AsOperator(context.Background(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	// The chart's Role in the management cluster's namespace.
	if err := w.Env.GrantManagementClusterRole(context.Background(), IdentityNS); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 w.Env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several worlds run in one test process: controller names repeat.
		Controller: config.Controller{SkipNameValidation: new(true)},
		Client:     cacheconfig.Client(),
		Cache:      cacheconfig.Cache(clusterlink.TrimCached(slices.Concat(clusterlink.DefaultAdoptFieldManagers, clusterlink.DefaultCAPZFieldManagers)...)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cacheconfig.Cached(mgr, azure.CachedKinds()...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	creds := &azure.Credentials{
		Reader: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), Done: ctx.Done(),
		Clouds: w.Clouds(),
		Log:    ctrl.Log.WithName("credentials"),
	}
	if own {
		creds.OwnNamespaces = []string{OwnCredentialNamespace}
		creds.Own = func(cfg cloud.Configuration, transport policy.Transporter) (azcore.TokenCredential, error) {
			return azidentity.NewClientSecretCredential(sandbox.CAPZTenantID, sandbox.CAPZClientID, sandbox.CAPZSecret, &azidentity.ClientSecretCredentialOptions{
				ClientOptions: azcore.ClientOptions{Cloud: cfg, Transport: transport}, DisableInstanceDiscovery: true,
			})
		}
	}
	retry := policy.RetryOptions{MaxRetries: 2, RetryDelay: 50 * time.Millisecond, MaxRetryDelay: time.Second, TryTimeout: 30 * time.Second}
	if err := setup(mgr, &azure.Clients{Credentials: creds, Retry: &retry}); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("operator stopped with an error: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Clouds are the clouds the world's clusters name: azuresim as the
// custom cloud CloudName, the default.
func (w *World) Clouds() azure.Clouds {
	return azure.Clouds{Default: CloudName, Custom: []azure.CustomCloud{w.CustomCloud()}}
}

// CustomCloud is azuresim as a custom cloud (the operator's
// --azure-custom-cloud).
func (w *World) CustomCloud() azure.CustomCloud {
	return azure.CustomCloud{Name: CloudName, ResourceManagerEndpoint: w.Sim.URL(), ActiveDirectoryAuthorityHost: w.Sim.URL(), CAFile: w.CAFile}
}

// Events lists the events about an object, oldest first.
func (w *World) Events(ctx context.Context, key types.NamespacedName) []eventsv1.Event {
	list := &eventsv1.EventList{}
	if err := w.Client.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == key.Name {
			out = append(out, e)
		}
	}
	return out
}

// HasEvent reports whether an object has an event with a reason.
func (w *World) HasEvent(ctx context.Context, key types.NamespacedName, reason string) (bool, []string) {
	var reasons []string
	for _, e := range w.Events(ctx, key) {
		reasons = append(reasons, e.Reason)
		if e.Reason == reason {
			return true, reasons
		}
	}
	return false, reasons
}
