package clusterlink

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// holding gives a WC an entry, anyone's, to the MC's service link.
func holding(link string) func(*capz.AzureCluster) {
	return func(a *capz.AzureCluster) {
		m := mc()
		a.Subnets[1].PrivateEndpoints = append(a.Subnets[1].PrivateEndpoints, capz.PrivateEndpoint{
			Name: a.Name + "-to-" + link, Connections: []capz.PrivateLinkServiceConnection{{
				Name: "c", PrivateLinkServiceID: PrivateLinkServiceID(m.SubscriptionID, m.ResourceGroup, link)}}})
	}
}

func serviceIDOf(link string) string {
	m := mc()
	return strings.ToLower(PrivateLinkServiceID(m.SubscriptionID, m.ResourceGroup, link))
}

// TestWithinServiceLimit: a WC whose new endpoint to an MC service would
// pass the limit gets none of its new endpoints and is told why; an entry
// it holds stays whatever the count.
func TestWithinServiceLimit(t *testing.T) {
	ingress, gateway := "mc-ingress-privatelink", GatewayLinkName("mc")
	both := Config{Layout: LayoutIngressAndGateway}
	tests := []struct {
		reason      string
		wc          *capz.AzureCluster
		cfg         Config
		use         ServiceUse
		limit       int
		want        []string
		wantLimited bool
	}{
		{reason: "no limit", wc: wc("wc1"), use: ServiceUse{serviceIDOf(ingress): 5000},
			want: []string{"wc1-to-mc-privatelink-privateendpoint"}},
		{reason: "room left", wc: wc("wc1"), use: ServiceUse{serviceIDOf(ingress): 1}, limit: 2,
			want: []string{"wc1-to-mc-privatelink-privateendpoint"}},
		{reason: "the service full: no new endpoint", wc: wc("wc1"), use: ServiceUse{serviceIDOf(ingress): 2}, limit: 2,
			wantLimited: true},
		{reason: "an entry the WC holds (anyone's) stays past the limit", wc: wc("wc1", holding(ingress)), use: ServiceUse{serviceIDOf(ingress): 7}, limit: 2,
			want: []string{"wc1-to-mc-privatelink-privateendpoint"}},
		{reason: "two services, the gateway full: neither new endpoint", wc: wc("wc1"), cfg: both,
			use: ServiceUse{serviceIDOf(ingress): 0, serviceIDOf(gateway): 2}, limit: 2, wantLimited: true},
		{reason: "two services, the gateway full but held: the ingress one is added", wc: wc("wc1", holding(gateway)), cfg: both,
			use: ServiceUse{serviceIDOf(ingress): 1, serviceIDOf(gateway): 2}, limit: 2,
			want: []string{"wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-gateway-privateendpoint"}},
		{reason: "two services, the ingress full and the gateway held: the gateway one stays", wc: wc("wc1", holding(gateway)), cfg: both,
			use: ServiceUse{serviceIDOf(ingress): 2, serviceIDOf(gateway): 2}, limit: 2,
			want: []string{"wc1-to-mc-gateway-privateendpoint"}, wantLimited: true},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			toMC, ps := WCToMC(mc(), tc.wc, tc.cfg)
			if len(ps) > 0 {
				t.Fatalf("WCToMC: %v", ps)
			}
			got, problems := WithinServiceLimit(toMC, tc.wc, tc.use, tc.limit)
			checkServiceLimited(t, got, problems, tc.want, tc.wantLimited)
		})
	}
}

