// Package dnsengine is the operator's one Private DNS engine: how zones,
// virtual network links and A record sets are created, checked and
// removed, for every object that owns DNS (an AzurePrivateEndpoint, and a
// workload cluster in the wiring's DNS mode). Both controllers call it; what
// stays in them is only theirs: which zone and records an object wants, and
// which other objects share a zone.
//
// The rules it keeps (docs/dns.md):
//
//   - Owners. Zones and links carry the owner tag, record sets the owner
//     metadata: the kind-qualified value of the object they were made for
//     ("AzurePrivateEndpoint:ns/name"), or "shared". The value of earlier
//     versions ("ns/name") is read as the owner's while no object of the
//     other kind has that namespace and name, and replaced at the next
//     write. Nothing without the owner's mark is changed or deleted, unless
//     the owner adopts it.
//   - Conditional writes. Every create is a PUT with If-None-Match: *, every
//     update a PUT with If-Match and the ETag read: nothing someone else
//     wrote meanwhile is ever overwritten.
//   - Read-free creation. What an object has never written is created
//     without reading first; Azure's 412 says it is there, and only then is
//     it read. A zone this process created holds no link and no record set.
//   - One look per check interval. A zone, a link or a record set seen in
//     place is not read again within the check interval, whichever object
//     asks (the memo is the engine's, keyed by zone), and a restarted
//     process spreads the first checks of what its objects' status says is
//     in place over the interval (Spread).
//   - One budget. Every request takes from the subscription's Private DNS
//     budget (privatedns.Budget), shared by every writer of the process.
//   - Shared zones and links go by the engine's rule alone. A zone or link
//     shared by objects of one kind goes only when no other live object of
//     that kind uses the zone (a link: needs its network), as the kind's
//     controller answers through Users (Register); a kind that registers
//     none (the wiring) keeps its shared zones and links for good.
package dnsengine

