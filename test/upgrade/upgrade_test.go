//go:build upgrade

// Package upgrade_test runs an earlier revision of the operator binary on
// a world until everything is wired, replaces it with the binary of the
// work tree, and checks that nothing in Azure and nothing on the objects
// changes beyond status: `make test-upgrade` (not part of `make test`: it
// builds a second operator from git history, which a shallow clone lacks).
//
// APEO_UPGRADE_FROM names the earlier revision (default: fromRevision).
package upgrade_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// fromRevision is the commit before issue 39's first change (kubectl apeo
// explain, a5f958a): the release the operability work must upgrade from.
const fromRevision = "7f40ba6c58cd504164caebfaf228e2e5f02cb97b"

const (
	mcSub  = "11111111-1111-1111-1111-111111111111"
	wcSub  = "22222222-2222-2222-2222-222222222222"
	appSub = "33333333-3333-3333-3333-333333333333"
	mcNS   = testworld.IdentityNS
	wcNS   = "org-a"
	appNS  = "apps"
	apiAnn = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingAnn = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
)

var apps = testworld.ServiceNetworks{ProviderSub: mcSub, ProviderRG: "provider-rg", ProviderPrefix: "172.20",
	ConsumerSub: appSub, ConsumerRG: "consumer-rg", ConsumerPrefix: "10.9", LoadBalancer: "app-lb", Location: testworld.DefaultLocation}

// TestUpgrade: an MC with two wired WCs, a private link service and an
// endpoint to it (own zone, published ConfigMap) under the earlier
// binary; then the new binary, which must leave Azure as it is (no
// DELETE, the same resources and network interfaces) and every object's
// metadata and spec as they are.
func TestUpgrade(t *testing.T) {
	ctx := context.Background()
	from := os.Getenv("APEO_UPGRADE_FROM")
	if from == "" {
		from = fromRevision
	}
	oldBin := buildRevision(t, from)
	newBin, err := sandbox.BuildOperator(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	for _, ns := range []string{wcNS, appNS} {
		w.Namespace(t, ns)
	}
	apps.Seed(t, w.Sim)
	clusters := []testworld.Cluster{{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}}
	for i, name := range []string{"wc1", "wc2"} {
		clusters = append(clusters, testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: 20 + i,
			PrivateLinks: []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}})
	}
	for _, c := range clusters {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaFork)); err != nil {
			t.Fatal(err)
		}
	}
	createApps(t, w)

	old := start(t, w, oldBin, "old")
	for _, name := range []string{"wc1", "wc2"} {
		wired(t, w, name)
	}
	readyApp(t, w)
	reconciled(t, old, map[string]int{"workload-cluster": 2, "azureprivateendpoint": 1, "azureprivatelinkservice": 1})
	objectsBefore := objects(t, w)
	azureBefore := testworld.AzureState(w.Sim)
	if err := old.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the earlier operator: %v", err)
	}

	w.Sim.ResetCounters()
	upgraded := start(t, w, newBin, "new")
	// The new binary has looked at every object (a wired cluster is looked
	// at again only at the drift interval, 10 minutes), and at the
	// endpoint three times: two drift checks (5 s) after its first pass.
	reconciled(t, upgraded, map[string]int{"workload-cluster": 2, "management-cluster": 1, "azureprivateendpoint": 3, "azureprivatelinkservice": 1})
	for _, name := range []string{"wc1", "wc2"} {
		wired(t, w, name)
	}
	readyApp(t, w)

	counters := w.Sim.Counters()
	if n := counters.Sum("DELETE", "", 0, 999); n > 0 {
		t.Errorf("%d DELETE requests to Azure after the upgrade", n)
	}
	if diff := testworld.DiffMaps(azureBefore, testworld.AzureState(w.Sim)); diff != "" {
		t.Errorf("Azure changed with the upgrade:\n%s", diff)
	}
	if diff := testworld.DiffMaps(objectsBefore, objects(t, w)); diff != "" {
		t.Errorf("objects changed beyond status with the upgrade:\n%s", diff)
	}
	var writes []string
	for _, r := range counters.Requests {
		if r.Method == "PUT" || r.Method == "PATCH" || r.Method == "POST" {
			writes = append(writes, fmt.Sprintf("%s %s by %s: %d", r.Method, r.ResourceType, r.Principal, r.Count))
		}
	}
	t.Logf("upgrade from %s: after the swap %d ARM requests, writes %v", from[:min(len(from), 12)], counters.Total, writes)
}

// buildRevision builds the operator binary of a git revision of this
// repository from `git archive` (no work tree of the repository changes).
func buildRevision(t *testing.T, rev string) string {
	t.Helper()
	ctx := context.Background()
	root, err := sandbox.ModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", rev)
	out, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := archive.Start(); err != nil {
		t.Fatal(err)
	}
	if err := untar(out, src); err != nil {
		t.Fatal(err)
	}
	if err := archive.Wait(); err != nil {
		t.Fatalf("git archive %s (a shallow clone lacks it: fetch the history, or set APEO_UPGRADE_FROM): %v\n%s", rev, err, stderr.String())
	}
	bin := filepath.Join(t.TempDir(), "azure-private-endpoint-operator-"+rev[:min(len(rev), 12)])
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, sandbox.OperatorPackage)
	build.Dir = src
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", rev, err, msg)
	}
	return bin
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o750)
		case tar.TypeReg:
			err = writeFile(p, os.FileMode(h.Mode)&0o750|0o600, tr)
		}
		if err != nil {
			return err
		}
	}
}

// maxSourceFile bounds a file of the archive (the repository's largest
// are the generated CRDs, well below it).
const maxSourceFile = 64 << 20

