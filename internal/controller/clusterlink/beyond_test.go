package clusterlink

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

const (
	netA    = "/subscriptions/" + mcSub + "/resourceGroups/pe-rg/providers/Microsoft.Network/virtualNetworks/pe-a"
	netB    = "/subscriptions/" + mcSub + "/resourceGroups/pe-rg/providers/Microsoft.Network/virtualNetworks/pe-b"
	subnetA = netA + "/subnets/pe"
	subnetB = netB + "/subnets/pe"
)

// refusedOf are the MC's endpoints for clusters, in order (a cluster
// named twice has two links).
func refusedOf(clusters ...string) []Endpoint {
	var out []Endpoint
	for i, c := range clusters {
		ep := mcEndpoint(false)
		ep.Cluster = "org-a/" + c
		ep.Name = c + "-" + string(rune('a'+i)) + "-privateendpoint"
		out = append(out, ep)
	}
	return out
}

// TestPlaceBeyond: each cluster's endpoints all in the first subnet whose
// network has room for them, in the order clusters are served; a
// cluster that fits nowhere is told so and leaves the room to the next.
func TestPlaceBeyond(t *testing.T) {
	b := Beyond{Subnets: []string{subnetA, netA + "/subnets/other", subnetB}, NetworkLimit: 2}
	for _, tc := range []struct {
		reason    string
		refused   []Endpoint
		use       map[string]int
		capacity  map[string]int
		want      []string // cluster:subnet per placed endpoint
		unplaced  []string
		wantAfter map[string]int
	}{
		{
			reason:    "the first network while it has room",
			refused:   refusedOf("wc1", "wc2"),
			want:      []string{"org-a/wc1:" + subnetA, "org-a/wc2:" + subnetA},
			wantAfter: map[string]int{strings.ToLower(netA): 2},
		},
		{
			reason:    "a network's second subnet shares its network's room; the next network after it",
			refused:   refusedOf("wc1", "wc2"),
			use:       map[string]int{strings.ToLower(netA): 1},
			want:      []string{"org-a/wc1:" + subnetA, "org-a/wc2:" + subnetB},
			wantAfter: map[string]int{strings.ToLower(netA): 2, strings.ToLower(netB): 1},
		},
		{
			reason:    "a cluster's two endpoints come together: where only one fits, the next network takes both",
			refused:   refusedOf("wc1", "wc1"),
			use:       map[string]int{strings.ToLower(netA): 1},
			want:      []string{"org-a/wc1:" + subnetB, "org-a/wc1:" + subnetB},
			wantAfter: map[string]int{strings.ToLower(netA): 1, strings.ToLower(netB): 2},
		},
		{
			reason:    "a high-scale network takes more than the others",
			refused:   refusedOf("wc1", "wc2", "wc3"),
			capacity:  map[string]int{strings.ToLower(netA): 3},
			use:       map[string]int{strings.ToLower(netA): 1},
			want:      []string{"org-a/wc1:" + subnetA, "org-a/wc2:" + subnetA, "org-a/wc3:" + subnetB},
			wantAfter: map[string]int{strings.ToLower(netA): 3, strings.ToLower(netB): 1},
		},
		{
			reason:    "a cluster that fits nowhere is told so; the next one that fits gets the room",
			refused:   refusedOf("wc1", "wc1", "wc2"),
			use:       map[string]int{strings.ToLower(netA): 1, strings.ToLower(netB): 1},
			want:      []string{"org-a/wc2:" + subnetA},
			unplaced:  []string{"org-a/wc1"},
			wantAfter: map[string]int{strings.ToLower(netA): 2, strings.ToLower(netB): 1},
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			use := map[string]int{}
			maps.Copy(use, tc.use)
			b := b
			b.Capacity = tc.capacity
			placed, problems := PlaceBeyond(tc.refused, b, use)
			var got []string
			for _, ep := range placed {
				got = append(got, ep.Cluster+":"+ep.Subnet)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unplaced, limitedBy(t, problems, "--mc-endpoint-subnets")); diff != "" {
				t.Errorf("unplaced (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAfter, use); diff != "" {
				t.Errorf("use after (-want +got):\n%s", diff)
			}
		})
	}
}

// wc2PlacedAt is the operator's object of wc2's MC endpoint in subnet.
func wc2PlacedAt(subnet string) v1alpha1.AzurePrivateEndpoint {
	return *desiredPlaced(mc(), Endpoint{Subnet: subnet, PrivateEndpoint: wcEntry("wc2"), Cluster: "org-a/wc2"})
}

