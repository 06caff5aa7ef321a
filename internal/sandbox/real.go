package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// The real-controller world (Options.RealControllers) runs, in place of
// capzsim and its ASO stand-in, Cluster API Provider Azure's own AzureCluster
// and ASOSecret controllers (hack/capzmanager) and Azure Service
// Operator's own controllers and webhooks for the kinds CAPZ uses
// (hack/asomanager), each in a process of its own. CAPZ knows Azure's
// well-known clouds only, so both reach the emulator as the public cloud
// (management.azure.com, login.microsoftonline.com) through an HTTPS proxy
// (StartCloudProxy), trusting its certificate through SSL_CERT_FILE. ASO's
// CRDs are served in all their versions, stored in ASO's hub version and
// converted by ASO's webhook, as in a cluster where ASO is installed.

const (
	// realStartLimit bounds the wait until ASO's webhooks answer.
	realStartLimit = 3 * time.Minute
	// realStopGrace is how long a stopping controller may take.
	realStopGrace = 30 * time.Second
	// asoNamespace is where the real ASO "runs" (POD_NAMESPACE).
	asoNamespace = "azureserviceoperator-system"
)

// RealControllers is what a real-controller world runs beside the API
// server.
type RealControllers struct {
	// Proxy is the HTTPS proxy the controllers reach the emulator through.
	Proxy *CloudProxy
	// ASO and CAPZ are the two controller processes; each logs to a file
	// in the sandbox's directory (aso.log; capz.log, capz-2.log after an
	// upgrade).
	ASO, CAPZ *testenv.Process

	env      []string // reach the emulator through the proxy
	opts     Options
	kubecfg  string
	upgrades int
}

