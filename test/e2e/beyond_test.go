package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestEndpointsBeyond: the binary with the flags a user sets (docs/
// operations.md, "Endpoints beyond the management cluster's
// AzureCluster"). The MC's AzureCluster takes one entry: wc1 gets it; wc2
// gets an AzurePrivateEndpoint in the declared subnet of another network,
// under its usual endpoint name in the MC's resource group, and its API
// server annotation is that endpoint's address.
func TestEndpointsBeyond(t *testing.T) {
	bin := operatorBinary(t)
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork})
	w.Namespace(t, wcNS)
	ctx := context.Background()
	vnetID := "/subscriptions/" + mcSub + "/resourceGroups/mc-pe-rg/providers/Microsoft.Network/virtualNetworks/mc-pe"
	raw, err := json.Marshal(armnetwork.VirtualNetwork{Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.50.0.0/16")}},
		Subnets:      []*armnetwork.Subnet{{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.50.0.0/24")}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: mcSub, Name: "mc-pe-rg", Location: "westeurope"}},
		Resources: []azuresim.SeedResource{{ID: vnetID, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
	cluster := func(name string, cidr int) testworld.Cluster {
		return testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: cidr,
			PrivateLinks: []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
	}
	for _, c := range []testworld.Cluster{{Namespace: mcNS, Name: "mc", Subscription: mcSub, CIDR16: 10}, cluster("wc1", 20)} {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaFork)); err != nil {
			t.Fatal(err)
		}
	}
	op := startOperator(t, w, bin, nil, "--mc-private-endpoint-limit=1", "--mc-endpoint-subnets="+vnetID+"/subnets/pe", "--mc-endpoint-network-limit=1000")
	wc1, wc2 := types.NamespacedName{Namespace: wcNS, Name: "wc1"}, types.NamespacedName{Namespace: wcNS, Name: "wc2"}
	annotated(t, w, wc1, apiAnn, true)

	if err := w.Client.Create(ctx, cluster("wc2", 21).Object(testenv.SchemaFork)); err != nil {
		t.Fatal(err)
	}
	annotated(t, w, wc2, apiAnn, true)
	if got, want := annotations(t, w, wc2)[apiAnn], w.EndpointIP(t, mcSub, "mc-rg", "wc2-api-privatelink-privateendpoint"); got != want || !strings.HasPrefix(got, "10.50.") {
		t.Errorf("%s = %s, want %s, in the declared subnet", apiAnn, got, want)
	}
	o := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "wc2-api-privatelink-privateendpoint"}, o); err != nil ||
		o.Labels[clusterlink.MCEndpointOfLabel] != "mc" {
		t.Errorf("wc2's object: %v %v", err, o.Labels)
	}
	if names := w.EntryNames(t, types.NamespacedName{Namespace: mcNS, Name: "mc"}); !slices.Equal(names, []string{"wc1-api-privatelink-privateendpoint"}) {
		t.Errorf("the MC's entries: %v, want wc1's only", names)
	}
	if exited, err := op.Exited(); exited {
		t.Errorf("the operator exited: %v", err)
	}
}
