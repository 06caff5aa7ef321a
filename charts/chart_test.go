package charts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	chartDir  = "azure-private-endpoint-operator"
	namespace = "apeo-system"
	release   = "apeo"
	// The ServiceAccount the chart creates for release "apeo".
	serviceAccount = "apeo-azure-private-endpoint-operator"
)

func helm(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("..", "bin", "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm not found at %s: `make test` builds bin/helm from hack/helm (or set HELM): %v", bin, err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

var (
	renderOnce sync.Once
	rendered   []*unstructured.Unstructured
	renderErr  error
)

// render renders the chart with the CI values, once.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	renderOnce.Do(func() {
		out := helm(t, "template", release, chartDir, "--namespace", namespace, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"))
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				return
			} else if err != nil {
				renderErr = err
				return
			}
			if len(u.Object) > 0 {
				rendered = append(rendered, u)
			}
		}
	})
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return rendered
}

func find(t *testing.T, kind string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, u := range render(t) {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the chart renders no %s", kind)
	}
	return out
}

// TestChartPublishSecrets: only privateEndpoints.publishSecrets grants the
// operator the right to write Secrets, and turns on --publish-secrets with
// it; by default neither.
func TestChartPublishSecrets(t *testing.T) {
	if args := strings.Join(containerArgs(t), " "); !strings.Contains(args, "--publish-secrets=false") {
		t.Errorf("by default the chart should run without --publish-secrets: %s", args)
	}
	for _, u := range find(t, "ClusterRole") {
		if strings.HasSuffix(u.GetName(), "-publish-secrets") {
			t.Errorf("by default the chart renders %s", u.GetName())
		}
	}
	out := helm(t, "template", release, chartDir, "--namespace", namespace, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"),
		"--set", "privateEndpoints.publishSecrets=true", "--show-only", "templates/clusterrole-publish-secrets.yaml")
	for _, want := range []string{"kind: ClusterRole\n", "kind: ClusterRoleBinding", "resources: [secrets]", "verbs: [create, patch, delete]"} {
		if !strings.Contains(out, want) {
			t.Errorf("with publishSecrets the chart lacks %q:\n%s", want, out)
		}
	}
	out = helm(t, "template", release, chartDir, "--namespace", namespace, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"),
		"--set", "privateEndpoints.publishSecrets=true", "--show-only", "templates/deployment.yaml")
	if !strings.Contains(out, "--publish-secrets=true") {
		t.Errorf("with publishSecrets the operator does not get --publish-secrets=true")
	}
}

// TestChartClientLimit: kubeAPI.qps -1 reaches the operator as
// --kube-api-qps=-1 (no client-side limit); 0 and other negative values,
// which the operator refuses, are refused by the values schema before.
func TestChartClientLimit(t *testing.T) {
	out := helm(t, "template", release, chartDir, "--namespace", namespace, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"),
		"--set", "kubeAPI.qps=-1", "--show-only", "templates/deployment.yaml")
	if !strings.Contains(out, "--kube-api-qps=-1\n") {
		t.Errorf("kubeAPI.qps=-1 does not reach the operator as --kube-api-qps=-1:\n%s", out)
	}
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("..", "bin", "helm")
	}
	for _, qps := range []string{"0", "-5"} {
		out, err := exec.Command(bin, "template", release, chartDir, "--namespace", namespace, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"),
			"--set", "kubeAPI.qps="+qps).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "qps") {
			t.Errorf("kubeAPI.qps=%s: want the values schema to refuse it, naming qps; err=%v\n%s", qps, err, out)
		}
	}
}

// TestChartLints runs helm lint --strict with the CI values.
func TestChartLints(t *testing.T) {
	out := helm(t, "lint", "--strict", chartDir, "-f", filepath.Join(chartDir, "ci", "test-values.yaml"))
	if !strings.Contains(out, "0 chart(s) failed") {
		t.Errorf("helm lint:\n%s", out)
	}
}

// TestChartRefusesMissingManagementCluster: the values schema names the
// missing value.
func TestChartRefusesMissingManagementCluster(t *testing.T) {
	bin := os.Getenv("HELM")
	if bin == "" {
		bin = filepath.Join("..", "bin", "helm")
	}
	out, err := exec.Command(bin, "template", release, chartDir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "managementCluster") {
		t.Errorf("rendering without managementCluster: err=%v\n%s", err, out)
	}
}

