package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	ingressEP = "wc1-to-mc-privatelink-privateendpoint"
	gatewayEP = "wc1-to-mc-gateway-privateendpoint"
)

// TestLayoutSwitches takes one WC through the older operator's layouts: it
// is adopted from the older operator 0.5 (gateway only) unchanged, then
// switched to ingress+gateway, to ingress and back to gateway. During each
// switch, every state the API server showed (a watch) has the ingress
// annotation set to the IP of an endpoint in spec and in Azure, and an
// endpoint leaves spec only after the annotation holds the new one's IP.
func TestLayoutSwitches(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Gateway: true}}})
	w.Namespace(t, wcNS)
	ctx := context.Background()
	create(t, w, testenv.SchemaFork, mcCluster(true))
	wcKey := types.NamespacedName{Namespace: wcNS, Name: "wc1"}

	// The older operator 0.5 wired the WC: its gateway entry and annotation.
	obj := wcCluster("wc1", 20).Object(testenv.SchemaFork)
	subnets, _, _ := unstructured.NestedSlice(obj.Object, "spec", "networkSpec", "subnets")
	subnets[1].(map[string]any)["privateEndpoints"] = []any{map[string]any{
		"name": gatewayEP,
		"privateLinkServiceConnections": []any{map[string]any{
			"name":                 "wc1-to-mc-gateway-connection",
			"privateLinkServiceID": clusterlink.PrivateLinkServiceID(mcSub, "mc-rg", "mc-gateway-privatelink"),
		}},
	}}
	_ = unstructured.SetNestedSlice(obj.Object, subnets, "spec", "networkSpec", "subnets")
	obj.SetFinalizers([]string{clusterlink.Finalizer})
	if err := w.Client.Create(ctx, obj, client.FieldOwner(olderOperator)); err != nil {
		t.Fatal(err)
	}
	var gwIP string
	testworld.Eventually(t, testworld.Timeout, "CAPZ made the older operator's gateway endpoint", func(context.Context) (bool, string) {
		gwIP = azureIPIfAny(t, w, wcSub, "wc1-rg", gatewayEP)
		return gwIP != "", "no IP yet"
	})
	mergePatchAs(t, w, wcKey, olderOperator, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ingAnn, gwIP))

	// Gateway layout: adopted as it is.
	log := watchWC(t, w, wcKey)
	stop := operator(t, w, func(o *clusterlink.Options) { o.Layout = clusterlink.LayoutGateway })
	waitLayout(t, w, wcKey, []string{gatewayEP}, gatewayEP)
	if got := log.annotations(); slices.ContainsFunc(got, func(v string) bool { return v != gwIP }) {
		t.Errorf("adopting the gateway layout changed the annotation: %v (want only %s)", got, gwIP)
	}
	stop()

	// ingress+gateway, the ingress endpoint's IP annotated.
	log = watchWC(t, w, wcKey)
	stop = operator(t, w, func(o *clusterlink.Options) {
		o.Layout, o.IngressIPSource = clusterlink.LayoutIngressAndGateway, clusterlink.SourceIngress
	})
	waitLayout(t, w, wcKey, []string{gatewayEP, ingressEP}, ingressEP)
	log.check(t, "gateway -> ingress+gateway")
	stop()

	// ingress: the gateway entry (the older operator's and ours) goes.
	log = watchWC(t, w, wcKey)
	stop = operator(t, w)
	waitLayout(t, w, wcKey, []string{ingressEP}, ingressEP)
	log.check(t, "ingress+gateway -> ingress")
	waitEvent(t, w, wcKey, clusterlink.ReasonLayoutSwitched)
	stop()

	// gateway again: the gateway endpoint is made anew, and the ingress
	// one goes only once the annotation holds the new gateway IP.
	log = watchWC(t, w, wcKey)
	operator(t, w, func(o *clusterlink.Options) { o.Layout = clusterlink.LayoutGateway })
	waitLayout(t, w, wcKey, []string{gatewayEP}, gatewayEP)
	log.check(t, "ingress -> gateway")
	if !slices.Contains(log.annotations(), azureIP(t, w, wcSub, "wc1-rg", gatewayEP)) || len(slices.Compact(log.annotations())) < 2 {
		t.Errorf("the annotation did not move from the ingress to the gateway endpoint: %v", log.annotations())
	}
}

