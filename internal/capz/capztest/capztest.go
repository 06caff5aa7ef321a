// Package capztest builds the AzureCluster views the unit tests of the
// wiring and of its DNS mode share: a private management cluster and
// private workload clusters in another subscription.
package capztest

import "github.com/giantswarm/azure-private-endpoint-operator/internal/capz"

// The fixtures' subscriptions.
const (
	MCSub = "11111111-1111-1111-1111-111111111111"
	WCSub = "22222222-2222-2222-2222-222222222222"
)

// MC is the management cluster org-giantswarm/mc (subnets mc-control-plane
// and mc-nodes), mutated.
func MC(mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	ac := &capz.AzureCluster{
		Name: "mc", Namespace: "org-giantswarm", SubscriptionID: MCSub, ResourceGroup: "mc-rg", Location: "westeurope",
		APIServerLBType: capz.LBTypeInternal,
		Subnets: []capz.Subnet{
			{Name: "mc-control-plane", Role: capz.SubnetRoleControlPlane},
			{Name: "mc-nodes", Role: capz.SubnetRoleNode},
		},
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}

// WC is a private workload cluster in org-a whose resource group is not its
// name (so tests prove IDs are built from spec.resourceGroup), with one
// private link that allows and auto-approves the MC's subscription,
// mutated.
func WC(name string, mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	ac := &capz.AzureCluster{
		Name: name, Namespace: "org-a", SubscriptionID: WCSub, ResourceGroup: name + "-resources", Location: "northeurope",
		APIServerLBType: capz.LBTypeInternal,
		Subnets:         []capz.Subnet{{Name: "cp", Role: capz.SubnetRoleControlPlane}, {Name: "nodes", Role: capz.SubnetRoleNode}},
		PrivateLinks: []capz.PrivateLink{{
			Name: name + "-api-privatelink", AllowedSubscriptions: []string{MCSub}, AutoApprovedSubscriptions: []string{MCSub},
		}},
		PrivateLinksReady: true,
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}
