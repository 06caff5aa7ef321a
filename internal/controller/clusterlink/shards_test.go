package clusterlink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// servicesOf are the MC's services of the set whose first is first.
func servicesOf(cfg Config, first string) []string {
	for _, set := range cfg.shardSets("mc") {
		if set.first == first {
			return set.services()
		}
	}
	return []string{first}
}

func sharded(frontends ...string) Config {
	return Config{MCServiceConnectionLimit: 10, IngressShards: IngressShards{LoadBalancer: "kubernetes-internal", Frontends: frontends,
		Subscriptions: []string{"S2", "s1", "s2"}}}
}

// TestIngressServices: the first keeps its name, the others follow it;
// a layout without the ingress endpoint has no further ingress service,
// one without the gateway endpoint no further gateway service.
func TestIngressServices(t *testing.T) {
	ingress, gateway := "mc-ingress-privatelink", GatewayLinkName("mc")
	withGateway := func(layout Layout) Config {
		c := sharded("fe2")
		c.Layout, c.IngressShards.GatewayLoadBalancer, c.IngressShards.GatewayFrontends = layout, "gw-lb", []string{"g2", "g3"}
		return c
	}
	for _, tc := range []struct {
		cfg         Config
		first       string
		want        []string
		wantFurther []string
	}{
		{Config{}, ingress, []string{ingress}, nil},
		{sharded("fe2", "fe3"), ingress, []string{ingress, ingress + "-2", ingress + "-3"}, []string{ingress + "-2", ingress + "-3"}},
		{func() Config { c := sharded("fe2"); c.MCLinkNames = []string{"in", "x"}; return c }(), "in", []string{"in", "in-2"}, []string{"in-2"}},
		{func() Config { c := sharded("fe2"); c.Layout = LayoutGateway; return c }(), ingress, []string{ingress}, nil},
		{withGateway(LayoutGateway), gateway, []string{gateway, gateway + "-2", gateway + "-3"}, []string{gateway + "-2", gateway + "-3"}},
		{withGateway(LayoutIngressAndGateway), ingress, []string{ingress, ingress + "-2"}, []string{ingress + "-2", gateway + "-2", gateway + "-3"}},
		{withGateway(LayoutIngress), gateway, []string{gateway}, []string{ingress + "-2"}},
	} {
		if diff := cmp.Diff(tc.want, servicesOf(tc.cfg, tc.first)); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.cfg, diff)
		}
		if diff := cmp.Diff(tc.wantFurther, tc.cfg.furtherServices("mc")); diff != "" {
			t.Errorf("further services of %+v (-want +got):\n%s", tc.cfg, diff)
		}
	}
	cfg := sharded("fe2")
	if got := cfg.mcServices("mc"); !slices.Equal(got, []string{ingress, ingress + "-2"}) {
		t.Errorf("mcServices = %v: the further services are counted as the MC's", got)
	}
}

// TestWantedShards: the next service comes once every one before it has
// 90 % of the limit; one that exists or has a cluster stays wanted.
func TestWantedShards(t *testing.T) {
	services := []string{"s1", "s2", "s3"}
	for _, tc := range []struct {
		reason string
		use    map[string]int
		exists map[string]bool
		want   []int
	}{
		{"the first below 90 %", map[string]int{"s1": 8}, nil, nil},
		{"the first at 90 %: the second", map[string]int{"s1": 9}, nil, []int{1}},
		{"the first full, the second below: only the second", map[string]int{"s1": 10, "s2": 3}, nil, []int{1}},
		{"both near: the third", map[string]int{"s1": 10, "s2": 9}, nil, []int{1, 2}},
		{"the first emptied: the second exists and stays", map[string]int{"s1": 1}, map[string]bool{"s2": true}, []int{1}},
		{"a cluster on the third keeps it wanted", map[string]int{"s3": 1}, nil, []int{2}},
	} {
		if got := WantedShards(services, tc.use, tc.exists, 10); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.reason, got, tc.want)
		}
	}
	if got := WantedShards(services, map[string]int{"s1": 5000}, nil, 0); got != nil {
		t.Errorf("no limit: %v, want no further service", got)
	}
}

