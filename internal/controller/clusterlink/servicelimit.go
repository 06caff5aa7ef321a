package clusterlink

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/admission"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Every workload cluster's endpoint to the MC's ingress connects to one
// private link service, <mc>-ingress-privatelink (and, in the gateway
// layouts, to <mc>-gateway-privatelink), and Azure accepts at most 1,000
// private endpoints on one private link service ("Azure subscription and
// service limits", Private Link limits; internal/azuresim/limits.go
// enforces the same figure). The operator counts the clusters whose spec
// holds an entry to each MC-side service, anyone's entries: a WC whose new
// endpoint would pass --mc-service-connection-limit gets none and says
// PrivateLinkServiceConnectionLimit on GSPrivateLinksReady, instead of its CAPZ
// sending Azure a request it refuses; the MC gets a Warning from 90 %.
// Entries that exist are never taken away.
const (
	// AzureEndpointsPerService is Azure's limit of private endpoints
	// connected to one private link service.
	AzureEndpointsPerService = 1000

	// ReasonServiceLimit: a workload cluster gets no new endpoint to a
	// management cluster's private link service that has as many
	// connections as the limit allows.
	ReasonServiceLimit = "PrivateLinkServiceConnectionLimit"
	// ReasonServiceLimitNear: a management cluster's private link service
	// has 90 % of the limit's connections (a Warning on the MC).
	ReasonServiceLimitNear = "PrivateLinkServiceConnectionLimitNear"
)

// targetIndex indexes AzureClusters by the lower-case IDs of the private
// link services their private endpoint entries target, anyone's entries:
// the clusters connected to a service, without reading every cluster.
const targetIndex = "apeo.endpointTargets"

func endpointTargets(o client.Object) []string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	ac, _ := capz.FromUnstructured(u)
	return targetsOf(ac)
}

// targetsOf is the lower-case IDs of the services ac's entries target,
// each once, sorted.
func targetsOf(ac *capz.AzureCluster) []string {
	seen := map[string]bool{}
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			for _, c := range pe.Connections {
				seen[strings.ToLower(c.PrivateLinkServiceID)] = true
			}
		}
	}
	delete(seen, "")
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// ServiceUse is how many clusters hold an entry to each private link
// service (lower-case ID).
type ServiceUse map[string]int

// WithinServiceLimit returns the endpoints of toMC that wc may have under
// limit connections per service, and the Problem of a cluster that gets
// none of its new ones. An endpoint is new when no entry of wc's spec
// targets its service yet (an entry that exists is always kept); use
// counts the other clusters connected to each service. A cluster's new
// endpoints come all or none, as the MC's do (WithinLimit). limit <= 0:
// no limit.
func WithinServiceLimit(toMC []Endpoint, wc *capz.AzureCluster, use ServiceUse, limit int) ([]Endpoint, []Problem) {
	if limit <= 0 {
		return toMC, nil
	}
	holds := map[string]bool{}
	for _, id := range targetsOf(wc) {
		holds[id] = true
	}
	for _, ep := range toMC {
		id := serviceOf(ep)
		if holds[id] || use[id] < limit {
			continue
		}
		kept := toMC[:0:0]
		for _, ep := range toMC {
			if holds[serviceOf(ep)] {
				kept = append(kept, ep)
			}
		}
		return kept, []Problem{{ep.Cluster, ReasonServiceLimit, fmt.Sprintf(
			"no private endpoint %s is requested: the management cluster's private link service %s has %d connections from clusters, "+
				"the limit is %d (--mc-service-connection-limit; Azure allows %d private endpoints per private link service); "+
				"the connections that exist stay",
			ep.Name, ep.Link, use[id], limit, AzureEndpointsPerService)}}
	}
	return toMC, nil
}

func serviceOf(ep Endpoint) string {
	if len(ep.Connections) == 0 {
		return ""
	}
	return strings.ToLower(ep.Connections[0].PrivateLinkServiceID)
}

// newTargets is the services of toMC that no entry of wc targets yet.
func newTargets(toMC []Endpoint, wc *capz.AzureCluster) []string {
	holds := map[string]bool{}
	for _, id := range targetsOf(wc) {
		holds[id] = true
	}
	var out []string
	for _, ep := range toMC {
		if id := serviceOf(ep); id != "" && !holds[id] {
			holds[id] = true
			out = append(out, id)
		}
	}
	return out
}

