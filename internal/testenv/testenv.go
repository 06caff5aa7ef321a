// Package testenv starts a real Kubernetes API server (envtest) with the CRDs
// the operator works with: CAPZ's AzureCluster and AzureClusterIdentity (with
// or without the fork-compatible privateLinks overlay), Cluster API's Cluster,
// and the operator's own CRDs from config/crd/bases, and with CAPZ's own
// admission webhooks for the release the schema installs (webhooks.go).
//
// The kube-apiserver and etcd binaries are built from Go modules by
// hack/envtest/build.sh (`make envtest-assets`). They are found through
// KUBEBUILDER_ASSETS, or else in the directory that script writes to.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
)

// K8sVersion is the Kubernetes version of the envtest binaries; it matches
// the k8s.io/* libraries in go.mod and hack/envtest/kube-apiserver/go.mod.
const K8sVersion = "1.37.1"

// Options configures a test environment.
type Options struct {
	// Schema selects the AzureCluster schema. Default: SchemaFork.
	Schema Schema
	// ExtraCRDs are installed beside the default CRDs.
	ExtraCRDs []*apiextensionsv1.CustomResourceDefinition
	// APIServerFlags are set on kube-apiserver (name without dashes), for
	// example the audit log a benchmark counts writes with.
	APIServerFlags map[string]string
}

// Env is a running test API server.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client is a direct (uncached) client with the client-go and
	// apiextensions types registered; use unstructured objects for CAPZ kinds.
	Client client.Client
	// Scheme is the scheme of Client.
	Scheme *k8sruntime.Scheme
	// Schema is the AzureCluster schema installed.
	Schema Schema

	env *envtest.Environment
	// webhooks is CAPZ's webhook server for the installed schema.
	webhooks *capzWebhooks
	// webhookDir holds the webhook server's kubeconfig.
	webhookDir string
	// pooled environments are emptied for the next test, or stop in the
	// background (pool.go).
	pooled bool
	// startSchema is the schema the environment started with, and base
	// what it held when first handed out (reset.go).
	startSchema Schema
	base        baseline
}

// Start starts an API server and installs the CRDs. Call Stop when done. In
// a package whose TestMain calls Main, the server may have been started in
// the background before the call (pool.go).
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.Schema == "" {
		opts.Schema = SchemaFork
	}
	if poolable(opts) {
		return take(ctx, opts)
	}
	return start(ctx, opts)
}

func start(ctx context.Context, opts Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	crds, err := CRDs(ctx, opts.Schema)
	if err != nil {
		return nil, err
	}
	crds = append(crds, opts.ExtraCRDs...)

	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}

	var paths []string
	if dir := ownCRDDir(); dir != "" {
		paths = append(paths, dir)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		Scheme:                scheme,
		CRDs:                  crds,
		CRDDirectoryPaths:     paths,
		ErrorIfCRDPathMissing: false,
		// A loaded 2-core machine can be slow to start a cold API server:
		// 113 s was seen with two test packages and a linter sharing them.
		ControlPlaneStartTimeout: 5 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		// envtest waits 10 s by default for the CRDs to be served; the demo
		// failed so with three test packages sharing two cores.
		CRDInstallOptions: envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
		// Certificates and an address for CAPZ's webhooks (startWebhooks);
		// envtest installs no webhook itself.
		WebhookInstallOptions: envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"},
	}
	for name, value := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest leaves etcd and kube-apiserver running when it fails
		// after starting them (the CRDs not served in time, say): stop
		// them, or they outlive the process.
		err = fmt.Errorf("starting envtest (assets %s): %w", assets, err)
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping what started: %w", stopErr))
		}
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	e := &Env{Config: cfg, Client: c, Scheme: scheme, Schema: opts.Schema, startSchema: opts.Schema, env: env}
	if err := e.startWebhooks(ctx, opts.Schema); err != nil {
		_ = e.Stop()
		return nil, err
	}
	return e, nil
}

// startWebhooks runs CAPZ's webhooks for the schema's release, registers
// them and waits until the API server calls them (webhooks.go).
func (e *Env) startWebhooks(ctx context.Context, s Schema) error {
	if e.webhookDir == "" {
		dir, err := os.MkdirTemp("", "capz-webhooks-")
		if err != nil {
			return err
		}
		e.webhookDir = dir
		if err := e.WriteKubeconfigFor(filepath.Join(dir, "kubeconfig"), "capz-webhooks", "system:masters"); err != nil {
			return err
		}
	}
	opts := &e.env.WebhookInstallOptions
	hostPort := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	muts, vals, err := capzWebhookConfigs(ctx, s.CAPZVersion(), hostPort, opts.LocalServingCAData)
	if err != nil {
		return err
	}
	w, err := startCAPZWebhooks(ctx, s.CAPZVersion(), filepath.Join(e.webhookDir, "kubeconfig"), opts)
	if err != nil {
		return err
	}
	e.webhooks = w
	if err := installCAPZWebhooks(ctx, e.Client, muts, vals); err != nil {
		return fmt.Errorf("installing CAPZ %s's webhook configurations: %w", s.CAPZVersion(), err)
	}
	return w.waitServing(ctx, e.Client)
}

