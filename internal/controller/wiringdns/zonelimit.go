package wiringdns

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/admission"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// Event reasons of the per-cluster zone layout's limit.
const (
	ReasonDNSZoneLimitNear = "DNSZoneLimitNear"
	ReasonDNSZoneLimit     = "DNSZoneLimit"
)

// The per-cluster layout (--wiring-dns-mc-zone naming .Cluster) gives
// every workload cluster a zone of its own on the MC side. Those zones all
// live in one subscription (the MC's, or --wiring-dns-mc-zone-subscription)
// and are linked to the MC's network, and Azure allows 1,000 private DNS
// zones per subscription and 1,000 zones linked to one network ("Azure
// subscription and service limits", Azure DNS limits: private DNS zones).
// The operator counts them before it makes one: a Warning from 90 % of
// --wiring-dns-zone-limit, and no zone for a cluster beyond it (its names
// are refused, GSDNSZoneReady says DNSZoneLimit) instead of a request
// Azure refuses. A cluster whose zone may exist is always counted in.
//
// The count is of the clusters' own records, not of this process's
// memory: each cluster's DNS state (clusterlink.AnnotationPrivateDNS) says
// mczone=own before its zone is made and until its DNS is released, and
// the cache indexes the clusters that say so. A restarted operator, or a
// new leader, counts the same clusters — also those paused, or not
// reconciled yet — and admission.Room covers the cache's lag
// behind this process's own writes.

// mcZoneIndex indexes the workload clusters whose MC-side zone of their
// own may exist (holdsMCZone), under mcZoneScope.
const mcZoneIndex = "apeo.mcZone"

// mcZoneScope is the one scope of the count: every per-cluster zone of the
// MC side is in one subscription and linked to one network, the MC's.
const mcZoneScope = "mc-zones"

// holdsMCZone says whether a zone of the cluster's own may exist on the
// MC side, from what the cluster records: its DNS state says so
// (MCZoneOwn) until its DNS is released. A state that does not say so
// counts the cluster as earlier versions of the operator, which did not
// record it, did: when the layout makes a zone per cluster and the MC
// side's records may hold an address or GSDNSZoneReady is True. A
// cluster of this version that meets that rule has its zone, and says so
// from its next pass.
func holdsMCZone(u *unstructured.Unstructured, cfg clusterlink.DNSConfig, annotation func(string) string) bool {
	held := clusterlink.DNSHeldOf(u, annotation)
	switch {
	case held.Released:
		return false
	case held.MCZone == clusterlink.MCZoneOwn:
		return true
	}
	return perClusterMCZone(cfg) && (clusterlink.HasCondition(u, clusterlink.ConditionGSDNSZoneReady) || held.SideMayHold(clusterlink.DNSSideMC))
}

// perClusterMCZone says whether the layout gives each cluster a zone of
// its own on the MC side.
func perClusterMCZone(cfg clusterlink.DNSConfig) bool {
	return strings.Contains(cfg.MCZone, ".Cluster")
}

// mcZoneIndexer is the index function of mcZoneIndex.
func mcZoneIndexer(cfg clusterlink.DNSConfig, annotation func(string) string) client.IndexerFunc {
	return func(o client.Object) []string {
		if u, ok := o.(*unstructured.Unstructured); ok && holdsMCZone(u, cfg, annotation) {
			return []string{mcZoneScope}
		}
		return nil
	}
}

// mcZoneHolders reads, from the cache's index, the workload clusters
// other than self and the MC whose MC-side zone may exist.
func (r *DNSReconciler) mcZoneHolders(ctx context.Context, self string) (map[string]map[string]bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := r.Client.List(ctx, list, client.MatchingFields{mcZoneIndex: mcZoneScope}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("counting the management cluster's private DNS zones: %w", err)
	}
	holders := map[string]bool{}
	for i := range list.Items {
		k := list.Items[i].GetNamespace() + "/" + list.Items[i].GetName()
		if k != self && k != r.Opts.ManagementCluster.String() {
			holders[k] = true
		}
	}
	return map[string]map[string]bool{mcZoneScope: holders}, nil
}

// checkZoneLimit applies the limit to the MC-side set of a per-cluster
// layout: it warns near the limit, and drops the set (no zone, no
// records) beyond it, returning the problem that says why. had: the
// cluster's zone may exist (holdsMCZone): it is kept, and costs no count.
// own reports whether, after this pass, a zone of the cluster's own may
// exist on the MC side: what the pass records (MCZoneOwn) before it
// writes Azure.
func (r *DNSReconciler) checkZoneLimit(ctx context.Context, u *unstructured.Unstructured, sets []DNSSet, problems []clusterlink.Problem, wc string, had bool) (out []DNSSet, _ []clusterlink.Problem, own bool, _ error) {
	limit := r.Opts.DNS.ZoneLimit
	own = had
	for _, s := range sets {
		if s.Side != clusterlink.DNSSideMC || s.Zone.Shared || had || s.IP == "" {
			// Not a zone of the cluster's own; or one that may exist,
			// always counted in without a count (no list of the clusters
			// on every pass of every cluster).
			out = append(out, s)
			continue
		}
		n, ok := 0, false
		err := r.zoneRoom.Admit(wc, []string{mcZoneScope}, r.Clock.Now(), func() (admission.Holders, error) {
			held, err := r.mcZoneHolders(ctx, wc)
			return admission.Sets(held), err
		}, func(use map[string]int) bool {
			n, ok = use[mcZoneScope]+1, use[mcZoneScope] < limit
			return ok
		})
		if err != nil {
			return nil, nil, false, err
		}
		vnet := s.VNet[strings.LastIndex(s.VNet, "/")+1:]
		if !ok {
			limitmetrics.Set(limitmetrics.PrivateDNSZones, s.Zone.Subscription, n-1, limit)
			problems = append(problems, clusterlink.Problem{Cluster: wc, Reason: ReasonDNSZoneLimit, Message: fmt.Sprintf(
				"no private DNS zone %s is created: the per-cluster zone layout (--wiring-dns-mc-zone) already has %d zones in subscription %s linked to network %s, Azure's limit of %d per subscription and per linked network; move to the shared-zone layout (docs/dns.md), or raise --wiring-dns-zone-limit after Azure raised yours",
				s.Zone.Name, n-1, s.Zone.Subscription, vnet, limit)})
			continue
		}
		limitmetrics.Set(limitmetrics.PrivateDNSZones, s.Zone.Subscription, n, limit)
		if n*10 >= limit*9 {
			r.warnOnce(u, ReasonDNSZoneLimitNear, fmt.Sprintf(
				"the per-cluster zone layout (--wiring-dns-mc-zone) has %d zones in subscription %s linked to network %s, near Azure's limit of %d per subscription and per linked network; move to the shared-zone layout before new clusters get no DNS (docs/dns.md)",
				n, s.Zone.Subscription, vnet, limit))
		}
		own = own || s.IP != ""
		out = append(out, s)
	}
	return out, problems, own, nil
}
