package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// CAPZ's admission webhooks in the test world.
//
// In production every AzureCluster and AzureClusterIdentity write passes
// CAPZ's mutating (defaulting) and validating webhooks; a write CAPZ
// refuses fails there. The test world runs CAPZ's own webhook code, built
// from CAPZ's module at the release the schema installs
// (hack/capzwebhooks), as a process beside the API server, and registers
// it with the webhook configurations CAPZ publishes in that release
// (config/webhook/manifests.yaml), reduced to the kinds the test world has
// CRDs for. The fork's schema gets v1.23.0's webhooks, the fork's base:
// they keep the fork's privateLinks (controller-runtime's defaulter leaves
// fields its types do not know) and do not validate them.

// webhookResources are the CAPZ resources whose webhooks the test world
// serves: those it has CRDs for (capzCRDFiles), which are also the two
// kinds hack/capzwebhooks registers.
var webhookResources = map[string]bool{"azureclusters": true, "azureclusteridentities": true}

const (
	// webhookBuildLimit bounds building a release's webhook server on a
	// cold machine (about a minute on 2 cores, plus downloads).
	webhookBuildLimit = 10 * time.Minute
	// webhookReadyLimit bounds the wait until the API server calls a newly
	// started webhook server: generous for a loaded 2-core machine.
	webhookReadyLimit = 2 * time.Minute
	// webhookStopGrace is how long a stopping webhook server may take.
	webhookStopGrace = 10 * time.Second
	// webhookProbeNamespace holds the dry-run objects of the readiness probe.
	webhookProbeNamespace = "default"
)

// capzWebhookBinary returns the path of the webhook server of a CAPZ
// release (hack/capzwebhooks, built by hack/build-cached.sh with the
// release's module file).
func capzWebhookBinary(ctx context.Context, version string) (string, error) {
	modfile, err := capzModFile("capzwebhooks", version)
	if err != nil {
		return "", err
	}
	return hackBinary(ctx, webhookBuildLimit, "building CAPZ "+version+"'s webhooks", "capzwebhooks", modfile)
}

// capzModFile names the module file of a hack/ module that compiles CAPZ
// (capzwebhooks, capzmanager) pinning a CAPZ release: go.mod pins
// v1.27.0, go.v1.23.0.mod v1.23.0.
func capzModFile(module, version string) (string, error) {
	modfile := map[string]string{CAPZPrivateLinksVersion: "go.mod", CAPZVersion: "go.v1.23.0.mod"}[version]
	if modfile == "" {
		return "", fmt.Errorf("no module file of hack/%s pins CAPZ %s", module, version)
	}
	return modfile, nil
}

// capzWebhookConfigs reads the webhook configurations CAPZ publishes for a
// release, keeps the webhooks of webhookResources and points them at the
// local server (https://host:port/<CAPZ's path>, trusted through caData),
// as envtest does for the webhooks it installs.
func capzWebhookConfigs(ctx context.Context, version, hostPort string, caData []byte) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	dir, err := moduleDir(ctx, CAPZModule, version)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "config", "webhook", "manifests.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var muts []*admissionv1.MutatingWebhookConfiguration
	var vals []*admissionv1.ValidatingWebhookConfiguration
	docs, err := yamlDocs(path, raw)
	if err != nil {
		return nil, nil, err
	}
	for _, doc := range docs {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, m); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			m.Webhooks = localWebhooks(m.Webhooks, func(w *admissionv1.MutatingWebhook) ([]admissionv1.RuleWithOperations, *admissionv1.WebhookClientConfig) {
				return w.Rules, &w.ClientConfig
			}, hostPort, caData)
			m.Name = "capz-" + m.Name
			muts = append(muts, m)
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, v); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			v.Webhooks = localWebhooks(v.Webhooks, func(w *admissionv1.ValidatingWebhook) ([]admissionv1.RuleWithOperations, *admissionv1.WebhookClientConfig) {
				return w.Rules, &w.ClientConfig
			}, hostPort, caData)
			v.Name = "capz-" + v.Name
			vals = append(vals, v)
		}
	}
	if len(muts) != 1 || len(vals) != 1 || len(muts[0].Webhooks) == 0 || len(vals[0].Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s: want one mutating and one validating configuration with webhooks for %v", path, webhookResources)
	}
	return muts, vals, nil
}

// localWebhooks keeps the webhooks of webhookResources, pointed at the
// local server; parts gives a webhook's rules and client configuration.
func localWebhooks[W any](in []W, parts func(*W) ([]admissionv1.RuleWithOperations, *admissionv1.WebhookClientConfig), hostPort string, caData []byte) []W {
	var kept []W
	for i := range in {
		w := in[i]
		rules, cfg := parts(&w)
		if servesTestWorld(rules) {
			*cfg = localClientConfig(*cfg, hostPort, caData)
			kept = append(kept, w)
		}
	}
	return kept
}

