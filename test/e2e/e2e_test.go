// Package e2e runs the operator binary, as users run it, against each CAPZ
// it supports: the fork, upstream CAPZ v1.23 (no private links; endpoints
// through ASO, left behind when removed) and upstream CAPZ v1.27 (private
// links and endpoints through ASO). For each it wires a private MC and a
// private WC both ways, the MC's endpoint waiting for the WC owner's manual
// approval (on v1.23 the operator's own service auto-approves the MC),
// removes the WC's link and deletes the WC.
package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	mcNS   = testworld.IdentityNS
	wcNS   = "org-a"
	mcSub  = "11111111-1111-1111-1111-111111111111"
	wcSub  = "22222222-2222-2222-2222-222222222222"
	prefix = clusterlink.DefaultAnnotationPrefix + "/"
)

var (
	apiAnn = prefix + clusterlink.AnnotationAPIServerIP
	ingAnn = prefix + clusterlink.AnnotationMCIngressIP
)

// TestMain removes the operator binary the tests share after them.
func TestMain(m *testing.M) {
	code := m.Run()
	sandbox.RemoveSharedOperator()
	os.Exit(code)
}

// startOperator starts the binary on the world's MC (org-giantswarm/mc)
// with short intervals, env added to the environment and extra flags; it
// stops with the test and shows the log's end when the test failed.
func startOperator(t *testing.T, w *testworld.World, bin string, env []string, extra ...string) *sandbox.Operator {
	t.Helper()
	args := append([]string{"--management-cluster-name=mc", "--management-cluster-namespace=" + mcNS,
		"--pending-recheck-interval=1s", "--mc-write-delay=200ms"}, extra...)
	op, err := w.StartOperatorWithEnv(bin, filepath.Join(t.TempDir(), "operator.log"), env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.Stop(30 * time.Second)
		if t.Failed() {
			log, _ := os.ReadFile(op.LogFile)
			t.Logf("operator log:\n%s", tail(string(log), 60))
		}
	})
	return op
}

func operatorBinary(t *testing.T) string {
	t.Helper()
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestCAPZFlavours(t *testing.T) {
	bin := operatorBinary(t)
	for _, tc := range []struct {
		schema testenv.Schema
		flavor capz.Flavor
		// managed: the WC declares no link; the operator makes one.
		managed bool
	}{
		{testenv.SchemaFork, capz.FlavorFork, false},
		{testenv.SchemaUpstream, capz.FlavorUpstream, true},
		{testenv.SchemaV127, capz.FlavorUpstreamPrivateLinks, false},
	} {
		t.Run(string(tc.schema), func(t *testing.T) { lifecycle(t, bin, tc.schema, tc.flavor, tc.managed) })
	}
}

func lifecycle(t *testing.T, bin string, schema testenv.Schema, flavor capz.Flavor, managed bool) {
	w := testworld.Start(t, testworld.Options{Schema: schema,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	ctx := context.Background()
	mc := testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}
	wc := testworld.Cluster{Namespace: wcNS, Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20}
	if !managed {
		// Visible to the MC, not auto-approving it: the owner approves.
		wc.PrivateLinks = []testworld.PrivateLink{{Name: "wc1-api-privatelink", AllowedSubscriptions: []string{mcSub}}}
	}
	for _, c := range []testworld.Cluster{mc, wc} {
		if err := w.Client.Create(ctx, c.Object(schema)); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	if managed {
		args = append(args, "--manage-private-link-services")
	}
	op := startOperator(t, w, bin, nil, args...)
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}

	// Detected from the CRDs, logged and exported.
	testworld.Eventually(t, testworld.Timeout, "the flavour in the metrics", func(ctx context.Context) (bool, string) {
		m := scrape(ctx, op.MetricsURL)
		want := fmt.Sprintf(`azure_private_endpoint_operator_capz_flavor{aso="true",flavor="%s"`, flavor)
		return strings.Contains(m, want), want
	})

	// MC -> WC: pending until the WC's owner approves. WC -> MC:
	// auto-approved.
	if !managed {
		approveConnection(t, w)
	}
	annotated(t, w, key, apiAnn, true)
	annotated(t, w, key, ingAnn, true)
	if got, want := annotations(t, w, key)[apiAnn], w.EndpointIP(t, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want %s", apiAnn, got, want)
	}
	if got, want := annotations(t, w, key)[ingAnn], w.EndpointIP(t, wcSub, "wc1-rg", "wc1-to-mc-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want %s", ingAnn, got, want)
	}

	// The WC's link goes (v1.23: the WC opts out of the managed service):
	// its MC endpoint goes, in spec and in Azure (v1.23: through its ASO
	// object, which CAPZ keeps).
	patch := `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`
	if managed {
		patch = `{"metadata":{"annotations":{"` + prefix + clusterlink.ManageAnnotation + `":"false"}}}`
	}
	u, err := w.Get(ctx, wcNS, "wc1")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	annotated(t, w, key, apiAnn, false)
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the MC's endpoint to the link gone", func(ctx context.Context) (bool, string) {
		_, azErr := pes.Get(ctx, "mc-rg", "wc1-api-privatelink-privateendpoint", nil)
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
		asoErr := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc1-api-privatelink-privateendpoint"}, obj)
		return azErr != nil && (schema == testenv.SchemaFork || apierrors.IsNotFound(asoErr)), fmt.Sprint(azErr, asoErr)
	})

	// The WC is deleted: released, and nothing of it is left in the MC.
	u, _ = w.Get(ctx, wcNS, "wc1")
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "wc1 released and gone", func(ctx context.Context) (bool, string) {
		_, err := w.Get(ctx, wcNS, "wc1")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	m, err := w.Get(ctx, mcNS, "mc")
	if err != nil {
		t.Fatal(err)
	}
	if s := testworld.Describe(m); strings.Contains(s, "wc1") {
		t.Errorf("the MC still holds something of wc1: %s", s)
	}
	if exited, err := op.Exited(); exited {
		t.Errorf("the operator exited: %v", err)
	}
}

