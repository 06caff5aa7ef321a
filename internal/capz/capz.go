// Package capz is the operator's view of Cluster API Provider Azure objects.
//
// The operator does not compile CAPZ or Cluster API as Go dependencies. It
// reads AzureCluster objects as unstructured data through a typed view, and it
// writes them only with server-side apply under one field manager. Both
// choices protect fields the operator does not own: a typed round trip
// through Update would drop fields that the compiled struct does not know (a
// fork's apiServerLB.privateLinks, newer CAPZ fields) and would overwrite
// concurrent CAPZ writes (CAPZ writes subnet IDs back into spec).
package capz

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// FieldManager is the server-side apply field manager under which the
// operator writes every object it shares with CAPZ and with users.
const FieldManager = "azure-private-endpoint-operator"

var (
	// AzureClusterGVK identifies CAPZ's AzureCluster.
	AzureClusterGVK = schema.GroupVersionKind{
		Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "AzureCluster",
	}
	// AzureClusterIdentityGVK identifies CAPZ's AzureClusterIdentity.
	AzureClusterIdentityGVK = schema.GroupVersionKind{
		Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "AzureClusterIdentity",
	}
	// ClusterGVK identifies Cluster API's Cluster, the owner of an AzureCluster.
	ClusterGVK = schema.GroupVersionKind{
		Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster",
	}
)

// Object is an empty object of a kind, to read into or to watch.
func Object(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// List is an empty list of a kind, to list into.
func List(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}