func servesTestWorld(rules []admissionv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, res := range r.Resources {
			if webhookResources[res] {
				return true
			}
		}
	}
	return false
}

func localClientConfig(c admissionv1.WebhookClientConfig, hostPort string, caData []byte) admissionv1.WebhookClientConfig {
	path := ""
	if c.Service != nil && c.Service.Path != nil {
		path = *c.Service.Path
	}
	url := "https://" + hostPort + path
	return admissionv1.WebhookClientConfig{URL: &url, CABundle: caData}
}

// capzWebhooks is one running CAPZ webhook server.
type capzWebhooks struct {
	version string
	*Process
}

// startCAPZWebhooks starts the webhook server of a CAPZ release on the
// address and certificates envtest prepared for webhooks.
func startCAPZWebhooks(ctx context.Context, version, kubeconfig string, opts *envtest.WebhookInstallOptions) (*capzWebhooks, error) {
	bin, err := capzWebhookBinary(ctx, version)
	if err != nil {
		return nil, err
	}
	p, err := StartProcess("CAPZ "+version+"'s webhook server", "", nil, bin,
		"--kubeconfig", kubeconfig,
		"--host", opts.LocalServingHost,
		"--port", strconv.Itoa(opts.LocalServingPort),
		"--cert-dir", opts.LocalServingCertDir)
	if err != nil {
		return nil, err
	}
	return &capzWebhooks{version: version, Process: p}, nil
}

// stop ends the server; it reports a server that had died on its own.
func (w *capzWebhooks) stop() error { return w.Stop(webhookStopGrace) }

// waitServing waits until the API server calls the webhooks: a dry-run
// AzureCluster without spec.resourceGroup comes back defaulted by CAPZ (its
// name), and one without spec.identityRef is refused by CAPZ ("identityRef
// is required").
func (w *capzWebhooks) waitServing(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, webhookReadyLimit)
	defer cancel()
	var last error
	for {
		last = probeWebhooks(ctx, c)
		if last == nil {
			return nil
		}
		select {
		case <-w.Done():
			_, err := w.Exited()
			return fmt.Errorf("CAPZ %s's webhook server exited (%w): %s", w.version, err, w.Tail(64<<10))
		case <-ctx.Done():
			return fmt.Errorf("CAPZ %s's webhooks not called by the API server within %s: %w; server output: %s", w.version, webhookReadyLimit, last, w.Tail(64<<10))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func probeWebhooks(ctx context.Context, c client.Client) error {
	defaulted := probeAzureCluster("capz-webhook-probe")
	unstructured.RemoveNestedField(defaulted.Object, "spec", "resourceGroup")
	if err := c.Create(ctx, defaulted, client.DryRunAll); err != nil {
		return fmt.Errorf("dry-run create of a valid AzureCluster: %w", err)
	}
	if rg, _, _ := unstructured.NestedString(defaulted.Object, "spec", "resourceGroup"); rg != defaulted.GetName() {
		return fmt.Errorf("CAPZ's defaulting webhook not called yet (spec.resourceGroup %q)", rg)
	}
	refused := probeAzureCluster("capz-webhook-probe")
	unstructured.RemoveNestedField(refused.Object, "spec", "identityRef")
	err := c.Create(ctx, refused, client.DryRunAll)
	if err == nil {
		return errors.New("CAPZ's validating webhook not called yet (an AzureCluster without identityRef was accepted)")
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "identityRef is required") {
		return fmt.Errorf("dry-run create of an AzureCluster without identityRef: %w", err)
	}
	return nil
}

func probeAzureCluster(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
		"kind":       "AzureCluster",
		"metadata":   map[string]any{"name": name, "namespace": webhookProbeNamespace},
		"spec": map[string]any{
			"location":      "westeurope",
			"resourceGroup": name,
			"identityRef":   map[string]any{"kind": "AzureClusterIdentity", "name": "probe", "namespace": webhookProbeNamespace},
		},
	}}
	return u
}

// installCAPZWebhooks creates or replaces CAPZ's webhook configurations.
func installCAPZWebhooks(ctx context.Context, c client.Client, muts []*admissionv1.MutatingWebhookConfiguration, vals []*admissionv1.ValidatingWebhookConfiguration) error {
	for _, m := range muts {
		if err := createOrReplace(ctx, c, m, &admissionv1.MutatingWebhookConfiguration{}); err != nil {
			return err
		}
	}
	for _, v := range vals {
		if err := createOrReplace(ctx, c, v, &admissionv1.ValidatingWebhookConfiguration{}); err != nil {
			return err
		}
	}
	return nil
}

func createOrReplace(ctx context.Context, c client.Client, want, current client.Object) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(want), current)
	switch {
	case apierrors.IsNotFound(err):
		return c.Create(ctx, want)
	case err != nil:
		return err
	}
	want.SetResourceVersion(current.GetResourceVersion())
	return c.Update(ctx, want)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
