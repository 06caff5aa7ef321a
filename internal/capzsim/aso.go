package capzsim

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// In Upstream and V127 mode capzsim works as CAPZ does: it writes ASO
// objects (network.azure.com PrivateEndpoint, and in V127 mode
// PrivateLinkService) and ASOSim makes the Azure resources. Like CAPZ's
// azure/services/aso, it creates an object with the reconcile policy
// "skip", switches it to "manage" on its next pass, controls it by the
// AzureCluster and labels it with the Cluster API cluster's name. A paused
// AzureCluster's objects are paused as CAPZ pauses them (pauseASO).

// asoCredentialAnnotation names the per-cluster credential secret CAPZ
// points ASO at.
const asoCredentialAnnotation = "serviceoperator.azure.com/credential-from"

// clusterName is the Cluster API cluster's name, which CAPZ uses for tags
// and labels (not the AzureCluster's name, though they are usually equal).
func (s *clusterSpec) clusterName() string {
	if s.view.ClusterName != "" {
		return s.view.ClusterName
	}
	return s.view.Name
}

func (s *clusterSpec) tags(name string) map[string]any {
	return map[string]any{ownedTag(s.clusterName()): "owned", "Name": name}
}

// asoEndpointSpec is the spec CAPZ v1.23/v1.27 write for a private
// endpoint (azure/services/privateendpoints/spec.go).
func asoEndpointSpec(s *clusterSpec, subnet string, pe capz.PrivateEndpoint) map[string]any {
	loc := pe.Location
	if loc == "" {
		loc = s.view.Location
	}
	conns := make([]any, 0, len(pe.Connections))
	for _, c := range pe.Connections {
		m := map[string]any{"name": c.Name, "privateLinkServiceReference": map[string]any{"armId": c.PrivateLinkServiceID}}
		if c.RequestMessage != "" {
			m["requestMessage"] = c.RequestMessage
		}
		conns = append(conns, m)
	}
	spec := map[string]any{
		"azureName": pe.Name, "location": loc, "customNetworkInterfaceName": "",
		"owner":  map[string]any{"name": capz.ASOName(s.view.ResourceGroup)},
		"subnet": map[string]any{"reference": map[string]any{"armId": s.subnetID(subnet)}},
		"tags":   s.tags(pe.Name),
	}
	if pe.ManualApproval {
		spec["manualPrivateLinkServiceConnections"] = conns
	} else {
		spec["privateLinkServiceConnections"] = conns
	}
	return spec
}

// asoLinkSpec is the spec CAPZ v1.27 writes for a private link
// (azure/services/privatelinks/spec.go).
func asoLinkSpec(s *clusterSpec, pl capz.PrivateLink) map[string]any {
	ipcs := make([]any, 0, len(pl.NATIPConfigurations))
	for i, n := range pl.NATIPConfigurations {
		m := map[string]any{
			"name":                      fmt.Sprintf("%s-natipconfig-%d", n.Subnet, i+1),
			"subnet":                    map[string]any{"reference": map[string]any{"armId": s.subnetID(n.Subnet)}},
			"privateIPAllocationMethod": n.AllocationMethod,
		}
		if n.AllocationMethod == "Static" {
			m["privateIPAddress"] = n.PrivateIPAddress
		}
		if i == 0 {
			m["primary"] = true
		}
		ipcs = append(ipcs, m)
	}
	fes := make([]any, 0, len(pl.LBFrontendIPConfigNames))
	for _, fe := range pl.LBFrontendIPConfigNames {
		fes = append(fes, map[string]any{"reference": map[string]any{"armId": s.frontendID(s.lbName, fe)}})
	}
	spec := map[string]any{
		"azureName": pl.Name, "location": s.view.Location,
		"ipConfigurations": ipcs, "loadBalancerFrontendIpConfigurations": fes,
		"owner": map[string]any{"name": capz.ASOName(s.view.ResourceGroup)},
		"tags":  s.tags(pl.Name),
	}
	if pl.EnableProxyProtocol {
		spec["enableProxyProtocol"] = true
	}
	if len(pl.AllowedSubscriptions) > 0 {
		spec["visibility"] = map[string]any{"subscriptions": strs(pl.AllowedSubscriptions)}
	}
	if len(pl.AutoApprovedSubscriptions) > 0 {
		spec["autoApproval"] = map[string]any{"subscriptions": strs(pl.AutoApprovedSubscriptions)}
	}
	return spec
}

func strs(in []string) []any {
	out := make([]any, 0, len(in))
	for _, s := range in {
		out = append(out, s)
	}
	return out
}