// TestChartCRDsMatchGenerated: the chart ships exactly the CRDs
// controller-gen generated (make generate copies them).
func TestChartCRDsMatchGenerated(t *testing.T) {
	generated, err := filepath.Glob("../config/crd/bases/*.yaml")
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRDs: %v", err)
	}
	shipped, _ := filepath.Glob("azure-private-endpoint-operator/crds/*.yaml")
	if len(shipped) != len(generated) {
		t.Errorf("the chart ships %v, generated are %v: run make generate", shipped, generated)
	}
	for _, g := range generated {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(filepath.Join("azure-private-endpoint-operator/crds", filepath.Base(g)))
		if err != nil || !bytes.Equal(want, got) {
			t.Errorf("%s differs from the chart's copy (%v): run make generate", g, err)
		}
	}
}

// TestChartRulesMatchGenerated: the chart grants exactly the rules
// controller-gen generated from the controllers (make generate copies them).
func TestChartRulesMatchGenerated(t *testing.T) {
	for _, c := range []struct{ generated, chart string }{
		{"../config/rbac/role.yaml", "azure-private-endpoint-operator/files/clusterrole-rules.yaml"},
		{"../config/rbac/leader_election_role.yaml", "azure-private-endpoint-operator/files/leader-election-rules.yaml"},
		{"../config/rbac/mc_namespace_role.yaml", "azure-private-endpoint-operator/files/mc-namespace-rules.yaml"},
	} {
		raw, err := os.ReadFile(c.generated)
		if err != nil {
			t.Fatal(err)
		}
		var role struct {
			Rules []any `json:"rules"`
		}
		if err := yaml.Unmarshal(raw, &role); err != nil {
			t.Fatal(err)
		}
		raw, err = os.ReadFile(c.chart)
		if err != nil {
			t.Fatal(err)
		}
		var rules []any
		if err := yaml.Unmarshal(raw, &rules); err != nil {
			t.Fatal(err)
		}
		want, _ := yaml.Marshal(role.Rules)
		got, _ := yaml.Marshal(rules)
		if len(role.Rules) == 0 || string(want) != string(got) {
			t.Errorf("%s differs from %s: run make generate\nwant:\n%s\ngot:\n%s", c.chart, c.generated, want, got)
		}
	}
}

