package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// endpointsPerVNetExceeded is the code azuresim answers beyond its limit
// of endpoints per network (a code of the emulator's own: internal/azuresim/limits.go).
const endpointsPerVNetExceeded = "PrivateEndpointsPerVirtualNetworkLimitExceeded"

// TestMCEndpointLimit: the MC's network takes two private endpoints
// (azuresim refuses a third, as Azure does beyond its 1,000) and the
// operator's limit is two. wc1 and wc2 are wired and the MC gets
// PrivateEndpointLimitNear; wc3 waits with PrivateEndpointLimit on its
// GSPrivateLinksReady and an Event, and Azure is never sent the endpoint
// it would refuse. When wc1 withdraws its link, wc3 is wired.
func TestMCEndpointLimit(t *testing.T) {
	w := twoWired(t, azuresim.Limits{PrivateEndpointsPerVirtualNetwork: 2}, func(o *clusterlink.Options) { o.MCEndpointLimit = 2 })
	waitEvent(t, w, mcKey, clusterlink.ReasonEndpointLimitNear)
	mcSays(t, w, "True", clusterlink.ReasonEndpointLimitNear, "holds 2 private endpoint entries, the limit is 2")

	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wc3 := types.NamespacedName{Namespace: wcNS, Name: "wc3"}
	waitEvent(t, w, wc3, clusterlink.ReasonEndpointLimit)
	limited(t, w, "wc3", clusterlink.ReasonEndpointLimit)
	mcSays(t, w, "Unknown", clusterlink.ReasonEndpointLimit, "no private endpoint entry for 1 workload cluster ("+wc3.String()+"):")
	explains(t, w, wc3, "private links ready", clusterlink.ReasonEndpointLimit)
	explains(t, w, mcKey, "workload clusters' entries", clusterlink.ReasonEndpointLimit)
	if names := endpointNames(t, w, mcKey); slices.Contains(names, "wc3-api-privatelink-privateendpoint") || len(names) != 2 {
		t.Errorf("the MC's entries: %v, want wc1's and wc2's only", names)
	}
	// Counted by Azure's error code: a WC's endpoint to the MC's ingress can
	// be refused, and retried, while the MC's ingress service is still being
	// made (ThirdPartyPrivateLinkService...NotVisible, as a run saw), which
	// is no business of this limit.
	if n := w.Sim.Counters().Errors[endpointsPerVNetExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s: the limit let them through", n, endpointsPerVNetExceeded)
	}

	// wc1 withdraws its link: its entry goes, and wc3 gets the room (CAPZ
	// may be refused once while Azure still holds wc1's endpoint).
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":[]}}}}`)
	wired(t, w, "wc3", true, true)
	if names := endpointNames(t, w, mcKey); slices.Contains(names, "wc1-api-privatelink-privateendpoint") {
		t.Errorf("the MC's entries: %v, wc1's should be gone", names)
	}
	mcSays(t, w, "True", clusterlink.ReasonEndpointLimitNear, "holds 2 private endpoint entries")
}

// endpointsPerServiceExceeded is the code azuresim answers beyond its limit
// of endpoints per private link service (the emulator's own code, as above).
const endpointsPerServiceExceeded = "PrivateEndpointsPerPrivateLinkServiceLimitExceeded"

