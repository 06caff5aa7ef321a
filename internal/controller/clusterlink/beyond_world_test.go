package clusterlink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestMCEndpointsBeyond: the MC's AzureCluster takes one entry
// (--mc-private-endpoint-limit 1), and two further networks of the MC's
// subscription take one endpoint each (azuresim refuses a second, as
// Azure does beyond its 1,000, and so does --mc-endpoint-network-limit).
// wc1 gets the entry; wc2 and wc3 get AzurePrivateEndpoints in the first
// and the second network, under the usual endpoint name in the MC's
// resource group, and are wired; wc4 fits nowhere and waits with
// PrivateEndpointLimit, on the cluster and on the MC, and Azure is never
// sent an endpoint it refuses. When wc2 is deleted, its object and
// endpoint go before its finalizer does, and wc4 takes the room; wc3's
// object is never touched, and the MC's entries hold only wc1's.
func TestMCEndpointsBeyond(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerVirtualNetwork: 1}})
	w.Namespace(t, wcNS)
	subnetA, subnetB := seedNetwork(t, w, "mc-pe-a", 50, false), seedNetwork(t, w, "mc-pe-b", 51, false)
	create(t, w, testenv.SchemaFork, mcCluster(true))
	operator(t, w, func(o *clusterlink.Options) {
		o.MCEndpointLimit = 1
		o.Beyond = clusterlink.Beyond{Subnets: []string{subnetA, subnetB}, NetworkLimit: 1}
	})
	w.StartPrivateEndpoints(t, privateendpoint.Options{})
	// One after the other: which cluster takes which room depends on the
	// order their links turn ready.
	for i, wc := range []string{"wc1", "wc2", "wc3"} {
		create(t, w, testenv.SchemaFork, wcCluster(wc, 20+i))
		wired(t, w, wc, true, true)
	}
	waitEvent(t, w, mcKey, clusterlink.ReasonEndpointPlaced)
	if names := endpointNames(t, w, mcKey); !slices.Equal(names, []string{"wc1-api-privatelink-privateendpoint"}) {
		t.Errorf("the MC's entries: %v, want wc1's only", names)
	}
	placedIn(t, w, "wc2", subnetA)
	wc3Obj := placedIn(t, w, "wc3", subnetB)
	explainsPlaced(t, w, "wc2", subnetA)
	mcSays(t, w, "True", clusterlink.ReasonNetworkLimitNear, "mc-pe-b, the last of --mc-endpoint-subnets, holds 1 of the operator's private endpoints, the limit is 1")
	waitEvent(t, w, mcKey, clusterlink.ReasonNetworkLimitNear)

	create(t, w, testenv.SchemaFork, wcCluster("wc4", 23))
	wc4 := types.NamespacedName{Namespace: wcNS, Name: "wc4"}
	limited(t, w, "wc4", clusterlink.ReasonEndpointLimit)
	mcSays(t, w, "Unknown", clusterlink.ReasonEndpointLimit, "no private endpoint for 1 workload cluster ("+wc4.String()+"): the AzureCluster holds 1 entries, "+
		"the limit is 1 (--mc-private-endpoint-limit), and no network of --mc-endpoint-subnets has room for them (mc-pe-a 1/1, mc-pe-b 1/1;")
	explains(t, w, wc4, "private links ready", clusterlink.ReasonEndpointLimit)
	if n := w.Sim.Counters().Errors[endpointsPerVNetExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s: the operator sent them", n, endpointsPerVNetExceeded)
	}

	// wc2 goes: its object and endpoint first, then its finalizer; wc4
	// takes the first network's room.
	deleteCluster(t, w, wcNS, "wc2")
	ctx := context.Background()
	if _, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(ctx, "mc-rg", "wc2-api-privatelink-privateendpoint", nil); err == nil {
		t.Error("wc2's endpoint is still in Azure after wc2 is gone")
	}
	wired(t, w, "wc4", true, true)
	placedIn(t, w, "wc4", subnetA)
	after := placedIn(t, w, "wc3", subnetB)
	if after.UID != wc3Obj.UID || after.Generation != wc3Obj.Generation {
		t.Errorf("wc3's object was replaced or changed: %s/%d -> %s/%d", wc3Obj.UID, wc3Obj.Generation, after.UID, after.Generation)
	}
	if names := endpointNames(t, w, mcKey); !slices.Equal(names, []string{"wc1-api-privatelink-privateendpoint"}) {
		t.Errorf("the MC's entries: %v, want wc1's only", names)
	}
	if n := w.Sim.Counters().Errors[endpointsPerVNetExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s", n, endpointsPerVNetExceeded)
	}
}