// waitLayout waits until the WC holds exactly entries, GSPrivateLinksReady,
// and the ingress annotation holds source's IP in Azure.
func waitLayout(t *testing.T, w *testworld.World, key types.NamespacedName, entries []string, source string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("layout %v, annotation from %s", entries, source), func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return false, err.Error()
		}
		names := endpointNames(t, w, key)
		slices.Sort(names)
		ip := azureIPIfAny(t, w, wcSub, "wc1-rg", source)
		return slices.Equal(names, entries) && ip != "" && u.GetAnnotations()[ingAnn] == ip && conditionTrue(u, clusterlink.ConditionGSPrivateLinksReady),
			fmt.Sprintf("entries %v, annotation %q, %s in Azure %q", names, u.GetAnnotations()[ingAnn], source, ip)
	})
}

// wcLog records every state of a WC that a watch shows: the ingress and
// API server annotations and the WC→MC entries in spec.
type wcLog struct {
	mu     sync.Mutex
	states []wcState
}

type wcState struct {
	annotation string // the ingress annotation
	api        string // the API server annotation
	entries    []string
}

func watchWC(t *testing.T, w *testworld.World, key types.NamespacedName) *wcLog {
	t.Helper()
	l := &wcLog{}
	w.WatchClusters(t, key.Namespace, key.Name, l.record)
	return l
}

// record appends a WC's state as a watch shows it.
func (l *wcLog) record(u *unstructured.Unstructured) {
	view, _ := capz.FromUnstructured(u)
	var entries []string
	for _, s := range view.Subnets {
		for _, pe := range s.PrivateEndpoints {
			entries = append(entries, pe.Name)
		}
	}
	l.mu.Lock()
	l.states = append(l.states, wcState{u.GetAnnotations()[ingAnn], u.GetAnnotations()[apiAnn], entries})
	l.mu.Unlock()
}

func (l *wcLog) annotations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.values()
}

// values are the annotation's values, state by state; l.mu is held.
func (l *wcLog) values() []string {
	var out []string
	for _, s := range l.states {
		out = append(out, s.annotation)
	}
	return out
}

// check asserts that no state had the annotation empty, and that an entry
// left spec only in a state whose annotation was not that entry's: the
// annotation was set by then to the endpoint that stays.
func (l *wcLog) check(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.states) == 0 {
		t.Fatalf("%s: the watch saw nothing", what)
	}
	defer func() { t.Logf("%s: %d states, annotation values %v", what, len(l.states), slices.Compact(l.values())) }()
	var trace []string
	for i, s := range l.states {
		trace = append(trace, fmt.Sprintf("%q %v", s.annotation, s.entries))
		if s.annotation == "" {
			t.Errorf("%s: state %d has no ingress annotation:\n%s", what, i, strings.Join(trace, "\n"))
			return
		}
		if i == 0 {
			continue
		}
		for _, gone := range l.states[i-1].entries {
			if !slices.Contains(s.entries, gone) && l.states[i-1].annotation != s.annotation {
				t.Errorf("%s: entry %s left spec in the same write that moved the annotation:\n%s", what, gone, strings.Join(trace, "\n"))
			}
		}
	}
}

// azureIPIfAny is the endpoint's IP in Azure, or "" while it has none.
func azureIPIfAny(t *testing.T, w *testworld.World, sub, rg, name string) string {
	t.Helper()
	pe, err := w.Network(t, sub).NewPrivateEndpointsClient().Get(context.Background(), rg, name,
		&armnetwork.PrivateEndpointsClientGetOptions{Expand: new("networkInterfaces")})
	if err != nil || pe.Properties == nil || len(pe.Properties.NetworkInterfaces) == 0 {
		return ""
	}
	nic := pe.Properties.NetworkInterfaces[0]
	if nic.Properties == nil || len(nic.Properties.IPConfigurations) == 0 || nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress == nil {
		return ""
	}
	return *nic.Properties.IPConfigurations[0].Properties.PrivateIPAddress
}

func mergePatchAs(t *testing.T, w *testworld.World, key types.NamespacedName, manager, patch string) {
	t.Helper()
	u, err := w.Get(context.Background(), key.Namespace, key.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}
