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
// services (its ingress, its gateway, a further ingress service) is
// requested only once Azure has that service and shows it to the
// cluster's subscription. Otherwise the cluster's CAPZ sends a PUT Azure
// refuses (400 ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible,
// internal/azuresim/privatelink.go, peTarget) and retries it at its
// backoff: ASO's reaches a minute, so a cluster whose first request came
// before the MC's ingress service existed was wired minutes after the
// others (10 refusals and 307 s instead of about 180 s to wire 1,000
// clusters, test/scale, when the benchmark's MC made its ingress service
// after the first clusters' passes). The cluster waits instead, with
// WaitingForIngressService, and looks again at the pending recheck.
//
// The check is for new endpoints only (an entry that exists is never
// taken away), and it only holds back: a service the operator cannot read
// (its identity may not read the MC's resource group) is not waited for.

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
// withheld endpoint is a Problem. Endpoints whose service wc's entries
// already target pass. look nil: no check.
func onServicesInAzure(ctx context.Context, look serviceLooker, mc, wc *capz.AzureCluster, toMC []Endpoint) ([]Endpoint, []Problem) {
	if look == nil || len(toMC) == 0 {
		return toMC, nil
	}
	held := targetsOf(wc)
	kept := toMC[:0:0]
	var problems []Problem
	for _, ep := range toMC {
		id := serviceOf(ep)
		if id == "" || slices.Contains(held, id) {
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
			problems = append(problems, Problem{key(wc), ReasonIngressServiceWaiting, fmt.Sprintf(
				"no private endpoint %s is requested yet: the management cluster's private link service %s does not exist in Azure "+
					"(%s); the cluster is wired once it does", ep.Name, ep.Link, id)})
		case !seen.visibleTo(wc.SubscriptionID):
			problems = append(problems, Problem{key(wc), ReasonIngressServiceWaiting, fmt.Sprintf(
				"no private endpoint %s is requested yet: the management cluster's private link service %s is not visible to the "+
					"cluster's subscription %s (its visibility: %s); add the subscription to the service's visibility",
				ep.Name, ep.Link, strings.ToLower(wc.SubscriptionID), strings.Join(seen.visibility, ", "))})
		default:
			kept = append(kept, ep)
		}
	}
	return kept, problems
}

// AzureServices reads the MC's private link services with the MC's
// identity: one read per service per TTL, whichever clusters ask (they
// wait on the same ticks, PendingRecheckInterval), and one at a time per
// service.
type AzureServices struct {
	Clients *azure.Clients
	TTL     time.Duration
	Clock   clock.PassiveClock

	mu     sync.Mutex
	seen   map[string]serviceSeenAt
	flight singleflight.Group
}

type serviceSeenAt struct {
	seen serviceSeen
	at   time.Time
}

// service implements serviceLooker.
func (a *AzureServices) service(ctx context.Context, mc *capz.AzureCluster, id string) (serviceSeen, error) {
	now := a.Clock.Now()
	a.mu.Lock()
	e, ok := a.seen[id]
	a.mu.Unlock()
	if ok && now.Sub(e.at) < a.TTL {
		return e.seen, nil
	}
	v, err, _ := a.flight.Do(id, func() (any, error) {
		seen, err := a.read(ctx, mc, id)
		if err != nil {
			return serviceSeen{}, err
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.seen == nil {
			a.seen = map[string]serviceSeenAt{}
		}
		a.seen[id] = serviceSeenAt{seen, a.Clock.Now()}
		return seen, nil
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