// TestPlacedUse: what the WC passes count of the objects per network is
// what the MC's pass counts of them (networkUse of placedOf), subnets of
// one network added up, IDs in any case.
func TestPlacedUse(t *testing.T) {
	objs := []v1alpha1.AzurePrivateEndpoint{
		wc2PlacedAt(subnetA), wc2PlacedAt(netA + "/subnets/pe2"), wc2PlacedAt(strings.ToUpper(subnetA)), wc2PlacedAt(subnetB),
	}
	want := map[string]int{strings.ToLower(netA): 3, strings.ToLower(netB): 1}
	if diff := cmp.Diff(want, placedUse(objs)); diff != "" {
		t.Errorf("placedUse (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(networkUse(placedOf(objs)), placedUse(objs)); diff != "" {
		t.Errorf("placedUse against networkUse(placedOf) (-MC pass +WC pass):\n%s", diff)
	}
}

// TestDecideMCBeyond: the MC pass with endpoints beyond its AzureCluster.
func TestDecideMCBeyond(t *testing.T) {
	beyond := Options{Config: Config{MCEndpointLimit: 1, Beyond: Beyond{Subnets: []string{subnetA, subnetB}, NetworkLimit: 1}}}
	off := Options{Config: Config{MCEndpointLimit: 2}}
	for _, tc := range []struct {
		reason      string
		opts        Options
		seen        mcSeen
		objs        []v1alpha1.AzurePrivateEndpoint
		wantEntries map[string][]string
		wantPlaced  map[string][]string
		limited     []string
	}{
		{
			reason: "the entries full: the next clusters get objects, one per network, the last none",
			opts:   beyond,
			seen: mcSeen{mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1"), wc("wc2"), wc("wc3"), wc("wc4")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"))}},
			wantEntries: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			wantPlaced:  map[string][]string{subnetA: {"wc2-api-privatelink-privateendpoint"}, subnetB: {"wc3-api-privatelink-privateendpoint"}},
			limited:     []string{"org-a/wc4"},
		},
		{
			reason:     "an object stays where it is: in its network, never an entry, although the entries have room now",
			opts:       beyond,
			seen:       mcSeen{mc: mcWith(), active: []*capz.AzureCluster{wc("wc2")}},
			objs:       []v1alpha1.AzurePrivateEndpoint{wc2PlacedAt(subnetB)},
			wantPlaced: map[string][]string{subnetB: {"wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "Beyond turned off: the objects that exist stay, no new one is made",
			opts:   off,
			seen: mcSeen{mc: mcWith(wcEntry("wc1"), wcEntry("wc3")), active: []*capz.AzureCluster{wc("wc1"), wc("wc2"), wc("wc3"), wc("wc4")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"), wcEntry("wc3"))}},
			objs:        []v1alpha1.AzurePrivateEndpoint{wc2PlacedAt(subnetA)},
			wantEntries: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint"}},
			wantPlaced:  map[string][]string{subnetA: {"wc2-api-privatelink-privateendpoint"}},
			limited:     []string{"org-a/wc4"},
		},
		{
			reason: "a deleted cluster's object goes; its network counts it until it is gone, so the next cluster takes the next network",
			opts:   beyond,
			seen: mcSeen{mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1"), wc("wc2", deleting), wc("wc3")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"))}},
			objs:        []v1alpha1.AzurePrivateEndpoint{wc2PlacedAt(subnetA)},
			wantEntries: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			wantPlaced:  map[string][]string{subnetB: {"wc3-api-privatelink-privateendpoint"}},
		},
		{
			reason: "a deleted cluster's object whose address it still publishes stays",
			opts:   beyond,
			seen: mcSeen{mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1"), wc("wc2", deleting)},
				current:    capz.Owned{Endpoints: onNodes(wcEntry("wc1"))},
				publishing: []Publishing{{Cluster: wc("wc2"), All: true}}},
			objs:        []v1alpha1.AzurePrivateEndpoint{wc2PlacedAt(subnetA)},
			wantEntries: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			wantPlaced:  map[string][]string{subnetA: {"wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "a paused cluster's object stays as it is",
			opts:   beyond,
			seen: mcSeen{mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1")},
				held:    []*capz.AzureCluster{wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinksReady = false })},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"))}},
			objs:        []v1alpha1.AzurePrivateEndpoint{wc2PlacedAt(subnetA)},
			wantEntries: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			wantPlaced:  map[string][]string{subnetA: {"wc2-api-privatelink-privateendpoint"}},
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			seen := tc.seen
			seen.placedObjs, seen.placed = tc.objs, placedOf(tc.objs)
			seen.owners = ownedBy(capz.FieldManager, slices.Sorted(maps.Keys(names(seen.current.Endpoints)))...)
			plan := decideMC(&seen, tc.opts)
			if diff := cmp.Diff(tc.wantEntries, namesBySubnet(plan.want.Endpoints)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPlaced, namesBySubnet(plan.placed)); diff != "" {
				t.Errorf("placed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.limited, limitedBy(t, plan.problems, "")); diff != "" {
				t.Errorf("limited (-want +got):\n%s", diff)
			}
		})
	}
}