// TestMCEndpointsHighScale: each network takes what Azure allows it, read
// from the network (azuresim: one endpoint per network, two with
// high-scale private endpoints), under the default
// --mc-endpoint-network-limit. wc1 gets the MC's one entry, wc2 and wc3
// the high-scale first network, wc4 the second, and Azure refuses
// nothing.
func TestMCEndpointsHighScale(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerVirtualNetwork: 1, PrivateEndpointsPerHighScaleVirtualNetwork: 2}})
	w.Namespace(t, wcNS)
	subnetA, subnetB := seedNetwork(t, w, "mc-pe-a", 50, true), seedNetwork(t, w, "mc-pe-b", 51, false)
	create(t, w, testenv.SchemaFork, mcCluster(true))
	operator(t, w, func(o *clusterlink.Options) {
		o.MCEndpointLimit = 1
		// Azure's figures lowered as azuresim's are.
		o.Beyond = clusterlink.Beyond{Subnets: []string{subnetA, subnetB}, NetworkLimit: clusterlink.MaxNetworkLimit, Standard: 1, HighScale: 2}
	})
	w.StartPrivateEndpoints(t, privateendpoint.Options{})
	for i, wc := range []string{"wc1", "wc2", "wc3", "wc4"} {
		create(t, w, testenv.SchemaFork, wcCluster(wc, 20+i))
		wired(t, w, wc, true, true)
	}
	placedIn(t, w, "wc2", subnetA)
	placedIn(t, w, "wc3", subnetA)
	placedIn(t, w, "wc4", subnetB)
	mcSays(t, w, "True", clusterlink.ReasonNetworkLimitNear, "mc-pe-b, the last of --mc-endpoint-subnets, holds 1 of the operator's private endpoints, the limit is 1")
	if n := w.Sim.Counters().Errors[endpointsPerVNetExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s", n, endpointsPerVNetExceeded)
	}
}

// seedNetwork makes a virtual network of the MC's subscription, in a
// resource group of its own (mc-pe-rg, not the MC's), with one subnet "pe" (10.<cidr>.0.0/24), and returns
// the subnet's ID.
func seedNetwork(t *testing.T, w *testworld.World, name string, cidr int, highScale bool) string {
	t.Helper()
	vnetID := "/subscriptions/" + mcSub + "/resourceGroups/mc-pe-rg/providers/Microsoft.Network/virtualNetworks/" + name
	props := &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new(fmt.Sprintf("10.%d.0.0/16", cidr))}},
		Subnets:      []*armnetwork.Subnet{{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(fmt.Sprintf("10.%d.0.0/24", cidr))}}},
	}
	if highScale {
		props.PrivateEndpointVNetPolicies = new(armnetwork.PrivateEndpointVNetPoliciesBasic)
	}
	raw, err := json.Marshal(armnetwork.VirtualNetwork{Location: new("westeurope"), Properties: props})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: mcSub, Name: "mc-pe-rg", Location: "westeurope"}},
		Resources: []azuresim.SeedResource{{ID: vnetID, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
	return vnetID + "/subnets/pe"
}

// placedIn checks that the MC's endpoint to a WC's API server is the
// operator's AzurePrivateEndpoint in subnet, and its endpoint in Azure,
// in the MC's resource group, is in that subnet and connects to the WC's
// service.
func placedIn(t *testing.T, w *testworld.World, wc, subnet string) *v1alpha1.AzurePrivateEndpoint {
	t.Helper()
	ctx := context.Background()
	name := wc + "-api-privatelink-privateendpoint"
	o := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: name}, o); err != nil {
		t.Fatalf("%s's object: %v", wc, err)
	}
	if o.Labels[clusterlink.MCEndpointOfLabel] != "mc" || o.Annotations[clusterlink.ForClusterAnnotation] != wcNS+"/"+wc ||
		o.Spec.SubnetID != subnet || o.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete || len(o.OwnerReferences) != 0 {
		t.Errorf("%s's object: labels %v annotations %v subnet %s policy %s owners %v", wc, o.Labels, o.Annotations, o.Spec.SubnetID, o.Spec.DeletionPolicy, o.OwnerReferences)
	}
	pe, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(ctx, "mc-rg", name, nil)
	if err != nil {
		t.Fatalf("%s's endpoint in Azure: %v", wc, err)
	}
	conns := pe.Properties.PrivateLinkServiceConnections
	if !strings.EqualFold(*pe.Properties.Subnet.ID, subnet) || len(conns) != 1 ||
		!strings.EqualFold(*conns[0].Properties.PrivateLinkServiceID, clusterlink.PrivateLinkServiceID(wcSub, wc+"-rg", wc+"-api-privatelink")) {
		t.Errorf("%s's endpoint in Azure: subnet %s, connections %d", wc, *pe.Properties.Subnet.ID, len(conns))
	}
	return o
}