// startRealControllers starts ASO, then CAPZ, through the cloud proxy.
func (sb *Sandbox) startRealControllers(ctx context.Context, opts Options) error {
	if err := realSchema(opts.Schema); err != nil {
		return err
	}
	if opts.CAPZMode != "" || len(opts.Ingress) > 0 || opts.KeepRemovedEndpoints || opts.CAPZResync > 0 || opts.CAPZConcurrency > 0 {
		return errors.New("sandbox: CAPZMode, Ingress, KeepRemovedEndpoints, CAPZResync and CAPZConcurrency are capzsim's; the real controllers have none of them (make an ingress in Azure as a test would)")
	}
	asoBin, err := testenv.RealASOBinary(ctx)
	if err != nil {
		return err
	}
	proxy, err := StartCloudProxy(strings.TrimPrefix(sb.Sim.URL(), "https://"), PublicCloudHosts)
	if err != nil {
		return err
	}
	env := []string{"HTTPS_PROXY=" + proxy.URL, "https_proxy=" + proxy.URL, "NO_PROXY=", "no_proxy=", "SSL_CERT_FILE=" + sb.CAFile}
	rc := &RealControllers{Proxy: proxy, env: env, opts: opts, kubecfg: sb.Kubeconfig}
	sb.Real = rc
	sb.stopCAPZ = rc.stop

	addr, err := FreeAddress()
	if err != nil {
		return err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	certDir, ca := sb.Env.WebhookServing()
	crds, err := testenv.RealASOCRDs(ctx, "https://"+addr+"/convert", ca)
	if err != nil {
		return err
	}
	if err := installCRDs(ctx, sb.Client, crds); err != nil {
		return err
	}
	if err := installASOWebhooks(ctx, sb.Client, crds, addr, ca); err != nil {
		return err
	}
	if err := sb.EnsureNamespace(ctx, asoNamespace); err != nil {
		return err
	}
	// As CAPZ installs ASO (config/aso/settings.yaml of CAPZ v1.23.0 and
	// v1.27.0 alike): its user agent suffix, and AZURE_SYNC_PERIOD empty,
	// so ASO's own default (1h, internal/config/vars.go) unless the world
	// sets one. CAPZ v1.23.0 installs ASO v2.13.0; this world runs v2.20.0
	// for both releases (docs/azuresim.md says why).
	asoEnv := append([]string{"POD_NAMESPACE=" + asoNamespace, "AZURE_USER_AGENT_SUFFIX=cluster-api-provider-azure/main"}, env...)
	if opts.ASOSyncPeriod > 0 {
		asoEnv = append(asoEnv, "AZURE_SYNC_PERIOD="+opts.ASOSyncPeriod.String())
	}
	rc.ASO, err = testenv.StartProcess("Azure Service Operator", filepath.Join(opts.Dir, "aso.log"), asoEnv, asoBin,
		"--kubeconfig", sb.Kubeconfig, "--webhook-host", host, "--webhook-port", port, "--webhook-cert-dir", certDir)
	if err != nil {
		return err
	}
	if err := waitASOWebhooks(ctx, sb.Client, rc.ASO); err != nil {
		return err
	}
	return rc.startCAPZ(ctx, opts.Schema)
}

// startCAPZ starts the CAPZ manager of a schema's release.
func (rc *RealControllers) startCAPZ(ctx context.Context, schema testenv.Schema) error {
	bin, err := testenv.RealCAPZBinary(ctx, schema)
	if err != nil {
		return err
	}
	log := "capz.log"
	if rc.upgrades > 0 {
		log = fmt.Sprintf("capz-%d.log", rc.upgrades+1)
	}
	rc.CAPZ, err = testenv.StartProcess("CAPZ "+schema.CAPZVersion(), filepath.Join(rc.opts.Dir, log), rc.env, bin,
		"--kubeconfig", rc.kubecfg, "--sync-period", durationOr(rc.opts.CAPZSyncPeriod, 10*time.Minute).String())
	return err
}

// realSchema refuses a schema whose CAPZ the world cannot run (the fork's
// is not a public module).
func realSchema(s testenv.Schema) error {
	if s != testenv.SchemaV127 && s != testenv.SchemaUpstream {
		return fmt.Errorf("sandbox: the real controllers are CAPZ v1.23.0's or v1.27.0's; the schema is %q", s)
	}
	return nil
}

// upgradeRealCAPZ replaces the running CAPZ with the manager of another
// release, as a CAPZ upgrade does: the old one stops, the API server gets
// the new release's AzureCluster CRD and webhooks, the new one starts. ASO
// keeps running.
func (sb *Sandbox) upgradeRealCAPZ(ctx context.Context, schema testenv.Schema) error {
	rc := sb.Real
	if err := realSchema(schema); err != nil {
		return err
	}
	if err := rc.CAPZ.Stop(realStopGrace); err != nil {
		return fmt.Errorf("stopping %s: %w", rc.CAPZ.Name, err)
	}
	if err := sb.Env.InstallSchema(ctx, schema); err != nil {
		return err
	}
	rc.upgrades++
	return rc.startCAPZ(ctx, schema)
}

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (rc *RealControllers) stop() error {
	var errs []error
	for _, p := range []*testenv.Process{rc.CAPZ, rc.ASO} {
		if p != nil {
			errs = append(errs, p.Stop(realStopGrace))
		}
	}
	if rc.Proxy != nil {
		errs = append(errs, rc.Proxy.Close())
	}
	return errors.Join(errs...)
}

// installCRDs creates CRDs, or replaces those the test API server
// installed already (the single-version PrivateEndpoint and
// PrivateLinkService capzsim's world uses), and waits until the API server
// serves them.
func installCRDs(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		err := c.Create(ctx, crd)
		if apierrors.IsAlreadyExists(err) {
			var cur apiextensionsv1.CustomResourceDefinition
			if err = c.Get(ctx, client.ObjectKey{Name: crd.Name}, &cur); err == nil {
				cur.Spec = crd.Spec
				err = c.Update(ctx, &cur)
			}
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, crd := range crds {
			if !served(ctx, c, crd) {
				return false, nil
			}
		}
		return true, nil
	})
}

