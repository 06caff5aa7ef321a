package wiringdns

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// zoneCluster is a workload cluster's object with the DNS state
// annotation (none when "") and, when ready, GSDNSZoneReady True.
func zoneCluster(name, held string, ready bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace("org-a")
	u.SetName(name)
	if held != "" {
		u.SetAnnotations(map[string]string{clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationPrivateDNS: held})
	}
	if ready {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": clusterlink.ConditionGSDNSZoneReady, "status": "True"}}, "status", "conditions")
	}
	return u
}

// TestHoldsMCZone: which clusters count against the per-cluster layout's
// zone limit, from their objects alone.
func TestHoldsMCZone(t *testing.T) {
	perCluster := clusterlink.DNSConfig{BaseDomain: "example.com"}
	perCluster.SetDefaults()
	shared := perCluster
	shared.MCZone = "{{.BaseDomain}}"
	opts := clusterlink.Options{}
	opts.SetDefaults()
	for _, c := range []struct {
		reason string
		u      *unstructured.Unstructured
		cfg    clusterlink.DNSConfig
		want   bool
	}{
		{"says it has its zone", zoneCluster("a", "mc=10.0.0.4,wc=-,mczone=own", false), perCluster, true},
		{"its zone stays while its records are gone", zoneCluster("a", "mc=,wc=-,mczone=own", false), perCluster, true},
		{"says so in a shared layout too (made before a switch)", zoneCluster("a", "mc=,wc=-,mczone=own", false), shared, true},
		{"released", zoneCluster("a", "mc=,wc=,released", true), perCluster, false},
		{"never wired", zoneCluster("a", "", false), perCluster, false},
		{"nothing written on the MC side", zoneCluster("a", "mc=-,wc=10.1.0.4", false), perCluster, false},
		{"an earlier version's state: records may hold an address", zoneCluster("a", "mc=10.0.0.4,wc=-", false), perCluster, true},
		{"an earlier version's state: a pass did not finish", zoneCluster("a", "mc=?,wc=-", false), perCluster, true},
		{"before any state: GSDNSZoneReady", zoneCluster("a", "", true), perCluster, true},
		{"an earlier version's state in a shared layout", zoneCluster("a", "mc=10.0.0.4,wc=-", true), shared, false},
	} {
		if got := holdsMCZone(c.u, c.cfg, opts.Annotation); got != c.want {
			t.Errorf("%s: holdsMCZone = %v, want %v", c.reason, got, c.want)
		}
	}
}

// TestZoneLimitCountsFromTheObjects: the count is of what the clusters
// record, so a new process (a restart, a new leader) counts every zone
// before it admits one — also of clusters it has not reconciled, or that
// are paused; an admission the cache does not show yet counts; a released
// cluster and the MC do not.
func TestZoneLimitCountsFromTheObjects(t *testing.T) {
	opts := clusterlink.Options{ManagementCluster: types.NamespacedName{Namespace: "org-a", Name: "mc"}}
	opts.DNS = clusterlink.DNSConfig{BaseDomain: "example.com", ZoneLimit: 3}
	opts.SetDefaults()
	mcObj := zoneCluster("mc", "", true) // an older operator's condition on the MC: not a WC's zone
	c := fake.NewClientBuilder().WithObjects(
		zoneCluster("wc1", "mc=10.0.1.4,wc=-,mczone=own", true),
		zoneCluster("wc2", "mc=10.0.2.4,wc=-", true), // an earlier version's state
		zoneCluster("gone", "mc=,wc=,released", true),
		mcObj,
	).WithIndex(clusterlink.NewAzureCluster(), mcZoneIndex, mcZoneIndexer(opts.DNS, opts.Annotation)).Build()
	clock := clocktesting.NewFakePassiveClock(time.Now())
	newProcess := func() *DNSReconciler {
		return &DNSReconciler{Client: c, Opts: opts, Recorder: events.NewFakeRecorder(100), Clock: clock}
	}
	set := func(name string) DNSSet {
		return DNSSet{Side: clusterlink.DNSSideMC, IP: "10.0.9.4", Owner: "org-a/" + name,
			VNet: "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/virtualNetworks/mc-vnet",
			Zone: dns.Zone{Subscription: mcSub, ResourceGroup: "mc-rg", Name: name + ".example.com"}}
	}
	// admit runs the limit for a cluster whose DNS state is held.
	admit := func(r *DNSReconciler, name, held string) (bool, []clusterlink.Problem) {
		t.Helper()
		u := zoneCluster(name, held, false)
		out, problems, own, err := r.checkZoneLimit(context.Background(), u, []DNSSet{set(name)}, nil, "org-a/"+name, holdsMCZone(u, opts.DNS, opts.Annotation))
		if err != nil {
			t.Fatal(err)
		}
		if own != (len(out) == 1) {
			t.Errorf("%s: own = %v with %d sets", name, own, len(out))
		}
		return len(out) == 1, problems
	}

	r := newProcess()
	if ok, _ := admit(r, "wc3", ""); !ok {
		t.Fatal("wc3 refused with two zones of three")
	}
	if ok, problems := admit(r, "wc4", ""); ok || len(problems) != 1 || problems[0].Reason != ReasonDNSZoneLimit {
		t.Fatalf("wc4 admitted past the limit (wc1, wc2 and wc3, just admitted, hold zones): %v", problems)
	}
	// wc3's state reaches the cache; a new process counts it, without
	// having reconciled anyone.
	wc3 := zoneCluster("wc3", "mc=10.0.9.4,wc=-,mczone=own", false)
	if err := c.Create(context.Background(), wc3); err != nil {
		t.Fatal(err)
	}
	if ok, _ := admit(newProcess(), "wc4", ""); ok {
		t.Fatal("a new process admitted wc4 past the limit: it did not count the clusters' records")
	}
	if ok, _ := admit(r, "wc4", ""); ok {
		t.Fatal("wc4 admitted past the limit")
	}
	if n := r.zoneRoom.Pending(mcZoneScope); n != 0 {
		t.Errorf("%d admissions wait for the cache after it showed them (wc3 counted twice?)", n)
	}
	// The limit is full; a cluster whose zone exists is always counted in.
	if ok, _ := admit(newProcess(), "wc3", wc3.GetAnnotations()[opts.Annotation(clusterlink.AnnotationPrivateDNS)]); !ok {
		t.Fatal("wc3 refused on its next pass")
	}
	// wc1's DNS is released: room for wc4.
	if err := c.Patch(context.Background(), zoneCluster("wc1", "", false), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+opts.Annotation(clusterlink.AnnotationPrivateDNS)+`":"mc=,wc=,released"}}}`))); err != nil {
		t.Fatal(err)
	}
	if ok, _ := admit(newProcess(), "wc4", ""); !ok {
		t.Fatal("wc4 refused after wc1's zone went")
	}
}
