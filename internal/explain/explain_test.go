package explain_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/docgen"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

func TestMain(m *testing.M) { testenv.Main(m) }

const (
	mcSub = "11111111-1111-1111-1111-111111111111"
	wcSub = "22222222-2222-2222-2222-222222222222"
	mcNS  = "org-giantswarm"
	wcNS  = "org-a"
	// baseDomain is DNS mode's: the wired cluster's API is
	// api.wired.<baseDomain> in the MC's network, the MC's ingress
	// *.mc.<baseDomain> in the cluster's.
	baseDomain = "example.internal"
)

var mcKey = types.NamespacedName{Namespace: mcNS, Name: "mc"}

func wcCluster(name string, cidr int, autoApprove bool) testworld.Cluster {
	link := testworld.PrivateLink{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}}
	if autoApprove {
		link.AutoApprovedSubscriptions = []string{mcSub}
	}
	return testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: cidr, PrivateLinks: []testworld.PrivateLink{link}}
}

// TestExplain: against a running operator in the test world, explain
// says a wired cluster is wired and, for each way a cluster waits, where
// it stops, with the operator's reason and what to change.
func TestExplain(t *testing.T) {
	ctx := context.Background()
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	noLinks := testworld.Cluster{Namespace: wcNS, Name: "nolinks", Subscription: wcSub, Private: true, CIDR16: 13}
	paused := wcCluster("paused", 14, true)
	// notAllowed's link does not allow the MC's subscription; clash-b's
	// link has clash-a's name; the MC holds an entry of taken's name for
	// someone else; refused names a base domain the operator does not
	// allow; a cluster named like the MC would shadow the MC's own domain.
	notAllowed := wcCluster("notallowed", 15, true)
	notAllowed.PrivateLinks[0].AllowedSubscriptions = []string{wcSub}
	clashA, clashB := wcCluster("clash-a", 16, true), wcCluster("clash-b", 17, true)
	clashA.PrivateLinks[0].Name, clashB.PrivateLinks[0].Name = "clash-api-privatelink", "clash-api-privatelink"
	annotated := map[string]map[string]string{
		"paused":  {capz.PausedAnnotation: ""},
		"broken":  {capzsim.BrokenLinksAnnotation: "true"},
		"refused": {clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.BaseDomainAnnotation: "tenant.example"},
	}
	for _, c := range []testworld.Cluster{
		{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10},
		wcCluster("wired", 11, true), wcCluster("manual", 12, false), noLinks, paused,
		notAllowed, clashA, clashB, wcCluster("taken", 18, true), wcCluster("broken", 19, true),
		wcCluster("refused", 20, true), wcCluster("mc", 21, true),
	} {
		u := c.Object(testenv.SchemaFork)
		u.SetAnnotations(annotated[c.Name])
		if c.Namespace == mcNS {
			holdForSomeoneElse(u, "taken-api-privatelink-privateendpoint")
		}
		if err := w.Client.Create(ctx, u, client.FieldOwner("kubectl-edit")); err != nil {
			t.Fatal(err)
		}
	}
	// Before the operator runs: CAPZ's part is done, the operator's
	// verdicts are missing.
	o := explain.Options{ManagementCluster: mcKey}
	if r := poll(ctx, t, "wired before the operator", o, w, "wired", func(r explain.Report) bool { return r.Reason == explain.ReasonConditionsMissing }); r.StoppedAt != "private links ready" {
		t.Errorf("wired before the operator: %+v", r)
	}
	// DNS mode on, rereading its records only hourly: the Azure part of
	// explain finds records changed behind the operator's back.
	stop := w.StartOperator(t, clusterlink.Options{ManagementCluster: mcKey, DNS: clusterlink.DNSConfig{
		Enabled: true, BaseDomain: baseDomain, Check: time.Hour, ReadsPer5m: -1, WritesPer5m: -1}})
	defer stop()

	// until waits for the operator to get a cluster to where explain says.
	until := func(name string, want func(explain.Report) bool) explain.Report {
		t.Helper()
		return poll(ctx, t, name, o, w, name, want)
	}
	stoppedWith := func(reason string) func(explain.Report) bool {
		return func(r explain.Report) bool { return r.Reason == reason }
	}

	wired := until("wired", func(r explain.Report) bool { return r.Wired })
	for _, s := range wired.Steps {
		if s.State != explain.StateOK && s.State != explain.StateSkipped {
			t.Errorf("wired: step %q is %s: %s", s.Name, s.State, s.Detail)
		}
	}
	manual := until("manual", stoppedWith(clusterlink.ReasonEndpointPending))
	if manual.StoppedAt != "private links ready" || manual.Wired || !strings.Contains(manual.Fix, "approve") || !strings.Contains(manual.Message, "manual-api-privatelink") {
		t.Errorf("manual: %+v", manual)
	}
	if r := until("nolinks", stoppedWith(explain.ReasonNoPrivateLinks)); r.StoppedAt != "private links" || !strings.Contains(r.Fix, "--manage-private-link-services") {
		t.Errorf("nolinks: %+v", r)
	}
	if r := until("paused", stoppedWith(explain.ReasonPaused)); r.StoppedAt != "not paused" {
		t.Errorf("paused: %+v", r)
	}
	if r := until("gone", stoppedWith(explain.ReasonNotFound)); r.StoppedAt != "cluster" {
		t.Errorf("gone: %+v", r)
	}
	for _, tc := range []struct{ name, reason, at, says string }{
		{"broken", explain.ReasonPrivateLinksWait, "CAPZ's private links", "PrivateLinksReady"},
		{"notallowed", clusterlink.ReasonSubscriptionNotAllowed, "private links ready", "notallowed-api-privatelink"},
		{"clash-b", clusterlink.ReasonNameConflict, "private links ready", "clash-api-privatelink-privateendpoint"},
		{"taken", clusterlink.ReasonPrivateEndpointNameTaken, "private links ready", "taken-api-privatelink-privateendpoint"},
		{"refused", wiringdns.ReasonDNSNameRefused, "private DNS ready", "tenant.example"},
		{"mc", wiringdns.ReasonDNSNameReserved, "private DNS ready", "mc." + baseDomain},
	} {
		r := until(tc.name, stoppedWith(tc.reason))
		if r.StoppedAt != tc.at || r.Wired || r.Fix == "" || !strings.Contains(r.Message, tc.says) {
			t.Errorf("%s: %+v; want a stop at %q whose message names %q", tc.name, r, tc.at, tc.says)
		}
	}
	checkOptions(ctx, t, w.Client, o)
	checkPlugin(t, w.Client)
	checkAzure(ctx, t, w)
}