// served tells whether the API server serves every version of crd.
func served(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) bool {
	var got apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
		return false
	}
	for _, cond := range got.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return len(got.Spec.Versions) == len(crd.Spec.Versions)
		}
	}
	return false
}

// installASOWebhooks registers ASO's defaulting and validating webhooks for
// every served version that is not a storage version, at the paths
// controller-runtime gives them (/mutate-<group with dashes>-<version>-<kind>).
func installASOWebhooks(ctx context.Context, c client.Client, crds []*apiextensionsv1.CustomResourceDefinition, addr string, ca []byte) error {
	mut := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "azureserviceoperator-mutating-webhook-configuration"}}
	val := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "azureserviceoperator-validating-webhook-configuration"}}
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if strings.HasSuffix(v.Name, "storage") {
				continue
			}
			g, kind := crd.Spec.Group, strings.ToLower(crd.Spec.Names.Kind)
			rule := admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule:       admissionv1.Rule{APIGroups: []string{g}, APIVersions: []string{v.Name}, Resources: []string{crd.Spec.Names.Plural}},
			}
			suffix := strings.ReplaceAll(g, ".", "-") + "-" + v.Name + "-" + kind
			mutURL, valURL := "https://"+addr+"/mutate-"+suffix, "https://"+addr+"/validate-"+suffix
			name := fmt.Sprintf("%s.%s.%s", v.Name, kind, g)
			mut.Webhooks = append(mut.Webhooks, admissionv1.MutatingWebhook{
				Name: "default." + name, Rules: []admissionv1.RuleWithOperations{rule}, FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ClientConfig: admissionv1.WebhookClientConfig{URL: &mutURL, CABundle: ca},
			})
			rule.Operations = append(rule.Operations, admissionv1.Delete)
			val.Webhooks = append(val.Webhooks, admissionv1.ValidatingWebhook{
				Name: "validate." + name, Rules: []admissionv1.RuleWithOperations{rule}, FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"}, ClientConfig: admissionv1.WebhookClientConfig{URL: &valURL, CABundle: ca},
			})
		}
	}
	if err := c.Create(ctx, mut); err != nil {
		return fmt.Errorf("ASO's mutating webhooks: %w", err)
	}
	if err := c.Create(ctx, val); err != nil {
		return fmt.Errorf("ASO's validating webhooks: %w", err)
	}
	return nil
}

// waitASOWebhooks waits until the API server calls ASO: a dry-run
// ResourceGroup without spec.azureName comes back with ASO's default (the
// object's name), stored through the conversion webhook.
func waitASOWebhooks(ctx context.Context, c client.Client, aso *testenv.Process) error {
	ctx, cancel := context.WithTimeout(ctx, realStartLimit)
	defer cancel()
	var last error
	for {
		rg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
			"metadata": map[string]any{"name": "aso-probe", "namespace": asoNamespace},
			"spec":     map[string]any{"location": "westeurope"},
		}}
		last = c.Create(ctx, rg, client.DryRunAll)
		if last == nil {
			if name, _, _ := unstructured.NestedString(rg.Object, "spec", "azureName"); name == "aso-probe" {
				return nil
			}
			last = fmt.Errorf("the probe ResourceGroup came back without ASO's default azureName: %v", rg.Object["spec"])
		}
		if gone, err := aso.Exited(); gone {
			return fmt.Errorf("ASO exited (%w); log %s ends: %s", err, aso.LogFile, aso.Tail(4096))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ASO's webhooks not called within %s: %w; log %s ends: %s", realStartLimit, last, aso.LogFile, aso.Tail(4096))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Processes are the controllers that run.
func (rc *RealControllers) Processes() []*testenv.Process {
	var out []*testenv.Process
	for _, p := range []*testenv.Process{rc.ASO, rc.CAPZ} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
