//go:build capzdiff

// The differential suite (make test-capz): each scenario runs twice with
// the operator binary, once in capzsim's world and once with the real CAPZ
// and ASO, and what matters to a user is compared — the private endpoints
// and private link services in Azure, the annotations the operator writes
// and the order their values took, the operator's conditions and CAPZ's
// PrivateLinksReady, and CAPZ's ASO objects. A difference fails the
// scenario unless knownDifferences names it, with why capzsim keeps it
// (docs/azuresim.md lists the same).

package realcapz

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// knownDifferences are the compared facts on which capzsim's world may
// differ from the real one, each with why capzsim keeps the difference.
// A key matches a fact whose key it prefixes.
var knownDifferences = map[string]string{}

// side is one of the two worlds a scenario runs in.
type side struct {
	name string
	real bool
}

var sides = []side{{"capzsim", false}, {"real", true}}

// runDiff runs a scenario in both worlds and compares their outcomes.
func runDiff(t *testing.T, scenario func(t *testing.T, s *scene)) {
	t.Helper()
	got := map[string]map[string]string{}
	for _, sd := range sides {
		ok := t.Run(sd.name, func(t *testing.T) {
			s := newScene(t, sd)
			scenario(t, s)
			got[sd.name] = s.outcome(t)
		})
		if !ok {
			t.Fatalf("the scenario failed in %s's world; nothing to compare", sd.name)
		}
	}
	compare(t, got["capzsim"], got["real"])
}

// compare fails for every fact that differs between the worlds and is not
// a known difference, and logs the known ones.
func compare(t *testing.T, sim, actual map[string]string) {
	t.Helper()
	all := slices.Sorted(maps.Keys(union(sim, actual)))
	t.Logf("comparing %d facts (capzsim's world %d, the real one %d)", len(all), len(sim), len(actual))
	for _, k := range all {
		if sim[k] == actual[k] {
			continue
		}
		if why := known(k); why != "" {
			t.Logf("known difference %s: capzsim %q, real %q (%s)", k, sim[k], actual[k], why)
			continue
		}
		t.Errorf("capzsim's world differs from the real one: %s\n  capzsim: %q\n  real:    %q", k, sim[k], actual[k])
	}
}

func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

func known(key string) string {
	for prefix, why := range knownDifferences {
		if strings.HasPrefix(key, prefix) {
			return why
		}
	}
	return ""
}

// scene is a running world of either side, the operator binary on it, and
// the timelines of the WCs' annotations.
type scene struct {
	side
	w  *testworld.World
	op *sandbox.Operator

	mu        sync.Mutex
	instances map[string]string   // an endpoint's NIC ID -> "<name>#<n>"
	counts    map[string]int      // endpoint name -> instances seen
	timelines map[string][]string // "<wc> <annotation>" -> distinct values in order
	began     time.Time
}

func newScene(t *testing.T, sd side) *scene {
	t.Helper()
	return &scene{side: sd, instances: map[string]string{}, counts: map[string]int{}, timelines: map[string][]string{}, began: time.Now()}
}

// step logs how long the scene took to reach a step.
func (s *scene) step(t *testing.T, what string) {
	t.Helper()
	t.Logf("%6.1fs %s", time.Since(s.began).Seconds(), what)
}

// start starts the scene's world with the given CAPZ schema and the watch
// that records the WCs' annotations, creates the private MC, and makes its
// ingress once CAPZ made its network.
func (s *scene) start(t *testing.T, schema testenv.Schema) {
	t.Helper()
	if s.real {
		s.w = start(t, schema)
	} else {
		s.w = testworld.Start(t, testworld.Options{Schema: schema})
	}
	s.w.Namespace(t, mcNS)
	s.w.Namespace(t, wcNS)
	s.w.WatchClusters(t, wcNS, "", s.record)
	s.cluster(t, testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}, schema)
	s.mcNetwork(t)
}

// record appends a WC's annotations to their timelines, each address
// named by the endpoint that holds it in Azure.
func (s *scene) record(u *unstructured.Unstructured) {
	eps := s.w.Sim.Endpoints()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range []struct{ key, label string }{{apiAnn, "api"}, {ingAnn, "ingress"}} {
		v := s.nameOf(eps, u.GetAnnotations()[a.key])
		k := u.GetName() + " " + a.label
		if tl := s.timelines[k]; len(tl) == 0 || tl[len(tl)-1] != v {
			s.timelines[k] = append(tl, v)
		}
	}
}