// limitedBy are the clusters of problems told PrivateEndpointLimit;
// every such message says says.
func limitedBy(t *testing.T, problems []Problem, says string) []string {
	t.Helper()
	var out []string
	for _, p := range problems {
		if p.Reason != ReasonEndpointLimit {
			continue
		}
		out = append(out, p.Cluster)
		if !strings.Contains(p.Message, says) {
			t.Errorf("problem %+v does not say %q", p, says)
		}
	}
	return out
}

// namesBySubnet are the entries' names by subnet, nil when none.
func namesBySubnet(eps map[string][]capz.PrivateEndpoint) map[string][]string {
	var out map[string][]string
	for subnet, list := range eps {
		if len(list) == 0 {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		for _, pe := range list {
			out[subnet] = append(out[subnet], pe.Name)
		}
		slices.Sort(out[subnet])
	}
	return out
}

// TestDesiredPlaced: the object is in the MC's subscription, group,
// region and cloud, with its identity, keeps the endpoint's name and
// target, deletes the endpoint with it, and has no owner.
func TestDesiredPlaced(t *testing.T) {
	ep := mcEndpoint(true)
	ep.Subnet = subnetA
	m := mc(func(a *capz.AzureCluster) {
		a.IdentityRef = &capz.ObjectRef{Name: "mc-identity", Namespace: "org-giantswarm"}
	})
	o := desiredPlaced(m, ep)
	if o.Name != "wc1-api-privatelink-privateendpoint" || o.Namespace != m.Namespace || o.Labels[MCEndpointOfLabel] != m.Name ||
		o.Annotations[ForClusterAnnotation] != ep.Cluster || len(o.OwnerReferences) != 0 {
		t.Errorf("object meta: %+v", o.ObjectMeta)
	}
	s := o.Spec
	if s.SubscriptionID != m.SubscriptionID || s.ResourceGroup != m.ResourceGroup || s.Location != m.Location || s.Name != ep.Name ||
		s.SubnetID != subnetA || s.PrivateLinkServiceID != ep.Connections[0].PrivateLinkServiceID || !s.ManualApproval ||
		s.RequestMessage != ep.Connections[0].RequestMessage || s.DeletionPolicy != v1alpha1.DeletionPolicyDelete ||
		s.IdentityRef == nil || s.IdentityRef.Name != m.IdentityRef.Name {
		t.Errorf("spec: %+v", s)
	}
	back := placedEndpoint(o)
	if back.Name != ep.Name || !strings.EqualFold(back.Connections[0].PrivateLinkServiceID, ep.Connections[0].PrivateLinkServiceID) {
		t.Errorf("read back: %+v", back)
	}
}

// TestPlacedObjectName: the endpoint's name in lower case where
// Kubernetes takes it; otherwise a stable name of its own.
func TestPlacedObjectName(t *testing.T) {
	if got := placedObjectName("WC1-api-privatelink-privateendpoint"); got != "wc1-api-privatelink-privateendpoint" {
		t.Errorf("got %s", got)
	}
	a, b := placedObjectName("wc_1-privateendpoint"), placedObjectName("wc_2-privateendpoint")
	if !strings.HasPrefix(a, "mc-endpoint-") || a == b || a != placedObjectName("WC_1-privateendpoint") {
		t.Errorf("derived names %s, %s", a, b)
	}
}

// TestOnMCRoom: a workload cluster's own pass, against the MC's entries
// (one, the limit) and the operator's objects in the cache: an endpoint an
// object holds keeps its object's subnet; a new one beyond the limit is
// kept (the MC's pass makes its object) while a network has room, and
// refused when none has; an object of the name for another service is a
// name conflict; without Beyond the limit refuses as before.
func TestOnMCRoom(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := mcWith(wcEntry("wc1"))
	mcs := mcState{view: m, held: heldTargets(onNodes(wcEntry("wc1")))}
	beyond := Options{Config: Config{MCEndpointLimit: 1, Beyond: Beyond{Subnets: []string{subnetA, subnetB}, NetworkLimit: 1}}}
	of := func(name string) []Endpoint {
		ep := mcEndpoint(false)
		ep.Cluster, ep.PrivateEndpoint = "org-a/"+name, wcEntry(name)
		return []Endpoint{ep}
	}
	other := wc2PlacedAt(subnetA)
	other.Spec.PrivateLinkServiceID = PrivateLinkServiceID(wcSub, "elsewhere", "wc2-api-privatelink")
	for _, tc := range []struct {
		reason   string
		opts     Options
		objs     []client.Object
		cluster  string
		want     string // the subnet the endpoint is kept in; "" refused
		conflict bool
	}{
		{reason: "held by an entry", opts: beyond, cluster: "wc1", want: "mc-nodes"},
		{reason: "held by an object: its subnet", opts: beyond, objs: []client.Object{new(wc2PlacedAt(subnetB))}, cluster: "wc2", want: subnetB},
		{reason: "held by an object, Beyond off: still its subnet", opts: Options{Config: Config{MCEndpointLimit: 1}},
			objs: []client.Object{new(wc2PlacedAt(subnetB))}, cluster: "wc2", want: subnetB},
		{reason: "new beyond the limit, a network with room", opts: beyond, objs: []client.Object{new(wc2PlacedAt(subnetA))}, cluster: "wc3", want: subnetB},
		{reason: "new beyond the limit, every network full", opts: beyond,
			objs: []client.Object{new(wc2PlacedAt(subnetA)), desiredPlaced(m, Endpoint{Subnet: subnetB, PrivateEndpoint: wcEntry("wc4"), Cluster: "org-a/wc4"})}, cluster: "wc3"},
		{reason: "new beyond the limit, Beyond off", opts: Options{Config: Config{MCEndpointLimit: 1}}, cluster: "wc3"},
		{reason: "an object of the name for another service", opts: beyond, objs: []client.Object{&other}, cluster: "wc2", conflict: true},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			got, problems, err := onMCRoom(context.Background(), c, mcs, of(tc.cluster), tc.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			subnet := ""
			if len(got) == 1 {
				subnet = got[0].Subnet
			}
			if subnet != tc.want {
				t.Errorf("kept in %q, want %q (problems %v)", subnet, tc.want, problems)
			}
			conflict := len(problems) == 1 && problems[0].Reason == ReasonNameConflict
			limited := len(problems) == 1 && problems[0].Reason == ReasonEndpointLimit
			if conflict != tc.conflict || limited != (tc.want == "" && !tc.conflict) || (tc.want != "" && len(problems) > 0) {
				t.Errorf("problems %v", problems)
			}
		})
	}
}