// StartT starts an environment for one test and stops it in t.Cleanup. It
// fails the test, never skips it, when the environment cannot start.
func StartT(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("test environment: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test environment: %v", err)
		}
	})
	return e
}

// Stop stops CAPZ's webhooks, the API server and etcd and removes their
// data. It reports a webhook server that died during the test. A pooled
// environment is instead emptied for the next test, or stops in the
// background, and Main reports its errors (pool.go).
func (e *Env) Stop() error {
	if e.pooled {
		giveBack(e)
		return nil
	}
	return e.stop()
}

func (e *Env) stop() error {
	var errs []error
	if e.webhooks != nil {
		errs = append(errs, e.webhooks.stop())
	}
	if e.webhookDir != "" {
		errs = append(errs, os.RemoveAll(e.webhookDir))
	}
	errs = append(errs, e.env.Stop())
	return errors.Join(errs...)
}

// WriteKubeconfig writes a kubeconfig for the administrator user to path, for
// processes that the test starts (the operator binary, for instance).
func (e *Env) WriteKubeconfig(path string) error {
	return e.WriteKubeconfigFor(path, "test-admin", "system:masters")
}

// WriteKubeconfigFor writes a kubeconfig for a user with a client
// certificate. Name it "system:serviceaccount:<ns>:<name>" with the group
// "system:serviceaccounts" to act as a ServiceAccount under RBAC.
func (e *Env) WriteKubeconfigFor(path, name string, groups ...string) error {
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

// upgradeWebhooks replaces CAPZ's webhook server and configurations with
// those of the schema's release, if it changed.
func (e *Env) upgradeWebhooks(ctx context.Context, s Schema) error {
	if e.webhooks != nil && e.webhooks.version == s.CAPZVersion() {
		return nil
	}
	if e.webhooks != nil {
		if err := e.webhooks.stop(); err != nil {
			return err
		}
		e.webhooks = nil
	}
	return e.startWebhooks(ctx, s)
}

// ErrNoAssets says that the envtest binaries have not been built.
var ErrNoAssets = errors.New("envtest binaries not found: run `make envtest-assets` (or `make test`, which runs it first)")

// AssetsDir returns the directory that holds kube-apiserver and etcd:
// KUBEBUILDER_ASSETS if set, else the setup-envtest layout that
// hack/envtest/build.sh writes to.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		data := os.Getenv("XDG_DATA_HOME")
		if data == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			data = filepath.Join(home, ".local", "share")
		}
		dir = filepath.Join(data, "kubebuilder-envtest", "k8s",
			fmt.Sprintf("%s-%s-%s", K8sVersion, runtime.GOOS, runtime.GOARCH))
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if !fileExists(filepath.Join(dir, bin)) {
			return "", fmt.Errorf("%w (looked for %s in %s)", ErrNoAssets, bin, dir)
		}
	}
	return dir, nil
}

// ownCRDDir returns the repository's config/crd/bases if it holds any CRD.
func ownCRDDir() string {
	root := repoRoot()
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, "config", "crd", "bases")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			return dir
		}
	}
	return ""
}

// repoRoot finds the module root above the working directory; go test runs
// each test binary in its package's directory.
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// InstallSchema replaces the AzureCluster CRD with the schema's, as a CAPZ
// upgrade does; objects keep what they hold. The API server serves the new
// schema a moment later: callers wait for what they write to be kept. When
// the release changes, CAPZ's webhooks are replaced by the new release's,
// and InstallSchema returns once the API server calls them; between the two
// servers, writes of CAPZ kinds fail, as during a CAPZ rollout.
func (e *Env) InstallSchema(ctx context.Context, s Schema) error {
	crds, err := capzAndCAPICRDs(ctx, s)
	if err != nil {
		return err
	}
	for _, want := range crds {
		if want.Spec.Names.Kind != "AzureCluster" {
			continue
		}
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: want.Name}, got); err != nil {
			return err
		}
		got.Spec = want.Spec
		if err := e.Client.Update(ctx, got); err != nil {
			return err
		}
		e.Schema = s
		return e.upgradeWebhooks(ctx, s)
	}
	return fmt.Errorf("schema %s has no AzureCluster CRD", s)
}
