package dnsengine

import (
	"context"
	"fmt"
	"net/http"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// A subscription holds at most 1,000 private DNS zones ("Azure
// subscription and service limits", Azure DNS limits, private DNS zones:
// "Private DNS zones per subscription"; internal/azuresim/limits.go
// enforces it). Every zone the engine creates counts — an
// AzurePrivateEndpoint's own zone (zoneMode Own: one per object), DNS
// mode's per-cluster zones, the shared ones — and so do zones others made.
// Azure gives no count: the engine lists the subscription's zones (one
// paged list) before the first new zone of a subscription and again once
// a check interval has passed, adds the zones it created and takes away
// those it deleted since, and from 90 % of the limit lists again before a
// new zone once the last list is a minute old (nearRelist: a list of
// 1,000 zones is ten pages, ten of the 500 Private DNS reads Azure allows
// per 5 minutes; only zones others make within that minute can pass the
// count, and Azure refuses those itself). At the limit no zone is requested: EnsureZone returns a
// *ZoneLimitError (a zone that exists is used as always), which the
// controllers report on the object (AzurePrivateEndpoint: DNSReady False
// with PrivateDNSZoneLimit; DNS mode: GSDNSZoneReady Unknown with
// DNSZoneLimit); from 90 % the object that takes a zone gets the Warning
// DNSZoneLimitNear. An identity that may read zones only in resource
// groups cannot list the subscription's: its zones are created without
// the count (the log says so, once per check interval), and Azure's own
// refusal is what the thousand-and-first gets.

// AzureZonesPerSubscription is Azure's limit of private DNS zones per
// subscription, the engine's default (Engine.ZoneLimit).
const AzureZonesPerSubscription = 1000

// nearRelist is how old the list may be before a new zone near the limit.
const nearRelist = time.Minute

// ReasonZoneLimitNear is the Warning on an object that takes a zone from
// 90 % of the subscription's limit (the same reason as DNS mode's
// per-cluster layout count).
const ReasonZoneLimitNear = "DNSZoneLimitNear"

// ZoneLimitError says that a new zone was not requested because its
// subscription holds as many as the limit allows.
type ZoneLimitError struct {
	Zone, Subscription string
	Used, Limit        int
}

func (e *ZoneLimitError) Error() string {
	return fmt.Sprintf("private DNS zone %s is not created: subscription %s holds %d private DNS zones, the limit of %d (Azure allows %d per subscription)",
		e.Zone, e.Subscription, e.Used, e.Limit, AzureZonesPerSubscription)
}

// subscriptionZones is what the engine knows of a subscription's zones.
type subscriptionZones struct {
	// n is the subscription's zones as last listed, plus those this
	// process created and minus those it deleted since; listed when.
	n      int
	listed time.Time
	// creating is the zones this process is creating.
	creating int
	// blind: the list was refused (no subscription-wide read): no count
	// until the next list.
	blind bool
}

func (e *Engine) zoneLimit() int {
	if e.ZoneLimit > 0 {
		return e.ZoneLimit
	}
	return AzureZonesPerSubscription
}

// nearZones says whether one more zone of c takes the subscription to
// 90 % of the limit or beyond.
func (e *Engine) nearZones(c subscriptionZones) bool {
	return (c.n+c.creating+1)*10 >= e.zoneLimit()*9
}

// reserveZone takes a place for a new zone of the target's subscription,
// listing the subscription's zones first when its count is unknown, older
// than the check interval, or near the limit and older than nearRelist. At the limit it returns a
// *ZoneLimitError; otherwise the caller calls done with whether the zone
// was created.
func (e *Engine) reserveZone(ctx context.Context, t Target) (done func(created bool), _ error) {
	sub, limit := t.Zone.Subscription, e.zoneLimit()
	e.mu.Lock()
	c, known := e.zones[sub]
	e.mu.Unlock()
	if age := e.now().Sub(c.listed); !known || age >= e.check() || e.nearZones(c) && age >= nearRelist {
		n, err := t.API.ZoneCount(ctx)
		forbidden := azure.Classify(err).StatusCode == http.StatusForbidden
		if err != nil && !forbidden {
			return nil, err
		}
		if forbidden {
			ctrl.LoggerFrom(ctx).Info("Cannot count the subscription's private DNS zones (no subscription-wide read): creating zones without the limit's check",
				"subscription", sub, "message", azure.Classify(err).Message)
		}
		e.mu.Lock()
		if e.zones == nil {
			e.zones = map[string]subscriptionZones{}
		}
		c = e.zones[sub]
		c.n, c.listed, c.blind = n, e.now(), forbidden
		e.zones[sub] = c
		e.mu.Unlock()
	}
	e.mu.Lock()
	c = e.zones[sub]
	if c.blind {
		e.mu.Unlock()
		return func(bool) {}, nil
	}
	used := c.n + c.creating
	if used >= limit {
		e.mu.Unlock()
		limitmetrics.Set(limitmetrics.PrivateDNSSubscriptionZones, sub, used, limit)
		return nil, &ZoneLimitError{Zone: t.Zone.Name, Subscription: sub, Used: used, Limit: limit}
	}
	near := e.nearZones(c)
	c.creating++
	e.zones[sub] = c
	e.mu.Unlock()
	limitmetrics.Set(limitmetrics.PrivateDNSSubscriptionZones, sub, used+1, limit)
	if near {
		t.warn(ReasonZoneLimitNear, "subscription %s holds %d private DNS zones with %s, near the limit of %d (Azure allows %d per subscription): beyond it no zone is created; share zones between objects, or use another subscription",
			sub, used+1, t.Zone.Name, limit, AzureZonesPerSubscription)
	}
	return func(created bool) {
		e.mu.Lock()
		defer e.mu.Unlock()
		c := e.zones[sub]
		c.creating--
		if created {
			c.n++
		}
		e.zones[sub] = c
	}, nil
}

// zoneDeleted notes a zone this process deleted.
func (e *Engine) zoneDeleted(sub string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.zones[sub]; ok && c.n > 0 {
		c.n--
		e.zones[sub] = c
	}
}