// TestDesiredShard: on its frontend of the ingress load balancer, in the
// MC's subscription and group with its identity, NAT in the MC's
// endpoint subnet by default, visible to and auto-approving the configured
// subscriptions (lower case, once), orphaned on deletion, not owned by
// the MC.
func TestDesiredShard(t *testing.T) {
	m := mc()
	cfg := sharded("fe2", "fe3")
	u := desiredShard(m, cfg, cfg.shardSets("mc")[0], 2)
	if u.GetName() != "mc-ingress-privatelink-3" || u.GetNamespace() != m.Namespace || u.GetLabels()[ShardOfLabel] != m.Name || len(u.GetOwnerReferences()) != 0 {
		t.Errorf("metadata: %s/%s %v %v", u.GetNamespace(), u.GetName(), u.GetLabels(), u.GetOwnerReferences())
	}
	spec := u.Object["spec"].(map[string]any)
	fe := spec["frontend"].(map[string]any)["loadBalancer"].(map[string]any)
	nat := spec["natSubnet"].(map[string]any)
	if fe["name"] != "kubernetes-internal" || fe["frontendIPConfigurationName"] != "fe3" || nat["name"] != "mc-nodes" ||
		spec["deletionPolicy"] != "Orphan" || spec["subscriptionID"] != m.SubscriptionID || spec["resourceGroup"] != m.ResourceGroup ||
		!cmp.Equal(spec["autoApproval"], []any{"s1", "s2"}) || !cmp.Equal(spec["visibility"], []any{"s1", "s2"}) {
		t.Errorf("spec: %v", spec)
	}
	cfg.IngressShards.NATSubnet = "pls-nat"
	if got := desiredShard(m, cfg, cfg.shardSets("mc")[0], 1).Object["spec"].(map[string]any)["natSubnet"].(map[string]any)["name"]; got != "pls-nat" {
		t.Errorf("configured NAT subnet: %v", got)
	}
}

// TestDesiredShardOtherLoadBalancer: a frontend named
// <load-balancer>/<frontend> puts the service on that load balancer; the
// services keep counting on, whatever load balancer each is on.
func TestDesiredShardOtherLoadBalancer(t *testing.T) {
	cfg := sharded("fe2", "second-lb/fe1")
	for k, want := range map[int][3]string{
		1: {"mc-ingress-privatelink-2", "kubernetes-internal", "fe2"},
		2: {"mc-ingress-privatelink-3", "second-lb", "fe1"},
	} {
		u := desiredShard(mc(), cfg, cfg.shardSets("mc")[0], k)
		fe := u.Object["spec"].(map[string]any)["frontend"].(map[string]any)["loadBalancer"].(map[string]any)
		if got := [3]string{u.GetName(), fe["name"].(string), fe["frontendIPConfigurationName"].(string)}; got != want {
			t.Errorf("service %d: %v, want %v", k+1, got, want)
		}
	}
	for entry, want := range map[string][2]string{"fe": {"lb", "fe"}, "other/fe": {"other", "fe"}} {
		if l, fe := SplitShardFrontend("lb", entry); [2]string{l, fe} != want {
			t.Errorf("SplitShardFrontend(lb, %s) = %s, %s, want %v", entry, l, fe, want)
		}
	}
}

func readyShard(name string, subs ...string) *v1alpha1.AzurePrivateLinkService {
	return &v1alpha1.AzurePrivateLinkService{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2, Labels: map[string]string{ShardOfLabel: "mc"}},
		Spec:       v1alpha1.AzurePrivateLinkServiceSpec{AutoApproval: subs},
		Status: v1alpha1.AzurePrivateLinkServiceStatus{ObservedGeneration: 2,
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}},
	}
}