func checkServiceLimited(t *testing.T, got []Endpoint, problems []Problem, want []string, wantLimited bool) {
	t.Helper()
	var names []string
	for _, ep := range got {
		names = append(names, ep.Name)
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if wantLimited != (len(problems) == 1) {
		t.Fatalf("problems: %v, want limited %v", problems, wantLimited)
	}
	for _, p := range problems {
		if p.Cluster != "org-a/wc1" || p.Reason != ReasonServiceLimit || !strings.Contains(p.Message, "--mc-service-connection-limit") ||
			!strings.Contains(p.Message, "the limit is 2") {
			t.Errorf("problem: %+v", p)
		}
	}
}

// TestServiceRoomAdmits: the count comes from the clusters' entries (the
// index), and an admission the cache does not show yet still counts, so
// that two workers never both take the last connection; once the cache
// shows the entry it is counted once.
func TestServiceRoomAdmits(t *testing.T) {
	ingress := "mc-ingress-privatelink"
	c := fake.NewClientBuilder().WithScheme(k8sruntime.NewScheme()).
		WithObjects(limitObject(wc("wc0", holding(ingress)))).
		WithIndex(newAzureCluster(), targetIndex, endpointTargets).Build()
	now := time.Now()
	var room serviceRoom
	admit := func(name string) bool {
		t.Helper()
		w := wc(name)
		toMC, _ := WCToMC(mc(), w, Config{})
		got, problems, err := room.admit(context.Background(), c, w, toMC, 2, now)
		if err != nil {
			t.Fatal(err)
		}
		return len(got) == 1 && len(problems) == 0
	}
	if !admit("wc1") {
		t.Fatal("wc1 refused with one connection of two")
	}
	if admit("wc2") {
		t.Fatal("wc2 admitted: wc0 holds one, wc1 was just admitted (not in the cache yet)")
	}
	if !admit("wc1") {
		t.Fatal("wc1 refused on its next pass: its own admission must not count against it")
	}
	// The cache shows wc1's entry: counted once, not twice.
	if err := c.Create(context.Background(), limitObject(wc("wc1", holding(ingress)))); err != nil {
		t.Fatal(err)
	}
	if admit("wc2") {
		t.Fatal("wc2 admitted past the limit")
	}
	if n := room.Pending(serviceIDOf(ingress)); n != 0 {
		t.Errorf("%d admissions pending after the cache showed them", n)
	}
	// wc0 goes: room for wc2.
	if err := c.Delete(context.Background(), limitObject(wc("wc0")), client.PropagationPolicy("Background")); err != nil {
		t.Fatal(err)
	}
	if !admit("wc2") {
		t.Fatal("wc2 refused with one connection of two")
	}
}

// landingReader is the cache of a write that lands while an admission
// reads: wc1's entry shows from the first read after the first list.
type landingReader struct {
	client.WithWatch
	listed, landed bool
}

func (r *landingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := r.WithWatch.List(ctx, list, opts...)
	if !r.listed {
		r.listed = true
		if cerr := r.Create(ctx, limitObject(wc("wc1", holding("mc-ingress-privatelink")))); cerr != nil {
			return cerr
		}
		r.landed = true
	}
	return err
}

// TestServiceRoomCacheMovesOn: wc1 took the last connection and its
// entry reaches the cache while wc2 is being admitted, between the reads
// of wc2's admission. wc1 is counted, as pending or from the cache: wc2
// is refused (make bench at N = 3,000 put 1,001 clusters on a service of
// 1,000 when the count was read before the look at the pending ones).
func TestServiceRoomCacheMovesOn(t *testing.T) {
	ingress := "mc-ingress-privatelink"
	c := &landingReader{WithWatch: fake.NewClientBuilder().WithScheme(k8sruntime.NewScheme()).
		WithObjects(limitObject(wc("wc0", holding(ingress)))).
		WithIndex(newAzureCluster(), targetIndex, endpointTargets).Build()}
	now := time.Now()
	var room serviceRoom
	w1 := wc("wc1")
	toMC, _ := WCToMC(mc(), w1, Config{})
	c.listed = true // wc1's own admission: nothing lands
	if got, _, err := room.admit(context.Background(), c, w1, toMC, 2, now); err != nil || len(got) != 1 {
		t.Fatalf("wc1: %v, %v", got, err)
	}
	c.listed = false
	w2 := wc("wc2")
	toMC, _ = WCToMC(mc(), w2, Config{})
	got, problems, err := room.admit(context.Background(), c, w2, toMC, 2, now)
	if err != nil || !c.landed {
		t.Fatalf("err %v, wc1's entry landed: %v", err, c.landed)
	}
	if len(got) != 0 || len(problems) != 1 || problems[0].Reason != ReasonServiceLimit {
		t.Errorf("wc2 with wc0 and wc1 holding the two connections: got %v, problems %v; want it refused", got, problems)
	}
}

// TestServiceCountLeavesSelfOut: a cluster whose pass read it before its
// entry (a stale view: the entry is new to it) while the cache already
// shows the entry is not counted against itself.
func TestServiceCountLeavesSelfOut(t *testing.T) {
	ingress := "mc-ingress-privatelink"
	c := fake.NewClientBuilder().WithScheme(k8sruntime.NewScheme()).
		WithObjects(limitObject(wc("wc0", holding(ingress))), limitObject(wc("wc1", holding(ingress)))).
		WithIndex(newAzureCluster(), targetIndex, endpointTargets).Build()
	w := wc("wc1")
	toMC, _ := WCToMC(mc(), w, Config{})
	var room serviceRoom
	got, problems, err := room.admit(context.Background(), c, w, toMC, 2, time.Now())
	if err != nil || len(got) != 1 || len(problems) != 0 {
		t.Fatalf("wc1 with the limit 2, wc0's entry and its own: got %v, problems %v, err %v; want it admitted", got, problems, err)
	}
	held := countUse(context.Background(), c, "org-a/wc9")
	if held.Count(serviceIDOf(ingress)) != 2 || held.err != nil || !held.Holds(serviceIDOf(ingress), "org-a/wc0") || held.Holds(serviceIDOf(ingress), "org-a/wc9") {
		t.Errorf("another cluster's count: %v (err %v); want 2, wc0 holding, wc9 not", held.use, held.err)
	}
}

// limitObject is ac's AzureCluster with its endpoint entries, for the
// service limit's index.
func limitObject(ac *capz.AzureCluster) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace(ac.Namespace)
	u.SetName(ac.Name)
	var eps []any
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			eps = append(eps, map[string]any{"name": pe.Name, "privateLinkServiceConnections": []any{
				map[string]any{"name": pe.Connections[0].Name, "privateLinkServiceID": pe.Connections[0].PrivateLinkServiceID}}})
		}
	}
	subnet := map[string]any{"name": "nodes", "role": "node"}
	if len(eps) > 0 {
		subnet["privateEndpoints"] = eps
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{subnet}, "spec", "networkSpec", "subnets")
	return u
}

func TestMCServiceUseAndNear(t *testing.T) {
	ingress := "mc-ingress-privatelink"
	all := []*capz.AzureCluster{wc("wc1", holding(ingress)), wc("wc2", holding(ingress)), wc("wc3"), mc()}
	got := mcServiceUse(mc(), all, Config{Layout: LayoutIngressAndGateway}.mcServices("mc"))
	if diff := cmp.Diff(map[string]int{ingress: 2, GatewayLinkName("mc"): 0}, got); diff != "" {
		t.Errorf("use (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		n, limit int
		want     bool
	}{{899, 1000, false}, {900, 1000, true}, {1000, 1000, true}, {5, 0, false}} {
		if got := nearServiceLimit(ingress, tc.n, tc.limit) != ""; got != tc.want {
			t.Errorf("nearServiceLimit(%d, %d) = %v, want %v", tc.n, tc.limit, got, tc.want)
		}
	}
}