// ensureASO creates or updates the ASO objects of one kind that a cluster
// wants (by Azure name) and reports whether any is not Ready yet. With
// prune (CAPZ v1.27's ListFunc), it deletes the objects of that kind the
// AzureCluster controls that it no longer wants.
func (r *Reconciler) ensureASO(ctx context.Context, u *unstructured.Unstructured, s *clusterSpec, gvk schema.GroupVersionKind, want map[string]map[string]any, prune bool) (bool, error) {
	existing, err := r.listASO(ctx, u, gvk)
	if err != nil {
		return false, err
	}
	waiting := false
	for azureName, spec := range want {
		name := capz.ASOName(azureName)
		got := existing[name]
		delete(existing, name)
		ready, err := r.applyASO(ctx, u, s, gvk, name, spec, got)
		if err != nil {
			return false, err
		}
		waiting = waiting || !ready
	}
	if !prune {
		return waiting, nil
	}
	for _, o := range existing {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: new(o.GetUID())}); client.IgnoreNotFound(err) != nil {
			return false, err
		}
	}
	return waiting, nil
}

// listASO returns the ASO objects of a kind the AzureCluster controls, by
// name, from the cache (read only: applyASO copies the one it changes),
// through the index of their controller's UID (ownerIndex). A live list of
// the namespace on every pass was capzsim's cost at scale: the MC's pass
// read all N of its endpoints' objects from the API server each second,
// and a WC's its namespace's (make bench at N = 300: a third of the
// harness's CPU, decoding lists). CAPZ v1.27.0 lists the namespace's
// objects from its cache too (azure/services/aso/service.go, ListFunc,
// then skips those it does not own), so a pass may see the cache a moment
// behind: a second Create is AlreadyExists, a stale Update a conflict
// retried.
func (r *Reconciler) listASO(ctx context.Context, u *unstructured.Unstructured, gvk schema.GroupVersionKind) (map[string]*unstructured.Unstructured, error) {
	return r.listOwned(ctx, r.Cache, u, gvk, client.MatchingFields{ownerIndex: string(u.GetUID())}, client.UnsafeDisableDeepCopy)
}

// listASOLive is listASO from the API server: where acting on a stale list
// would leave an object behind (pausing before clusterctl move, deleting
// before the finalizer goes). opts narrow the list (a label).
func (r *Reconciler) listASOLive(ctx context.Context, u *unstructured.Unstructured, gvk schema.GroupVersionKind, opts ...client.ListOption) (map[string]*unstructured.Unstructured, error) {
	return r.listOwned(ctx, r.Client, u, gvk, opts...)
}

func (r *Reconciler) listOwned(ctx context.Context, c client.Reader, u *unstructured.Unstructured, gvk schema.GroupVersionKind, opts ...client.ListOption) (map[string]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, append([]client.ListOption{client.InNamespace(u.GetNamespace())}, opts...)...); err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		o := &list.Items[i]
		if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == u.GetUID() {
			out[o.GetName()] = o
		}
	}
	return out, nil
}

// ownerIndex indexes the ASO objects capzsim reads by their controller's
// UID.
const ownerIndex = "capzsim.controller-uid"

