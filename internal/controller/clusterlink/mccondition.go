package clusterlink

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// ConditionGSWorkloadClusterEndpointsReady is the management cluster's own
// condition: whether every workload cluster that can be wired has the MC's
// private endpoint entries it needs, and when not, which side of the MC
// keeps them waiting (its spec, Azure, its limits, names someone else
// holds). True, or Unknown with the reason; never False, for the reason
// SetWaitingCondition gives. Written in both condition forms, like a WC's.
const ConditionGSWorkloadClusterEndpointsReady = "GSWorkloadClusterEndpointsReady"

// ReasonEndpointEntriesWritten says the MC holds the entries of every
// workload cluster that can be wired (a WC that waits for itself says why on its
// own GSPrivateLinksReady).
const ReasonEndpointEntriesWritten = "PrivateEndpointEntriesWritten"

// mcConditionNames is how many workload clusters an MC condition's message
// names before it counts the rest.
const mcConditionNames = 3

// mcCondition is the MC's GSWorkloadClusterEndpointsReady after a pass:
// the first of what keeps workload clusters from the MC's entries, in the
// order a person should act on them; True when nothing does, with the
// Warning of a limit near as its reason. use is the connections of each
// MC service a WC connects to (mcServiceUse). The message names the
// workload clusters concerned: the MC's AzureCluster is the platform's,
// read by those who run every tenant's cluster.
func mcCondition(seen *mcSeen, plan mcPlan, use map[string]int, opts Options) wantCondition {
	w := wantCondition{typ: ConditionGSWorkloadClusterEndpointsReady, status: "Unknown", exact: true}
	byReason := map[string][]string{}
	for _, p := range slices.Concat(plan.problems, plan.taken) {
		byReason[p.Reason] = append(byReason[p.Reason], p.Cluster)
	}
	byReason[ReasonServiceLimit] = append(byReason[ReasonServiceLimit], seen.serviceRefused...)
	switch {
	case seen.specErr != nil:
		w.reason, w.message = ReasonInvalidSpec, "the management cluster's spec cannot be read whole, so no new private endpoint entry is made "+
			"(those of deleted workload clusters still go): "+seen.specErr.Error()
	case seen.azureErr != nil:
		c := azure.Classify(seen.azureErr)
		w.reason, w.message = c.Reason, fmt.Sprintf("Azure's private endpoints in the management cluster's resource group cannot be read, "+
			"so the new entries of %s wait (a name Azure still gives another service's endpoint must not be given again): %s",
			clusters(plan.unread), c.Message)
	case len(byReason[ReasonPrivateEndpointNameTaken]) > 0:
		w.reason, w.message = ReasonPrivateEndpointNameTaken, fmt.Sprintf("the entries of %s wait: an entry of the name the operator would write "+
			"belongs to another field manager (the management cluster's Events name it); rename or remove that entry, or rename the link",
			clusters(byReason[ReasonPrivateEndpointNameTaken]))
	case len(byReason[ReasonEndpointLimit]) > 0 && opts.Beyond.On():
		w.reason, w.message = ReasonEndpointLimit, fmt.Sprintf("no private endpoint for %s: the AzureCluster holds %d entries, "+
			"the limit is %d (--mc-private-endpoint-limit), and no network of --mc-endpoint-subnets has room for them (%s; "+
			"Azure allows %d private endpoints per virtual network, %d with high-scale private endpoints, at most --mc-endpoint-network-limit %d); "+
			"declare a subnet of another network, or remove private links no cluster needs",
			clusters(byReason[ReasonEndpointLimit]), EntryCount(seen.mc), opts.MCEndpointLimit, networkFigures(opts.Beyond, networkUse(seen.placed)),
			AzureEndpointsPerVNet, MaxNetworkLimit, opts.Beyond.NetworkLimit)
	case len(byReason[ReasonEndpointLimit]) > 0:
		w.reason, w.message = ReasonEndpointLimit, fmt.Sprintf("no private endpoint entry for %s: the AzureCluster holds %d entries, "+
			"the limit is %d (--mc-private-endpoint-limit; Azure allows %d private endpoints per virtual network, 5,000 with high-scale "+
			"private endpoints); enable high-scale private endpoints on the network and raise the limit, or remove private links no cluster needs",
			clusters(byReason[ReasonEndpointLimit]), EntryCount(seen.mc), opts.MCEndpointLimit, AzureEndpointsPerVNet)
	case len(byReason[ReasonServiceLimit]) > 0:
		w.reason, w.message = ReasonServiceLimit, fmt.Sprintf("no private endpoint to the management cluster's %s for %s: "+
			"the limit is %d connections from clusters (--mc-service-connection-limit; Azure allows %d private endpoints per private link service); "+
			"remove endpoints no one needs from the service, or serve new workload clusters from another management cluster",
			fullServices(use, opts.MCServiceConnectionLimit), clusters(byReason[ReasonServiceLimit]), opts.MCServiceConnectionLimit, AzureEndpointsPerService)
	case len(seen.serviceWaiting) > 0:
		w.reason, w.message = ReasonIngressServiceWaiting, fmt.Sprintf("the endpoints of %s to the management cluster wait for a further ingress "+
			"(or gateway) service: those that can take them are full (--mc-service-connection-limit) and the next is not ready or does not list "+
			"their subscription (each says which on its GSPrivateLinksReady; kubectl get azureprivatelinkservices -n %s -l %s=%s)",
			clusters(seen.serviceWaiting), seen.mc.Namespace, ShardOfLabel, seen.mc.Name)
	case len(byReason[ReasonNameConflict]) > 0:
		w.reason, w.message = ReasonNameConflict, fmt.Sprintf("the entries of %s wait: each needs a name the management cluster "+
			"holds for another workload cluster, or that Azure still gives another service's endpoint (each says which on its GSPrivateLinksReady); rename its private link",
			clusters(byReason[ReasonNameConflict]))
	default:
		w.status, w.reason = "True", ReasonEndpointEntriesWritten
		w.message = "the management cluster holds a private endpoint entry for every private link of its workload clusters that can be wired " +
			"(a workload cluster that waits for itself says why on its GSPrivateLinksReady)"
		if n := placedCount(seen.placed); n > 0 {
			w.message = fmt.Sprintf("the management cluster holds a private endpoint for every private link of its workload clusters that can be wired: "+
				"%d entries in its AzureCluster, %d AzurePrivateEndpoints beyond it (%s) "+
				"(a workload cluster that waits for itself says why on its GSPrivateLinksReady)", EntryCount(seen.mc), n, networkFigures(opts.Beyond, networkUse(seen.placed)))
		}
		if msg := nearLimit(EntryCount(seen.mc), opts.MCEndpointLimit); msg != "" && !opts.Beyond.On() {
			w.reason, w.message = ReasonEndpointLimitNear, msg
		} else if net, ok := nearestNetwork(opts.Beyond, networkUse(seen.placed)); ok {
			w.reason, w.message = ReasonNetworkLimitNear, nearNetworkLimit(opts.Beyond, net, networkUse(seen.placed)[net])
		} else if link, ok := nearestService(opts.warnable(seen.mc.Name, use), opts.MCServiceConnectionLimit); ok {
			w.reason, w.message = ReasonServiceLimitNear, nearServiceLimit(link, use[link], opts.MCServiceConnectionLimit)
		}
	}
	return w
}

