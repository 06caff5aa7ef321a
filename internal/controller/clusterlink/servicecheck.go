package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// A workload cluster's new endpoint to one of the MC's private link
// services (its ingress or its gateway, as the plan names them; a further
// ingress service is the operator's, used once Ready) is
// requested only once Azure has that service and shows it to the
// cluster's subscription. Otherwise the cluster's CAPZ sends a PUT Azure
// refuses (400 ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible,
// internal/azuresim/privatelink.go, peTarget) and retries it at its
// backoff: ASO's reaches a minute, so a cluster whose first request came
// before the MC's ingress service existed was wired minutes after the
// others (10 refusals and 307 s instead of about 180 s to wire 1,000
// clusters, test/scale, when the benchmark's MC made its ingress service
// after the first clusters' passes). The cluster waits instead, and looks
// again (below).
//
// A service Azure does not have is ReasonMCServiceNotInAzure, which, like
// WaitingForPrivateLinks, is not written on a cluster's condition while
// the cluster never had one (whyWaiting): where the MC and its clusters
// are created at once, every cluster's first passes come before the MC's
// ingress service, and the condition written and written again was two
// more writes per cluster (N = 1,000 in test/scale: 6,221 writes to the
// clusters instead of 4,000). The Event says it. A service not visible to
// the cluster's subscription is a setting to change, and says
// ReasonMCServiceNotVisible on the condition at once (a reason of its own:
// the MC's condition reads its WCs' WaitingForIngressService as waiting
// for a further ingress service, servicesSay).
//
// The check is for new endpoints only: an endpoint of which the cluster
// has an entry (by name, whatever service it connects to: a further
// ingress service is not the one the plan names) or whose service an
// entry targets is never taken away. It only holds back: a service the
// operator cannot read (its identity may not read the MC's resource
// group) is not waited for.
//
// It comes before the admission to the MC's services (onShards): an
// endpoint withheld here takes no room under
// --mc-service-connection-limit and is given no further ingress service.
// After the admission, as a first version had it, every withheld cluster
// left an admission the cache never confirmed; each later admission
// parsed every such cluster again (admission.Room.Admit →
// serviceHolders.Holds → cachedTargets: 27.2 s of the 54.5 s of CPU
// sampled while 1,000 clusters were wired, test/scale --profile-dir), and
// they counted against the limit.
//
// A service Azure does not have is looked for again at the cluster's
// MCServiceRecheckInterval (5 s), one read for all the clusters waiting
// on the same tick (AzureServices.MissTTL).

// ReasonMCServiceNotInAzure says a workload cluster's endpoint to one of the
// MC's private link services waits for Azure to have the service.
const ReasonMCServiceNotInAzure = "WaitingForManagementClusterService"

// ReasonMCServiceNotVisible says a workload cluster's endpoint to one of
// the MC's private link services waits for the service to be visible to
// the cluster's subscription.
const ReasonMCServiceNotVisible = "ManagementClusterServiceNotVisible"

// serviceLooker tells what Azure shows of one of the MC's private link
// services.
type serviceLooker interface {
	// service is the service of that ID as the MC's identity reads it.
	service(ctx context.Context, mc *capz.AzureCluster, id string) (serviceSeen, error)
}

// serviceSeen is what a read of a private link service found.
type serviceSeen struct {
	exists bool
	// subscription is the service's own.
	subscription string
	// visibility is the subscriptions it is visible to ("*": all).
	visibility []string
	// restricted: accessMode Restricted, where "*" does not count.
	restricted bool
}

// visibleTo says whether the service shows itself to subscription sub:
// its own subscription always, others when listed, or "*" unless its
// accessMode is Restricted (armnetwork v11's AccessModeRestricted: "Limits
// access to subscriptions which are inside visibility list only"; the
// same rule as azuresim's visibleTo).
func (s serviceSeen) visibleTo(sub string) bool {
	return strings.EqualFold(s.subscription, sub) ||
		slices.ContainsFunc(s.visibility, func(v string) bool { return strings.EqualFold(v, sub) || (v == "*" && !s.restricted) })
}

