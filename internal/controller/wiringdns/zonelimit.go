package wiringdns

import (
	"fmt"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// Event reasons of the per-cluster zone layout's limit.
const (
	ReasonDNSZoneLimitNear = "DNSZoneLimitNear"
	ReasonDNSZoneLimit     = "DNSZoneLimit"
)

// zoneLimit counts the MC-side zones the per-cluster layout (a zone per
// workload cluster, --wiring-dns-mc-zone naming .Cluster) puts in one
// subscription and links to one network, so that the operator says so
// before Azure refuses: a warning from 90% of the limit, and no zone for
// a cluster beyond it (its names are refused, GSDNSZoneReady stays
// unset) — a cluster whose zone exists already is always counted in.
type zoneLimit struct {
	mu     sync.Mutex
	scopes map[string]map[string]bool // subscription|network -> clusters
}

// admit counts wc's zone in scope; it reports how many zones the scope
// holds with it, and false when the cluster must not get one (the limit is
// reached and it had none).
func (z *zoneLimit) admit(scope, wc string, had bool, limit int) (int, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.scopes == nil {
		z.scopes = map[string]map[string]bool{}
	}
	s := z.scopes[scope]
	if s == nil {
		s = map[string]bool{}
		z.scopes[scope] = s
	}
	if !s[wc] && !had && len(s) >= limit {
		return len(s), false
	}
	s[wc] = true
	return len(s), true
}

// forget drops a cluster whose DNS is released.
func (z *zoneLimit) forget(wc string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, s := range z.scopes {
		delete(s, wc)
	}
}

// checkZoneLimit applies the limit to the MC-side set of a per-cluster
// layout: it warns near the limit, and drops the set (no zone, no
// records) beyond it, returning the problem that says why.
func (r *DNSReconciler) checkZoneLimit(u *unstructured.Unstructured, sets []DNSSet, problems []clusterlink.Problem, wc string, had bool) ([]DNSSet, []clusterlink.Problem) {
	limit := r.Opts.DNS.ZoneLimit
	out := sets[:0]
	for _, s := range sets {
		if s.Side != clusterlink.DNSSideMC || s.Zone.Shared || s.IP == "" && !had {
			out = append(out, s)
			continue
		}
		scope := strings.ToLower(s.Zone.Subscription + "|" + s.VNet)
		n, ok := r.zones.admit(scope, wc, had, limit)
		vnet := s.VNet[strings.LastIndex(s.VNet, "/")+1:]
		if !ok {
			problems = append(problems, clusterlink.Problem{Cluster: wc, Reason: ReasonDNSZoneLimit, Message: fmt.Sprintf(
				"no private DNS zone %s is created: the per-cluster zone layout (--wiring-dns-mc-zone) already has %d zones in subscription %s linked to network %s, Azure's limit of %d per subscription and per linked network; move to the shared-zone layout (docs/dns.md), or raise --wiring-dns-zone-limit after Azure raised yours",
				s.Zone.Name, n, s.Zone.Subscription, vnet, limit)})
			continue
		}
		if n*10 >= limit*9 {
			r.warnOnce(u, ReasonDNSZoneLimitNear, fmt.Sprintf(
				"the per-cluster zone layout (--wiring-dns-mc-zone) has %d zones in subscription %s linked to network %s, near Azure's limit of %d per subscription and per linked network; move to the shared-zone layout before new clusters get no DNS (docs/dns.md)",
				n, s.Zone.Subscription, vnet, limit))
		}
		out = append(out, s)
	}
	return out, problems
}