func writeFile(p string, mode os.FileMode, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, maxSourceFile); err != nil && !errors.Is(err, io.EOF) {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func start(t *testing.T, w *testworld.World, bin, name string) *sandbox.Operator {
	t.Helper()
	op, err := w.Sandbox.StartOperator(bin, filepath.Join(t.TempDir(), name+".log"),
		"--management-cluster-name=mc", "--management-cluster-namespace="+mcNS,
		"--pending-recheck-interval=1s", "--mc-write-delay=200ms", "--private-endpoint-drift-interval=5s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.Stop(30 * time.Second)
		if t.Failed() {
			log, err := os.ReadFile(op.LogFile)
			lines := strings.Split(string(log), "\n")
			t.Logf("%s operator log (%d lines, %v), end:\n%s", name, len(lines), err, strings.Join(lines[max(0, len(lines)-40):], "\n"))
			if dir := os.Getenv("APEO_UPGRADE_LOGS"); dir != "" {
				_ = os.WriteFile(filepath.Join(dir, name+".log"), log, 0o600)
			}
		}
	})
	return op
}

// reconciled waits until each controller has finished at least n
// reconciles without error (controller-runtime's
// controller_runtime_reconcile_total).
func reconciled(t *testing.T, op *sandbox.Operator, want map[string]int) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "reconciles", func(ctx context.Context) (bool, string) {
		got, err := reconcileCounts(ctx, op.MetricsURL, want)
		if err != nil {
			return false, err.Error()
		}
		for c, n := range want {
			if got[c] < n {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
}

// reconcileCounts scrapes the reconciles without error of the named
// controllers.
func reconcileCounts(ctx context.Context, url string, controllers map[string]int) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	got := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "controller_runtime_reconcile_total{") || strings.Contains(line, `result="error"`) {
			continue
		}
		for c := range controllers {
			if strings.Contains(line, `controller="`+c+`"`) {
				var n float64
				_, _ = fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n)
				got[c] += int(n)
			}
		}
	}
	return got, nil
}

func createApps(t *testing.T, w *testworld.World) {
	t.Helper()
	ctx := context.Background()
	id := &v1alpha1.IdentityReference{Name: testworld.IdentityName, Namespace: testworld.IdentityNS}
	if err := w.Client.Create(ctx, &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "svc"},
		Spec: v1alpha1.AzurePrivateLinkServiceSpec{
			SubscriptionID: mcSub, ResourceGroup: apps.ProviderRG, Location: apps.Location, IdentityRef: id,
			Frontend:   v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: apps.LoadBalancer, FrontendIPConfigurationName: "fe"}},
			NATSubnet:  v1alpha1.NATSubnet{Name: "nat"},
			Visibility: []string{appSub}, AutoApproval: []string{appSub},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Create(ctx, &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "app"},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: appSub, ResourceGroup: apps.ConsumerRG, Location: apps.Location, SubnetID: apps.VNet(true) + "/subnets/pe", IdentityRef: id,
			PrivateLinkServiceRef: &v1alpha1.LocalObjectReference{Name: "svc"},
			DNS:                   &v1alpha1.PrivateEndpointDNS{ZoneName: "app.apps.internal"},
			Publish:               &v1alpha1.PrivateEndpointPublish{ConfigMapName: "app-endpoint"},
		},
	}); err != nil {
		t.Fatal(err)
	}
}

func readyApp(t *testing.T, w *testworld.World) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "the endpoint Ready and published", func(ctx context.Context) (bool, string) {
		ape := &v1alpha1.AzurePrivateEndpoint{}
		cm := &corev1.ConfigMap{}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "app"}, ape); err != nil {
			return false, err.Error()
		}
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: appNS, Name: "app-endpoint"}, cm); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(ape.Status.Conditions, v1alpha1.ConditionReady) && cm.Data["ipAddress"] != "", fmt.Sprintf("%+v %v", ape.Status.Conditions, cm.Data)
	})
}

func wired(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+" wired", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		ann := u.GetAnnotations()
		return ann[apiAnn] != "" && ann[ingAnn] != "" && clusterlink.HasCondition(u, clusterlink.ConditionGSPrivateLinksReady), testworld.Describe(u)
	})
}

// objects are the metadata (labels, annotations, finalizers, owners) and
// spec of every AzureCluster, AzurePrivateEndpoint and
// AzurePrivateLinkService, and the data of every ConfigMap of the apps
// namespace, by kind/namespace/name.
func objects(t *testing.T, w *testworld.World) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvk := range []struct{ group, version, kind string }{
		{capz.AzureClusterGVK.Group, capz.AzureClusterGVK.Version, "AzureCluster"},
		{v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "AzurePrivateEndpoint"},
		{v1alpha1.GroupVersion.Group, v1alpha1.GroupVersion.Version, "AzurePrivateLinkService"},
		{"", "v1", "ConfigMap"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(strings.TrimPrefix(gvk.group+"/"+gvk.version, "/"))
		list.SetKind(gvk.kind + "List")
		if err := w.Client.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			if gvk.kind == "ConfigMap" && u.GetNamespace() != appNS {
				continue
			}
			key := gvk.kind + " " + u.GetNamespace() + "/" + u.GetName()
			md, _ := u.Object["metadata"].(map[string]any)
			for _, f := range []string{"labels", "annotations", "finalizers", "ownerReferences"} {
				out[key+" "+f] = asJSON(t, md[f])
			}
			out[key+" spec"] = asJSON(t, u.Object["spec"])
			if gvk.kind == "ConfigMap" {
				out[key+" data"] = asJSON(t, u.Object["data"])
			}
		}
	}
	return out
}

// asJSON is v as JSON, map keys sorted.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
