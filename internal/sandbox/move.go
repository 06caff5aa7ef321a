package sandbox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// The labels and the annotation clusterctl move reads and writes (Cluster
// API v1.14, cmd/clusterctl/api/v1alpha3 labels.go and annotations.go).
const (
	// ClusterctlLabel marks the CRDs whose objects clusterctl move
	// discovers (clusterctl's installer adds it to every provider's
	// components; a chart must carry it itself).
	ClusterctlLabel = "clusterctl.cluster.x-k8s.io"
	// ClusterctlMoveLabel on a CRD moves all its objects.
	ClusterctlMoveLabel = "clusterctl.cluster.x-k8s.io/move"
	// ClusterctlMoveHierarchyLabel on a CRD moves all its objects and
	// everything they own.
	ClusterctlMoveHierarchyLabel = "clusterctl.cluster.x-k8s.io/move-hierarchy"
	// DeleteForMoveAnnotation is set on each source object just before
	// clusterctl move deletes it.
	DeleteForMoveAnnotation = capz.DeleteForMoveAnnotation
)

// Move moves the Cluster API objects of namespace ("" for all) from one API
// server to another the way `clusterctl move` does (Cluster API v1.14,
// cmd/clusterctl/client/cluster/mover.go and objectgraph.go):
//
//  1. discover the kinds of the CRDs labelled ClusterctlLabel (plus
//     Secrets and ConfigMaps, which move only as someone's descendants);
//     an object moves when its CRD is labelled ClusterctlMoveLabel or
//     ClusterctlMoveHierarchyLabel (Cluster API's Cluster always is one),
//     or when it descends, through owner references, from a hierarchy's
//     object;
//  2. pause every moved Cluster (spec.paused: true), refusing to move a
//     Cluster that is paused already;
//  3. create the objects in the target, owners before what they own, with
//     metadata, spec and finalizers as they are (the API server drops
//     status), owner references rebuilt to the targets' UIDs, then the
//     source's managedFields patched back; an object that exists in the
//     target already is updated to the source's;
//  4. delete them from the source in the reverse order: add
//     DeleteForMoveAnnotation, delete, then remove the finalizers so that
//     nothing the object stands for is torn down;
//  5. unpause the Clusters in the target (spec.paused dropped).
//
// What clusterctl does besides, and Move does not: the provider inventory
// check, the wait for the block-move annotation (nothing here sets it),
// ClusterClasses, and the soft ownership of a cluster's kubeconfig
// Secrets. Step 2 runs before anything is created, as in clusterctl.
func Move(ctx context.Context, from, to client.Client, namespace string) error {
	graph, err := moveGraph(ctx, from, namespace)
	if err != nil {
		return fmt.Errorf("move: discovering objects: %w", err)
	}
	var clusters []*moveNode
	for _, n := range graph {
		if n.isCluster() {
			clusters = append(clusters, n)
		}
	}
	for _, n := range clusters {
		if p, _, _ := unstructured.NestedBool(n.obj.Object, "spec", "paused"); p {
			return fmt.Errorf("move: cluster %s/%s is paused already; clusterctl move refuses it", n.obj.GetNamespace(), n.obj.GetName())
		}
	}
	if err := pauseClusters(ctx, from, clusters, true); err != nil {
		return err
	}
	order, err := moveOrder(graph)
	if err != nil {
		return err
	}
	for _, n := range order {
		if err := createTarget(ctx, from, to, n); err != nil {
			return err
		}
	}
	for _, n := range slices.Backward(order) {
		if err := deleteSource(ctx, from, n); err != nil {
			return err
		}
	}
	return pauseClusters(ctx, to, clusters, false)
}

type moveNode struct {
	obj    *unstructured.Unstructured
	force  bool // the CRD says move
	tree   bool // the CRD says move with descendants
	owners []types.UID
	// ownerNodes are the owners that move too, by source UID.
	ownerNodes map[types.UID]*moveNode
	newUID     types.UID
	moved      bool
}

