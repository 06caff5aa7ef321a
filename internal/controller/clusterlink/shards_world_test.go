package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestMCIngressShards: Azure (azuresim) takes two endpoints per private
// link service and so does the operator's limit; the MC's ingress load
// balancer has two further frontends. wc1 and wc2 fill the hand-made
// mc-ingress-privatelink, and the operator makes mc-ingress-privatelink-2
// on the first further frontend; wc3 connects to it under the usual
// endpoint name and gets its annotation. When wc1 goes, the new wc4 takes
// its room on the first service, and no connected cluster ever moves. The
// hand-made service is never written, and Azure is never sent an endpoint
// it refuses.
func TestMCIngressShards(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Frontends: []string{"shard-2", "shard-3"}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 2}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21))
	operator(t, w, func(o *clusterlink.Options) {
		o.MCServiceConnectionLimit = 2
		o.IngressShards = clusterlink.IngressShards{LoadBalancer: "mc-ingress-lb", Frontends: []string{"shard-2", "shard-3"}, Subscriptions: []string{wcSub}}
		o.PrivateLinkServices = true
	})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	wired(t, w, "wc1", true, true)
	wired(t, w, "wc2", true, true)
	ctx := context.Background()
	first, err := w.Network(t, mcSub).NewPrivateLinkServicesClient().Get(ctx, "mc-rg", "mc-ingress-privatelink", nil)
	if err != nil {
		t.Fatal(err)
	}

	// The first service full: the second is made, and only the second.
	waitEvent(t, w, mcKey, clusterlink.ReasonIngressServiceRequested)
	second := shardReady(t, w, "mc-ingress-privatelink-2")
	if fe := second.Spec.Frontend.LoadBalancer; fe == nil || fe.Name != "mc-ingress-lb" || fe.FrontendIPConfigurationName != "shard-2" ||
		second.Spec.DeletionPolicy != v1alpha1.DeletionPolicyOrphan || len(second.OwnerReferences) != 0 {
		t.Errorf("the second service's object: %+v %+v", second.Spec, second.OwnerReferences)
	}

	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wired(t, w, "wc3", true, true)
	connectsTo(t, w, "wc1", "mc-ingress-privatelink")
	connectsTo(t, w, "wc2", "mc-ingress-privatelink")
	connectsTo(t, w, "wc3", "mc-ingress-privatelink-2")
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "mc-ingress-privatelink-3"}, &v1alpha1.AzurePrivateLinkService{}); err == nil {
		t.Error("the third service was made while the second has room")
	}

	// wc1 goes: its room on the first service is wc4's; wc3 stays where it is.
	deleteCluster(t, w, wcNS, "wc1")
	create(t, w, testenv.SchemaFork, wcCluster("wc4", 23))
	wired(t, w, "wc4", true, true)
	connectsTo(t, w, "wc4", "mc-ingress-privatelink")
	connectsTo(t, w, "wc3", "mc-ingress-privatelink-2")

	after, err := w.Network(t, mcSub).NewPrivateLinkServicesClient().Get(ctx, "mc-rg", "mc-ingress-privatelink", nil)
	if err != nil || *after.Etag != *first.Etag {
		t.Errorf("the hand-made service was written: etag %v -> %v (%v)", *first.Etag, after.Etag, err)
	}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "mc-ingress-privatelink"}, &v1alpha1.AzurePrivateLinkService{}); err == nil {
		t.Error("an AzurePrivateLinkService of the hand-made service's name was made")
	}
	if n := w.Sim.Counters().Errors[endpointsPerServiceExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s", n, endpointsPerServiceExceeded)
	}
}

// shardReady waits until the MC's further ingress service name is Ready.
func shardReady(t *testing.T, w *testworld.World, name string) *v1alpha1.AzurePrivateLinkService {
	t.Helper()
	p := &v1alpha1.AzurePrivateLinkService{}
	testworld.Eventually(t, testworld.Timeout, name+" Ready", func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: name}, p); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprint(p.Status.Conditions)
	})
	if p.Labels[clusterlink.ShardOfLabel] != "mc" {
		t.Errorf("%s's labels: %v", name, p.Labels)
	}
	return p
}

// connectsTo checks that a WC's ingress entry, under its usual name,
// connects to the MC's service, and that its endpoint in Azure does.
func connectsTo(t *testing.T, w *testworld.World, name, service string) {
	t.Helper()
	connectsVia(t, w, name, name+"-to-mc-privatelink-privateendpoint", service)
}

// connectsVia checks that a WC's entry connects to the MC's service, and
// that its endpoint in Azure does.
func connectsVia(t *testing.T, w *testworld.World, name, entry, service string) {
	t.Helper()
	ctx := context.Background()
	u, err := w.Get(ctx, wcNS, name)
	if err != nil {
		t.Fatal(err)
	}
	wc, _ := capz.FromUnstructured(u)
	target := ""
	for _, s := range wc.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if pe.Name == entry && len(pe.Connections) == 1 {
				target = pe.Connections[0].PrivateLinkServiceID
			}
		}
	}
	if want := clusterlink.PrivateLinkServiceID(mcSub, "mc-rg", service); !strings.EqualFold(target, want) {
		t.Errorf("%s's entry %s connects to %q, want %s", name, entry, target, want)
	}
	pe, err := w.Network(t, wcSub).NewPrivateEndpointsClient().Get(ctx, name+"-rg", entry, nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := pe.Properties.PrivateLinkServiceConnections
	if len(conns) != 1 || !strings.HasSuffix(strings.ToLower(*conns[0].Properties.PrivateLinkServiceID), "/"+service) {
		t.Errorf("%s's endpoint in Azure: %+v", name, conns)
	}
}

