// Package sandbox runs the test world (docs/design.md, *The test world*) outside of tests:
// a real kube-apiserver and etcd (envtest binaries) with the CAPZ and Cluster
// API CRDs, the azuresim ARM emulator over HTTPS, and capzsim reconciling
// AzureClusters into it. Controller tests (internal/testworld), `make demo`
// (cmd/demo) and the scale benchmark (test/scale) all start it.
//
// It never runs the operator: callers start the operator in-process or as
// the real binary, pointed at Kubeconfig and at the custom cloud in
// CloudFile.
package sandbox

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// CAPZ's identity in the emulator. Callers add the operator's principals
// through Options.Principals.
const (
	CAPZTenantID = "72f988bf-0000-0000-0000-0000000000aa"
	CAPZClientID = "capz"
	CAPZSecret   = "capz-secret"
	// CloudName is the name of the custom cloud that reaches the emulator:
	// the public cloud's, redirected. CAPZ's defaulting webhook sets
	// spec.azureEnvironment to AzurePublicCloud on every AzureCluster, so
	// the test world's clusters look as they do in production and the
	// operator reaches azuresim for them (a custom cloud named like a
	// public one replaces it).
	CloudName = "AzurePublicCloud"
)

// Options configures a sandbox.
type Options struct {
	// Dir holds the files the sandbox writes (CA, custom cloud, kubeconfig).
	// Required; the caller owns and removes it.
	Dir string
	// Schema selects the AzureCluster schema. Default: testenv.SchemaFork.
	Schema testenv.Schema
	// CAPZMode selects which CAPZ capzsim mimics. Default: the schema's
	// (capzsim.Fork for testenv.SchemaFork, capzsim.Upstream for
	// testenv.SchemaUpstream, capzsim.V127 for testenv.SchemaV127).
	CAPZMode capzsim.Mode
	// CAPZResync is how soon capzsim looks again while Azure works.
	CAPZResync time.Duration
	// CAPZSyncPeriod is how often capzsim reconciles a converged cluster
	// again (CAPZ's --sync-period). Default: CAPZ's, 10m.
	CAPZSyncPeriod time.Duration
	// ASOSyncPeriod is how often the ASO stand-in looks at a converged
	// object again (ASO's azureSyncPeriod). Default 15m.
	ASOSyncPeriod time.Duration
	// CAPZConcurrency is capzsim's number of workers. Default 4.
	CAPZConcurrency int
	// Ingress lists clusters ("namespace/name") that get an ingress private
	// link service, auto-approving the given subscriptions.
	Ingress map[string]capzsim.Ingress
	// KeepRemovedEndpoints makes capzsim leave endpoints removed from spec.
	KeepRemovedEndpoints bool
	// Latency of Azure's long-running operations. Default 0.
	Latency time.Duration
	// MaxPollInterval caps the hint (Retry-After) with which azuresim
	// answers the start of an operation: the time the operation has left,
	// at most this. Default: azuresim's (1 s).
	MaxPollInterval time.Duration
	// PageSize of Azure's lists. Default: azuresim's (100).
	PageSize int
	// Throttling of ARM requests. Default: none.
	Throttling azuresim.Throttling
	// Limits are the Azure limits the emulator enforces (zero fields:
	// Azure's).
	Limits azuresim.Limits
	// Principals are added to CAPZ's in the emulator's token endpoint.
	Principals []azuresim.Principal
	// CloudHosts are well-known clouds' hosts the emulator's certificate
	// names too (ChinaCloudHosts, …), for StartCloudProxy.
	CloudHosts []string
	// Audit makes kube-apiserver log every write to an AzureCluster, for
	// Sandbox.AuditEvents.
	Audit bool
	// APIProxy puts a TCP proxy between Kubeconfig (the operator binary's
	// way in) and kube-apiserver, for Sandbox.APIOutage.
	APIProxy bool
	// RealControllers runs Cluster API Provider Azure's and Azure Service
	// Operator's own controllers (real.go) in place of capzsim and its ASO
	// stand-in. It needs testenv.SchemaV127 or testenv.SchemaUpstream
	// (CAPZ v1.27.0 or v1.23.0; UpgradeCAPZ moves between them) and
	// refuses capzsim's options (CAPZMode, Ingress, KeepRemovedEndpoints,
	// CAPZResync, CAPZConcurrency); CAPZSyncPeriod and ASOSyncPeriod apply
	// to the real controllers (default: CAPZ's 10m, ASO's 1h).
	RealControllers bool
	// Logf receives progress lines while starting; nil discards them.
	Logf func(format string, args ...any)
}