func (n *moveNode) isCluster() bool {
	gvk := n.obj.GroupVersionKind()
	return gvk.Group == "cluster.x-k8s.io" && gvk.Kind == "Cluster"
}

// moveKind is a discovered kind and what its CRD's labels say.
type moveKind struct {
	gvk         schema.GroupVersionKind
	force, tree bool
	namespaced  bool
}

// moveKinds are Secrets and ConfigMaps (moved only as descendants) and
// the storage version of every CRD labelled ClusterctlLabel.
func moveKinds(ctx context.Context, c client.Client) ([]moveKind, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.HasLabels{ClusterctlLabel}); err != nil {
		return nil, err
	}
	kinds := []moveKind{
		{gvk: corev1.SchemeGroupVersion.WithKind("Secret"), namespaced: true},
		{gvk: corev1.SchemeGroupVersion.WithKind("ConfigMap"), namespaced: true},
	}
	for _, crd := range crds.Items {
		_, tree := crd.Labels[ClusterctlMoveHierarchyLabel]
		tree = tree || crd.Spec.Group == "cluster.x-k8s.io" && crd.Spec.Names.Kind == "Cluster"
		_, force := crd.Labels[ClusterctlMoveLabel]
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				kinds = append(kinds, moveKind{
					gvk:   schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind},
					force: force || tree, tree: tree, namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
				})
			}
		}
	}
	return kinds, nil
}