// TestNetworkCapacities: a network takes 5,000 when Azure says it has
// high-scale private endpoints, 1,000 otherwise or when it cannot be
// read, never more than the flag; each is read once per TTL.
func TestNetworkCapacities(t *testing.T) {
	reads := map[string]int{}
	caps := &NetworkCapacities{TTL: time.Hour, HighScale: func(_ context.Context, _ *capz.AzureCluster, vnetID string) (bool, error) {
		reads[vnetID]++
		switch vnetID {
		case strings.ToLower(netA):
			return true, nil
		case strings.ToLower(netB):
			return false, nil
		}
		return false, errors.New("403 AuthorizationFailed")
	}}
	netC := "/subscriptions/" + mcSub + "/resourceGroups/pe-rg/providers/Microsoft.Network/virtualNetworks/pe-c"
	b := Beyond{Subnets: []string{subnetA, subnetB, netC + "/subnets/pe"}, NetworkLimit: MaxNetworkLimit}
	for range 3 {
		got := caps.Of(context.Background(), mc(), b).Capacity
		want := map[string]int{strings.ToLower(netA): 5000, strings.ToLower(netB): 1000, strings.ToLower(netC): 1000}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("capacities (-want +got):\n%s", diff)
		}
	}
	if reads[strings.ToLower(netA)] != 1 || reads[strings.ToLower(netC)] != 1 {
		t.Errorf("reads %v, want one per network within the TTL", reads)
	}
	b.NetworkLimit = 2000
	if got := caps.Of(context.Background(), mc(), b).Capacity[strings.ToLower(netA)]; got != 2000 {
		t.Errorf("a high-scale network under --mc-endpoint-network-limit 2000 takes %d", got)
	}
	// After the TTL a failed read keeps what Azure said last (a restart's
	// paced reads must not shrink a high-scale network), and is tried
	// again after a minute; a network never read stays at 1,000.
	clock := time.Now()
	caps.now = func() time.Time { return clock }
	clock = clock.Add(2 * time.Hour)
	failing := true
	caps.HighScale = func(_ context.Context, _ *capz.AzureCluster, vnetID string) (bool, error) {
		reads[vnetID]++
		if failing {
			return false, errors.New("429 held back")
		}
		return strings.EqualFold(vnetID, netA) || strings.EqualFold(vnetID, netC), nil
	}
	b.NetworkLimit = MaxNetworkLimit
	got := caps.Of(context.Background(), mc(), b).Capacity
	if got[strings.ToLower(netA)] != 5000 || got[strings.ToLower(netC)] != 1000 {
		t.Errorf("failed reads after the TTL: %v, want netA's last answer (5000) and netC's safe 1000", got)
	}
	failing = false
	clock = clock.Add(30 * time.Second)
	before := reads[strings.ToLower(netC)]
	caps.Of(context.Background(), mc(), b)
	if reads[strings.ToLower(netC)] != before {
		t.Error("a failed read was tried again before a minute passed")
	}
	clock = clock.Add(time.Minute)
	if got := caps.Of(context.Background(), mc(), b).Capacity[strings.ToLower(netC)]; got != 5000 {
		t.Errorf("netC read again after a minute: %d, want 5000", got)
	}
	var none *NetworkCapacities
	if got := none.Of(context.Background(), mc(), b).Capacity[strings.ToLower(netA)]; got != 1000 {
		t.Errorf("without a reader a network takes %d, want 1000", got)
	}
}