import (
	"context"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

// Event reasons of what the engine did; both controllers record them on
// the object the DNS is for. They are constant: alerts may match them.
const (
	ReasonZoneCreated   = "DNSZoneCreated"
	ReasonZoneAdopted   = "DNSZoneAdopted"
	ReasonZoneDeleted   = "DNSZoneDeleted"
	ReasonZoneNotOwned  = "DNSZoneNotOwned"
	ReasonLinkCreated   = "VirtualNetworkLinkCreated"
	ReasonLinkDeleted   = "VirtualNetworkLinkDeleted"
	ReasonRecordWritten = "DNSRecordWritten"
	ReasonRecordDeleted = "DNSRecordDeleted"
)

// DefaultCheck is how often what is in place is read again by default.
const DefaultCheck = time.Hour

// Engine is one process's Private DNS engine. Its zero value works with
// the defaults; one Engine is shared by every controller of the process.
type Engine struct {
	// Budget is the process's Private DNS request budget (nil: none).
	Budget *dns.Budget
	// Reader reads objects of both DNS-owning kinds, to resolve owner
	// values of earlier versions; without it such values are claimed.
	Reader client.Reader
	// Check is how often what is in place is read again (DefaultCheck).
	Check time.Duration
	Clock clock.PassiveClock
	// ZoneLimit is how many private DNS zones a subscription may hold
	// before the engine creates no more (AzureZonesPerSubscription).
	ZoneLimit int

	seen  memo.Memo
	mu    sync.Mutex
	users map[string]Users              // by owner kind (Register)
	sets  map[string]*recordSets        // by zone key (recordlimit.go)
	zones map[string]*subscriptionZones // by subscription (zonelimit.go)
}

// Target is one object's view of one zone: the API of the zone's
// subscription (with the object's identity), who the object is, and what
// it may take over.
type Target struct {
	API   dns.API
	Zone  dns.Zone
	Owner dns.Owner
	// Tags go on the zones and links the engine creates, beside the owner
	// tag; an own (not shared) zone that lacks them gets them.
	Tags map[string]string
	// AdoptZone lets an existing zone without an owner tag become Owner's
	// (tagged); AdoptRecords lets record sets without owner metadata be
	// written as Owner's.
	AdoptZone, AdoptRecords bool
	// Event records what the engine did on the object (nil: nothing);
	// Warning records a Warning on it (nil: Event).
	Event, Warning func(reason, message string)
}

func (t Target) event(reason, format string, args ...any) {
	if t.Event != nil {
		t.Event(reason, sprintf(format, args...))
	}
}

func (t Target) warn(reason, format string, args ...any) {
	if t.Warning == nil {
		t.event(reason, format, args...)
		return
	}
	t.Warning(reason, sprintf(format, args...))
}

func (e *Engine) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

func (e *Engine) check() time.Duration {
	if e.Check <= 0 {
		return DefaultCheck
	}
	return e.Check
}

// Paced is api within the subscription's budget.
func (e *Engine) Paced(api dns.API, subscription string) dns.API {
	if e.Budget == nil {
		return api
	}
	return e.Budget.Paced(api, subscription)
}

// Claims says whether an owner value marks what was made for o: its
// kind-qualified value, or the "namespace/name" of earlier versions when no
// object of the other DNS-owning kind has o's namespace and name (both
// writers wrote that value; docs/security.md, *Shared DNS objects*).
func (e *Engine) Claims(ctx context.Context, o dns.Owner, value string) (bool, error) {
	if !o.IsLegacy(value) {
		return o.Claim(value, false), nil
	}
	other, err := e.otherKindExists(ctx, o)
	return o.Claim(value, other), err
}

// otherKindExists says whether an object of the other DNS-owning kind has
// o's namespace and name (read from the API server: the cache may not
// hold it yet). Without the other kind's CRD, none has.
func (e *Engine) otherKindExists(ctx context.Context, o dns.Owner) (bool, error) {
	if e.Reader == nil {
		return false, nil
	}
	var obj client.Object
	switch o.Kind {
	case dns.KindAzurePrivateEndpoint:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(capz.AzureClusterGVK)
		obj = u
	case dns.KindAzureCluster:
		obj = &v1alpha1.AzurePrivateEndpoint{}
	default:
		return false, nil
	}
	err := e.Reader.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return false, nil
	}
	return false, err
}

// Spread marks key in m as checked at a random point of the last check
// interval, unless it is known (memo.Spread): a restarted process whose
// objects' status says their DNS is in place does not read it all at once.
func (e *Engine) Spread(m *memo.Memo, key, fp string) { m.Spread(key, fp, e.now(), e.check()) }

// Fresh says whether key was set with fp within the check interval (m is
// the caller's memo).
func (e *Engine) Fresh(m *memo.Memo, key, fp string) bool {
	return m.Fresh(key, fp, e.now(), e.check())
}

// Mark records key as checked now with fp in m.
func (e *Engine) Mark(m *memo.Memo, key, fp string) { m.Set(key, fp, e.now()) }

// ForgetZone drops what the engine knows of a zone (after it is deleted,
// or when an object that used it is gone).
func (e *Engine) ForgetZone(z dns.Zone) {
	k := z.Key()
	e.mu.Lock()
	delete(e.sets, k)
	e.mu.Unlock()
	e.seen.ForgetSubject(k)
}

// ForgetRecord drops what the engine knows of one record set.
func (e *Engine) ForgetRecord(z dns.Zone, rel string) { e.seen.ForgetTree(recordKey(z, rel)) }

func recordKey(z dns.Zone, rel string) string { return "record|" + z.Key() + "|" + rel }
func zoneKey(z dns.Zone) string               { return "zone|" + z.Key() }
func createdKey(z dns.Zone) string            { return "created|" + z.Key() }
func existsKey(z dns.Zone) string             { return "exists|" + z.Key() }
func linkKey(z dns.Zone, vnet string) string  { return "link|" + z.Key() + "|" + strings.ToLower(vnet) }
func linkPutKey(z dns.Zone, vnet string) string {
	return "linkput|" + z.Key() + "|" + strings.ToLower(vnet)
}