// moveGraph lists the objects of the discovered kinds and keeps those
// that move, with their moving owners.
func moveGraph(ctx context.Context, c client.Client, namespace string) (map[types.UID]*moveNode, error) {
	kinds, err := moveKinds(ctx, c)
	if err != nil {
		return nil, err
	}
	graph := map[types.UID]*moveNode{}
	for _, k := range kinds {
		if !k.namespaced {
			continue // global objects are not moved here (clusterctl copies them without deleting)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		var opts []client.ListOption
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("listing %s: %w", k.gvk, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			n := &moveNode{obj: o, force: k.force, tree: k.tree}
			for _, ref := range o.GetOwnerReferences() {
				n.owners = append(n.owners, ref.UID)
			}
			graph[o.GetUID()] = n
		}
	}
	keepMoved(graph)
	return graph, nil
}

// keepMoved drops what does not move: an object moves when its kind says
// so or when it descends from an object of a hierarchy kind.
func keepMoved(graph map[types.UID]*moveNode) {
	for _, n := range graph {
		n.moved = n.force || slices.ContainsFunc(n.owners, func(o types.UID) bool {
			owner, ok := graph[o]
			return ok && descendsFromTree(graph, owner, map[types.UID]bool{})
		})
	}
	maps.DeleteFunc(graph, func(_ types.UID, n *moveNode) bool { return !n.moved })
	for _, n := range graph {
		n.ownerNodes = map[types.UID]*moveNode{}
		for _, o := range n.owners {
			if owner, ok := graph[o]; ok {
				n.ownerNodes[o] = owner
			}
		}
	}
}

// descendsFromTree reports whether n is, or descends from, an object of a
// hierarchy kind.
func descendsFromTree(graph map[types.UID]*moveNode, n *moveNode, seen map[types.UID]bool) bool {
	if n.tree {
		return true
	}
	if seen[n.obj.GetUID()] {
		return false
	}
	seen[n.obj.GetUID()] = true
	for _, o := range n.owners {
		if owner, ok := graph[o]; ok && descendsFromTree(graph, owner, seen) {
			return true
		}
	}
	return false
}

// moveOrder puts owners before what they own.
func moveOrder(graph map[types.UID]*moveNode) ([]*moveNode, error) {
	var order []*moveNode
	placed := map[types.UID]bool{}
	for len(placed) < len(graph) {
		var group []*moveNode
		for uid, n := range graph {
			if placed[uid] {
				continue
			}
			ready := true
			for o := range n.ownerNodes {
				if !placed[o] {
					ready = false
				}
			}
			if ready {
				group = append(group, n)
			}
		}
		if len(group) == 0 {
			return nil, errors.New("move: the owner references form a cycle")
		}
		slices.SortFunc(group, func(a, b *moveNode) int {
			return strings.Compare(a.obj.GetNamespace()+"/"+a.obj.GetKind()+"/"+a.obj.GetName(), b.obj.GetNamespace()+"/"+b.obj.GetKind()+"/"+b.obj.GetName())
		})
		for _, n := range group {
			placed[n.obj.GetUID()] = true
		}
		order = append(order, group...)
	}
	return order, nil
}

func pauseClusters(ctx context.Context, c client.Client, clusters []*moveNode, paused bool) error {
	value := "null" // clusterctl drops the field rather than owning false
	if paused {
		value = "true"
	}
	for _, n := range clusters {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(n.obj.GroupVersionKind())
		u.SetNamespace(n.obj.GetNamespace())
		u.SetName(n.obj.GetName())
		if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":`+value+`}}`))); err != nil {
			return fmt.Errorf("move: setting spec.paused=%s on cluster %s/%s: %w", value, u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// createTarget reads the source object again (it changed since discovery:
// the pause) and creates it in the target with its owners' new UIDs.
func createTarget(ctx context.Context, from, to client.Client, n *moveNode) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(n.obj.GroupVersionKind())
	if err := from.Get(ctx, client.ObjectKeyFromObject(n.obj), obj); err != nil {
		return fmt.Errorf("move: reading %s %s/%s: %w", obj.GetKind(), n.obj.GetNamespace(), n.obj.GetName(), err)
	}
	obj.SetResourceVersion("")
	obj.SetUID("")
	obj.SetCreationTimestamp(metav1.Time{})
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		// The owner references are rebuilt for the moved owners only.
		if owner, ok := n.ownerNodes[ref.UID]; ok {
			ref.UID = owner.newUID
			refs = append(refs, ref)
		}
	}
	obj.SetOwnerReferences(refs)
	if err := to.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: obj.GetNamespace()}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("move: namespace %s: %w", obj.GetNamespace(), err)
	}
	managed := obj.GetManagedFields()
	err := to.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		// clusterctl updates an object that exists already (a move
		// resumed, or a controller in the target made it first) with the
		// source's content.
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(obj.GroupVersionKind())
		if err = to.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
			obj.SetUID(existing.GetUID())
			obj.SetResourceVersion(existing.GetResourceVersion())
			err = to.Update(ctx, obj)
		}
	}
	if err != nil {
		return fmt.Errorf("move: creating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	n.newUID = obj.GetUID()
	// The create made clusterctl the owner of every field; clusterctl then
	// patches the source's managedFields back (mover.go,
	// patchTopologyManagedFields, run for every object), so that
	// server-side apply owners keep what they own.
	base := obj.DeepCopy()
	obj.SetManagedFields(managed)
	if err := to.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("move: restoring the managed fields of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// deleteSource deletes the source object without letting its finalizers
// act: the annotation first, then the deletion, then no finalizers.
func deleteSource(ctx context.Context, c client.Client, n *moveNode) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(n.obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(n.obj), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	// clusterctl's JSON patch "add /metadata/annotations" replaces the
	// whole map with the one annotation (mover.go,
	// addDeleteForMoveAnnotationPatch); so does this.
	patch := fmt.Sprintf(`[{"op":"add","path":"/metadata/annotations","value":{%q:""}}]`, DeleteForMoveAnnotation)
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
		return fmt.Errorf("move: annotating %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if err := c.Delete(ctx, obj); err != nil {
		return fmt.Errorf("move: deleting %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if len(obj.GetFinalizers()) > 0 {
		if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`))); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("move: removing the finalizers of %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