// indexOwners registers ownerIndex for the ASO kinds.
func indexOwners(ctx context.Context, mgr ctrl.Manager) error {
	for _, gvk := range []schema.GroupVersionKind{capz.ASOPrivateEndpointGVK, capz.ASOPrivateLinkServiceGVK} {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		if err := mgr.GetFieldIndexer().IndexField(ctx, o, ownerIndex, func(obj client.Object) []string {
			if ref := metav1.GetControllerOf(obj); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// applyASO writes one ASO object as CAPZ's aso reconciler does and says
// whether it is Ready.
func (r *Reconciler) applyASO(ctx context.Context, u *unstructured.Unstructured, s *clusterSpec, gvk schema.GroupVersionKind, name string, spec map[string]any, got *unstructured.Unstructured) (bool, error) {
	if got == nil {
		o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
		o.SetGroupVersionKind(gvk)
		o.SetNamespace(u.GetNamespace())
		o.SetName(name)
		o.SetLabels(map[string]string{capz.ClusterNameLabel: s.clusterName()})
		o.SetAnnotations(map[string]string{
			capz.ASOReconcilePolicyAnnotation: capz.ASOReconcilePolicySkip,
			asoCredentialAnnotation:           "aso-credential-" + s.clusterName(),
		})
		o.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: capz.AzureClusterGVK.GroupVersion().String(), Kind: capz.AzureClusterGVK.Kind,
			Name: u.GetName(), UID: u.GetUID(), Controller: new(true), BlockOwnerDeletion: new(true),
		}})
		if err := r.Client.Create(ctx, o, client.FieldOwner(FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		return false, nil
	}
	if got.GetDeletionTimestamp() != nil {
		return false, nil // CAPZ waits for the deletion before it creates again
	}
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != u.GetUID() {
		return true, nil // not CAPZ's for this cluster: CAPZ skips it
	}
	before := got
	got = got.DeepCopy()
	// CAPZ's WasManaged is always true for these kinds: an existing object
	// is adopted ("manage") on the next pass.
	ann := got.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	// A paused object's policy is put back (here always "manage", below).
	delete(ann, capz.PrePauseReconcilePolicyAnnotation)
	ann[capz.ASOReconcilePolicyAnnotation] = capz.ASOReconcilePolicyManage
	got.SetAnnotations(ann)
	old, _, _ := unstructured.NestedMap(got.Object, "spec")
	merged := map[string]any{}
	for k, v := range old {
		merged[k] = v
	}
	for k, v := range spec {
		merged[k] = v
	}
	_ = unstructured.SetNestedMap(got.Object, merged, "spec")
	if !equality.Semantic.DeepEqual(before.Object, got.Object) {
		if err := r.Client.Update(ctx, got, client.FieldOwner(FieldManager)); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return false, nil
	}
	o := capz.ReadASO(got)
	return o.Ready, nil
}

// deleteASO deletes every ASO object the AzureCluster controls (Kubernetes'
// garbage collector would, after CAPZ deleted the AzureCluster; envtest
// runs none) and says whether any is still there.
func (r *Reconciler) deleteASO(ctx context.Context, u *unstructured.Unstructured, s *clusterSpec) (bool, error) {
	left := false
	for _, gvk := range []schema.GroupVersionKind{capz.ASOPrivateEndpointGVK, capz.ASOPrivateLinkServiceGVK} {
		// capzsim labels what it makes with the cluster's name (applyASO).
		objs, err := r.listASOLive(ctx, u, gvk, client.MatchingLabels{capz.ClusterNameLabel: s.clusterName()})
		if err != nil {
			return false, err
		}
		for _, o := range objs {
			left = true
			if o.GetDeletionTimestamp() == nil {
				if err := r.Client.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
					return false, err
				}
			}
		}
	}
	return left, nil
}

// pauseASO pauses the ASO objects a paused AzureCluster controls as CAPZ
// does (capz.PrePauseReconcilePolicyAnnotation).
func (r *Reconciler) pauseASO(ctx context.Context, u *unstructured.Unstructured) error {
	for _, gvk := range []schema.GroupVersionKind{capz.ASOPrivateEndpointGVK, capz.ASOPrivateLinkServiceGVK} {
		objs, err := r.listASOLive(ctx, u, gvk)
		if err != nil {
			return err
		}
		for _, o := range objs {
			ann := o.GetAnnotations()
			if _, paused := ann[capz.PrePauseReconcilePolicyAnnotation]; paused {
				continue
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{
				capz.PrePauseReconcilePolicyAnnotation: ann[capz.ASOReconcilePolicyAnnotation],
				capz.ASOReconcilePolicyAnnotation:      capz.ASOReconcilePolicySkip,
			}}})
			if err != nil {
				return err
			}
			if err := r.Client.Patch(ctx, o.DeepCopy(), client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// usesASO says whether the mode makes endpoints through ASO.
func (m Mode) usesASO() bool { return m == Upstream || m == V127 }

// ensureASOEndpoints is ensurePrivateEndpoints through ASO.
func (r *Reconciler) ensureASOEndpoints(ctx context.Context, u *unstructured.Unstructured, s *clusterSpec) error {
	want := map[string]map[string]any{}
	for _, sn := range s.view.Subnets {
		for _, pe := range sn.PrivateEndpoints {
			want[pe.Name] = asoEndpointSpec(s, sn.Name, pe)
		}
	}
	prune := r.Opts.Mode == V127 && !r.Opts.KeepRemovedEndpoints
	waiting, err := r.ensureASO(ctx, u, s, capz.ASOPrivateEndpointGVK, want, prune)
	if err != nil {
		return err
	}
	if waiting {
		return errWait
	}
	return nil
}

// ensureASOLinks creates v1.27's private link services through ASO and
// sets PrivateLinksReady once ASO reports them all Ready — also on a
// cluster with none, as CAPZ v1.27.0 does: its privatelinks service is an
// aso.Service, whose Reconcile reports the service's condition (True
// without an error) whatever the number of specs
// (azure/services/aso/service.go, UpdatePutStatus; seen on the MC in the
// real-controller world, test/realcapz TestDiffNativeLinks).
func (r *Reconciler) ensureASOLinks(ctx context.Context, u *unstructured.Unstructured, s *clusterSpec) error {
	want := map[string]map[string]any{}
	if s.lbInternal {
		for _, pl := range s.view.PrivateLinks {
			want[pl.Name] = asoLinkSpec(s, pl)
		}
	}
	waiting, err := r.ensureASO(ctx, u, s, capz.ASOPrivateLinkServiceGVK, want, true)
	if err != nil {
		return err
	}
	if waiting {
		return errWait
	}
	broken := u.GetAnnotations()[BrokenLinksAnnotation] == "true"
	if s.view.PrivateLinksReady != broken {
		return nil
	}
	return r.setPrivateLinksReady(ctx, u, !broken)
}