// TestOnIngressShards: a new cluster gets the first service with room
// that lists its subscription; a cluster connected to one keeps it
// whatever the counts; with every ready service full, it waits for the
// next one, or, when there is none, is refused as before.
func TestOnIngressShards(t *testing.T) {
	cfg := sharded("fe2", "fe3")
	first, second, third := "mc-ingress-privatelink", "mc-ingress-privatelink-2", "mc-ingress-privatelink-3"
	sub := strings.ToLower(wc("wc1").SubscriptionID)
	notReady := readyShard(third, sub)
	notReady.Status.ObservedGeneration = 1
	for _, tc := range []struct {
		reason     string
		wc         *capz.AzureCluster
		objs       map[string]*v1alpha1.AzurePrivateLinkService
		use        map[string]int
		wantLink   string
		wantReason string
	}{
		{reason: "room in the first", wc: wc("wc1"), use: map[string]int{first: 9}, wantLink: first},
		{reason: "the first full: the second", wc: wc("wc1"), objs: map[string]*v1alpha1.AzurePrivateLinkService{second: readyShard(second, sub)},
			use: map[string]int{first: 10}, wantLink: second},
		{reason: "held on the full first: kept", wc: wc("wc1", holding(first)),
			objs: map[string]*v1alpha1.AzurePrivateLinkService{second: readyShard(second, sub)}, use: map[string]int{first: 12}, wantLink: first},
		{reason: "held on the second, room in the first: not moved", wc: wc("wc1", holding(second)),
			objs: map[string]*v1alpha1.AzurePrivateLinkService{second: readyShard(second, sub)}, use: map[string]int{first: 1, second: 10}, wantLink: second},
		{reason: "held on a second no longer Ready: not moved", wc: wc("wc1", holding(second)), use: map[string]int{second: 3}, wantLink: second},
		{reason: "the second without the cluster's subscription, the third not Ready: waits",
			wc: wc("wc1"), objs: map[string]*v1alpha1.AzurePrivateLinkService{second: readyShard(second, "other"), third: notReady},
			use: map[string]int{first: 10}, wantReason: ReasonIngressServiceWaiting},
		{reason: "the first full, the second not made yet: waits", wc: wc("wc1"), use: map[string]int{first: 10}, wantReason: ReasonIngressServiceWaiting},
		{reason: "every service full: refused", wc: wc("wc1"),
			objs: map[string]*v1alpha1.AzurePrivateLinkService{second: readyShard(second, sub), third: readyShard(third, sub)},
			use:  map[string]int{first: 10, second: 10, third: 10}, wantReason: ReasonServiceLimit},
		{reason: "someone else's object of the second's name: skipped", wc: wc("wc1"),
			objs: map[string]*v1alpha1.AzurePrivateLinkService{second: {ObjectMeta: metav1.ObjectMeta{Name: second}}, third: readyShard(third, sub)},
			use:  map[string]int{first: 10}, wantLink: third},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			use := ServiceUse{}
			for link, n := range tc.use {
				use[serviceIDOf(link)] = n
			}
			got, problems, err := onIngressShards(mustWCToMC(t, cfg, tc.wc), tc.wc, ingressShards(mc(), cfg.shardSets("mc")[0], tc.objs), first,
				func(toMC []Endpoint) ([]Endpoint, []Problem, error) {
					kept, problems := WithinServiceLimit(toMC, tc.wc, use, cfg.MCServiceConnectionLimit)
					return kept, problems, nil
				})
			if err != nil {
				t.Fatal(err)
			}
			checkShardChoice(t, got, problems, tc.wantLink, tc.wantReason)
		})
	}
}

// checkShardChoice: the cluster's one ingress endpoint, under its usual
// names, connects to wantLink, auto-approved beyond the first; or, with
// wantReason, it has none and that problem.
func checkShardChoice(t *testing.T, got []Endpoint, problems []Problem, wantLink, wantReason string) {
	t.Helper()
	if wantReason != "" {
		if len(problems) != 1 || problems[0].Reason != wantReason || len(got) != 0 {
			t.Fatalf("got %v, problems %v; want none and %s", got, problems, wantReason)
		}
		return
	}
	if len(problems) > 0 || len(got) != 1 {
		t.Fatalf("got %v, problems %v", got, problems)
	}
	ep := got[0]
	if ep.Name != "wc1-to-mc-privatelink-privateendpoint" || ep.Connections[0].Name != "wc1-to-mc-privatelink-connection" ||
		!strings.EqualFold(ep.Connections[0].PrivateLinkServiceID, serviceIDOf(wantLink)) || ep.Link != wantLink {
		t.Errorf("endpoint %s (%s) to %s, want the same names to %s", ep.Name, ep.Connections[0].Name, ep.Connections[0].PrivateLinkServiceID, wantLink)
	}
	if wantLink != "mc-ingress-privatelink" && ep.ManualApproval {
		t.Errorf("a further service auto-approves the cluster: manual approval asked")
	}
}

