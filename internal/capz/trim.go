package capz

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// keep is a tree of the fields kept of an object: each key names a field
// kept, with what is kept below it; nil keeps the field whole. Below a
// list, the tree applies to each entry that is an object.
type keep map[string]keep

// readFields is every field of an AzureCluster the operator reads, in
// every reader that goes through the cache: the view (FromUnstructured),
// what the operator owns (CurrentOwned, EndpointOwners: managedFields and
// the endpoint entries), the conditions it writes and gates on (clusterlink
// conditions.go, cpgate), the identity and credentials (identityguard,
// providerconfig: spec.identityRef, spec.subscriptionID). metadata is kept
// whole; what is kept of managedFields is decided by the cache transform
// (clusterlink.TrimCached).
//
// A reader of a field not listed here reads nothing from the cache: add
// the field here when a reader needs it (FuzzView checks that the view of
// a trimmed object is the view of the whole one).
var readFields = keep{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   nil,
	// The cache's own form of managedFields: trimming a cached object
	// again keeps them.
	CachedManagedFieldsKey: nil,
	"spec": {
		"subscriptionID":   nil,
		"resourceGroup":    nil,
		"location":         nil,
		"azureEnvironment": nil,
		"identityRef":      nil,
		"networkSpec": {
			"apiServerLB": {
				"name":         nil,
				"type":         nil,
				"frontendIPs":  {"name": nil},
				"privateLinks": nil,
			},
			// Every subnet stays, in order: JSON patches of endpoint
			// entries address them by index (clusterlink removeStale).
			"subnets": {
				"name":             nil,
				"role":             nil,
				"id":               nil,
				"privateEndpoints": nil,
			},
		},
	},
	"status": {
		"conditions": nil,
		"v1beta2":    {"conditions": nil},
		"deprecated": {"v1beta1": {"conditions": nil}},
	},
}

// TrimAzureCluster keeps of u only the fields the operator reads
// (readFields) and returns it. It is for the cache: at 1,000 workload
// clusters the rest of every AzureCluster (its network's security groups,
// route tables, NAT gateways, CIDR blocks, load balancer SKUs, ...) was
// megabytes of the operator's memory. Never write a trimmed object back
// whole: the operator writes AzureClusters only by server-side apply of its
// own fields and by patches of single fields, so what the cache leaves out
// is never sent.
//
// A field of an unexpected type is kept as it is, so a reader reports the
// same error on the trimmed object as on the whole one.
func TrimAzureCluster(u *unstructured.Unstructured) *unstructured.Unstructured {
	if m, ok := prune(u.Object, readFields).(map[string]any); ok {
		u.Object = m
	}
	return u
}

// prune is v with only what k keeps. It does not copy what it keeps.
func prune(v any, k keep) any {
	if k == nil {
		return v
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(k))
		for name, below := range k {
			if x, ok := v[name]; ok {
				out[name] = prune(x, below)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = prune(e, k)
		}
		return out
	default:
		return v
	}
}