// Sandbox is a running world. Stop it when done.
type Sandbox struct {
	Env *testenv.Env
	// Client is Env.Client: direct, uncached.
	Client client.Client
	Sim    *azuresim.Server
	// CAFile trusts the emulator's certificate.
	CAFile string
	// CloudFile is a custom cloud file (--azure-custom-cloud) named CloudName.
	CloudFile string
	// Kubeconfig reaches the API server as an administrator.
	Kubeconfig string
	// Cloud reaches the emulator.
	Cloud cloud.Configuration
	// HTTP is a client that trusts the emulator.
	HTTP *http.Client
	// CAPZCredential is CAPZ's identity in the emulator.
	CAPZCredential azcore.TokenCredential
	// AuditLog is kube-apiserver's audit log with Options.Audit, else "".
	AuditLog string
	// Real are the real controllers with Options.RealControllers, else nil.
	Real *RealControllers

	stopCAPZ func() error
	capzOpts Options
	proxy    *apiProxy
	// sharedSim is true for a sandbox made by SecondAPIServer: the
	// emulator belongs to the first, and Stop leaves it running.
	sharedSim bool
}

// Start starts the API server, the emulator and capzsim. On error, whatever
// was started is stopped again.
func Start(ctx context.Context, opts Options) (_ *Sandbox, err error) {
	if opts.Dir == "" {
		return nil, errors.New("sandbox: Options.Dir is required")
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	sb := &Sandbox{}
	defer func() {
		if err != nil {
			err = errors.Join(err, sb.Stop())
		}
	}()
	if err := sb.startAzure(opts); err != nil {
		return nil, err
	}
	logf("azuresim listening on %s", sb.Sim.URL())
	logf("starting kube-apiserver and etcd")
	var flags map[string]string
	if opts.Audit {
		if flags, sb.AuditLog, err = auditFlags(opts.Dir); err != nil {
			return nil, err
		}
	}
	env, err := testenv.Start(ctx, testenv.Options{Schema: opts.Schema, APIServerFlags: flags})
	if err != nil {
		return nil, err
	}
	sb.Env, sb.Client = env, env.Client
	sb.Kubeconfig = filepath.Join(opts.Dir, "kubeconfig")
	if err := env.WriteKubeconfig(sb.Kubeconfig); err != nil {
		return nil, err
	}
	logf("kube-apiserver listening on %s", env.Config.Host)
	if opts.APIProxy {
		if err := sb.startAPIProxy(); err != nil {
			return nil, err
		}
	}
	if opts.RealControllers {
		if err := sb.startRealControllers(ctx, opts); err != nil {
			return nil, err
		}
		return sb, nil
	}
	if err := sb.startCAPZ(opts); err != nil {
		return nil, err
	}
	return sb, nil
}

func (sb *Sandbox) startAzure(opts Options) error {
	principals := append([]azuresim.Principal{{TenantID: CAPZTenantID, ClientID: CAPZClientID, ClientSecret: CAPZSecret}}, opts.Principals...)
	hosts := opts.CloudHosts
	if opts.RealControllers {
		hosts = append(slices.Clone(hosts), PublicCloudHosts...)
	}
	sim := azuresim.New(azuresim.Options{
		TLS: true, Latency: opts.Latency, MaxPollInterval: opts.MaxPollInterval, PageSize: opts.PageSize, Throttling: opts.Throttling, Principals: principals, Hosts: hosts,
		Limits: opts.Limits,
	})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return err
	}
	sb.Sim = sim
	sb.CAFile = filepath.Join(opts.Dir, "azuresim-ca.pem")
	if err := sim.WriteCAFile(sb.CAFile); err != nil {
		return err
	}
	sb.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: sim.URL() + "/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
		cloud.ResourceManager: {Endpoint: sim.URL(), Audience: sim.URL()},
	}}
	// Connections kept open as the Azure SDK's default transport keeps them
	// (azure-sdk-for-go sdk/internal transport.go: 100 idle, 10 per host),
	// and more per host: capzsim's and ASO's stand-in's workers share this
	// client, and Go's default of 2 idle connections per host had them
	// open a TLS connection for most requests (make bench at N = 300: a
	// seventh of the harness's CPU in handshakes).
	sb.HTTP = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: sim.CertPool(), MinVersion: tls.VersionTLS12},
		MaxIdleConns:    100, MaxIdleConnsPerHost: 100, IdleConnTimeout: 90 * time.Second,
	}}
	custom, err := json.MarshalIndent(azure.CustomCloud{
		Name: CloudName, ResourceManagerEndpoint: sim.URL(), ActiveDirectoryAuthorityHost: sim.URL() + "/", CAFile: sb.CAFile,
	}, "", "  ")
	if err != nil {
		return err
	}
	sb.CloudFile = filepath.Join(opts.Dir, "azuresim-cloud.json")
	if err := os.WriteFile(sb.CloudFile, custom, 0o600); err != nil {
		return err
	}
	cred, err := azidentity.NewClientSecretCredential(CAPZTenantID, CAPZClientID, CAPZSecret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions: sb.ClientOptions(), DisableInstanceDiscovery: true,
	})
	if err != nil {
		return err
	}
	sb.CAPZCredential = cred
	return nil
}

