package clusterlink

import (
	"encoding/json"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TrimCached returns the operator's cache transform. Of an AzureCluster
// it keeps only the fields the operator reads (capz.TrimAzureCluster) and
// its managedFields as text (capz.CacheManagedFields: read them with
// capz.ManagedFields), of an ASO object only what ReadASO and the event
// source read (trimASO). Of every object it keeps only the managedFields
// entries of spec of the operator's field manager and of keep (the older
// operator's managers and CAPZ's: Older), the only ones it reads
// (capz.CurrentOwned, TakenNames, StaleEntries: an entry no kept manager
// holds is someone else's), and of keep's only the fields it reads
// (trimFieldsV1). Other managers' entries (users', CAPZ's of status) are
// often the larger part of an AzureCluster; at 1,000 workload clusters
// they cost tens of MiB of cache for nothing.
//
// The managedFields are read from the API server's metadata.managedFields,
// which every object it sends has: then capz.CachedManagedFieldsKey is
// written over, so that an object arriving with it (the API server prunes
// that unknown field from AzureClusters; should a schema keep it) cannot
// name its own managers. An object with the key and no managedFields is
// one the transform made, which client-go may pass to it again
// (cache.TransformFunc must be idempotent): it is kept as it is.
func TrimCached(keep ...string) func(any) (any, error) {
	return func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			switch gvk := u.GroupVersionKind(); {
			case gvk.Group == capz.ASOPrivateEndpointGVK.Group:
				return trimASO(u), nil
			case gvk.GroupKind() == capz.AzureClusterGVK.GroupKind():
				capz.TrimAzureCluster(u)
				_, cached := u.Object[capz.CachedManagedFieldsKey]
				if _, sent, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "managedFields"); cached && !sent {
					return u, nil // transformed already (client-go may pass it again: the transform must be idempotent)
				}
				kept, _ := keptFields(u.GetManagedFields(), keep)
				capz.CacheManagedFields(u, kept)
				return u, nil
			}
		}
		o, ok := obj.(metav1.Object)
		if !ok {
			return obj, nil
		}
		if kept, changed := keptFields(o.GetManagedFields(), keep); changed {
			o.SetManagedFields(kept)
		}
		return obj, nil
	}
}

// keptFields are the entries of fields the cache keeps (TrimCached),
// and whether they differ from fields.
func keptFields(fields []metav1.ManagedFieldsEntry, keep []string) ([]metav1.ManagedFieldsEntry, bool) {
	kept := make([]metav1.ManagedFieldsEntry, 0, 1)
	trimmed := false
	for _, f := range fields {
		switch {
		case f.Subresource != "":
		case f.Manager == capz.FieldManager:
			kept = append(kept, f)
		case slices.Contains(keep, f.Manager):
			if f.FieldsV1 != nil {
				if raw, ok := trimFieldsV1(f.FieldsV1.GetRawBytes()); ok {
					f.FieldsV1 = &metav1.FieldsV1{}
					f.FieldsV1.SetRawBytes(raw)
					trimmed = true
				}
			}
			kept = append(kept, f)
		}
	}
	return kept, trimmed || len(kept) != len(fields)
}

// trimFieldsV1 keeps of another manager's fields what the operator reads
// of them: the finalizers and annotations it holds (cpgate's older-pause
// check) and the keys of the private endpoint entries under each subnet
// (capz.EndpointOwners), without what is below an entry's key. CAPZ's
// entry of spec names every field of the network it writes; kept whole on
// every AzureCluster it was most of the managedFields the cache held (make
// bench at N = 1,000: 14 MiB of live heap). ok is false when raw is not a
// JSON object, which is then kept as it is.
func trimFieldsV1(raw []byte) ([]byte, bool) {
	var fields map[string]any
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	out := map[string]any{}
	if meta, ok := fields["f:metadata"].(map[string]any); ok {
		m := map[string]any{}
		for _, k := range []string{"f:finalizers", "f:annotations"} {
			if v, ok := meta[k]; ok {
				m[k] = v
			}
		}
		if len(m) > 0 {
			out["f:metadata"] = m
		}
	}
	subnets := map[string]any{}
	spec, _ := fields["f:spec"].(map[string]any)
	network, _ := spec["f:networkSpec"].(map[string]any)
	all, _ := network["f:subnets"].(map[string]any)
	for key, v := range all {
		pes, _ := v.(map[string]any)["f:privateEndpoints"].(map[string]any)
		if len(pes) == 0 {
			continue
		}
		keys := map[string]any{}
		for k := range pes {
			keys[k] = map[string]any{}
		}
		subnets[key] = map[string]any{"f:privateEndpoints": keys}
	}
	if len(subnets) > 0 {
		out["f:spec"] = map[string]any{"f:networkSpec": map[string]any{"f:subnets": subnets}}
	}
	b, err := json.Marshal(out)
	return b, err == nil
}

