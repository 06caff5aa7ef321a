package wiringdns

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// A workload cluster's MC-side names (DNS mode) sit by default under
// <cluster>.<base domain>, in a private zone linked to the management
// cluster's network. A public cluster of the same name (another tenant's,
// in another namespace) has its API server under that same domain in
// public DNS; a private zone of that name in the MC's network would make
// those public names NXDOMAIN from there. The name belongs to whichever
// cluster came first (created earlier, or in the same second first by
// namespace/name, as WCSideConflict decides): a private cluster that comes
// after a public namesake gets no MC-side DNS (DNSNameReserved); one that
// came first keeps its DNS when a public namesake comes later (a tenant
// cannot switch off another tenant's DNS by creating a cluster).

// nameIndex indexes AzureClusters by their lower-cased name.
const nameIndex = "privatelink.giantswarm.io/name"

func nameOf(o client.Object) []string { return []string{strings.ToLower(o.GetName())} }

// PublicNamesakes returns the public domains (<name>.<its base domain>) of
// the public clusters among peers (clusters named like wc) that came
// before wc. It is pure: peers are what the cache holds.
func PublicNamesakes(wc *capz.AzureCluster, self Peer, peers []Peer, cfg clusterlink.DNSConfig, prefix func(string) string) []string {
	var out []string
	for _, p := range peers {
		if p.Key == self.Key || !strings.EqualFold(p.Cluster.Name, wc.Name) || strings.EqualFold(p.Cluster.APIServerLBType, "Internal") || !cameFirst(p, self) {
			continue
		}
		base := cfg.BaseDomain
		if bd := p.Cluster.Annotations[prefix(clusterlink.BaseDomainAnnotation)]; bd != "" {
			base = bd
		}
		if base = strings.ToLower(strings.TrimSuffix(base, ".")); base != "" {
			out = append(out, strings.ToLower(p.Cluster.Name)+"."+base)
		}
	}
	return out
}

// cameFirst says whether p was created before self, or in the same second
// and first by namespace/name.
func cameFirst(p, self Peer) bool {
	return p.Created.Before(self.Created) || p.Created.Equal(self.Created) && p.Key < self.Key
}

// publicNamesakes reads the clusters named like u from the cache
// (nameIndex) and returns PublicNamesakes of them. The management cluster
// is not among them: its own domain is reserved as it is (mcDomain).
func (r *DNSReconciler) publicNamesakes(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := r.Client.List(ctx, list, client.MatchingFields{nameIndex: strings.ToLower(wc.Name)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	self := Peer{Key: key(wc), Created: u.GetCreationTimestamp().Time}
	var peers []Peer
	for i := range list.Items {
		o := &list.Items[i]
		if o.GetNamespace() == r.Opts.ManagementCluster.Namespace && o.GetName() == r.Opts.ManagementCluster.Name {
			continue
		}
		ac, _ := capz.FromUnstructured(o)
		if ac == nil || ac.Deleting {
			continue
		}
		peers = append(peers, Peer{Key: key(ac), Created: o.GetCreationTimestamp().Time, Cluster: ac})
	}
	return PublicNamesakes(wc, self, peers, r.Opts.DNS, r.Opts.Annotation), nil
}

// neighboursOnRelease wakes, when a workload cluster goes or its DNS
// changes hands (AnnotationPrivateDNS changes, or it starts deleting), the
// clusters that may have waited for it: those of its name in other
// namespaces (DNSNameReserved, DNSZoneHeld) and those of its resource
// group (DNSRecordConflict, WCSideConflict). Without it they are looked
// at again only at their next terminal recheck.
func neighboursOnRelease(c client.Reader, annotation func(string) string) (handler.EventHandler, predicate.Funcs) {
	key := annotation(clusterlink.AnnotationPrivateDNS)
	released := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[key] != e.ObjectNew.GetAnnotations()[key] ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	mapper := func(ctx context.Context, o client.Object) []reconcile.Request {
		var out []reconcile.Request
		seen := map[types.NamespacedName]bool{client.ObjectKeyFromObject(o): true}
		lists := []client.MatchingFields{{nameIndex: strings.ToLower(o.GetName())}}
		if g := resourceGroupOf(o); len(g) > 0 {
			lists = append(lists, client.MatchingFields{groupIndex: g[0]})
		}
		for _, fields := range lists {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
			if err := c.List(ctx, list, fields, client.UnsafeDisableDeepCopy); err != nil {
				return out // the terminal recheck comes anyway
			}
			for i := range list.Items {
				k := client.ObjectKeyFromObject(&list.Items[i])
				if !seen[k] {
					seen[k] = true
					out = append(out, reconcile.Request{NamespacedName: k})
				}
			}
		}
		return out
	}
	return handler.EnqueueRequestsFromMapFunc(mapper), released
}
