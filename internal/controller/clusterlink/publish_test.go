package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const dnsAnn = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationPrivateDNS

// TestMCEntryOutlivesWhatPublishesIt: in DNS mode the MC keeps a WC's
// entry — and so CAPZ its endpoint, whose address Azure would hand to the
// next endpoint of the subnet — until nothing publishes the address: wc1's
// link is withdrawn and wc2 is deleted while their records cannot be
// removed; another cluster's change makes the MC reconcile again, and
// both entries stay; once the records go, the entries go and wc2 is
// released. What the records hold is recorded on each cluster.
func TestMCEntryOutlivesWhatPublishesIt(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	mcVNet := vnetID(mcSub, "mc-rg", "mc-vnet")
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21))
	operator(t, w, func(o *clusterlink.Options) {
		o.DNS = clusterlink.DNSConfig{Enabled: true, BaseDomain: baseDomain, Check: 500e6, ReadsPer5m: -1, WritesPer5m: -1}
	})
	ips := map[string]string{}
	for _, name := range []string{"wc1", "wc2"} {
		u := wired(t, w, name, true, true)
		dnsReady(t, w, name)
		ips[name] = u.GetAnnotations()[apiAnn]
		resolves(t, w, mcVNet, "api."+name+"."+baseDomain, azuresim.ResolveOK, ips[name])
		testworld.Eventually(t, testworld.Timeout, name+"'s DNS state recorded", func(ctx context.Context) (bool, string) {
			u, err := w.Get(ctx, wcNS, name)
			if err != nil {
				return false, err.Error()
			}
			want := fmt.Sprintf("mc=%s,wc=%s,mczone=own", u.GetAnnotations()[apiAnn], u.GetAnnotations()[ingAnn]) // a zone per cluster: counted against the limit
			return u.GetAnnotations()[dnsAnn] == want, u.GetAnnotations()[dnsAnn] + " want " + want
		})
	}

	fault, err := w.Sim.AddFault(azuresim.Fault{Method: "DELETE", PathRegex: `(?i)/privateDnsZones/wc[12]\.` + strings.ReplaceAll(baseDomain, ".", `\.`) + `(/|$)`,
		Status: 500, Code: "InternalServerError", Message: "Injected: the record set cannot be deleted now."})
	if err != nil {
		t.Fatal(err)
	}
	withdrawLinks(t, w, "wc1")
	u2, err := w.Get(ctx, wcNS, "wc2")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, u2); err != nil {
		t.Fatal(err)
	}
	// A cluster created after both changes is wired only by an MC
	// reconcile that saw them.
	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wired(t, w, "wc3", true, true)
	for _, name := range []string{"wc1", "wc2"} {
		resolves(t, w, mcVNet, "api."+name+"."+baseDomain, azuresim.ResolveOK, ips[name])
	}
	names := endpointNames(t, w, mcKey)
	for _, name := range []string{"wc1", "wc2"} {
		if !slices.Contains(names, name+"-api-privatelink-privateendpoint") {
			t.Errorf("the MC let %s's entry go while its record still holds %s: %v", name, ips[name], names)
		}
		if azureIP(t, w, mcSub, "mc-rg", name+"-api-privatelink-privateendpoint") != ips[name] {
			t.Errorf("%s's endpoint no longer holds %s while its record does", name, ips[name])
		}
	}
	if _, err := w.Get(ctx, wcNS, "wc2"); err != nil {
		t.Errorf("wc2 was released before its DNS: %v", err)
	}

	w.Sim.RemoveFault(fault)
	for _, name := range []string{"wc1", "wc2"} {
		testworld.Eventually(t, testworld.Timeout, name+"'s record and entry gone", func(context.Context) (bool, string) {
			r := w.Sim.Resolve(mcVNet, "api."+name+"."+baseDomain)
			names := endpointNames(t, w, mcKey)
			return r.Status != azuresim.ResolveOK && !slices.Contains(names, name+"-api-privatelink-privateendpoint"), fmt.Sprintf("%+v %v", r, names)
		})
	}
	testworld.Eventually(t, testworld.Timeout, "wc2 released", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc2")
		if err != nil {
			return true, ""
		}
		return false, testworld.Describe(u)
	})
}

// TestWatchFilterFreezesWiring: a WC that loses the watch-filter label is
// left as it is — its MC entry stays with its annotation (deleting the
// endpoint under a published address frees the address for the next
// cluster's endpoint); with the label back it is wired as before.
func TestWatchFilterFreezesWiring(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	for _, c := range []testworld.Cluster{mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21)} {
		u := c.Object(testenv.SchemaFork)
		u.SetLabels(map[string]string{clusterlink.WatchFilterLabel: "apeo"})
		if err := w.Client.Create(ctx, u, client.FieldOwner(userMgr)); err != nil {
			t.Fatal(err)
		}
	}
	operator(t, w, func(o *clusterlink.Options) { o.WatchFilter = "apeo" })
	u := wired(t, w, "wc1", true, true)
	ip := u.GetAnnotations()[apiAnn]
	wired(t, w, "wc2", true, true)

	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"metadata":{"labels":{"`+clusterlink.WatchFilterLabel+`":null}}}`)
	// wc2's link is withdrawn: its entry leaves only by an MC reconcile
	// after wc1 lost the label.
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc2"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	testworld.Eventually(t, testworld.Timeout, "wc2's entry gone", func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		return !slices.Contains(names, "wc2-api-privatelink-privateendpoint"), fmt.Sprint(names)
	})
	if names := endpointNames(t, w, mcKey); !slices.Contains(names, "wc1-api-privatelink-privateendpoint") {
		t.Errorf("the MC dropped the entry of a cluster the watch filter leaves alone: %v", names)
	}
	u, err := w.Get(ctx, wcNS, "wc1")
	if err != nil {
		t.Fatal(err)
	}
	if got := u.GetAnnotations()[apiAnn]; got != ip || azureIP(t, w, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint") != ip {
		t.Errorf("wc1's annotation %q and its endpoint's address no longer agree on %s", got, ip)
	}
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"metadata":{"labels":{"`+clusterlink.WatchFilterLabel+`":"apeo"}}}`)
	testworld.Eventually(t, testworld.Timeout, "wc1 still wired", func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, "wc1")
		if err != nil {
			return false, err.Error()
		}
		return u.GetAnnotations()[apiAnn] == ip && conditionTrue(u, clusterlink.ConditionGSPrivateLinksReady), testworld.Describe(u)
	})
}
