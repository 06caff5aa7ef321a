package clusterlink

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// wcsOnMCChange maps the MC's events to the WCs they concern, for the
// controllers that plan a WC against the MC (the wiring's WC reconcile and
// DNS mode). A write that changes only endpoint entries — nearly every MC
// write while clusters are wired: one per coalesced batch of WCs —
// concerns the WCs those entries are for, not all of them; at 1,000 WCs,
// mapping each such write to every WC was 2,000 reconciles a write (issue
// 41, benchmarks-dns.md). Anything else that changes (the MC's spec beyond
// its entries, its metadata, its status), a creation, a deletion: every WC.
// A WC not woken here is not left behind: one that waits rechecks itself.
func wcsOnMCChange(c client.Client, mc types.NamespacedName) handler.EventHandler {
	all := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o == nil || (types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}) != mc {
			return
		}
		for _, r := range listAzureClusters(ctx, c, func(*unstructured.Unstructured) bool { return true }) {
			q.Add(r)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if e.ObjectNew == nil || (types.NamespacedName{Namespace: e.ObjectNew.GetNamespace(), Name: e.ObjectNew.GetName()}) != mc {
				return
			}
			old, okOld := e.ObjectOld.(*unstructured.Unstructured)
			cur, okNew := e.ObjectNew.(*unstructured.Unstructured)
			if !okOld || !okNew {
				all(ctx, e.ObjectNew, q)
				return
			}
			changed, onlyEntries := entryChanges(old, cur)
			if !onlyEntries {
				all(ctx, e.ObjectNew, q)
				return
			}
			if len(changed.names) == 0 && len(changed.groups) == 0 {
				return
			}
			for _, r := range listAzureClusters(ctx, c, changed.concerns) {
				q.Add(r)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
	}
}

// changedEntries are the MC endpoint entries an update added, removed or
// changed (content or field managers): their names, and the
// "<subscription>/<resource group>" (lower-case) their connections target.
type changedEntries struct {
	names  map[string]bool
	groups map[string]bool
}

// concerns says whether a WC may plan differently after the change: an
// entry of a name its links give (a foreign entry of that name takes it),
// or one that targets its resource group (its own, including the managed
// private link service's).
//
// It reads only the fields it needs (capz.GroupAndLinks), not the whole
// view: it runs for every WC on every MC write, and the conversions were
// 2.4 s of the operator's CPU converging at N = 3,000 (test/scale
// --profile-dir).
func (c changedEntries) concerns(u *unstructured.Unstructured) bool {
	sub, rg, links := capz.GroupAndLinks(u)
	if c.groups[strings.ToLower(sub+"/"+rg)] {
		return true
	}
	return slices.ContainsFunc(links, func(name string) bool { return c.names[name+"-privateendpoint"] })
}

// entryChanges compares two versions of the MC. onlyEntries says that
// nothing but endpoint entries (and their field managers, resource version
// and generation) differs; changed lists those entries.
func entryChanges(old, cur *unstructured.Unstructured) (changedEntries, bool) {
	if !equality.Semantic.DeepEqual(withoutEntries(old), withoutEntries(cur)) {
		return changedEntries{}, false
	}
	out := changedEntries{names: map[string]bool{}, groups: map[string]bool{}}
	before, after := entriesOf(old), entriesOf(cur)
	note := func(k capz.EndpointKey, e any) {
		out.names[k.Name] = true
		if g := targetGroup(e); g != "" {
			out.groups[g] = true
		}
	}
	for k, e := range before {
		if a, ok := after[k]; !ok || !equality.Semantic.DeepEqual(e, a) {
			note(k, e)
			if ok {
				note(k, a)
			}
		}
	}
	for k, e := range after {
		if _, ok := before[k]; !ok {
			note(k, e)
		}
	}
	ob, cb := capz.EndpointOwners(old), capz.EndpointOwners(cur)
	for k, managers := range ob {
		if !slices.Equal(managers, cb[k]) {
			note(k, after[k])
		}
	}
	for k := range cb {
		if _, ok := ob[k]; !ok {
			note(k, after[k])
		}
	}
	return out, true
}

// withoutEntries is the object without what entryChanges looks at itself:
// the subnets' privateEndpoints, managedFields (either form), resourceVersion and
// generation (a spec write bumps it); and without the MC's own condition,
// GSWorkloadClusterEndpointsReady, in either form: the MC pass writes it
// from the WCs, and no WC plans from it.
func withoutEntries(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	c.SetManagedFields(nil)
	delete(c.Object, capz.CachedManagedFieldsKey)
	c.SetResourceVersion("")
	c.SetGeneration(0)
	for _, l := range []conditionList{v1beta1List, v1beta2List} {
		if conds, found, _ := unstructured.NestedSlice(c.Object, l.path...); found {
			conds = slices.DeleteFunc(conds, func(e any) bool {
				m, _ := e.(map[string]any)
				return m["type"] == ConditionGSWorkloadClusterEndpointsReady
			})
			_ = unstructured.SetNestedSlice(c.Object, conds, l.path...)
		}
	}
	subnets, _, _ := unstructured.NestedSlice(c.Object, "spec", "networkSpec", "subnets")
	for _, s := range subnets {
		if m, ok := s.(map[string]any); ok {
			delete(m, "privateEndpoints")
		}
	}
	if subnets != nil {
		_ = unstructured.SetNestedSlice(c.Object, subnets, "spec", "networkSpec", "subnets")
	}
	return c.Object
}

// entriesOf is every endpoint entry of an AzureCluster, by subnet and name.
func entriesOf(u *unstructured.Unstructured) map[capz.EndpointKey]any {
	out := map[capz.EndpointKey]any{}
	subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
	for _, s := range subnets {
		m, _ := s.(map[string]any)
		subnet, _, _ := unstructured.NestedString(m, "name")
		eps, _, _ := unstructured.NestedSlice(m, "privateEndpoints")
		for _, e := range eps {
			em, _ := e.(map[string]any)
			name, _, _ := unstructured.NestedString(em, "name")
			out[capz.EndpointKey{Subnet: subnet, Name: name}] = e
		}
	}
	return out
}

// targetGroup is "<subscription>/<resource group>" (lower-case) of an
// entry's first connection's private link service, "" when it has none.
func targetGroup(e any) string {
	m, _ := e.(map[string]any)
	conns, _, _ := unstructured.NestedSlice(m, "privateLinkServiceConnections")
	if len(conns) == 0 {
		return ""
	}
	cm, _ := conns[0].(map[string]any)
	id, _, _ := unstructured.NestedString(cm, "privateLinkServiceID")
	parts := strings.Split(strings.ToLower(strings.Trim(id, "/")), "/")
	// subscriptions/<sub>/resourcegroups/<rg>/providers/...
	if len(parts) < 4 || parts[0] != "subscriptions" || parts[2] != "resourcegroups" {
		return ""
	}
	return parts[1] + "/" + parts[3]
}