// TestMCGatewayShards: in the gateway layout (the older operator 0.5's)
// the gateway's service has further services the same way: with one
// connection per service, wc1 takes the hand-made mc-gateway-privatelink,
// the operator makes mc-gateway-privatelink-2, and wc2 connects to it
// under its usual endpoint name.
func TestMCGatewayShards(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Gateway: true, Frontends: []string{"gw-2"}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 1}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.Layout, o.MCServiceConnectionLimit, o.PrivateLinkServices = clusterlink.LayoutGateway, 1, true
		o.IngressShards = clusterlink.IngressShards{GatewayLoadBalancer: "mc-ingress-lb", GatewayFrontends: []string{"gw-2"}, Subscriptions: []string{wcSub}}
	})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	wired(t, w, "wc1", true, true)
	shardReady(t, w, "mc-gateway-privatelink-2")
	create(t, w, testenv.SchemaFork, wcCluster("wc2", 21))
	wired(t, w, "wc2", true, true)
	connectsVia(t, w, "wc1", "wc1-to-mc-gateway-privateendpoint", "mc-gateway-privatelink")
	connectsVia(t, w, "wc2", "wc2-to-mc-gateway-privateendpoint", "mc-gateway-privatelink-2")
	if n := w.Sim.Counters().Errors[endpointsPerServiceExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s", n, endpointsPerServiceExceeded)
	}
}

// TestMCIngressShardsWait: the further service lists only another
// subscription (--mc-ingress-shard-subscriptions), so wc2, whose
// subscription it does not list, waits when the first is full: its
// GSPrivateLinksReady, the MC's condition and explain say why and what to
// change, it gets no entry to any ingress service, and its subscription is
// never added from its spec.
func TestMCIngressShardsWait(t *testing.T) {
	const other = "33333333-3333-3333-3333-333333333333"
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Frontends: []string{"shard-2"}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 1}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.MCServiceConnectionLimit, o.PrivateLinkServices = 1, true
		o.IngressShards = clusterlink.IngressShards{LoadBalancer: "mc-ingress-lb", Frontends: []string{"shard-2"}, Subscriptions: []string{other}}
	})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	wired(t, w, "wc1", true, true)
	second := shardReady(t, w, "mc-ingress-privatelink-2")
	if !slices.Equal(second.Spec.AutoApproval, []string{other}) || !slices.Equal(second.Spec.Visibility, []string{other}) {
		t.Errorf("the further service's subscriptions: visibility %v, auto-approval %v, want only %s", second.Spec.Visibility, second.Spec.AutoApproval, other)
	}

	create(t, w, testenv.SchemaFork, wcCluster("wc2", 21))
	wc2 := types.NamespacedName{Namespace: wcNS, Name: "wc2"}
	limited(t, w, "wc2", clusterlink.ReasonIngressServiceWaiting)
	u, err := w.Get(context.Background(), wcNS, "wc2")
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := condition(u, clusterlink.ConditionGSPrivateLinksReady)["message"].(string); !strings.Contains(msg,
		"mc-ingress-privatelink-2 (does not list the cluster's subscription "+wcSub+": add it to --mc-ingress-shard-subscriptions)") {
		t.Errorf("wc2's condition: %s", msg)
	}
	mcSays(t, w, "Unknown", clusterlink.ReasonIngressServiceWaiting, "1 workload cluster ("+wc2.String()+")")
	explains(t, w, wc2, "private links ready", clusterlink.ReasonIngressServiceWaiting)
	explains(t, w, mcKey, "workload clusters' entries", clusterlink.ReasonIngressServiceWaiting)
	if names := endpointNames(t, w, wc2); slices.Contains(names, "wc2-to-mc-privatelink-privateendpoint") {
		t.Errorf("wc2's entries: %v, want none to the MC's ingress", names)
	}
}

// TestMCIngressShardNotApplied: the API server refuses the further
// service (a NAT subnet name longer than the CRD allows, which the flags
// would refuse at start). The MC's pass goes on: wc1's entries are
// written and it is wired; the MC gets a Warning naming the refusal, and
// wc2, which needs the further service, waits saying it is not made.
func TestMCIngressShardNotApplied(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Frontends: []string{"shard-2"}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 1}})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	operator(t, w, func(o *clusterlink.Options) {
		o.MCServiceConnectionLimit, o.PrivateLinkServices = 1, true
		o.IngressShards = clusterlink.IngressShards{LoadBalancer: "mc-ingress-lb", Frontends: []string{"shard-2"}, Subscriptions: []string{wcSub},
			NATSubnet: strings.Repeat("n", 81)}
	})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	wired(t, w, "wc1", true, true)
	waitEvent(t, w, mcKey, clusterlink.ReasonIngressServiceNotApplied)
	create(t, w, testenv.SchemaFork, wcCluster("wc2", 21))
	limited(t, w, "wc2", clusterlink.ReasonIngressServiceWaiting)
	// Its MC-side endpoint is the MC's entry, written as usual.
	var u *unstructured.Unstructured
	testworld.Eventually(t, testworld.Timeout, "wc2's API server address annotated", func(ctx context.Context) (bool, string) {
		var err error
		if u, err = w.Get(ctx, wcNS, "wc2"); err != nil {
			return false, err.Error()
		}
		return u.GetAnnotations()[apiAnn] != "", testworld.Describe(u)
	})
	if msg, _ := condition(u, clusterlink.ConditionGSPrivateLinksReady)["message"].(string); !strings.Contains(msg, "mc-ingress-privatelink-2 (not created yet)") {
		t.Errorf("wc2's condition: %s", msg)
	}
}
