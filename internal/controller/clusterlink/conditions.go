package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// A WC's conditions are written in both forms Cluster API defines:
//
//   - status.conditions, the v1beta1 form CAPZ v1.23 and v1.27 keep
//     (cluster-api api/core/v1beta1 Conditions), always;
//   - status.v1beta2.conditions, the metav1.Condition list a v1beta1 API
//     carries while providers move to the v1beta2 contract (cluster-api
//     api/core/v1beta1 ClusterV1Beta2Status, Cluster API v1.9 on), where
//     the object has status.v1beta2. CAPZ v1.23 and v1.27 have no such
//     field (their published CRDs, config/crd/bases), and the API server
//     drops what its schema does not know, so
//     status.v1beta2 on an object says its schema has the field (a CAPZ
//     that keeps the v1beta2 form writes its own conditions there): the
//     operator then writes its condition there too, with the object's
//     generation as observedGeneration, written again when the generation
//     moves on (a v1beta2 reader takes an older one for not looked at
//     yet). The two forms carry one status, reason and message.
//
// Reads keep to the v1beta1 form (ConditionOf, HasCondition), which every
// CAPZ has; CAPZ's own PrivateLinksReady is read in every form (capz.View).
var (
	v1beta1List = conditionList{path: []string{"status", "conditions"}}
	v1beta2List = conditionList{path: []string{"status", "v1beta2", "conditions"}, v1beta2: true}
)

// conditionList is where one form of the conditions is kept.
type conditionList struct {
	path    []string
	v1beta2 bool
}

// wantCondition is a condition the operator writes on an AzureCluster.
type wantCondition struct {
	typ, status, reason, message string
	// exact: a True condition is written again when its message differs.
	exact bool
}

// lists are the condition lists o has a schema for: the v1beta1 one, and
// the v1beta2 one where o has status.v1beta2.
func lists(o *unstructured.Unstructured) []conditionList {
	if _, ok, _ := unstructured.NestedMap(o.Object, "status", "v1beta2"); ok {
		return []conditionList{v1beta1List, v1beta2List}
	}
	return []conditionList{v1beta1List}
}

// matches reports whether an entry of list l of o says what w says (in
// the v1beta2 form, for o's generation).
func (w wantCondition) matches(o *unstructured.Unstructured, l conditionList, m map[string]any) bool {
	if m == nil || m["status"] != w.status || (w.status != "True" && m["reason"] != w.reason) || (w.exact && m["message"] != w.message) {
		return false
	}
	return !l.v1beta2 || m["observedGeneration"] == o.GetGeneration()
}

// current reports whether every list of o says it.
func (w wantCondition) current(o *unstructured.Unstructured) bool {
	for _, l := range lists(o) {
		conds, _, _ := unstructured.NestedSlice(o.Object, l.path...)
		if _, m := w.find(conds); !w.matches(o, l, m) {
			return false
		}
	}
	return true
}

// sameButMessage reports whether every list of o has w's condition with
// w's status and reason (in the v1beta2 form, for o's generation): what o
// says differs from w at most in the message.
func (w wantCondition) sameButMessage(o *unstructured.Unstructured) bool {
	for _, l := range lists(o) {
		conds, _, _ := unstructured.NestedSlice(o.Object, l.path...)
		_, m := w.find(conds)
		if m == nil || m["status"] != w.status || m["reason"] != w.reason || (l.v1beta2 && m["observedGeneration"] != o.GetGeneration()) {
			return false
		}
	}
	return true
}

// find is the position and entry of w's type in conds (-1 and nil when
// absent).
func (w wantCondition) find(conds []any) (int, map[string]any) {
	for i, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == w.typ {
			return i, m
		}
	}
	return -1, nil
}

// entry is w as an entry of list l of o, keeping the transition time of
// the entry it replaces when the status stays (a new reason is no
// transition).
func (w wantCondition) entry(o *unstructured.Unstructured, l conditionList, was map[string]any) map[string]any {
	e := map[string]any{
		"type": w.typ, "status": w.status,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		"reason":             w.reason,
		"message":            w.message,
	}
	if was != nil && was["status"] == w.status && was["lastTransitionTime"] != nil {
		e["lastTransitionTime"] = was["lastTransitionTime"]
	}
	if l.v1beta2 {
		e["observedGeneration"] = o.GetGeneration()
	}
	return e
}

// ops are the JSON patch operations that write w into every list of o
// that does not say it: each guarded by its type where it replaces an
// entry. locked: a list is missing, and only a write locked on o's
// version may create it without replacing one made meanwhile.
func (w wantCondition) ops(o *unstructured.Unstructured) (ops []map[string]any, locked bool) {
	for _, l := range lists(o) {
		conds, found, _ := unstructured.NestedSlice(o.Object, l.path...)
		if !found {
			return nil, true
		}
		base := "/" + strings.Join(l.path, "/")
		switch i, m := w.find(conds); {
		case i < 0:
			ops = append(ops, map[string]any{"op": "add", "path": base + "/-", "value": w.entry(o, l, nil)})
		case !w.matches(o, l, m):
			path := fmt.Sprintf("%s/%d", base, i)
			ops = append(ops, map[string]any{"op": "test", "path": path + "/type", "value": w.typ},
				map[string]any{"op": "replace", "path": path, "value": w.entry(o, l, m)})
		}
	}
	return ops, false
}

// set writes w into every list of o (for the locked write).
func (w wantCondition) set(o *unstructured.Unstructured) {
	for _, l := range lists(o) {
		conds, _, _ := unstructured.NestedSlice(o.Object, l.path...)
		if i, m := w.find(conds); i >= 0 {
			conds[i] = w.entry(o, l, m)
		} else {
			conds = append(conds, w.entry(o, l, nil))
		}
		_ = unstructured.SetNestedSlice(o.Object, conds, l.path...)
	}
}

// apiOr is the reader past the cache when there is one (api), else c.
func apiOr(api, c client.Reader) client.Reader {
	if api != nil {
		return api
	}
	return c
}

// writeCondition writes one condition of an AzureCluster (status True or
// Unknown) in every form its schema has.
func writeCondition(ctx context.Context, c client.Client, reader client.Reader, u *unstructured.Unstructured, w wantCondition, writes prometheus.Counter) error {
	if w.current(u) {
		return nil
	}
	// Right after the annotations were applied the cache is stale: a
	// condition written a moment ago may not be in it yet, and would be
	// added twice. Read the API.
	fresh, err := getAzureCluster(ctx, apiOr(reader, c), types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()})
	if err != nil || fresh == nil || w.current(fresh) {
		return err
	}
	ops, locked := w.ops(fresh)
	if locked {
		before := fresh.DeepCopy()
		w.set(fresh)
		if err := c.Status().Patch(ctx, fresh, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}),
			client.FieldOwner(capz.FieldManager)); err != nil {
			return client.IgnoreNotFound(err)
		}
		writes.Inc()
		return nil
	}
	// A JSON patch of the one condition in each list, guarded by its type
	// where it replaces one: other status writes (CAPZ's, the other
	// controller's condition) between the read and the write do not make
	// it fail, and it changes nothing else.
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, fresh, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager)); err != nil {
		return client.IgnoreNotFound(err)
	}
	writes.Inc()
	return nil
}