// explainsPlaced checks that kubectl apeo explain shows a placed
// cluster's MC endpoint, the operator's object in subnet, as it shows an
// entry.
func explainsPlaced(t *testing.T, w *testworld.World, wc, subnet string) {
	t.Helper()
	key := types.NamespacedName{Namespace: wcNS, Name: wc}
	if mc, found, err := explain.FindManagementCluster(context.Background(), w.Client, key); !found || err != nil || mc != mcKey {
		t.Errorf("FindManagementCluster(%s) = %v, %v, %v; want %v, found by its placed endpoint", key, mc, found, err, mcKey)
	}
	r, err := explain.Explain(context.Background(), w.Client, key, explain.Options{ManagementCluster: mcKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range r.Steps {
		if st.Name == "MC endpoints to the cluster" {
			if st.State != explain.StateOK || !strings.Contains(st.Detail, wc+"-api-privatelink-privateendpoint (subnet "+subnet+", AzurePrivateEndpoint "+mcNS+"/") {
				t.Errorf("explain %s: %+v", wc, st)
			}
			return
		}
	}
	t.Errorf("explain %s has no step of the MC's endpoints: %+v", wc, r.Steps)
}

// TestMCEndpointBeyondDriftFromTheList: the wiring lists the MC's
// subscription at every drift tick, and the AzurePrivateEndpoint of an
// endpoint beyond the MC's AzureCluster, which uses the MC's credential,
// checks its endpoint for drift against that list: while the list shows
// the endpoint as the object's last read did, the drift checks read
// nothing (4 checks, at most 1 read, where each used to read it). When the
// endpoint is changed behind the operator's back (a tag the operator
// sets), its etag changes, the next check reads it and writes the tag
// back.
func TestMCEndpointBeyondDriftFromTheList(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	subnet := seedNetwork(t, w, "mc-pe-a", 50, false)
	create(t, w, testenv.SchemaFork, mcCluster(true))
	observer := &privateendpoints.Observer{TTL: 100 * time.Millisecond}
	opts := clusterlink.Options{ManagementCluster: mcKey, DeleteOrphanedEndpoints: true, DriftCheck: 250 * time.Millisecond}
	opts.MCEndpointLimit, opts.Beyond = 1, clusterlink.Beyond{Subnets: []string{subnet}, NetworkLimit: 10}
	w.StartOperatorObserving(t, opts, observer)
	w.StartPrivateEndpoints(t, privateendpoint.Options{Observer: observer, DriftInterval: 2 * time.Second, Tags: map[string]string{"apeo-drift": "kept"}})
	for i, wc := range []string{"wc1", "wc2"} {
		create(t, w, testenv.SchemaFork, wcCluster(wc, 20+i))
		wired(t, w, wc, true, true)
	}
	placedIn(t, w, "wc2", subnet)
	name := "wc2-api-privatelink-privateendpoint"
	key := types.NamespacedName{Namespace: mcNS, Name: name}
	var id string
	testworld.Eventually(t, testworld.Timeout, "wc2's object Ready", func(ctx context.Context) (bool, string) {
		o := &v1alpha1.AzurePrivateEndpoint{}
		if err := w.Client.Get(ctx, key, o); err != nil {
			return false, err.Error()
		}
		id = strings.ToLower(o.Status.PrivateEndpointID)
		return id != "" && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady), fmt.Sprint(o.Status.Conditions)
	})
	reads := func() int { return w.Sim.Counters().Reads[id] }

	// Quiet now: every reconcile of the object is a drift check.
	read0, checks0 := reads(), reconciles(t, "azureprivateendpoint")
	testworld.Eventually(t, testworld.Timeout, "four drift checks of wc2's object", func(context.Context) (bool, string) {
		n := reconciles(t, "azureprivateendpoint") - checks0
		return n >= 4, fmt.Sprintf("%v checks", n)
	})
	if n := reads() - read0; n > 1 {
		t.Errorf("four drift checks read wc2's endpoint %d times; the wiring's list shows it unchanged, want at most 1", n)
	}

	// Behind the operator's back: the tag it sets changes.
	ctx := context.Background()
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	pe, err := pes.Get(ctx, "mc-rg", name, nil)
	if err != nil {
		t.Fatal(err)
	}
	pe.Tags["apeo-drift"] = new("changed")
	if _, err := pes.BeginCreateOrUpdate(ctx, "mc-rg", name, pe.PrivateEndpoint, nil); err != nil {
		t.Fatal(err)
	}
	read1 := reads()
	waitEvent(t, w, key, privateendpoint.EventUpdated)
	testworld.Eventually(t, testworld.Timeout, "the tag written back", func(ctx context.Context) (bool, string) {
		pe, err := pes.Get(ctx, "mc-rg", name, nil)
		if err != nil {
			return false, err.Error()
		}
		return ptr.Deref(pe.Tags["apeo-drift"], "") == "kept", fmt.Sprint(pe.Tags)
	})
	if reads() == read1 {
		t.Error("the changed endpoint was written back without being read")
	}
}