// poll waits until explain says of the workload cluster name what want
// accepts, and checks it against the troubleshooting table.
func poll(ctx context.Context, t *testing.T, what string, o explain.Options, w *testworld.World, name string, want func(explain.Report) bool) explain.Report {
	t.Helper()
	var r explain.Report
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		r, err = explain.Explain(ctx, w.Client, types.NamespacedName{Namespace: wcNS, Name: name}, o)
		return err == nil && want(r), nil
	})
	if err != nil {
		t.Fatalf("%s: %v; last report %+v", what, err, r)
	}
	checkTable(t, what, r)
	return r
}

// holdForSomeoneElse gives the MC an entry of name, to its own ingress
// service, that the field manager creating it holds (not the operator).
func holdForSomeoneElse(mc *unstructured.Unstructured, name string) {
	subnets, _, _ := unstructured.NestedSlice(mc.Object, "spec", "networkSpec", "subnets")
	nodes, _ := subnets[len(subnets)-1].(map[string]any)
	nodes["privateEndpoints"] = []any{map[string]any{
		"name": name,
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 name + "-connection",
			"privateLinkServiceID": "/subscriptions/" + mcSub + "/resourceGroups/" + mc.GetName() + "-rg/providers/Microsoft.Network/privateLinkServices/" + mc.GetName() + "-ingress-privatelink",
		}},
	}}
	_ = unstructured.SetNestedSlice(mc.Object, subnets, "spec", "networkSpec", "subnets")
}

// checkTable: where a report stops is where the troubleshooting table
// says its reason stops.
func checkTable(t *testing.T, name string, r explain.Report) {
	t.Helper()
	if !r.Wired && !explain.StopsHere(r.Reason, r.StoppedAt) {
		t.Errorf("%s: stopped at %q with %s: the troubleshooting table says otherwise", name, r.StoppedAt, r.Reason)
	}
}

