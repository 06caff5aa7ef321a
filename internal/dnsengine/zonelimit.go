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
// the count (the log says so), and Azure's own refusal is what the
// thousand-and-first gets; the count other identities listed is left as
// it is (one tenant's narrow identity does not turn the check off for the
// others).

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

// subscriptionZones is what the engine knows of a subscription's zones:
// the count, and when it was listed.
type subscriptionZones struct {
	tally
	listed time.Time
}

func (e *Engine) zoneLimit() int {
	if e.ZoneLimit > 0 {
		return e.ZoneLimit
	}
	return AzureZonesPerSubscription
}

// zonesOf is the subscription's entry; e.mu is held.
func (e *Engine) zonesOf(sub string) *subscriptionZones {
	if e.zones == nil {
		e.zones = map[string]*subscriptionZones{}
	}
	c, ok := e.zones[sub]
	if !ok {
		c = &subscriptionZones{}
		e.zones[sub] = c
	}
	return c
}

// reserveZone takes a place for a new zone of the target's subscription,
// listing the subscription's zones first when its count is unknown, older
// than the check interval, or near the limit and older than nearRelist.
// At the limit it returns a *ZoneLimitError; otherwise the caller calls
// done with whether the zone was created. An identity that may not list
// the subscription's zones creates without the count, and leaves the
// count as other identities listed it.
func (e *Engine) reserveZone(ctx context.Context, t Target) (done func(created bool), _ error) {
	sub, limit := t.Zone.Subscription, e.zoneLimit()
	e.mu.Lock()
	c, known := e.zones[sub]
	list := !known
	if known {
		age := e.now().Sub(c.listed)
		list = age >= e.check() || c.near(limit) && age >= nearRelist
	}
	e.mu.Unlock()
	if list {
		n, err := t.API.ZoneCount(ctx)
		if azure.Classify(err).StatusCode == http.StatusForbidden {
			ctrl.LoggerFrom(ctx).Info("Cannot count the subscription's private DNS zones (no subscription-wide read): creating the zone without the limit's check",
				"subscription", sub, "zone", t.Zone.Name, "message", azure.Classify(err).Message)
			return func(bool) {}, nil
		}
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		c = e.zonesOf(sub)
		c.n, c.listed = n, e.now()
		e.mu.Unlock()
	}
	used, near, ok := e.take(&c.tally, limit)
	limitmetrics.Set(limitmetrics.PrivateDNSSubscriptionZones, sub, used, limit)
	if !ok {
		return nil, &ZoneLimitError{Zone: t.Zone.Name, Subscription: sub, Used: used, Limit: limit}
	}
	if near {
		t.warn(ReasonZoneLimitNear, "subscription %s holds %d private DNS zones with %s, near the limit of %d (Azure allows %d per subscription): beyond it no zone is created; share zones between objects, or use another subscription",
			sub, used, t.Zone.Name, limit, AzureZonesPerSubscription)
	}
	return func(created bool) { e.settle(&c.tally, created) }, nil
}

// zoneDeleted notes a zone this process deleted.
func (e *Engine) zoneDeleted(sub string) {
	e.mu.Lock()
	c := e.zones[sub]
	e.mu.Unlock()
	if c != nil {
		e.removed(&c.tally, 0)
	}
}
