package capz

import (
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CAPZ makes private endpoints (and, from v1.27, private link services)
// through Azure Service Operator (ASO): it writes network.azure.com objects
// in the AzureCluster's namespace, controlled by the AzureCluster, and ASO
// makes the Azure resources.
var (
	// ASOPrivateEndpointGVK is the ASO PrivateEndpoint version CAPZ writes.
	ASOPrivateEndpointGVK = schema.GroupVersionKind{Group: "network.azure.com", Version: "v1api20220701", Kind: "PrivateEndpoint"}
	// ASOPrivateLinkServiceGVK is the ASO PrivateLinkService version CAPZ
	// v1.27 writes.
	ASOPrivateLinkServiceGVK = schema.GroupVersionKind{Group: "network.azure.com", Version: "v1api20220701", Kind: "PrivateLinkService"}
)

const (
	// ClusterNameLabel is Cluster API's label naming the owning Cluster; CAPZ
	// puts it on every ASO object it writes.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// ASOReconcilePolicyAnnotation is ASO's reconcile policy: "manage" makes
	// ASO create, update and delete the Azure resource, "skip" only reads it.
	ASOReconcilePolicyAnnotation = "serviceoperator.azure.com/reconcile-policy"
	// ASOReconcilePolicyManage makes ASO create, update and delete.
	ASOReconcilePolicyManage = "manage"
	// ASOReconcilePolicySkip makes ASO only read.
	ASOReconcilePolicySkip = "skip"
	// PrePauseReconcilePolicyAnnotation is how CAPZ pauses an ASO object of
	// a paused cluster (clusterctl move pauses every cluster): it keeps the
	// object's reconcile policy under this annotation and sets "skip", and
	// puts the policy back at its next reconcile of the unpaused cluster
	// (azure/services/aso/aso.go, PauseResource and CreateOrUpdateResource,
	// v1.23.0 and v1.27.0).
	PrePauseReconcilePolicyAnnotation = "sigs.k8s.io/cluster-api-provider-azure-pre-pause-reconcile-policy"
	// OwnedTagPrefix + the Cluster API cluster's name is the tag CAPZ puts on
	// what it creates for a cluster (value "owned").
	OwnedTagPrefix = "sigs.k8s.io_cluster-api-provider-azure_cluster_"
)

var nonKubernetes = regexp.MustCompile(`[^a-z0-9\-]+`)

// ASOName is the name CAPZ gives the ASO object of an Azure resource:
// lower case, every run of other characters than letters, digits and
// hyphens replaced by one hyphen, no leading or trailing hyphen.
func ASOName(azureName string) string {
	return strings.Trim(nonKubernetes.ReplaceAllString(strings.ToLower(azureName), "-"), "-")
}

// ASOObject is what the operator reads of an ASO object CAPZ wrote.
type ASOObject struct {
	Namespace, Name string
	// AzureName is spec.azureName, the Azure resource's name.
	AzureName string
	// Controller and ControllerUID name the controlling AzureCluster (""
	// if the object is not controlled by an AzureCluster).
	Controller    string
	ControllerUID string
	// PrivateLinkServiceIDs are the targets of a PrivateEndpoint's
	// connections (automatic or manual).
	PrivateLinkServiceIDs []string
	// ClusterName is the cluster.x-k8s.io/cluster-name label.
	ClusterName string
	// Ready is the Ready condition being True; Reason is its reason.
	Ready    bool
	Reason   string
	Deleting bool
	UID      string
}

// ReadASO reads an ASO object.
func ReadASO(u *unstructured.Unstructured) ASOObject {
	o := ASOObject{Namespace: u.GetNamespace(), Name: u.GetName(), ClusterName: u.GetLabels()[ClusterNameLabel],
		Deleting: u.GetDeletionTimestamp() != nil, UID: string(u.GetUID())}
	o.AzureName, _, _ = unstructured.NestedString(u.Object, "spec", "azureName")
	if o.AzureName == "" {
		o.AzureName = u.GetName() // ASO's default
	}
	if ref := metav1.GetControllerOf(u); ref != nil && ref.Kind == AzureClusterGVK.Kind &&
		strings.HasPrefix(ref.APIVersion, AzureClusterGVK.Group+"/") {
		o.Controller, o.ControllerUID = ref.Name, string(ref.UID)
	}
	for _, f := range []string{"privateLinkServiceConnections", "manualPrivateLinkServiceConnections"} {
		conns, _, _ := unstructured.NestedSlice(u.Object, "spec", f)
		for _, c := range conns {
			m, _ := c.(map[string]any)
			if id, _, _ := unstructured.NestedString(m, "privateLinkServiceReference", "armId"); id != "" {
				o.PrivateLinkServiceIDs = append(o.PrivateLinkServiceIDs, id)
			}
		}
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		o.Ready = m["status"] == string(metav1.ConditionTrue)
		o.Reason, _ = m["reason"].(string)
	}
	return o
}