// nameOf names an address by the endpoint instance holding it: its name
// and the how-manieth instance of that name it is ("-" for no address;
// what Azure holds, for an address no endpoint holds).
// Callers hold s.mu.
func (s *scene) nameOf(eps []azuresim.EndpointInfo, ip string) string {
	if ip == "" {
		return "-"
	}
	for _, e := range eps {
		if e.IP != ip {
			continue
		}
		if inst, ok := s.instances[e.NIC]; ok {
			return inst
		}
		s.counts[e.Name]++
		s.instances[e.NIC] = fmt.Sprintf("%s#%d", e.Name, s.counts[e.Name])
		return s.instances[e.NIC]
	}
	var all []string
	for _, e := range eps {
		all = append(all, e.Name+"="+e.IP+"/"+e.ConnectionState)
	}
	return "address of no endpoint (" + ip + "; " + strings.Join(all, " ") + ")"
}

// operator starts the operator binary for the MC (args are added to
// startOperator's).
func (s *scene) operator(t *testing.T, args ...string) {
	t.Helper()
	s.op = startOperator(t, s.w, args...)
}

// cluster creates a cluster owned by a Cluster API Cluster.
func (s *scene) cluster(t *testing.T, c testworld.Cluster, schema testenv.Schema) {
	t.Helper()
	s.w.CreateOwned(t, c, schema)
}

// mcNetwork waits until the MC's node subnet is in Azure (CAPZ made the
// network) and makes the MC's ingress private link service there.
func (s *scene) mcNetwork(t *testing.T) {
	t.Helper()
	testworld.Eventually(t, readyLimit, "the MC's network in Azure", func(ctx context.Context) (bool, string) {
		_, err := s.w.Network(t, mcSub).NewSubnetsClient().Get(ctx, "mc-rg", "mc-vnet", "mc-nodes", nil)
		return err == nil, fmt.Sprint(err)
	})
	createIngress(t, s.w, "mc", mcSub, "mc-rg", "mc-vnet", "mc-nodes", wcSub)
	s.step(t, "the MC's network and ingress made")
}

// wired waits until a WC has both annotations, each the address of the
// endpoint the wiring names for it.
func (s *scene) wired(t *testing.T, wc, apiEndpoint string) {
	t.Helper()
	testworld.Eventually(t, readyLimit, wc+" wired both ways", func(ctx context.Context) (bool, string) {
		if gone, err := s.op.Exited(); gone {
			return false, fmt.Sprintf("the operator exited: %v", err)
		}
		u, err := s.w.Get(ctx, wcNS, wc)
		if err != nil {
			return false, err.Error()
		}
		a := u.GetAnnotations()
		api, ing := ipOf(s.w, mcSub, apiEndpoint), ipOf(s.w, wcSub, wc+"-to-mc-privatelink-privateendpoint")
		return api != "" && a[apiAnn] == api && ing != "" && a[ingAnn] == ing,
			fmt.Sprintf("annotations api %q ingress %q, endpoints' addresses %q %q", a[apiAnn], a[ingAnn], api, ing)
	})
	s.step(t, wc+" wired")
}

// ipOf is the address of the endpoint of a name in a subscription with an
// Approved connection, "" if there is none.
func ipOf(w *testworld.World, sub, name string) string {
	for _, e := range w.Sim.Endpoints() {
		if e.Name == name && strings.Contains(e.ID, "/subscriptions/"+sub+"/") && e.ConnectionState == "Approved" {
			return e.IP
		}
	}
	return ""
}

// mcEndpoint is what azuresim holds of one of the MC's endpoints (zero if
// there is none).
func mcEndpoint(w *testworld.World, name string) azuresim.EndpointInfo {
	for _, e := range w.Sim.Endpoints() {
		if e.Name == name && strings.Contains(e.ID, "/subscriptions/"+mcSub+"/") {
			return e
		}
	}
	return azuresim.EndpointInfo{}
}