// TestMCServiceConnectionLimit: the MC's ingress private link service
// takes two connections (azuresim refuses a third, as Azure does beyond
// its 1,000) and the operator's limit is two. wc1 and wc2 are wired and
// the MC gets PrivateLinkServiceConnectionLimitNear; wc3 waits with
// PrivateLinkServiceConnectionLimit, gets no entry to the MC's ingress, and Azure is
// never sent the endpoint it would refuse. When wc2 is deleted, wc3 is
// wired.
func TestMCServiceConnectionLimit(t *testing.T) {
	w := twoWired(t, azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 2}, func(o *clusterlink.Options) { o.MCServiceConnectionLimit = 2 })
	waitEvent(t, w, mcKey, clusterlink.ReasonServiceLimitNear)

	create(t, w, testenv.SchemaFork, wcCluster("wc3", 22))
	wc3 := types.NamespacedName{Namespace: wcNS, Name: "wc3"}
	waitEvent(t, w, wc3, clusterlink.ReasonServiceLimit)
	limited(t, w, "wc3", clusterlink.ReasonServiceLimit)
	mcSays(t, w, "Unknown", clusterlink.ReasonServiceLimit, "no private endpoint to the management cluster's private link service mc-ingress-privatelink for 1 workload cluster ("+wc3.String()+"):")
	explains(t, w, wc3, "private links ready", clusterlink.ReasonServiceLimit)
	explains(t, w, mcKey, "workload clusters' entries", clusterlink.ReasonServiceLimit)
	if names := endpointNames(t, w, wc3); slices.Contains(names, "wc3-to-mc-privatelink-privateendpoint") {
		t.Errorf("wc3's entries: %v, want none to the MC's ingress", names)
	}
	if n := w.Sim.Counters().Errors[endpointsPerServiceExceeded]; n != 0 {
		t.Errorf("%d private endpoint requests refused by Azure with %s: the limit let them through", n, endpointsPerServiceExceeded)
	}

	// wc2 goes: its connection with it, and wc3 gets the room (CAPZ may be
	// refused once while Azure still holds wc2's endpoint).
	deleteCluster(t, w, wcNS, "wc2")
	wired(t, w, "wc3", true, true)
	mcSays(t, w, "True", clusterlink.ReasonServiceLimitNear, "mc-ingress-privatelink has 2 connections")
}

// twoWired is a fork world whose azuresim enforces limits, with the MC's
// ingress, the operator set by mutate, and wc1 and wc2 wired.
func twoWired(t *testing.T, limits azuresim.Limits, mutate func(*clusterlink.Options)) *testworld.World {
	t.Helper()
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CAPZMode: capzsim.Fork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}},
		Limits:  limits})
	w.Namespace(t, wcNS)
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20), wcCluster("wc2", 21))
	operator(t, w, mutate)
	wired(t, w, "wc1", true, true)
	wired(t, w, "wc2", true, true)
	return w
}

// limited waits until a WC's GSPrivateLinksReady is Unknown with reason.
func limited(t *testing.T, w *testworld.World, name, reason string) {
	t.Helper()
	says(t, w, name, reason, "")
}

// says waits until a WC's GSPrivateLinksReady is Unknown with reason and
// a message that holds has.
func says(t *testing.T, w *testworld.World, name, reason, has string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, name+"'s GSPrivateLinksReady says "+reason+": "+has, func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, wcNS, name)
		if err != nil {
			return false, err.Error()
		}
		c := condition(u, clusterlink.ConditionGSPrivateLinksReady)
		msg, _ := c["message"].(string)
		return c["status"] == "Unknown" && c["reason"] == reason && strings.Contains(msg, has), fmt.Sprint(c)
	})
}

// mcSays waits until the MC's GSWorkloadClusterEndpointsReady has status
// and reason and its message holds has.
func mcSays(t *testing.T, w *testworld.World, status, reason, has string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "the MC's GSWorkloadClusterEndpointsReady says "+status+" "+reason, func(ctx context.Context) (bool, string) {
		u, err := w.Get(ctx, mcKey.Namespace, mcKey.Name)
		if err != nil {
			return false, err.Error()
		}
		c := condition(u, clusterlink.ConditionGSWorkloadClusterEndpointsReady)
		msg, _ := c["message"].(string)
		return c["status"] == status && c["reason"] == reason && strings.Contains(msg, has), fmt.Sprint(c)
	})
}

// explains waits until kubectl apeo explain says of a cluster that it
// stops at with reason (a step before it, CAPZ's links, may still wait a
// moment), with what to change, as the troubleshooting table says.
func explains(t *testing.T, w *testworld.World, key types.NamespacedName, at, reason string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "explain "+key.String()+" stops at "+at+" with "+reason, func(ctx context.Context) (bool, string) {
		r, err := explain.Explain(ctx, w.Client, key, explain.Options{ManagementCluster: mcKey})
		return err == nil && !r.Wired && r.StoppedAt == at && r.Reason == reason && r.Fix != "" && explain.StopsHere(r.Reason, r.StoppedAt),
			fmt.Sprintf("%+v, %v", r, err)
	})
}
