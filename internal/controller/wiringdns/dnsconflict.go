package wiringdns

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// Two workload clusters in one resource group: their WC-side zones have
// one name (the MC's names) and so are one zone, linked to both networks,
// while each cluster needs the records to hold its own endpoint's address.
// One record cannot do both. The cluster that came first keeps the names;
// every later one is refused up front, told which cluster holds them, and
// writes nothing there (docs/operations.md, *DNSRecordConflict*).

// ReasonDNSRecordConflict is the Event reason of a WC whose WC-side names
// another WC of its resource group holds.
const ReasonDNSRecordConflict = "DNSRecordConflict"

// groupIndex indexes AzureClusters by subscription and resource group.
const groupIndex = "privatelink.giantswarm.io/resource-group"

// resourceGroupKey is the index value of a cluster's resource group.
func resourceGroupKey(subscription, group string) string {
	return strings.ToLower(subscription + "/" + group)
}

// resourceGroupOf is groupIndex's function.
func resourceGroupOf(o client.Object) []string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ac, _ := capz.FromUnstructured(u)
	if ac == nil || ac.SubscriptionID == "" || ac.ResourceGroup == "" {
		return nil
	}
	return []string{resourceGroupKey(ac.SubscriptionID, ac.ResourceGroup)}
}

// Peer is another workload cluster of a WC's resource group that the
// operator wires.
type Peer struct {
	Key     string // namespace/name
	Created time.Time
	Cluster *capz.AzureCluster
}

// WCSideConflict returns the problem of a WC (created at created) whose
// WC-side zone is also the WC-side zone of a peer that came first (earlier,
// or at the same second and first by name), naming that peer; nil when the
// names are the WC's. It is pure: peers are what the cache holds.
func WCSideConflict(mc, wc *capz.AzureCluster, created time.Time, peers []Peer, cfg clusterlink.DNSConfig, prefix func(string) string) *clusterlink.Problem {
	zone, _, p := sideNames(mc, wc, mc, clusterlink.DNSSideWC, cfg.WCZone, cfg.WCRecords, cfg, prefix)
	if p != nil {
		return nil // DesiredDNS reports it
	}
	self := Peer{Key: key(wc), Created: created}
	var first *Peer
	for i := range peers {
		p := &peers[i]
		if p.Key == self.Key || !cameFirst(*p, self) || first != nil && !cameFirst(*p, *first) {
			continue
		}
		if other, _, perr := sideNames(mc, p.Cluster, mc, clusterlink.DNSSideWC, cfg.WCZone, cfg.WCRecords, cfg, prefix); perr == nil && strings.EqualFold(other, zone) {
			first = p
		}
	}
	if first == nil {
		return nil
	}
	return &clusterlink.Problem{Cluster: key(wc), Reason: ReasonDNSRecordConflict, Message: fmt.Sprintf(
		"the WC-side private DNS zone %s in resource group %s/%s is also workload cluster %s's (created first): one record set cannot hold both clusters' endpoint addresses, so no WC-side DNS is written for this cluster. Move one cluster to its own resource group, or use a WC-side zone template that differs per cluster (--wiring-dns-wc-zone)",
		zone, wc.SubscriptionID, wc.ResourceGroup, first.Key)}
}

// dnsPeers lists the other workload clusters of the WC's resource group
// that the operator wires (they carry its finalizer) and that are not
// being deleted.
func (r *DNSReconciler) dnsPeers(ctx context.Context, wc *capz.AzureCluster) ([]Peer, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := r.Client.List(ctx, list, client.MatchingFields{groupIndex: resourceGroupKey(wc.SubscriptionID, wc.ResourceGroup)}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []Peer
	for i := range list.Items {
		u := &list.Items[i]
		k := u.GetNamespace() + "/" + u.GetName()
		if k == key(wc) || k == r.Opts.ManagementCluster.String() || u.GetDeletionTimestamp() != nil || !slices.Contains(u.GetFinalizers(), clusterlink.Finalizer) {
			continue
		}
		ac, _ := capz.FromUnstructured(u)
		if ac == nil {
			continue
		}
		out = append(out, Peer{Key: k, Created: u.GetCreationTimestamp().Time, Cluster: ac})
	}
	return out, nil
}
