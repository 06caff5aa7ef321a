package dnsengine

import (
	"context"
	"slices"
	"strings"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// Users tells the engine who else uses a zone among the objects of one
// kind (AzurePrivateEndpoint, AzureCluster): an object may rely on a zone
// and a link another object made (an AzurePrivateEndpoint naming another
// one's zone), and a shared zone serves many. The controller of that kind
// answers it and registers it with Register; the engine alone decides from
// it when a shared zone or a shared link may go (docs/design.md, *Shared
// names*): callers never pass their own answer.
type Users interface {
	// Others is what the live objects of the kind, other than self, need
	// of zone.
	Others(ctx context.Context, self dns.Owner, zone dns.Zone) (ZoneUsers, error)
	// Live says whether an owner of records (of the kind) is still live:
	// the records of owners that are gone may be swept from an unused
	// shared zone.
	Live(ctx context.Context, o dns.Owner) (bool, error)
}

// ZoneUsers is what other live objects need of a zone.
type ZoneUsers struct {
	// Live: another live object uses the zone; a shared zone stays.
	Live bool
	// Networks are the networks they need the zone linked to; a shared
	// link to one of them stays.
	Networks []string
	// Everything: nobody can tell (no Users is registered for the kind),
	// so every shared zone and link stays.
	Everything bool
}

// Needs says whether another live object needs the zone linked to vnet.
func (u ZoneUsers) Needs(vnet string) bool {
	return u.Everything || slices.ContainsFunc(u.Networks, func(n string) bool { return strings.EqualFold(n, vnet) })
}

// Register makes u the answer, for objects of kind, to who else uses a
// zone. Without one, the shared zones and links of that kind stay for
// good: the engine never guesses that nobody needs them.
func (e *Engine) Register(kind string, u Users) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.users == nil {
		e.users = map[string]Users{}
	}
	e.users[kind] = u
}

// usersOf is the Users registered for the target owner's kind (nil: none).
func (e *Engine) usersOf(t Target) Users {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.users[t.Owner.Kind]
}

// others is what other live objects of the target owner's kind need of
// its zone. Without a Users registered for the kind: everything, of a
// shared zone or link (nobody can tell who needs it); nothing, of the
// owner's own (made for it alone).
func (e *Engine) others(ctx context.Context, t Target, shared bool) (ZoneUsers, error) {
	u := e.usersOf(t)
	switch {
	case u != nil:
		return u.Others(ctx, t.Owner, t.Zone)
	case shared:
		return ZoneUsers{Live: true, Everything: true}, nil
	}
	return ZoneUsers{}, nil
}
