package capz

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CachedManagedFieldsKey is where the operator's cache keeps the
// managedFields of an AzureCluster (clusterlink.TrimCached), in place of
// metadata.managedFields: for each entry its manager, operation,
// subresource and fieldsV1 as JSON text. Decoded into maps as the API
// server sends them, the operator's own entry on a workload cluster (704
// bytes of JSON) took about 5 KiB of the cache, and each reader encoded
// it back to JSON (GetManagedFields) to decode it again. The key is not a
// field of any Kubernetes object: nothing the operator writes is built
// from a cached object (TrimAzureCluster), so it never reaches the API
// server.
const CachedManagedFieldsKey = "apeoCachedManagedFields"

// ManagedFields are the managedFields entries of u, whether it came from
// the API server or from the operator's cache (CacheManagedFields). The
// operator reads managedFields only through it (TestManagedFieldsReadThroughCapz).
// Of an entry kept by the cache only the manager, operation, subresource
// and fields are known.
func ManagedFields(u *unstructured.Unstructured) []metav1.ManagedFieldsEntry {
	cached, ok := u.Object[CachedManagedFieldsKey].([]any)
	if !ok {
		return u.GetManagedFields()
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(cached))
	for _, e := range cached {
		parts, _ := e.([]any)
		if len(parts) != 4 {
			continue
		}
		str := func(i int) string { s, _ := parts[i].(string); return s }
		entry := metav1.ManagedFieldsEntry{Manager: str(0), Operation: metav1.ManagedFieldsOperationType(str(1)), Subresource: str(2)}
		if fields := str(3); fields != "" {
			entry.FieldsType = "FieldsV1"
			entry.FieldsV1 = metav1.NewFieldsV1(fields)
		}
		out = append(out, entry)
	}
	return out
}

// CacheManagedFields keeps entries in u as the operator's cache does
// (CachedManagedFieldsKey) and removes metadata.managedFields. u then
// stays a valid unstructured object (strings and lists only), which the
// cache can copy.
func CacheManagedFields(u *unstructured.Unstructured, entries []metav1.ManagedFieldsEntry) {
	out := make([]any, 0, len(entries))
	for _, e := range entries {
		fields := ""
		if e.FieldsV1 != nil {
			fields = e.FieldsV1.GetRawString()
		}
		out = append(out, []any{e.Manager, string(e.Operation), e.Subresource, fields})
	}
	u.SetManagedFields(nil)
	u.Object[CachedManagedFieldsKey] = out
}