// outcome is what the scene ends with, as facts to compare.
func (s *scene) outcome(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, e := range s.w.Sim.Endpoints() {
		out["azure endpoint "+rgAndName(e.ID)] = fmt.Sprintf("%s, to %s", e.ConnectionState, rgAndName(e.PrivateLinkService))
	}
	for _, r := range s.w.Sim.Resources("") {
		if parts := strings.Split(strings.ToLower(r.ID), "/"); len(parts) == 9 && parts[7] == "privatelinkservices" {
			out["azure service "+rgAndName(r.ID)] = r.ProvisioningState
		}
	}
	s.mu.Lock()
	for k, tl := range s.timelines {
		out["timeline "+k] = strings.Join(tl, " → ")
	}
	s.mu.Unlock()
	for _, ns := range []string{mcNS, wcNS} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
		if err := s.w.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			conditions(out, &list.Items[i])
		}
		for _, gvk := range []string{"PrivateEndpoint", "PrivateLinkService"} {
			objs := &unstructured.UnstructuredList{}
			objs.SetGroupVersionKind(capz.ASOPrivateEndpointGVK.GroupVersion().WithKind(gvk + "List"))
			if err := s.w.Client.List(ctx, objs, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			for i := range objs.Items {
				o := &objs.Items[i]
				a := capz.ReadASO(o)
				out[fmt.Sprintf("aso %s %s/%s", gvk, ns, o.GetName())] = fmt.Sprintf("ready=%v policy=%s", a.Ready, o.GetAnnotations()[capz.ASOReconcilePolicyAnnotation])
			}
		}
	}
	return out
}

// conditions adds the operator's conditions on a cluster (GS…) and CAPZ's
// PrivateLinksReady, which the operator reads.
func conditions(out map[string]string, u *unstructured.Unstructured) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ := fmt.Sprint(m["type"])
		if strings.HasPrefix(typ, "GS") || typ == capz.ConditionPrivateLinksReady {
			out[fmt.Sprintf("condition %s/%s %s", u.GetNamespace(), u.GetName(), typ)] = fmt.Sprintf("%v %v", m["status"], m["reason"])
		}
	}
}

// rgAndName shortens an Azure resource ID to "<resource group>/<name>".
func rgAndName(id string) string {
	parts := strings.Split(id, "/")
	if len(parts) < 9 {
		return id
	}
	return strings.ToLower(parts[4]) + "/" + parts[len(parts)-1]
}

// TestDiffNativeLinks: a private MC and three private WCs on CAPZ v1.27
// with native private links — two auto-approving the MC, one whose owner
// approves the MC's endpoint by hand —, then a heal (the connection of the
// MC's endpoint to wc1 removed: the operator deletes CAPZ's ASO object,
// CAPZ makes it again, ASO the endpoint), then wc2 deleted (the operator
// takes its entry out of the MC; CAPZ's ListFunc deletes the ASO object;
// ASO the endpoint).
func TestDiffNativeLinks(t *testing.T) {
	runDiff(t, func(t *testing.T, s *scene) {
		ctx := context.Background()
		s.start(t, testenv.SchemaV127)
		for i, name := range []string{"wc1", "wc2", "wc3"} {
			link := testworld.PrivateLink{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}
			if name == "wc3" {
				link.AutoApprovedSubscriptions = nil
			}
			s.cluster(t, testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: 20 + i,
				PrivateLinks: []testworld.PrivateLink{link}}, testenv.SchemaV127)
		}
		s.operator(t, "--heal-disconnected-after=1s", "--drift-check-interval=5s")
		s.wired(t, "wc1", "wc1-api-privatelink-privateendpoint")
		s.wired(t, "wc2", "wc2-api-privatelink-privateendpoint")

		// wc3's owner approves the MC's endpoint.
		testworld.Eventually(t, readyLimit, "the MC's endpoint to wc3 Pending", func(context.Context) (bool, string) {
			e := mcEndpoint(s.w, "wc3-api-privatelink-privateendpoint")
			return e.ConnectionState == "Pending", fmt.Sprintf("%+v", e)
		})
		s.step(t, "the MC's endpoint to wc3 Pending")
		approve(t, s.w, "wc3")
		s.wired(t, "wc3", "wc3-api-privatelink-privateendpoint")

		// The heal.
		before := mcEndpoint(s.w, "wc1-api-privatelink-privateendpoint")
		if err := s.w.Sim.ActOnConnection(azuresim.ConnectionAction{
			PrivateLinkServiceID: clusterlink.PrivateLinkServiceID(wcSub, "wc1-rg", "wc1-api-privatelink"), PrivateEndpointID: before.ID, Remove: true,
		}); err != nil {
			t.Fatal(err)
		}
		testworld.Eventually(t, readyLimit, "the MC's endpoint to wc1 made again", func(context.Context) (bool, string) {
			e := mcEndpoint(s.w, "wc1-api-privatelink-privateendpoint")
			return e.NIC != "" && e.NIC != before.NIC && e.ConnectionState == "Approved", fmt.Sprintf("%+v", e)
		})
		s.step(t, "the MC's endpoint to wc1 made again")
		s.wired(t, "wc1", "wc1-api-privatelink-privateendpoint")
		checkASOEndpoint(t, s.w, "wc1-api-privatelink-privateendpoint")

		// wc2 deleted.
		wc2 := capz.Object(capz.AzureClusterGVK)
		wc2.SetNamespace(wcNS)
		wc2.SetName("wc2")
		if err := s.w.Client.Delete(ctx, wc2); err != nil {
			t.Fatal(err)
		}
		testworld.Eventually(t, readyLimit, "wc2 gone, and the MC's endpoint to it with its entry and ASO object", func(ctx context.Context) (bool, string) {
			e := mcEndpoint(s.w, "wc2-api-privatelink-privateendpoint")
			entries := s.w.EntryNames(t, types.NamespacedName{Namespace: mcNS, Name: "mc"})
			obj := capz.Object(capz.ASOPrivateEndpointGVK)
			err := s.w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc2-api-privatelink-privateendpoint"}, obj)
			_, wcErr := s.w.Get(ctx, wcNS, "wc2")
			return e.ID == "" && !slices.Contains(entries, "wc2-api-privatelink-privateendpoint") && apierrors.IsNotFound(err) && apierrors.IsNotFound(wcErr),
				fmt.Sprintf("endpoint %q, MC entries %v, ASO object: %v, wc2: %v", e.ID, entries, err, wcErr)
		})
		s.step(t, "the MC's endpoint to wc2 gone")
		checkASOEndpoint(t, s.w, "wc3-api-privatelink-privateendpoint")
	})
}

