package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// The benchmark's world: one private MC in its own subscription, N private
// WCs spread over a few subscriptions and namespaces (a platform usually
// hosts many clusters per subscription), all with one identity.
const (
	tenantID       = "72f988bf-0000-0000-0000-00000000bbbb"
	operatorClient = "operator"
	operatorSecret = "operator-secret"
	identityNS     = "org-giantswarm"
	identityName   = "cluster-identity"
	identitySecret = "cluster-identity-secret"
	mcName         = "mc"
	mcSubscription = "00000000-0000-0000-0000-0000000000c0"
	location       = "westeurope"
)

// wcSubscription is the subscription of WC i among k.
func wcSubscription(i, k int) string {
	return fmt.Sprintf("00000000-0000-0000-0000-%012d", 1+i%k)
}

func wcNamespace(i int) string { return fmt.Sprintf("org-scale-%02d", i%10) }
func wcName(i int) string      { return fmt.Sprintf("wc%04d", i) }

// mcObject is the private MC: its node subnet (a /16) holds N endpoints.
func mcObject() *unstructured.Unstructured {
	return azureCluster(identityNS, mcName, mcSubscription, mcName, "10.0", nil)
}

// wcObject is private WC i, whose private link auto-approves the MC.
func wcObject(i, subscriptions int) *unstructured.Unstructured {
	name := wcName(i)
	links := []any{map[string]any{
		"name":                      name + "-api-privatelink",
		"allowedSubscriptions":      []any{mcSubscription},
		"autoApprovedSubscriptions": []any{mcSubscription},
		"natIpConfigurations":       []any{map[string]any{"allocationMethod": "Dynamic", "subnet": name + "-cp"}},
	}}
	// Every WC has its own VNet; VNets of different clusters may overlap.
	return azureCluster(wcNamespace(i), name, wcSubscription(i, subscriptions), name, "172.16", links)
}

// azureCluster builds a private AzureCluster with a /16 VNet prefix ("10.0"):
// control plane in .0.0/24, nodes (where endpoints go) in .128.0/17.
func azureCluster(ns, name, sub, rg, prefix string, links []any) *unstructured.Unstructured {
	lb := map[string]any{
		"name": name + "-api-lb", "type": capz.LBTypeInternal,
		"frontendIPs": []any{map[string]any{"name": name + "-api-lb-frontend", "privateIP": prefix + ".0.100"}},
	}
	if links != nil {
		lb["privateLinks"] = links
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"subscriptionID": sub, "resourceGroup": rg, "location": location,
		"identityRef": map[string]any{"name": identityName, "namespace": identityNS},
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