// checkOptions: what the operator's settings change, and the MC found
// from the entries.
func checkOptions(ctx context.Context, t *testing.T, c client.Reader, o explain.Options) {
	t.Helper()
	filtered, err := explain.Explain(ctx, c, types.NamespacedName{Namespace: wcNS, Name: "wired"}, explain.Options{ManagementCluster: mcKey, WatchFilter: "blue"})
	if err != nil || filtered.Reason != explain.ReasonNotSelected || filtered.Wired {
		t.Errorf("a cluster without the watch filter's label: %+v, %v", filtered, err)
	}
	// The MC: its own condition says its entries are written (the
	// entry held for someone else keeps only taken waiting, which taken's
	// own condition says; the MC's says it too).
	if r, err := explain.Explain(ctx, c, mcKey, o); err != nil || r.StoppedAt != "workload clusters' entries" ||
		r.Reason != clusterlink.ReasonPrivateEndpointNameTaken || !strings.Contains(r.Message, wcNS+"/taken") || !explain.StopsHere(r.Reason, r.StoppedAt) {
		t.Errorf("the MC: %+v, %v", r, err)
	}
	if r, err := explain.Explain(ctx, c, types.NamespacedName{Namespace: wcNS, Name: "wired"}, explain.Options{ManagementCluster: types.NamespacedName{Namespace: mcNS, Name: "other"}}); err != nil || r.Reason != clusterlink.ReasonManagementClusterNotFound {
		t.Errorf("a management cluster that does not exist: %+v, %v", r, err)
	}
	// A tenant whose kubeconfig may not read the MC still gets the
	// operator's verdict on its own cluster.
	tenant := forbidden{Reader: c, namespace: mcNS}
	if r, err := explain.Explain(ctx, tenant, types.NamespacedName{Namespace: wcNS, Name: "manual"}, o); err != nil || r.Reason != clusterlink.ReasonEndpointPending {
		t.Errorf("a tenant without read access to the MC: %+v, %v", r, err)
	}
	if _, found, err := explain.FindManagementCluster(ctx, tenant, types.NamespacedName{Namespace: wcNS, Name: "wired"}); found || err != nil {
		t.Errorf("FindManagementCluster for a tenant who may not list every namespace: %v, %v", found, err)
	}
	mc, found, err := explain.FindManagementCluster(ctx, c, types.NamespacedName{Namespace: wcNS, Name: "wired"})
	if err != nil || !found || mc != mcKey {
		t.Errorf("FindManagementCluster = %v, %v, %v; want %v", mc, found, err, mcKey)
	}
}

// checkPlugin: what the plugin prints (the JSON is the report) and its
// exit codes.
func checkPlugin(t *testing.T, c client.Reader) {
	t.Helper()
	out, code := runPlugin(t, c, "explain", wcNS+"/manual", "-o", "json", "--management-cluster", mcKey.String())
	var r explain.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 3 || r.Reason != clusterlink.ReasonEndpointPending {
		t.Errorf("kubectl apeo explain -o json: exit %d, %v, %s", code, err, out)
	}
	// Text, and the management cluster found from the entries.
	out, code = runPlugin(t, c, "explain", wcNS+"/wired")
	if code != 0 || !strings.Contains(out, "org-a/wired is wired.") || !strings.Contains(out, "wired-api-privatelink-privateendpoint") {
		t.Errorf("kubectl apeo explain: exit %d\n%s", code, out)
	}
	if _, code := runPlugin(t, c, "explain", "wired"); code != 2 {
		t.Errorf("a key without namespace: exit %d, want 2", code)
	}
	t.Logf("kubectl apeo explain %s/manual:\n%s", wcNS, mustRun(t, c, "explain", wcNS+"/manual", "--management-cluster", mcKey.String()))
}

// forbidden answers as the API server does a tenant whose RBAC covers its
// own namespaces: Forbidden in namespace, and for lists across all.
type forbidden struct {
	client.Reader
	namespace string
}

func (f forbidden) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace == f.namespace {
		return apierrors.NewForbidden(schema.GroupResource{Group: "infrastructure.cluster.x-k8s.io", Resource: "azureclusters"}, key.Name, errors.New("tenant"))
	}
	return f.Reader.Get(ctx, key, obj, opts...)
}

func (f forbidden) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	if o.Namespace == "" || o.Namespace == f.namespace {
		return apierrors.NewForbidden(schema.GroupResource{Group: "infrastructure.cluster.x-k8s.io", Resource: "azureclusters"}, "", errors.New("tenant"))
	}
	return f.Reader.List(ctx, list, opts...)
}

// runPlugin runs the plugin with the world's client; it returns what it
// printed and its exit code.
func runPlugin(t *testing.T, c client.Reader, args ...string) (string, int) {
	t.Helper()
	var out, errOut strings.Builder
	code := explain.Main(context.Background(), args, &out, &errOut, func(string, string) (client.Reader, error) { return c, nil })
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), code
}

func mustRun(t *testing.T, c client.Reader, args ...string) string {
	t.Helper()
	out, _ := runPlugin(t, c, args...)
	return out
}

// TestReasonTableIsCurrent: docs/operations.md's table keyed by reason
// is the one explain prints fixes from (make generate rewrites it).
func TestReasonTableIsCurrent(t *testing.T) {
	docgen.Check(t, "../../docs/operations.md", "reasons", explain.ReasonTable())
}