// onServicesInAzure withholds wc's new endpoints in toMC whose service
// look does not show, existing and visible to wc's subscription; each
// withheld endpoint is a Problem. Endpoints of which wc has an entry, or
// whose service wc's entries already target, pass. The visibility of the
// first service of a sharded set (sharded: their names) is not judged
// here: the shard choice may give the endpoint a further service, whose
// spec lists the subscription, where the first does not show itself to it
// (as before the check, Azure refuses an endpoint given the first). look
// nil: no check.
func onServicesInAzure(ctx context.Context, look serviceLooker, mc, wc *capz.AzureCluster, toMC []Endpoint, sharded []string) ([]Endpoint, []Problem) {
	if look == nil || len(toMC) == 0 {
		return toMC, nil
	}
	kept := toMC[:0:0]
	var problems []Problem
	var held []string // the services wc's entries target, read once if needed
	for _, ep := range toMC {
		id := serviceOf(ep)
		if id == "" || hasEntry(wc, ep.Name) {
			kept = append(kept, ep)
			continue
		}
		if held == nil {
			held = targetsOf(wc)
		}
		if slices.Contains(held, id) {
			kept = append(kept, ep)
			continue
		}
		seen, err := look.service(ctx, mc, id)
		if err != nil {
			// Not known: requested as before the check.
			ctrl.LoggerFrom(ctx).V(1).Info("Could not read the management cluster's private link service; its endpoint is requested unchecked", "service", id, "error", err.Error())
			kept = append(kept, ep)
			continue
		}
		switch {
		case !seen.exists:
			problems = append(problems, Problem{key(wc), ReasonMCServiceNotInAzure, fmt.Sprintf(
				"no private endpoint %s is requested yet: the management cluster's private link service %s does not exist in Azure "+
					"(%s); the cluster is wired once it does", ep.Name, ep.Link, id)})
		case !seen.visibleTo(wc.SubscriptionID) && !slices.Contains(sharded, ep.Link):
			problems = append(problems, Problem{key(wc), ReasonMCServiceNotVisible, fmt.Sprintf(
				"no private endpoint %s is requested yet: the management cluster's private link service %s is not visible to the "+
					"cluster's subscription %s (its visibility: %s); add the subscription to the service's visibility",
				ep.Name, ep.Link, strings.ToLower(wc.SubscriptionID), strings.Join(seen.visibility, ", "))})
		default:
			kept = append(kept, ep)
		}
	}
	return kept, problems
}

// hasEntry says whether ac has a private endpoint entry of that name, in
// any subnet. Every pass of a wired cluster asks it of each endpoint, so
// it allocates nothing.
func hasEntry(ac *capz.AzureCluster, name string) bool {
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if pe.Name == name {
				return true
			}
		}
	}
	return false
}

// AzureServices reads the MC's private link services with the MC's
// identity: one read per service per TTL, whichever clusters ask (they
// wait on the same ticks, PendingRecheckInterval), and one at a time per
// service. A read that fails (no permission, throttled) is remembered as
// long as an answer: a thousand new clusters do not each send it again.
type AzureServices struct {
	Clients *azure.Clients
	// TTL is how long an answer is used; MissTTL, when shorter, how long
	// "Azure does not have it" is (the clusters waiting for it look again
	// sooner: MCServiceRecheckInterval, whose half it is, so that the
	// clusters waking on one tick share a read and the next tick reads
	// again).
	TTL, MissTTL time.Duration
	Clock        clock.PassiveClock

	mu     sync.Mutex
	seen   map[string]serviceSeenAt
	flight singleflight.Group
	// readAzure reads a service; a.read (Azure) when nil.
	readAzure func(ctx context.Context, mc *capz.AzureCluster, id string) (serviceSeen, error)
}

type serviceSeenAt struct {
	seen serviceSeen
	err  error
	at   time.Time
}

// ttl is how long e is used: miss when Azure said it has no such service
// and miss is shorter, else ttl.
func (e serviceSeenAt) ttl(ttl, miss time.Duration) time.Duration {
	if e.err == nil && !e.seen.exists && miss > 0 {
		return min(ttl, miss)
	}
	return ttl
}

// service implements serviceLooker.
func (a *AzureServices) service(ctx context.Context, mc *capz.AzureCluster, id string) (serviceSeen, error) {
	now := a.Clock.Now()
	a.mu.Lock()
	e, ok := a.seen[id]
	a.mu.Unlock()
	if ok && now.Sub(e.at) < e.ttl(a.TTL, a.MissTTL) {
		return e.seen, e.err
	}
	v, err, _ := a.flight.Do(id, func() (any, error) {
		read := a.readAzure
		if read == nil {
			read = a.read
		}
		seen, err := read(ctx, mc, id)
		if ctx.Err() == nil { // a canceled pass learned nothing of Azure
			a.mu.Lock()
			if a.seen == nil {
				a.seen = map[string]serviceSeenAt{}
			}
			a.seen[id] = serviceSeenAt{seen, err, a.Clock.Now()}
			a.mu.Unlock()
		}
		return seen, err
	})
	seen, _ := v.(serviceSeen)
	return seen, err
}

func (a *AzureServices) read(ctx context.Context, mc *capz.AzureCluster, id string) (serviceSeen, error) {
	rid, err := arm.ParseResourceID(id)
	if err != nil {
		return serviceSeen{}, err
	}
	f, _, err := a.Clients.Network(ctx, mc, rid.SubscriptionID)
	if err != nil {
		return serviceSeen{}, err
	}
	resp, err := f.NewPrivateLinkServicesClient().Get(ctx, rid.ResourceGroupName, rid.Name, nil)
	if azure.IsNotFound(err) {
		return serviceSeen{}, nil
	}
	if err != nil {
		return serviceSeen{}, err
	}
	seen := serviceSeen{exists: true, subscription: rid.SubscriptionID}
	if p := resp.Properties; p != nil {
		seen.restricted = strings.EqualFold(string(ptr.Deref(p.AccessMode, "")), string(armnetwork.AccessModeRestricted))
		if p.Visibility != nil {
			for _, s := range p.Visibility.Subscriptions {
				seen.visibility = append(seen.visibility, ptr.Deref(s, ""))
			}
		}
	}
	return seen, nil
}