// ClientOptions reach the emulator.
func (sb *Sandbox) ClientOptions() azcore.ClientOptions {
	return azcore.ClientOptions{Cloud: sb.Cloud, Transport: sb.HTTP}
}

// Network returns network clients for a subscription, as CAPZ's principal.
func (sb *Sandbox) Network(sub string) (*armnetwork.ClientFactory, error) {
	return armnetwork.NewClientFactory(sub, sb.CAPZCredential, &arm.ClientOptions{ClientOptions: sb.ClientOptions()})
}

// DNS returns Private DNS clients for a subscription, as CAPZ's principal
// (a person or another tool, to the operator).
func (sb *Sandbox) DNS(sub string) (*armprivatedns.ClientFactory, error) {
	return armprivatedns.NewClientFactory(sub, sb.CAPZCredential, &arm.ClientOptions{ClientOptions: sb.ClientOptions()})
}

// UpgradeCAPZ replaces the AzureCluster CRD with the schema's and restarts
// capzsim (or, in a real-controller world, the real CAPZ) as the CAPZ of
// that schema, as a CAPZ upgrade does. Objects keep what they hold.
func (sb *Sandbox) UpgradeCAPZ(ctx context.Context, schema testenv.Schema) error {
	if sb.Real != nil {
		return sb.upgradeRealCAPZ(ctx, schema)
	}
	if sb.stopCAPZ != nil {
		if err := sb.stopCAPZ(); err != nil {
			return err
		}
		sb.stopCAPZ = nil
	}
	if err := sb.Env.InstallSchema(ctx, schema); err != nil {
		return err
	}
	opts := sb.capzOpts
	opts.Schema, opts.CAPZMode = schema, ModeOf(schema)
	return sb.startCAPZ(opts)
}

