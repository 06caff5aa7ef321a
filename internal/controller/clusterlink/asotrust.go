package clusterlink

import (
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// ASOOfCluster reports whether an ASO PrivateEndpoint is provably the one
// CAPZ made for an endpoint entry of the AzureCluster that controls it:
// CAPZ labels its ASO objects with the Cluster API cluster's name
// (cluster.x-k8s.io/cluster-name) and names the Azure resource after the
// entry (spec.azureName), with the entry's target. Anyone who may create
// ASO objects in the namespace can set an owner reference; these facts
// must all agree before the operator follows the object.
func ASOOfCluster(obj capz.ASOObject, ac *capz.AzureCluster) bool {
	cluster := ac.ClusterName
	if cluster == "" {
		// No owning Cluster yet: CAPZ makes nothing for such an AzureCluster;
		// the test world's CAPZ stand-in labels with its name then.
		cluster = ac.Name
	}
	if obj.ClusterName == "" || obj.ClusterName != cluster || obj.Controller != ac.Name {
		return false
	}
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if pe.Name != obj.AzureName {
				continue
			}
			return sameTargets(pe, obj.PrivateLinkServiceIDs)
		}
	}
	return false
}

// sameTargets reports whether an ASO object's targets are the entry's.
func sameTargets(pe capz.PrivateEndpoint, ids []string) bool {
	if len(ids) != len(pe.Connections) {
		return false
	}
	for i, c := range pe.Connections {
		if !strings.EqualFold(c.PrivateLinkServiceID, ids[i]) {
			return false
		}
	}
	return true
}

// ASOObservationOf returns what an ASO object's status says of its
// endpoint, when that status describes the endpoint the cluster's entry
// makes: status.id names the entry's endpoint in the cluster's own
// subscription and resource group, and its connection the entry's target. A status that points anywhere else is
// never learned.
func ASOObservationOf(obj capz.ASOObject, ob privateendpoints.Observation, ac *capz.AzureCluster) (privateendpoints.Observation, bool) {
	want := "/subscriptions/" + ac.SubscriptionID + "/resourceGroups/" + ac.ResourceGroup + "/providers/Microsoft.Network/privateEndpoints/" + obj.AzureName
	if ac.SubscriptionID == "" || ac.ResourceGroup == "" || !strings.EqualFold(ob.ID, want) || !strings.EqualFold(ob.Name, obj.AzureName) ||
		len(obj.PrivateLinkServiceIDs) == 0 || !strings.EqualFold(ob.PrivateLinkServiceID, obj.PrivateLinkServiceIDs[0]) {
		return privateendpoints.Observation{}, false
	}
	return ob, true
}