// TestOnIngressShardsSays: the waiting message names each service and
// why; an error of the count is returned as it is.
func TestOnIngressShardsSays(t *testing.T) {
	cfg := sharded("fe2", "fe3")
	first, second, third := "mc-ingress-privatelink", "mc-ingress-privatelink-2", "mc-ingress-privatelink-3"
	notReady := readyShard(third, strings.ToLower(wc("wc1").SubscriptionID))
	notReady.Status.ObservedGeneration = 1
	set := cfg.shardSets("mc")[0]
	_, problems, _ := onIngressShards(mustWCToMC(t, cfg, wc("wc1")), wc("wc1"), ingressShards(mc(), set, map[string]*v1alpha1.AzurePrivateLinkService{third: notReady}),
		first, func([]Endpoint) ([]Endpoint, []Problem, error) {
			return nil, []Problem{{Reason: ReasonServiceLimit}}, nil
		})
	if len(problems) != 1 || !strings.Contains(problems[0].Message, second+" (not created yet)") || !strings.Contains(problems[0].Message, third+" (not Ready") {
		t.Errorf("waiting: %v", problems)
	}
	// Many services to come: the first three are named, the rest counted.
	many := sharded("fe2", "fe3", "fe4", "fe5", "fe6", "fe7", "fe8")
	_, problems, _ = onIngressShards(mustWCToMC(t, many, wc("wc1")), wc("wc1"), ingressShards(mc(), many.shardSets("mc")[0], nil),
		first, func([]Endpoint) ([]Endpoint, []Problem, error) {
			return nil, []Problem{{Reason: ReasonServiceLimit}}, nil
		})
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "mc-ingress-privatelink-4 (not created yet), and 4 more after them") ||
		strings.Contains(problems[0].Message, "mc-ingress-privatelink-5") {
		t.Errorf("waiting for 7 services: %v", problems)
	}
	boom := errors.New("cache")
	if _, _, err := onIngressShards(mustWCToMC(t, cfg, wc("wc1")), wc("wc1"), ingressShards(mc(), set, nil), first, func([]Endpoint) ([]Endpoint, []Problem, error) {
		return nil, nil, boom
	}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

func mustWCToMC(t *testing.T, cfg Config, w *capz.AzureCluster) []Endpoint {
	t.Helper()
	toMC, ps := WCToMC(mc(), w, cfg)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	return toMC
}

// TestWarnsNear: with further ingress services, only the last warns of
// its limit (the others' 90 % makes the next one); other services warn
// as before.
func TestWarnsNear(t *testing.T) {
	cfg := sharded("fe2")
	use := map[string]int{"mc-ingress-privatelink": 10, "mc-ingress-privatelink-2": 9, "mc-gateway-privatelink": 9}
	got := cfg.warnable("mc", use)
	if _, ok := got["mc-ingress-privatelink"]; ok || len(got) != 2 {
		t.Errorf("warnable = %v", got)
	}
	if !(Config{}).warnsNear("mc", "mc-ingress-privatelink") {
		t.Error("one ingress service: it warns")
	}
}

// TestOnShardsBothSets: in the ingress+gateway layout each service has its
// own further services; a cluster whose gateway service is full and whose
// ingress service has room connects to the first ingress service and the
// second gateway service, read through the cache.
func TestOnShardsBothSets(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := mc()
	gateway := GatewayLinkName("mc")
	cfg := sharded("fe2")
	cfg.Layout, cfg.IngressShards.GatewayLoadBalancer, cfg.IngressShards.GatewayFrontends = LayoutIngressAndGateway, "gw-lb", []string{"g2"}
	sub := strings.ToLower(wc("wc1").SubscriptionID)
	gw2 := readyShard(gateway+"-2", sub)
	gw2.Namespace = m.Namespace
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gw2).
		WithIndex(&v1alpha1.AzurePrivateLinkService{}, shardNameIndex, shardNames(types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, cfg)).Build()
	use := ServiceUse{serviceIDOf("mc-ingress-privatelink"): 3, serviceIDOf(gateway): 10}
	toMC, ps := WCToMC(m, wc("wc1"), cfg)
	if len(ps) > 0 || len(toMC) != 2 {
		t.Fatal(toMC, ps)
	}
	got, problems, err := onShards(context.Background(), c, m, wc("wc1"), cfg, toMC, func(toMC []Endpoint) ([]Endpoint, []Problem, error) {
		kept, problems := WithinServiceLimit(toMC, wc("wc1"), use, cfg.MCServiceConnectionLimit)
		return kept, problems, nil
	})
	if err != nil || len(problems) > 0 || len(got) != 2 {
		t.Fatalf("got %v, problems %v, err %v", got, problems, err)
	}
	if got[0].Link != "mc-ingress-privatelink" || got[1].Link != gateway+"-2" || got[1].Name != "wc1-to-mc-gateway-privateendpoint" ||
		!strings.EqualFold(got[1].Connections[0].PrivateLinkServiceID, serviceIDOf(gateway+"-2")) {
		t.Errorf("endpoints: %+v", got)
	}
}