// approveConnection approves, as the WC's owner, the pending connection of
// the MC's endpoint to the WC's private link service.
func approveConnection(t *testing.T, w *testworld.World) {
	t.Helper()
	plss := w.Network(t, wcSub).NewPrivateLinkServicesClient()
	var last string
	testworld.Eventually(t, testworld.Timeout, "the WC's connection pending, then approved", func(ctx context.Context) (bool, string) {
		pls, err := plss.Get(ctx, "wc1-rg", "wc1-api-privatelink", nil)
		if err != nil {
			if ctx.Err() != nil {
				return false, last
			}
			return false, err.Error()
		}
		for _, c := range pls.Properties.PrivateEndpointConnections {
			st := c.Properties.PrivateLinkServiceConnectionState
			if st == nil || st.Status == nil || !strings.Contains(strings.ToLower(*c.Properties.PrivateEndpoint.ID), "wc1-api-privatelink-privateendpoint") {
				continue
			}
			if *st.Status == "Approved" {
				return true, ""
			}
			st.Status, st.Description = new("Approved"), new("approved by the WC's owner")
			_, err := plss.UpdatePrivateEndpointConnection(ctx, "wc1-rg", "wc1-api-privatelink", *c.Name,
				armnetwork.PrivateEndpointConnection{Properties: c.Properties}, nil)
			return false, fmt.Sprint("approving: ", err)
		}
		var ids []string
		for _, c := range pls.Properties.PrivateEndpointConnections {
			if c.Properties != nil && c.Properties.PrivateEndpoint != nil {
				ids = append(ids, fmt.Sprint(*c.Properties.PrivateEndpoint.ID))
			}
		}
		u, _ := w.Get(ctx, mcNS, "mc")
		last = fmt.Sprint("no connection from the MC yet: ", ids, " ", testworld.Describe(u))
		return false, last
	})
}

func annotations(t *testing.T, w *testworld.World, key types.NamespacedName) map[string]string {
	t.Helper()
	u, err := w.Get(context.Background(), key.Namespace, key.Name)
	if err != nil {
		t.Fatal(err)
	}
	return u.GetAnnotations()
}

func annotated(t *testing.T, w *testworld.World, key types.NamespacedName, ann string, want bool) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%s present: %v", ann, want), func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return false, err.Error()
		}
		_, ok := u.GetAnnotations()[ann]
		return ok == want, testworld.Describe(u)
	})
}

func scrape(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