// countUse counts, from the cache's index, the clusters other than self
// that hold an entry to each service, as each is asked for (Count): the
// admission asks which of its pending clusters the cache shows before it
// counts (admission.Holders), so the count is read after those looks.
func countUse(ctx context.Context, c client.Reader, self string) *serviceHolders {
	h := &serviceHolders{use: ServiceUse{}, targets: func(k string) (map[string]bool, error) {
		return cachedTargets(ctx, c, k)
	}}
	h.count = func(id string) (int, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
		if err := c.List(ctx, list, client.MatchingFields{targetIndex: id}, client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		n := len(list.Items)
		// Self is left out. Read after the list: should self change in
		// between, it is counted once too many, never once too few.
		held, err := h.targets(self)
		if err != nil {
			return 0, err
		}
		if held[id] && n > 0 {
			n--
		}
		return n, nil
	}
	return h
}

// serviceHolders are the clusters the cache's index shows holding an
// entry to each service (admission.Holders): how many, and, for the few
// admissions of this process that wait for the cache, whether the cache
// shows one of them yet, from that cluster's own object. The index's
// objects are not read one by one: a set of every holder's key, built on
// each admission, was 15.2 s of the operator's CPU at N = 3,000 (make
// bench at 3283d7f), most of it reading the metadata of up to 1,000
// objects a service.
type serviceHolders struct {
	use ServiceUse
	// count reads the count of a service from the cache (countUse).
	count func(id string) (int, error)
	// targets are the services the cache's object of a cluster targets.
	targets func(k string) (map[string]bool, error)
	// err is the first error of a count; nothing counted after it is
	// decided on.
	err error
}

// Count is how many clusters other than self hold an entry to service id,
// read from the cache the first time it is asked.
func (h *serviceHolders) Count(id string) int {
	if n, ok := h.use[id]; ok || h.err != nil {
		return n
	}
	n, err := h.count(id)
	if err != nil {
		h.err = err
		return 0
	}
	h.use[id] = n
	return n
}

// Holds says whether the cache shows cluster k ("<namespace>/<name>")
// with an entry to service id.
func (h *serviceHolders) Holds(id, k string) bool {
	held, err := h.targets(k)
	return err == nil && held[id]
}

// cachedTargets are the services the cache's object of cluster k
// ("<namespace>/<name>") targets (none when it does not exist).
func cachedTargets(ctx context.Context, c client.Reader, k string) (map[string]bool, error) {
	ns, name, _ := strings.Cut(k, "/")
	u, err := getAzureCluster(ctx, c, types.NamespacedName{Namespace: ns, Name: name}, client.UnsafeDisableDeepCopy)
	if err != nil || u == nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range endpointTargets(u) {
		out[id] = true
	}
	return out, nil
}

// serviceRoom admits the workload clusters' new endpoints to the MC's
// services. The count is of the cluster objects, through the cache;
// admission.Room covers the cache's lag behind this process's own writes, so
// that two workers cannot both take the last connection. A restart loses
// nothing: the cache starts from the objects.
type serviceRoom struct {
	admission.Room
}

// admit applies WithinServiceLimit to wc's endpoints to the MC, counting
// the admissions of this process the cache does not show yet.
func (s *serviceRoom) admit(ctx context.Context, c client.Reader, wc *capz.AzureCluster, toMC []Endpoint, limit int, now time.Time) ([]Endpoint, []Problem, error) {
	ids := newTargets(toMC, wc)
	if limit <= 0 || len(ids) == 0 {
		return toMC, nil, nil
	}
	self := key(wc)
	var kept []Endpoint
	var problems []Problem
	held := countUse(ctx, c, self)
	err := s.Admit(self, ids, now, func() (admission.Holders, error) {
		return held, nil
	}, func(use map[string]int) bool {
		if held.err != nil {
			return false // a count failed: nothing is decided, nothing noted
		}
		kept, problems = WithinServiceLimit(toMC, wc, use, limit)
		return len(problems) == 0
	})
	if err == nil {
		err = held.err
	}
	if err != nil {
		return nil, nil, err
	}
	return kept, problems, nil
}

// withinServiceLimitNow is WithinServiceLimit counted from the cache as it
// is, without this process's admissions it does not show yet: what the
// wiring decides, as the DNS mode reads it (Wiring.Serves).
func withinServiceLimitNow(ctx context.Context, c client.Reader, wc *capz.AzureCluster, toMC []Endpoint, limit int) ([]Endpoint, []Problem, error) {
	ids := newTargets(toMC, wc)
	if limit <= 0 || len(ids) == 0 {
		return toMC, nil, nil
	}
	held := countUse(ctx, c, key(wc))
	for _, id := range ids {
		held.Count(id)
	}
	if held.err != nil {
		return nil, nil, held.err
	}
	kept, problems := WithinServiceLimit(toMC, wc, held.use, limit)
	return kept, problems, nil
}

// mcServiceUse counts, for the MC's pass, the clusters of all connected to
// each of the MC's services a WC connects to (links), by service name.
func mcServiceUse(mc *capz.AzureCluster, all []*capz.AzureCluster, links []string) map[string]int {
	byID := map[string]string{}
	for _, l := range links {
		byID[strings.ToLower(PrivateLinkServiceID(mc.SubscriptionID, mc.ResourceGroup, l))] = l
	}
	out := make(map[string]int, len(links))
	for _, l := range links {
		out[l] = 0
	}
	for _, ac := range all {
		for _, id := range targetsOf(ac) {
			if l, ok := byID[id]; ok {
				out[l]++
			}
		}
	}
	return out
}

// nearServiceLimit is the Warning for an MC service with 90 % of the
// limit's connections or more ("" below).
func nearServiceLimit(link string, n, limit int) string {
	if limit <= 0 || n*10 < limit*9 {
		return ""
	}
	return fmt.Sprintf("the management cluster's private link service %s has %d connections from clusters, the limit is %d "+
		"(--mc-service-connection-limit; Azure allows %d private endpoints per private link service): beyond it new workload clusters "+
		"get no endpoint to it (PrivateLinkServiceConnectionLimit); remove endpoints no one needs from the service, or serve new workload clusters from another management cluster",
		link, n, limit, AzureEndpointsPerService)
}