// copyCounter is a client.Reader that counts the reads, and those asking
// for a copy of the cache's objects.
type copyCounter struct {
	client.Reader
	gets, lists, copies int
}

func (c *copyCounter) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	o := &client.GetOptions{}
	o.ApplyOptions(opts)
	c.gets++
	if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
		c.copies++
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *copyCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	c.lists++
	if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
		c.copies++
	}
	return c.Reader.List(ctx, list, opts...)
}

// TestShardObjectsAreNotCopied: every WC's pass reads every further
// service, whose status lists up to 1,000 connections; it reads the
// cache's objects, not copies (make bench at N = 3,000: the copies were
// 36 MiB of the live heap at its peak), in one lookup of the index,
// which finds an object of a further service's name whoever made it and
// nothing else: not another namespace's, not another name's.
func TestShardObjectsAreNotCopied(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := mc()
	cfg := sharded("fe2", "fe3", "fe4")
	s2 := readyShard("mc-ingress-privatelink-2", "s1")
	s2.Namespace = m.Namespace
	handMade := readyShard("mc-ingress-privatelink-3", "s1")
	handMade.Namespace, handMade.Labels = m.Namespace, nil
	elsewhere := readyShard("mc-ingress-privatelink-4", "s1")
	elsewhere.Namespace = "tenant"
	other := readyShard("mc-ingress-privatelink-9", "s1")
	other.Namespace = m.Namespace
	c := &copyCounter{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(s2, handMade, elsewhere, other).
		WithIndex(&v1alpha1.AzurePrivateLinkService{}, shardNameIndex, shardNames(types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, cfg)).Build()}
	objs, err := shardObjects(context.Background(), c, m, cfg)
	if err != nil || len(objs) != 2 || objs["mc-ingress-privatelink-2"] == nil || objs["mc-ingress-privatelink-3"] == nil {
		t.Fatalf("objects %v, err %v; want the two of the MC's namespace that exist", objs, err)
	}
	if c.gets != 0 || c.lists != 1 || c.copies != 0 {
		t.Errorf("%d gets, %d lists, %d of them copies; want one list, no copy", c.gets, c.lists, c.copies)
	}
	if shards := ingressShards(m, cfg.shardSets(m.Name)[0], objs); shards[2].ready || !strings.Contains(shards[2].why, "not the operator's") {
		t.Errorf("the hand-made object of a further service's name: %+v", shards[2])
	}
	// Unsharded, nothing is looked up (the index is registered only
	// when sharded).
	c.lists = 0
	if objs, err := shardObjects(context.Background(), c, m, Config{}); err != nil || len(objs) != 0 || c.lists != 0 {
		t.Errorf("unsharded: %v, %v, %d lists", objs, err, c.lists)
	}
}

// TestUpToDateShard: the object as the API server keeps what the operator
// applied (typed, with the CRD's defaults) is up to date, so that the
// MC's pass writes a further service only when it differs.
func TestUpToDateShard(t *testing.T) {
	cfg := sharded("fe2")
	want := desiredShard(mc(), cfg, cfg.shardSets("mc")[0], 1)
	got := &v1alpha1.AzurePrivateLinkService{}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(want.Object, got); err != nil {
		t.Fatal(err)
	}
	got.Labels = want.GetLabels()
	got.Spec.NATIPConfigurations.Count = 1 // a default the operator does not apply
	if !upToDateShard(got, want) {
		t.Errorf("the applied object is not up to date: %+v", got.Spec)
	}
	got.Spec.AutoApproval = got.Spec.AutoApproval[:1]
	if upToDateShard(got, want) {
		t.Error("a changed auto-approval list is up to date")
	}
	if upToDateShard(nil, want) {
		t.Error("no object is up to date")
	}
}