// TestChartExposesEveryFlag: every flag of docs/flags.md (generated from the
// binary, and tested current) is set by the Deployment, except --kubeconfig,
// which in-cluster runs do not need.
func TestChartExposesEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../docs/flags.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)`.*$").FindAllStringSubmatch(string(doc), -1)
	if len(flags) < 30 {
		t.Fatalf("found only %d flags in docs/flags.md", len(flags))
	}
	args := strings.Join(containerArgs(t), " ")
	for _, f := range flags {
		if f[1] == "kubeconfig" || strings.Contains(f[0], "Deprecated:") {
			continue // deprecated flags are aliases of flags the chart sets
		}
		if !strings.Contains(args, "--"+f[1]+"=") {
			t.Errorf("the chart does not set --%s", f[1])
		}
	}
}

func containerArgs(t *testing.T) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(find(t, "Deployment")[0].Object, "spec", "template", "spec", "containers")
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// TestChartInCluster applies the chart's RBAC to a real API server, checks
// with SubjectAccessReviews what its ServiceAccount may and may not do,
// checks the pod against the restricted Pod Security Standard, and runs the
// operator binary as that ServiceAccount (with leader election) until it
// has wired a workload cluster.
func TestChartInCluster(t *testing.T) {
	w := testworld.Start(t, testworld.Options{
		Ingress: map[string]capzsim.Ingress{testworld.IdentityNS + "/mc": {AutoApprovedSubscriptions: []string{"sub-wc"}}},
	})
	ctx := context.Background()
	w.Namespace(t, namespace)
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, u := range find(t, kind) {
			if err := w.Client.Create(ctx, u.DeepCopy()); err != nil {
				t.Fatalf("applying %s %s: %v", kind, u.GetName(), err)
			}
		}
	}
	t.Run("least privilege", func(t *testing.T) { checkAccess(t, w.Client) })
	t.Run("metrics readers", func(t *testing.T) { checkMetricsReaders(t, w.Client) })
	t.Run("restricted pod security", func(t *testing.T) { checkPodSecurity(t, w.Client) })
	t.Run("the operator works with exactly this RBAC", func(t *testing.T) { runAsServiceAccount(t, w) })
}

type access struct {
	verb, group, resource, subresource, namespace string
	allowed                                       bool
}

func checkAccess(t *testing.T, c client.Client) {
	capzGroup, capiGroup, plsGroup := "infrastructure.cluster.x-k8s.io", "cluster.x-k8s.io", "privatelink.giantswarm.io"
	for _, a := range []access{
		{"get", capzGroup, "azureclusters", "", "org-a", true},
		{"list", capzGroup, "azureclusters", "", "", true},
		{"watch", capzGroup, "azureclusters", "", "", true},
		{"patch", capzGroup, "azureclusters", "", "org-a", true},
		{"patch", capzGroup, "azureclusters", "status", "org-a", true},
		{"list", capzGroup, "azureclusteridentities", "", "", true},
		{"list", capiGroup, "clusters", "", "", true},
		{"get", "", "secrets", "", "org-giantswarm", true},
		{"create", "events.k8s.io", "events", "", "org-a", true},
		{"get", "coordination.k8s.io", "leases", "", namespace, true},
		{"update", "coordination.k8s.io", "leases", "", namespace, true},
		{"watch", plsGroup, "azureprivatelinkservices", "", "", true},
		{"create", plsGroup, "azureprivatelinkservices", "", "org-a", true},
		{"patch", plsGroup, "azureprivatelinkservices", "", "org-a", true},
		{"delete", plsGroup, "azureprivatelinkservices", "", "org-a", true},
		{"patch", plsGroup, "azureprivatelinkservices", "status", "org-a", true},
		{"update", plsGroup, "azureprivatelinkservices", "finalizers", "org-a", true},
		{"get", "", "services", "", "org-a", true},
		{"list", plsGroup, "azureprivateendpoints", "", "", true},
		{"watch", plsGroup, "azureprivateendpoints", "", "", true},
		{"patch", plsGroup, "azureprivateendpoints", "", "org-a", true},
		{"patch", plsGroup, "azureprivateendpoints", "status", "org-a", true},
		{"update", plsGroup, "azureprivateendpoints", "finalizers", "org-a", true},
		// The control plane gate (--azure-cluster-gates): patch only.
		{"watch", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "", "", true},
		{"patch", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "", "org-a", true},
		// The identity guard (--protect-identities): its finalizer on
		// identities and their Secrets, by patch; nothing else.
		{"patch", capzGroup, "azureclusteridentities", "", "org-a", true},
		{"patch", "", "secrets", "", "org-giantswarm", true},
		// spec.publish: ConfigMaps and Services it creates and owns.
		// Secrets only with privateEndpoints.publishSecrets (off here).
		{"create", "", "configmaps", "", "org-a", true},
		{"patch", "", "configmaps", "", "org-a", true},
		{"delete", "", "services", "", "org-a", true},
		// Crossplane ProviderConfigs (--crossplane-provider-configs): the
		// older operator's finalizer on Clusters, by patch.
		{"patch", capiGroup, "clusters", "", "org-a", true},
		{"create", "azure.upbound.io", "providerconfigs", "", "", true},
		{"delete", "azure.upbound.io", "providerconfigs", "", "", true},
		// The metrics endpoint's authentication and authorization filter.
		{"create", "authentication.k8s.io", "tokenreviews", "", "", true},
		{"create", "authorization.k8s.io", "subjectaccessreviews", "", "", true},
		// The MC's endpoints beyond its AzureCluster: in its namespace only.
		{"create", plsGroup, "azureprivateendpoints", "", "org-giantswarm", true},
		{"delete", plsGroup, "azureprivateendpoints", "", "org-giantswarm", true},
		{"update", plsGroup, "azureprivateendpoints", "", "org-giantswarm", false},
		// What the controllers never do.
		{"create", plsGroup, "azureprivateendpoints", "", "org-a", false},
		{"delete", plsGroup, "azureprivateendpoints", "", "org-a", false},
		{"delete", capzGroup, "azureclusters", "", "org-a", false},
		{"create", capzGroup, "azureclusters", "", "org-a", false},
		{"update", capzGroup, "azureclusters", "", "org-a", false},
		{"update", capzGroup, "azureclusteridentities", "", "org-a", false},
		{"delete", capzGroup, "azureclusteridentities", "", "org-a", false},
		{"update", "", "secrets", "", "org-giantswarm", false},
		{"delete", "", "secrets", "", "org-giantswarm", false},
		{"update", capiGroup, "clusters", "", "org-a", false},
		{"delete", capiGroup, "clusters", "", "org-a", false},
		{"update", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "", "org-a", false},
		{"delete", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "", "org-a", false},
		{"patch", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanes", "status", "org-a", false},
		{"patch", "controlplane.cluster.x-k8s.io", "kubeadmcontrolplanetemplates", "", "org-a", false},
		{"list", "", "secrets", "", "", false},
		{"watch", "", "secrets", "", "org-giantswarm", false},
		{"create", "", "secrets", "", namespace, false},
		{"update", "coordination.k8s.io", "leases", "", "kube-system", false},
		{"get", "", "pods", "", namespace, false},
		{"list", "", "services", "", "", false},
		{"update", "", "services", "", "org-a", false},
		{"create", "apps", "deployments", "", namespace, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + namespace + ":" + serviceAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace,
			},
		}}
		if err := c.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != a.allowed {
			t.Errorf("%s %s/%s %s in %q: allowed=%v, want %v (%s)", a.verb, a.group, a.resource, a.subresource, a.namespace,
				sar.Status.Allowed, a.allowed, sar.Status.Reason)
		}
	}
}

// checkMetricsReaders: the subjects in metrics.readers may scrape /metrics
// (the non-resource URL the operator's filter authorizes), the operator's own
// ServiceAccount and everyone else may not.
func checkMetricsReaders(t *testing.T, c client.Client) {
	for _, r := range []struct {
		user   string
		groups []string
		want   bool
	}{
		{"system:serviceaccount:monitoring:prometheus", []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"}, true},
		{"system:serviceaccount:" + namespace + ":" + serviceAccount, []string{"system:serviceaccounts", "system:authenticated"}, false},
		{"someone", []string{"system:authenticated"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: r.user, Groups: r.groups,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := c.Create(context.Background(), sar); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(r.want, sar.Status.Allowed); diff != "" {
			t.Errorf("%s may GET /metrics (-want +got):\n%s%s", r.user, diff, sar.Status.Reason)
		}
	}
}

// checkPodSecurity creates the Deployment's pod, dry-run, in a namespace
// that enforces the restricted Pod Security Standard.
func checkPodSecurity(t *testing.T, c client.Client) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(find(t, "Deployment")[0].Object, "spec", "template", "spec")
	pod := &corev1.Pod{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(spec, &pod.Spec); err != nil {
		t.Fatal(err)
	}
	pod.Name, pod.Namespace = "operator", "restricted"
	pod.Spec.ServiceAccountName = "" // the ServiceAccount lives elsewhere; not what is checked
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("the operator's pod violates the restricted Pod Security Standard: %v", err)
	}
	// The check is real: a privileged pod is refused.
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
	if err := c.Create(ctx, bad, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a pod allowing privilege escalation was not refused: %v", err)
	}
}

// runAsServiceAccount runs the operator binary authenticated as the chart's
// ServiceAccount, with leader election in the release namespace, and waits
// for it to wire a private workload cluster.
func runAsServiceAccount(t *testing.T, w *testworld.World) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "sa.kubeconfig")
	if err := w.Env.WriteKubeconfigFor(kubeconfig, "system:serviceaccount:"+namespace+":"+serviceAccount,
		"system:serviceaccounts", "system:serviceaccounts:"+namespace); err != nil {
		t.Fatal(err)
	}
	bin, err := sandbox.BuildOperator(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	op, err := w.Sandbox.StartOperator(bin, filepath.Join(dir, "operator.log"),
		"--kubeconfig="+kubeconfig, "--management-cluster-name=mc", "--management-cluster-namespace="+testworld.IdentityNS,
		"--leader-elect", "--leader-election-namespace="+namespace, "--pending-recheck-interval=1s", "--mc-write-delay=200ms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.Stop(30 * time.Second)
		if t.Failed() {
			log, _ := os.ReadFile(op.LogFile)
			t.Logf("the operator's log:\n%s", log)
		}
	})
	ctx := context.Background()
	w.Namespace(t, "org-a")
	mc := testworld.Cluster{Namespace: testworld.IdentityNS, Name: "mc", Subscription: "sub-mc", Private: true, CIDR16: 1}
	wc := testworld.Cluster{Namespace: "org-a", Name: "wc", Subscription: "sub-wc", Private: true, CIDR16: 2,
		PrivateLinks: []testworld.PrivateLink{{Name: "wc-api", AllowedSubscriptions: []string{"sub-mc"}, AutoApprovedSubscriptions: []string{"sub-mc"}}}}
	for _, c := range []testworld.Cluster{mc, wc} {
		if err := w.Client.Create(ctx, c.Object(w.Env.Schema)); err != nil {
			t.Fatal(err)
		}
	}
	prefix := clusterlink.DefaultAnnotationPrefix + "/"
	testworld.Eventually(t, testworld.Timeout, "the operator, bound to the chart's RBAC, wires the WC", func(ctx context.Context) (bool, string) {
		if exited, err := op.Exited(); exited {
			log, _ := os.ReadFile(op.LogFile)
			t.Fatalf("the operator exited: %v\n%s", err, log)
		}
		u, err := w.Get(ctx, "org-a", "wc")
		if err != nil {
			return false, err.Error()
		}
		a := u.GetAnnotations()
		return a[prefix+clusterlink.AnnotationAPIServerIP] != "" && a[prefix+clusterlink.AnnotationMCIngressIP] != "", testworld.Describe(u)
	})
	if log, _ := os.ReadFile(op.LogFile); bytes.Contains(log, []byte("forbidden")) {
		t.Errorf("the operator was refused something its controllers do:\n%s", grepLines(string(log), "forbidden"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestDashboardUsesDocumentedMetrics: every operator metric the Grafana
// dashboard queries is one docs/operations.md documents.
func TestDashboardUsesDocumentedMetrics(t *testing.T) {
	dash, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`azure_private_endpoint_operator_[a-z_]+`).FindAllString(string(dash), -1)
	if len(names) == 0 {
		t.Fatal("the dashboard queries no operator metric")
	}
	for _, n := range names {
		if !strings.Contains(string(readme), "`"+n+"`") {
			t.Errorf("the dashboard queries %s, which docs/operations.md does not document", n)
		}
	}
}

// TestChartPrometheusRule: prometheusRule.enabled renders the alerts; each
// has a severity, a text and a duration where it should wait, queries
// only metrics docs/operations.md documents (or controller-runtime's), and
// only the release's namespace, so that another operator's metrics in the
// same Prometheus never fire it.
func TestChartPrometheusRule(t *testing.T) {
	rules := find(t, "PrometheusRule")
	if len(rules) != 1 || rules[0].GetNamespace() != namespace {
		t.Fatalf("PrometheusRules: %d, namespace %q", len(rules), rules[0].GetNamespace())
	}
	docs, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	var alerts []string
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		rs, _, _ := unstructured.NestedSlice(gm, "rules")
		for _, r := range rs {
			m, _ := r.(map[string]any)
			alerts = append(alerts, checkAlert(t, m, string(docs)))
		}
	}
	if len(alerts) < 6 {
		t.Errorf("alerts %v", alerts)
	}
	// Off by default.
	if out := helm(t, "template", release, chartDir, "--namespace", namespace, "--set", "managementCluster.name=mc,managementCluster.namespace=org-giantswarm"); strings.Contains(out, "kind: PrometheusRule") {
		t.Error("the default values render a PrometheusRule")
	}
}

// selector is a metric with its label matchers in a PromQL expression.
var selector = regexp.MustCompile(`([a-z_]+)\{[^}]*\}`)

// checkAlert checks one alerting rule (see TestChartPrometheusRule) and
// returns its name.
func checkAlert(t *testing.T, m map[string]any, docs string) string {
	t.Helper()
	alert, _ := m["alert"].(string)
	expr, _ := m["expr"].(string)
	severity, _, _ := unstructured.NestedString(m, "labels", "severity")
	description, _, _ := unstructured.NestedString(m, "annotations", "description")
	if !slices.Contains([]string{"info", "warning", "critical"}, severity) || description == "" || strings.Contains(description, "{{ .") {
		t.Errorf("%s: severity %q, description %q", alert, severity, description)
	}
	if _, waits := m["for"]; !waits && severity != "info" {
		t.Errorf("%s fires at the first evaluation: no for", alert)
	}
	found := selector.FindAllStringSubmatch(expr, -1)
	if len(found) == 0 {
		t.Errorf("%s: no metric selector in %q", alert, expr)
	}
	for _, s := range found {
		if !strings.Contains(s[0], `namespace="`+namespace+`"`) {
			t.Errorf("%s: %s is not scoped to the release's namespace", alert, s[0])
		}
		if strings.HasPrefix(s[1], "azure_private_endpoint_operator_") && !strings.Contains(docs, "`"+s[1]+"`") {
			t.Errorf("%s queries %s, which docs/operations.md does not document", alert, s[1])
		}
	}
	return alert
}