// trimASO keeps of an ASO object only what the operator reads (ReadASO and
// the event source): identity, labels, owners, the Azure name, the
// endpoint's target, the Ready condition and what asoObservation reads of
// the status (observed). ASO objects are many (one per endpoint of every
// cluster) and carry large specs and statuses.
func trimASO(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetGroupVersionKind(u.GroupVersionKind())
	out.SetNamespace(u.GetNamespace())
	out.SetName(u.GetName())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetGeneration(u.GetGeneration())
	out.SetLabels(u.GetLabels())
	out.SetOwnerReferences(u.GetOwnerReferences())
	out.SetDeletionTimestamp(u.GetDeletionTimestamp())
	if v, ok, _ := unstructured.NestedString(u.Object, "spec", "azureName"); ok {
		_ = unstructured.SetNestedField(out.Object, v, "spec", "azureName")
	}
	for _, f := range []string{"privateLinkServiceConnections", "manualPrivateLinkServiceConnections"} {
		conns, _, _ := unstructured.NestedSlice(u.Object, "spec", f)
		var kept []any
		for _, c := range conns {
			m, _ := c.(map[string]any)
			if id, _, _ := unstructured.NestedString(m, "privateLinkServiceReference", "armId"); id != "" {
				kept = append(kept, map[string]any{"privateLinkServiceReference": map[string]any{"armId": id}})
			}
		}
		if kept != nil {
			_ = unstructured.SetNestedSlice(out.Object, kept, "spec", f)
		}
	}
	if st, ok := u.Object["status"].(map[string]any); ok {
		kept := map[string]any{}
		if text := observationText(u, st); text != "" {
			kept[cachedObservationKey] = text
		}
		if ready := readyOnly(st); ready != nil {
			kept["conditions"] = ready
		}
		if len(kept) > 0 {
			out.Object["status"] = kept
		}
	}
	return out
}

// readyOnly is the Ready condition of an ASO status, with only what ReadASO
// reads of it, as a list (nil when there is none). Of several, the last,
// as ReadASO reads the whole object.
func readyOnly(st map[string]any) []any {
	conds, _ := st["conditions"].([]any)
	var ready []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			ready = []any{map[string]any{"type": "Ready", "status": m["status"], "reason": m["reason"]}}
		}
	}
	return ready
}

// cachedObservationKey holds, in the status of a cached ASO object, what
// asoObservation reads of it (ASO's copy of the endpoint in Azure) as JSON
// text: one string where the maps and lists it came in cost about 2 KiB
// per endpoint (make bench-dns at N = 1,000: ASO's objects were 10.5 MiB
// of the live heap). Only the event source reads it, once per Ready
// change (asoEvents). ASO's status has no such key; one that came with
// it is read as it came (statusObservation), never trusted as the
// operator's text (observationText).
const cachedObservationKey = "apeo.giantswarm.io/observation"

// cachedObservation is the text's shape: asoObservation's fields, empty
// ones left out.
type cachedObservation struct {
	Name                  string            `json:"name,omitempty"`
	ID                    string            `json:"id,omitempty"`
	ProvisioningState     string            `json:"provisioningState,omitempty"`
	IP                    string            `json:"ip,omitempty"`
	ConnectionState       string            `json:"connectionState,omitempty"`
	ConnectionDescription string            `json:"connectionDescription,omitempty"`
	PrivateLinkServiceID  string            `json:"privateLinkServiceId,omitempty"`
	ManualApproval        bool              `json:"manual,omitempty"`
	NICIDs                []string          `json:"nics,omitempty"`
	Tags                  map[string]string `json:"tags,omitempty"`
	ETag                  string            `json:"etag,omitempty"`
}

// observationText is the cachedObservationKey text of an ASO object's
// status st (what statusObservation reads of it), "" when it says
// nothing. An object the API server sent has managedFields, and its text
// is made from its status, whatever key it came with; one without is
// one the transform made, which client-go may pass to it again
// (cache.TransformFunc must be idempotent), and keeps its text.
func observationText(u *unstructured.Unstructured, st map[string]any) string {
	if text, ok := cachedObservationText(u); ok {
		return text
	}
	c := cachedObservation(statusObservation(st))
	if c.isZero() {
		return ""
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	return string(raw)
}

// cachedObservationText is the text the transform left in the status of
// the cache's ASO object u; ok is false for any other object (one the API
// server sent has managedFields: its status is read as it came).
func cachedObservationText(u *unstructured.Unstructured) (string, bool) {
	st, _ := u.Object["status"].(map[string]any)
	text, ok := st[cachedObservationKey].(string)
	return text, ok && u.GetManagedFields() == nil
}

func (c cachedObservation) isZero() bool {
	return c.Name == "" && c.ID == "" && c.ProvisioningState == "" && c.IP == "" && c.ConnectionState == "" &&
		c.ConnectionDescription == "" && c.PrivateLinkServiceID == "" && !c.ManualApproval && len(c.NICIDs) == 0 && len(c.Tags) == 0 && c.ETag == ""
}
