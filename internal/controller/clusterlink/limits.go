package clusterlink

import (
	"fmt"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// The management cluster's private endpoint entries have a ceiling: CAPZ
// makes one private endpoint in the MC's virtual network per entry, and
// Azure allows 1,000 private endpoints per virtual network ("Azure
// subscription and service limits", Private Link limits, confirmed by
// "Increase Private Endpoint virtual network limits", 2025; 5,000 with
// high-scale private endpoints, the network's privateEndpointVNetPolicies
// Basic). internal/azuresim/limits.go enforces the same figure. Every entry also grows the MC's AzureCluster by about
// 450 bytes (447 KiB per 1,000 entries, measured by make bench), and the
// object must stay under etcd's 1.5 MiB request limit: it passes it near
// 3,400 entries. The operator says so before either wall: a Warning on the
// MC from 90 % of the limit, and beyond it no new entry — the workload
// clusters that would need one report PrivateEndpointLimit instead of
// CAPZ sending Azure a request it refuses. Entries that exist are never
// taken away.
const (
	// AzureEndpointsPerVNet is Azure's limit of private endpoints in one
	// virtual network without high-scale private endpoints.
	AzureEndpointsPerVNet = 1000
	// MaxMCEndpointLimit is the highest --mc-private-endpoint-limit: the
	// MC's AzureCluster with this many entries stays under etcd's 1.5 MiB
	// request limit with room for the rest of the object.
	MaxMCEndpointLimit = 3000

	// ReasonEndpointLimit: a workload cluster gets no new private endpoint
	// in the management cluster, whose entries reached the limit.
	ReasonEndpointLimit = "PrivateEndpointLimit"
	// ReasonEndpointLimitNear: the management cluster's entries reached
	// 90 % of the limit (a Warning on the MC).
	ReasonEndpointLimitNear = "PrivateEndpointLimitNear"
)

// EntryCount is how many private endpoint entries the cluster's spec
// holds in all its subnets, whoever wrote them: CAPZ makes a private
// endpoint in the cluster's network for each.
func EntryCount(ac *capz.AzureCluster) int {
	n := 0
	for _, s := range ac.Subnets {
		n += len(s.PrivateEndpoints)
	}
	return n
}

// WithinLimit returns the endpoints of eps that stay in the MC under
// limit, and a Problem for each workload cluster that gets none of its
// new ones. eps are in the order the clusters are served (DesiredMC's: by
// namespace and name); existing are the entries the operator holds, which
// always stay; entries is how many entries the MC holds now, everyone's.
// A cluster's new endpoints come all or none (a cluster with half its
// links wired is wired for nobody); a cluster that does not fit leaves the
// room to the next ones that do. limit <= 0: no limit.
func WithinLimit(eps []Endpoint, existing Held, entries, limit int) ([]Endpoint, []Problem) {
	in, _, problems := limitSplit(eps, existing, entries, limit)
	return in, problems
}

// limitSplit is WithinLimit that also returns the endpoints it refuses
// (which Beyond may place elsewhere, beyond.go).
func limitSplit(eps []Endpoint, existing Held, entries, limit int) (in, refused []Endpoint, problems []Problem) {
	if limit <= 0 {
		return eps, nil, nil
	}
	newOf := map[string]int{}
	for _, ep := range eps {
		if _, held := existing[ep.Name]; !held {
			newOf[ep.Cluster]++
		}
	}
	admitted := map[string]bool{}
	room := limit - entries
	for _, ep := range eps {
		n, isNew := newOf[ep.Cluster]
		if !isNew {
			continue
		}
		if _, decided := admitted[ep.Cluster]; decided {
			continue
		}
		admitted[ep.Cluster] = n <= room
		if n <= room {
			room -= n
			continue
		}
		problems = append(problems, Problem{ep.Cluster, ReasonEndpointLimit, fmt.Sprintf(
			"no private endpoint %s is requested in the management cluster: its AzureCluster holds %d private endpoint entries, "+
				"the limit is %d (--mc-private-endpoint-limit; Azure allows %d private endpoints per virtual network, "+
				"5,000 with high-scale private endpoints); the entries that exist stay",
			ep.Name, limit-room, limit, AzureEndpointsPerVNet)})
	}
	in = eps[:0:0]
	for _, ep := range eps {
		if _, held := existing[ep.Name]; held || admitted[ep.Cluster] {
			in = append(in, ep)
		} else {
			refused = append(refused, ep)
		}
	}
	return in, refused, problems
}

// nearLimit is the Warning for an MC at 90 % of its limit or more ("" below).
func nearLimit(entries, limit int) string {
	if limit <= 0 || entries*10 < limit*9 {
		return ""
	}
	return fmt.Sprintf("the management cluster's AzureCluster holds %d private endpoint entries, the limit is %d (--mc-private-endpoint-limit; "+
		"Azure allows %d private endpoints per virtual network, 5,000 with high-scale private endpoints): beyond it new workload clusters "+
		"get no endpoint (PrivateEndpointLimit); enable high-scale private endpoints on the network and raise the limit, "+
		"or remove private links no cluster needs", entries, limit, AzureEndpointsPerVNet)
}

// setLimitMetrics publishes the MC's entries and their limit.
func setLimitMetrics(mc *capz.AzureCluster, limit int) {
	limitmetrics.Set(limitmetrics.MCPrivateEndpoints, mc.Namespace+"/"+mc.Name, EntryCount(mc), limit)
}