// approve approves the MC's pending connection to a WC's private link.
func approve(t *testing.T, w *testworld.World, wc string) {
	t.Helper()
	e := mcEndpoint(w, wc+"-api-privatelink-privateendpoint")
	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{
		PrivateLinkServiceID: clusterlink.PrivateLinkServiceID(wcSub, wc+"-rg", wc+"-api-privatelink"), PrivateEndpointID: e.ID, Status: "Approved",
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDiffManagedToNative: a private MC and a private WC on upstream CAPZ
// v1.23, which makes no private link services: the operator makes the
// WC's (--manage-private-link-services), CAPZ the MC's endpoint to it
// through ASO. Then CAPZ is upgraded to v1.27 and the operator restarted:
// the WC keeps its managed service and its addresses, and the MC's
// endpoint is not made again. A WC created after the upgrade, declaring
// its link, is wired through CAPZ's own service.
func TestDiffManagedToNative(t *testing.T) {
	runDiff(t, func(t *testing.T, s *scene) {
		ctx := context.Background()
		s.start(t, testenv.SchemaUpstream)
		s.cluster(t, testworld.Cluster{Namespace: wcNS, Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20}, testenv.SchemaUpstream)
		s.operator(t, "--manage-private-link-services")
		s.wired(t, "wc1", "wc1-api-privatelink-privateendpoint")
		checkASOEndpoint(t, s.w, "wc1-api-privatelink-privateendpoint")
		before := mcEndpoint(s.w, "wc1-api-privatelink-privateendpoint")

		if err := s.op.Stop(30 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := s.w.UpgradeCAPZ(ctx, testenv.SchemaV127); err != nil {
			t.Fatal(err)
		}
		s.step(t, "CAPZ upgraded to v1.27")
		s.operator(t, "--manage-private-link-services")
		testworld.Eventually(t, readyLimit, "CAPZ v1.27 managing the ASO endpoint v1.23 made", func(ctx context.Context) (bool, string) {
			obj := capz.Object(capz.ASOPrivateEndpointGVK)
			err := s.w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc1-api-privatelink-privateendpoint"}, obj)
			return err == nil && capz.ReadASO(obj).Ready && obj.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] == capz.ASOReconcilePolicyManage,
				fmt.Sprint(err, obj.GetAnnotations())
		})
		s.step(t, "CAPZ v1.27 manages the MC's ASO endpoint")
		s.cluster(t, testworld.Cluster{Namespace: wcNS, Name: "wc2", Subscription: wcSub, Private: true, CIDR16: 21,
			PrivateLinks: []testworld.PrivateLink{{Name: "wc2-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}},
			testenv.SchemaV127)
		s.wired(t, "wc2", "wc2-api-privatelink-privateendpoint")
		s.wired(t, "wc1", "wc1-api-privatelink-privateendpoint")
		if after := mcEndpoint(s.w, "wc1-api-privatelink-privateendpoint"); after.NIC != before.NIC {
			t.Errorf("the MC's endpoint to wc1 was made again in the upgrade: %+v, was %+v", after, before)
		}
	})
}
