package sandbox

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// The fleet the benchmark and the chaos run build: one private MC in its
// own subscription, N private WCs spread over a few subscriptions and ten
// namespaces (a platform usually hosts many clusters per subscription), all
// with one identity.
const (
	FleetTenantID       = "72f988bf-0000-0000-0000-00000000bbbb"
	FleetOperatorClient = "operator"
	FleetOperatorSecret = "operator-secret"
	FleetIdentityNS     = "org-giantswarm"
	FleetIdentityName   = "cluster-identity"
	FleetIdentitySecret = "cluster-identity-secret"
	FleetMCName         = "mc"
	FleetMCSubscription = "00000000-0000-0000-0000-0000000000c0"
	FleetLocation       = "westeurope"
)

// FleetIdentity is the identity every fleet cluster uses.
func FleetIdentity() Identity {
	return Identity{
		Namespace: FleetIdentityNS, Name: FleetIdentityName, SecretName: FleetIdentitySecret,
		TenantID: FleetTenantID, ClientID: FleetOperatorClient, ClientSecret: FleetOperatorSecret,
	}
}

// FleetWCSubscription is the subscription of WC i among k.
func FleetWCSubscription(i, k int) string {
	return fmt.Sprintf("00000000-0000-0000-0000-%012d", 1+i%k)
}

// FleetWCNamespace is WC i's namespace (one of ten).
func FleetWCNamespace(i int) string { return fmt.Sprintf("org-scale-%02d", i%10) }

// FleetWCName is WC i's name.
func FleetWCName(i int) string { return fmt.Sprintf("wc%04d", i) }

// FleetMC is the private MC: its node subnet (a /17) holds N endpoints.
func FleetMC() *unstructured.Unstructured {
	return PrivateCluster(FleetIdentityNS, FleetMCName, FleetMCSubscription, FleetMCName, "10.0", nil)
}

// FleetWC is private WC i, whose private link auto-approves the MC, spelled
// for the schema (the fork's or CAPZ v1.27's privateLinks).
func FleetWC(i, subscriptions int, schema testenv.Schema) *unstructured.Unstructured {
	name := FleetWCName(i)
	nat := schema.NATConfigurationsField()
	if nat == "" {
		nat = testenv.SchemaFork.NATConfigurationsField()
	}
	links := []any{map[string]any{
		"name":                      name + "-api-privatelink",
		"allowedSubscriptions":      []any{FleetMCSubscription},
		"autoApprovedSubscriptions": []any{FleetMCSubscription},
		"lbFrontendIPConfigNames":   []any{name + "-api-lb-frontend"},
		nat:                         []any{map[string]any{"allocationMethod": "Dynamic", "subnet": name + "-cp"}},
	}}
	// Every WC has its own VNet; VNets of different clusters may overlap.
	return PrivateCluster(FleetWCNamespace(i), name, FleetWCSubscription(i, subscriptions), name, "172.16", links)
}

// PrivateCluster builds a private AzureCluster with the fleet's identity
// and a /16 VNet prefix ("10.0"): control plane in .0.0/24, nodes (where
// endpoints go) in .128.0/17; links are its apiServerLB.privateLinks (nil:
// none).
func PrivateCluster(ns, name, sub, rg, prefix string, links []any) *unstructured.Unstructured {
	lb := map[string]any{
		"name": name + "-api-lb", "type": capz.LBTypeInternal,
		"frontendIPs": []any{map[string]any{"name": name + "-api-lb-frontend", "privateIP": prefix + ".0.100"}},
	}
	if links != nil {
		lb["privateLinks"] = links
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"subscriptionID": sub, "resourceGroup": rg, "location": FleetLocation,
		"identityRef": map[string]any{"kind": "AzureClusterIdentity", "name": FleetIdentityName, "namespace": FleetIdentityNS},
		"networkSpec": map[string]any{
			"vnet":        map[string]any{"name": name + "-vnet", "cidrBlocks": []any{prefix + ".0.0/16"}},
			"apiServerLB": lb,
			"subnets": []any{
				map[string]any{"name": name + "-cp", "role": "control-plane", "cidrBlocks": []any{prefix + ".0.0/24"}},
				map[string]any{"name": name + "-nodes", "role": "node", "cidrBlocks": []any{prefix + ".128.0/17"}},
			},
		},
	}}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