// conditionDue says whether the MC's condition want is written now over
// what u says, and when not, how long until it is: a new status or reason
// at once, and a new message alone (its counts and the clusters it names
// move at nearly every pass while a fleet is wired) once interval has
// passed since the last write (last). Wiring 3,000 workload clusters
// wrote the MC's status 89 times, each a copy of the whole object (1,000
// entries, 450 KiB) to every watcher (docs/benchmarks.md, *The MC's
// condition, paced; the release looks its objects up*); paced, a person
// reads counts at most interval old. interval 0: at once.
func conditionDue(u *unstructured.Unstructured, want wantCondition, last, now time.Time, interval time.Duration) (bool, time.Duration) {
	if interval <= 0 || !want.sameButMessage(u) {
		return true, 0
	}
	if wait := last.Add(interval).Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// clusters names up to mcConditionNames workload clusters ("namespace/name")
// and counts the rest.
func clusters(keys []string) string {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	if len(keys) == 0 {
		return "new workload clusters"
	}
	what := "workload cluster"
	if len(keys) > 1 {
		what += "s"
	}
	if len(keys) <= mcConditionNames {
		return fmt.Sprintf("%d %s (%s)", len(keys), what, strings.Join(keys, ", "))
	}
	return fmt.Sprintf("%d %s (%s and %d more)", len(keys), what, strings.Join(keys[:mcConditionNames], ", "), len(keys)-mcConditionNames)
}

// fullServices names the MC's services at the connection limit.
func fullServices(use map[string]int, limit int) string {
	var full []string
	for _, link := range slices.Sorted(maps.Keys(use)) {
		if limit > 0 && use[link] >= limit {
			full = append(full, link)
		}
	}
	if len(full) == 0 {
		return "private link service"
	}
	return "private link service " + strings.Join(full, ", ")
}

// nearestService is the MC service with the largest share of the
// connection limit, when it has 90 % of it or more.
func nearestService(use map[string]int, limit int) (string, bool) {
	best, found := "", false
	for _, link := range slices.Sorted(maps.Keys(use)) {
		if nearServiceLimit(link, use[link], limit) != "" && (!found || use[link] > use[best]) {
			best, found = link, true
		}
	}
	return best, found
}

// servicesSay is what a WC's GSPrivateLinksReady says of the room on the
// MC's services: ReasonServiceLimit (refused: every service that could
// take it is full) or ReasonIngressServiceWaiting (waiting for a further
// ingress service), "" for anything else. The WC's own reconcile decides
// (it counts every cluster's connections), the MC pass only reads it. A
// WC waiting for the MC's service to exist in Azure or to show itself to
// its subscription (servicecheck.go) says nothing of the room: the MC's
// condition must not call the services full for it.
func servicesSay(u *unstructured.Unstructured) string {
	c := ConditionOf(u, ConditionGSPrivateLinksReady)
	if c == nil || c["status"] != "Unknown" {
		return ""
	}
	switch reason, _ := c["reason"].(string); reason {
	case ReasonServiceLimit, ReasonIngressServiceWaiting:
		return reason
	}
	return ""
}
