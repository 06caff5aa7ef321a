package wiringdns

import (
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Fixtures of the DNS mode's unit tests: a private management cluster and
// private workload clusters in another subscription.
const (
	mcSub = "11111111-1111-1111-1111-111111111111"
	wcSub = "22222222-2222-2222-2222-222222222222"
)

// mc is the management cluster, mutated.
func mc(mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	ac := &capz.AzureCluster{
		Name: "mc", Namespace: "org-giantswarm", SubscriptionID: mcSub, ResourceGroup: "mc-rg", Location: "westeurope",
		APIServerLBType: capz.LBTypeInternal,
		Subnets:         []capz.Subnet{{Name: "mc-control-plane", Role: capz.SubnetRoleControlPlane}, {Name: "mc-nodes", Role: capz.SubnetRoleNode}},
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}

// wc is a private workload cluster in org-a whose resource group is not
// its name, mutated.
func wc(name string, mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	ac := &capz.AzureCluster{
		Name: name, Namespace: "org-a", SubscriptionID: wcSub, ResourceGroup: name + "-resources", Location: "northeurope",
		APIServerLBType: capz.LBTypeInternal,
		Subnets:         []capz.Subnet{{Name: "cp", Role: capz.SubnetRoleControlPlane}, {Name: "nodes", Role: capz.SubnetRoleNode}},
		PrivateLinks: []capz.PrivateLink{{
			Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub},
		}},
		PrivateLinksReady: true,
	}
	for _, m := range mutate {
		m(ac)
	}
	return ac
}