// TestIsPlaced: only an object in the MC's namespace labelled with its
// name is one of the MC's endpoint objects; a tenant's object carrying
// the label wakes neither the MC's pass nor the cluster it names.
func TestIsPlaced(t *testing.T) {
	mcKey := types.NamespacedName{Namespace: "org-giantswarm", Name: "mc"}
	o := wc2PlacedAt(subnetA)
	o.Namespace = mcKey.Namespace
	if !isPlaced(mcKey, &o) || len(wcOfPlaced(mcKey)(context.Background(), &o)) != 1 {
		t.Errorf("the MC's own object is not taken: %+v", o.ObjectMeta)
	}
	tenant := o.DeepCopy()
	tenant.Namespace = "org-a"
	if isPlaced(mcKey, tenant) || mcOfPlaced(mcKey)(tenant) || len(wcOfPlaced(mcKey)(context.Background(), tenant)) != 0 {
		t.Error("a tenant's object with the label is taken for the MC's")
	}
	other := o.DeepCopy()
	other.Labels[MCEndpointOfLabel] = "another-mc"
	if isPlaced(mcKey, other) {
		t.Error("another MC's object is taken for this one's")
	}
}

// TestPlacedFor: a deleted WC's release finds the MC's object for one of
// its services through the index, whatever the case of the service's ID;
// an object for another cluster's service, one in another namespace, and
// one without the MC's label (a tenant may label its own) keep nothing.
func TestPlacedFor(t *testing.T) {
	scheme := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := mc()
	mcKey := types.NamespacedName{Namespace: m.Namespace, Name: m.Name}
	wc2 := wc("wc2")
	mine := wc2PlacedAt(subnetA)
	upper := wc2PlacedAt(subnetA)
	upper.Spec.PrivateLinkServiceID = strings.ToUpper(upper.Spec.PrivateLinkServiceID)
	elsewhere := wc2PlacedAt(subnetA)
	elsewhere.Namespace = "org-tenant"
	unlabelled := wc2PlacedAt(subnetA)
	unlabelled.Labels = map[string]string{MCEndpointOfLabel: "another-mc"}
	wc3 := *desiredPlaced(m, Endpoint{Subnet: subnetA, PrivateEndpoint: wcEntry("wc3"), Cluster: "org-a/wc3"})
	for _, tc := range []struct {
		reason string
		objs   []client.Object
		want   bool
	}{
		{"its object", []client.Object{&mine}, true},
		{"its object, the service's ID in upper case", []client.Object{&upper}, true},
		{"another cluster's object only", []client.Object{&wc3}, false},
		{"an object for its service in another namespace", []client.Object{&elsewhere}, false},
		{"an object for its service labelled for another MC", []client.Object{&unlabelled}, false},
		{"none", nil, false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).
				WithIndex(&v1alpha1.AzurePrivateEndpoint{}, placedServiceIndex, placedService).Build()
			got, err := placedFor(context.Background(), c, mcKey, wc2)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("placedFor = %v, want %v", got, tc.want)
			}
		})
	}
}
