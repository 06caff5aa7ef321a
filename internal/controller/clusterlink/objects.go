package clusterlink

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// getAzureCluster reads an AzureCluster; nil when it does not exist. With
// client.UnsafeDisableDeepCopy it is the cache's own object: read it only.
func getAzureCluster(ctx context.Context, c client.Reader, key types.NamespacedName, opts ...client.GetOption) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(ctx, key, u, opts...); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}

// groupBySubnet turns endpoints into the subnet-keyed shape of Owned.
func groupBySubnet(eps []Endpoint) map[string][]capz.PrivateEndpoint {
	out := map[string][]capz.PrivateEndpoint{}
	for _, ep := range eps {
		out[ep.Subnet] = append(out[ep.Subnet], ep.PrivateEndpoint)
	}
	return out
}

// targetsGroup reports whether a private link service ID is in a
// subscription and resource group.
func targetsGroup(plsID, subscription, resourceGroup string) bool {
	prefix := strings.ToLower("/subscriptions/" + subscription + "/resourceGroups/" + resourceGroup + "/providers/Microsoft.Network/privateLinkServices/")
	return strings.HasPrefix(strings.ToLower(plsID), prefix)
}