func (sb *Sandbox) startCAPZ(opts Options) error {
	sb.capzOpts = opts
	mode := opts.CAPZMode
	if mode == "" {
		mode = ModeOf(opts.Schema)
	}
	cfg := rest.CopyConfig(sb.Env.Config)
	cfg.UserAgent = capzsim.UserAgent
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 sb.Env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Several sandboxes run in one test process: controller names repeat.
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		return err
	}
	r := &capzsim.Reconciler{Client: mgr.GetClient(), Opts: capzsim.Options{
		Mode: mode, Credential: sb.CAPZCredential, ClientOptions: sb.ClientOptions(), Resync: opts.CAPZResync, SyncPeriod: opts.CAPZSyncPeriod,
		Concurrency: opts.CAPZConcurrency, Ingress: opts.Ingress, KeepRemovedEndpoints: opts.KeepRemovedEndpoints,
	}}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	// ASO's stand-in runs in every mode, as ASO runs beside every CAPZ.
	if err := capzsim.SetupASOSim(mgr, capzsim.ASOSim{Client: mgr.GetClient(), Azure: r, Resync: opts.CAPZResync,
		SyncPeriod: opts.ASOSyncPeriod, Concurrency: opts.CAPZConcurrency}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	sb.stopCAPZ = func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("capzsim stopped with an error: %w", err)
		}
		return nil
	}
	return nil
}

// SecondAPIServer starts another API server (with its own capzsim, as a
// second management cluster runs its own CAPZ) on the same Azure: the
// target of a `clusterctl move`. Its files go to dir. Stopping it leaves
// the emulator to sb.
func (sb *Sandbox) SecondAPIServer(ctx context.Context, dir string) (_ *Sandbox, err error) {
	if sb.Env == nil || sb.Sim == nil {
		return nil, errors.New("sandbox: SecondAPIServer on a stopped sandbox")
	}
	opts := sb.capzOpts
	second := &Sandbox{
		Sim: sb.Sim, CAFile: sb.CAFile, CloudFile: sb.CloudFile, Cloud: sb.Cloud, HTTP: sb.HTTP,
		CAPZCredential: sb.CAPZCredential, sharedSim: true,
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, second.Stop())
		}
	}()
	env, err := testenv.Start(ctx, testenv.Options{Schema: opts.Schema})
	if err != nil {
		return nil, err
	}
	second.Env, second.Client = env, env.Client
	second.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(second.Kubeconfig); err != nil {
		return nil, err
	}
	if err := second.startCAPZ(opts); err != nil {
		return nil, err
	}
	return second, nil
}

// ModeOf is the CAPZ capzsim mimics by default for a schema.
func ModeOf(s testenv.Schema) capzsim.Mode {
	switch s {
	case testenv.SchemaUpstream:
		return capzsim.Upstream
	case testenv.SchemaV127:
		return capzsim.V127
	default:
		return capzsim.Fork
	}
}

// Stop stops capzsim, the API server and the emulator, in that order. It is
// safe to call on a partly started sandbox and more than once.
func (sb *Sandbox) Stop() error {
	var errs []error
	if sb.proxy != nil {
		sb.proxy.close()
		sb.proxy = nil
	}
	if sb.stopCAPZ != nil {
		errs = append(errs, sb.stopCAPZ())
		sb.stopCAPZ = nil
	}
	if sb.Env != nil {
		errs = append(errs, sb.Env.Stop())
		sb.Env = nil
	}
	if sb.Sim != nil && !sb.sharedSim {
		errs = append(errs, sb.Sim.Close())
	}
	sb.Sim = nil
	return errors.Join(errs...)
}

// startAPIProxy starts the proxy and points Kubeconfig at it.
func (sb *Sandbox) startAPIProxy() error {
	u, err := url.Parse(sb.Env.Config.Host)
	if err != nil {
		return err
	}
	p, err := startAPIProxy(u.Host)
	if err != nil {
		return err
	}
	sb.proxy = p
	raw, err := os.ReadFile(sb.Kubeconfig)
	if err != nil {
		return err
	}
	// The API server's certificate names 127.0.0.1, not a port: the proxy's
	// address verifies as well.
	return os.WriteFile(sb.Kubeconfig, []byte(strings.ReplaceAll(string(raw), u.Host, p.addr)), 0o600)
}

// APIOutage makes the API server unreachable through Kubeconfig for d:
// every connection is cut and new ones are refused, as in a restart of
// kube-apiserver (etcd and so every object are kept). It needs
// Options.APIProxy.
func (sb *Sandbox) APIOutage(d time.Duration) error {
	if sb.proxy == nil {
		return errors.New("sandbox: started without Options.APIProxy")
	}
	return sb.proxy.outage(d)
}
