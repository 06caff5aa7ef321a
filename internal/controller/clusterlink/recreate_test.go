package clusterlink_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestClusterCreatedAgainIsNotToldOfItsPredecessor: a workload cluster
// deleted and created again under its name, while the operator's list of
// Azure's endpoints still holds the first cluster's (approved, with an
// address), gets no annotation from that list — the new cluster's
// endpoints bear the same names, and the first cluster's are gone (make
// simulate, seed 3 at d68ddcc). The observer's clock is the test's: a list
// is stale only when the test says so, so the old list is there for
// certain when the cluster comes back.
func TestClusterCreatedAgainIsNotToldOfItsPredecessor(t *testing.T) {
	w := world(t, testenv.SchemaFork, capzsim.Fork, false)
	ctx := context.Background()
	create(t, w, testenv.SchemaFork, mcCluster(true), wcCluster("wc1", 20))
	// The clock starts a day back: it runs a minute ahead per look, and
	// must stay behind the creation timestamps (a cluster created well
	// before it is first seen trusts every list younger than that).
	clk := clocktesting.NewFakePassiveClock(time.Now().Add(-24 * time.Hour))
	obs := &privateendpoints.Observer{TTL: time.Minute, Clock: clk}
	w.StartOperatorObserving(t, clusterlink.Options{ManagementCluster: mcKey}, obs)

	// wired lets the observer's lists age a minute per look until wc1 is
	// wired.
	wired := func(what string) map[string]string {
		var ann map[string]string
		testworld.Eventually(t, testworld.Timeout, what, func(ctx context.Context) (bool, string) {
			clk.SetTime(clk.Now().Add(time.Minute))
			u, err := w.Get(ctx, wcNS, "wc1")
			if err != nil {
				return false, err.Error()
			}
			ann = u.GetAnnotations()
			return ann[apiAnn] != "" && ann[ingAnn] != "" && conditionTrue(u, clusterlink.ConditionGSPrivateLinksReady), testworld.Describe(u)
		})
		return ann
	}
	first := wired("the first wc1 wired")

	// The lists age once more and wc1 is looked at again: every list is
	// asked anew (or, asked before, answers after this), while wc1's
	// endpoints are approved with their addresses. The clock stands still
	// from here: those lists answer until the test lets them age.
	clk.SetTime(clk.Now().Add(time.Minute))
	again := clk.Now()
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"}, `{"metadata":{"annotations":{"example.com/look-again":"1"}}}`)
	testworld.Eventually(t, testworld.Timeout, "wc1 observed again", func(context.Context) (bool, string) {
		answered := obs.Answered()
		fresh := 0
		for _, at := range answered {
			if !at.Before(again) {
				fresh++
			}
		}
		// One list of the MC's subscription, one of the WC's.
		return len(answered) == 2 && fresh == 2, fmt.Sprint(answered)
	})
	u, err := w.Get(ctx, wcNS, "wc1")
	if err != nil {
		t.Fatal(err)
	}
	oldUID := u.GetUID()
	if err := w.Client.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	pes := w.Network(t, wcSub).NewPrivateEndpointsClient()
	entry := "wc1-to-mc-privatelink-privateendpoint"
	testworld.Eventually(t, testworld.Timeout, "the first wc1 and its endpoint to the ingress gone", func(ctx context.Context) (bool, string) {
		_, gerr := w.Get(ctx, wcNS, "wc1")
		_, perr := pes.Get(ctx, "wc1-rg", entry, nil)
		return gerr != nil && azure.IsNotFound(perr), fmt.Sprintf("cluster: %v; endpoint: %v", gerr, perr)
	})

	// wc1 again, in another address range: its endpoint to the ingress
	// will have another address than the first wc1's.
	clk.SetTime(clk.Now().Add(time.Second)) // the lists are a second old
	create(t, w, testenv.SchemaFork, wcCluster("wc1", 21))
	// While the lists do not age, the first wc1's address on the new one
	// could only come from them.
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	testworld.Eventually(t, testworld.Timeout, "the new wc1's entry written by the operator", func(ctx context.Context) (bool, string) {
		u, gerr := w.Get(ctx, wcNS, "wc1")
		if gerr != nil {
			return false, gerr.Error()
		}
		return u.GetUID() != oldUID && slices.Contains(endpointNames(t, w, key), entry), testworld.Describe(u)
	})
	testworld.Eventually(t, testworld.Timeout, "the new wc1's endpoint to the ingress in Azure", func(ctx context.Context) (bool, string) {
		pe, perr := pes.Get(ctx, "wc1-rg", entry, nil)
		return perr == nil && ptr.Deref(pe.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateSucceeded, fmt.Sprint(perr)
	})
	if ip := getAnnotations(t, w, "wc1")[ingAnn]; ip == first[ingAnn] {
		t.Errorf("the new wc1 was annotated %s=%s, the first wc1's address, from a list taken before it existed", ingAnn, ip)
	}

	second := wired("the new wc1 wired once the lists age")
	if got, want := second[ingAnn], azureIP(t, w, wcSub, "wc1-rg", entry); got != want {
		t.Errorf("%s = %s, want the new endpoint's %s", ingAnn, got, want)
	}
}
