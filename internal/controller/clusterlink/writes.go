package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Every write of an AzureCluster the operator makes is in this file: the
// WC's entries, annotations and finalizer (apply, one server-side apply
// and a guarded JSON patch for what it cannot remove), the MC's entries
// (applyMC), stale entries of the older operator (removeStale), the
// compatibility conditions (SetTrueCondition), and the heal request that
// makes CAPZ reconcile (requestCAPZReconcile). Decisions are made
// elsewhere; these only write what was decided.

// apply writes the operator's fields of a WC when they differ. Fields an
// older operator wrote with Update are shared, so server-side apply alone
// cannot remove them; a guarded JSON patch removes what must go.
// current is what the operator owns of u now (capz.CurrentOwned).
func (r *WCReconciler) apply(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, current, want capz.Owned) error {
	if !want.Equal(current) {
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.ApplyConfiguration(wc.Namespace, wc.Name, u.GetUID())),
			client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return nil // deleted or replaced meanwhile: its event brings us back
			}
			return err
		}
		wcWrites.Inc()
	}
	var ops []map[string]any
	for _, name := range []string{r.Opts.Annotation(AnnotationAPIServerIP), r.Opts.Annotation(AnnotationMCIngressIP)} {
		if _, keep := want.Annotations[name]; !keep {
			if _, present := u.GetAnnotations()[name]; present {
				ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + capz.JSONPointerEscape(name)})
			}
		}
	}
	if !slices.Contains(want.Finalizers, Finalizer) {
		if i := slices.Index(u.GetFinalizers(), Finalizer); i >= 0 {
			ops = append(ops,
				map[string]any{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": Finalizer},
				map[string]any{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)})
		}
	}
	if len(ops) == 0 || !want.Equal(current) {
		// After an apply, u is stale: the next reconcile removes leftovers.
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	wcWrites.Inc()
	return client.IgnoreNotFound(r.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager)))
}

// setCondition writes a compatibility condition (GSPrivateLinksReady,
// GSDNSZoneReady) True, with a JSON patch of that one condition, so that a
// concurrent status write (CAPZ's, or the other controller's condition) is
// neither lost nor a conflict. A True condition is written again only when
// exact and its message differs.
func (r *WCReconciler) setCondition(ctx context.Context, u *unstructured.Unstructured, typ, reason, message string, exact bool) error {
	return SetTrueCondition(ctx, r.Client, r.APIReader, u, typ, reason, message, exact)
}

// SetTrueCondition is setCondition for either controller that writes a
// WC's conditions; reader (c when nil) reads past the cache.
func SetTrueCondition(ctx context.Context, c client.Client, reader client.Reader, u *unstructured.Unstructured, typ, reason, message string, exact bool) error {
	return writeCondition(ctx, c, reader, u, wantCondition{typ: typ, status: "True", reason: reason, message: message, exact: exact}, wcWrites)
}

// SetWaitingCondition writes a compatibility condition Unknown, with the
// reason and message of what the cluster waits for, when they differ.
// Never False: CAPZ's Ready is the summary of every condition of the
// AzureCluster (cluster-api's v1beta1 SetSummary), where a False one of
// any severity outranks True, and a cluster waiting for an approval is not
// a broken cluster; Unknown ranks below True there, so CAPZ's Ready stays
// CAPZ's (mergePriority in cluster-api's util/conditions, v1.14). Gates
// (--azure-cluster-gates) and people read the reason either way.
func SetWaitingCondition(ctx context.Context, c client.Client, reader client.Reader, u *unstructured.Unstructured, typ, reason, message string) error {
	return writeCondition(ctx, c, reader, u, wantCondition{typ: typ, status: "Unknown", reason: reason, message: message, exact: true}, wcWrites)
}

// applyMC applies the operator's endpoints to the MC when they differ.
func (r *MCReconciler) applyMC(ctx context.Context, mcU *unstructured.Unstructured, mc *capz.AzureCluster, current, want capz.Owned) error {
	if want.Equal(current) {
		return nil
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want.ApplyConfiguration(mc.Namespace, mc.Name, mcU.GetUID())),
		client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil // the MC was deleted or replaced: its event brings us back
		}
		return err
	}
	mcWrites.Inc()
	n := 0
	for _, eps := range want.Endpoints {
		n += len(eps)
	}
	ctrl.LoggerFrom(ctx).Info("Applied the management cluster's private endpoints", "endpoints", n)
	return nil
}

// removeStale removes the entries StaleEntries found (an older operator
// wrote them with Update, so they are not the operator's under server-side
// apply). Each removal is guarded by a test of the entry's name, so a
// concurrent change fails the patch instead of removing the wrong entry.
func (r *MCReconciler) removeStale(ctx context.Context, mcU *unstructured.Unstructured, stale []StaleEntry) error {
	wrote, err := removeStale(ctx, r.Client, mcU, stale)
	if wrote {
		mcWrites.Inc()
	}
	return err
}

// removeStale removes stale entries (StaleEntries) of an AzureCluster with
// one JSON patch, each guarded by its name; it reports whether it wrote.
// u is only read (it may be the cache's object): the patch is sent for an
// object of its name, which takes the API server's answer.
func removeStale(ctx context.Context, c client.Client, u *unstructured.Unstructured, stale []StaleEntry) (bool, error) {
	if len(stale) == 0 {
		return false, nil
	}
	ops := make([]map[string]any, 0, 2*len(stale))
	for _, e := range stale {
		path := fmt.Sprintf("/spec/networkSpec/subnets/%d/privateEndpoints/%d", e.Subnet, e.Entry)
		ops = append(ops,
			map[string]any{"op": "test", "path": path + "/name", "value": e.Name},
			map[string]any{"op": "remove", "path": path})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	target := capz.Object(capz.AzureClusterGVK)
	target.SetNamespace(u.GetNamespace())
	target.SetName(u.GetName())
	if err := c.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return true, nil
}

// requestCAPZReconcile writes HealRequestedAnnotation on owner.
func (r *WCReconciler) requestCAPZReconcile(ctx context.Context, owner *capz.AzureCluster, endpoint string) error {
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(capz.AzureClusterGVK)
	target.SetNamespace(owner.Namespace)
	target.SetName(owner.Name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, r.Opts.Annotation(HealRequestedAnnotation), endpoint+" "+r.Clock.Now().UTC().Format(time.RFC3339Nano))
	return client.IgnoreNotFound(r.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(healFieldManager)))
}

// ConditionMessage is a condition's message ("" without it).
func ConditionMessage(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// ConditionOf is the condition of type typ on an object, or nil.
func ConditionOf(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// HasCondition reports whether a condition is True on an object.
func HasCondition(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
