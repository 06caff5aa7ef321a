package privatedns

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// Azure Private DNS limits each subscription (per region) far below ARM:
// 500 reads in 5 minutes, and Microsoft.Network's 1,000 writes in 5
// minutes. ARM's rate-limit headers do not show them, so the operator
// keeps its own count.
const (
	AzureReadsPer5m  = 500
	AzureWritesPer5m = 1000
	budgetWindow     = 5 * time.Minute
	// budgetMargin keeps a request in the log a little longer than the
	// window: the operator counts a request when it sends it, Azure when
	// it arrives, and at the window's edge the two fall apart (the DNS
	// benchmark measured 801 writes in Azure's busiest 5 minutes against
	// a budget of 800).
	budgetMargin = 2 * time.Second
)

var budgetWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_private_dns_requests_deferred_total",
	Help: "Private DNS requests, and AzurePrivateEndpoint's private endpoint writes, not sent, and retried later, to keep a subscription within its budget (--private-dns-max-reads-per-5m, --private-dns-max-writes-per-5m) or, for reads, because Azure's own count of the read window was down to what the budget leaves to others.",
}, []string{"class"})

func init() { metrics.Registry.MustRegister(budgetWaits) }

// Budget keeps each subscription's Private DNS requests within a number of
// reads and of writes in any 5-minute window, as Azure counts them: a log
// of each subscription's requests of the last 5 minutes per class. A
// request is sent while the log holds fewer than the budget, so a burst
// may spend the whole budget at once (what Azure allows) and no window
// ever holds more. One Budget serves every Private DNS writer of the
// process: Azure counts a subscription's requests together, whichever
// controller or identity sends them.
//
// For reads Azure's own count comes first: each Private DNS read's answer
// says how many reads the subscription has left in the window
// (azure.RemainingHeader), and while that answer is fresh the budget sends
// no read that would leave Azure fewer than the part of Azure's limit the
// budget does not take (its reserve, for everyone else: 100 with the
// default). The log alone forgets what an earlier process sent (a
// restarted operator's is empty while Azure's window still holds the last
// minutes: the consumer benchmark drew 429s so) and what anyone else
// sends. Writes keep to the log: Azure's count on their answers is of
// another limit (see pacedAPI.read).
type Budget struct {
	Reads, Writes int
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu   sync.Mutex
	logs map[string][]time.Time
	// next is, per log, the last time handed to a request held back by a
	// full log (slot).
	next map[string]time.Time
	seen map[string]*azureCount // by subscription (lower case)
}

// azureCount is what Azure's last answer to a read of a subscription said
// was left of its read window, and the reads taken since.
type azureCount struct {
	remaining, since int
	at               time.Time
}

// AzureCountFresh is how long Azure's count is followed: Private DNS's
// Retry-After when it refuses (10 s, see internal/azuresim's throttling).
// After it the next answer brings a new count; a budget held back by
// Azure's count waits this long at most.
const AzureCountFresh = 10 * time.Second

// Take takes a read or a write of a subscription's budget; a positive wait
// means none is left for that long. A budget of 0 is no limit.
func (b *Budget) Take(subscription string, write bool) time.Duration {
	return b.take(subscription, write, true)
}

// take answers as Take; it takes from the budget only with commit.
func (b *Budget) take(subscription string, write, commit bool) time.Duration {
	if b == nil {
		return 0
	}
	limit, class := b.Reads, classOf(write)
	if write {
		limit = b.Writes
	}
	if limit <= 0 {
		return 0
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logs == nil {
		b.logs = map[string][]time.Time{}
	}
	k := strings.ToLower(subscription) + "|" + class
	log := b.logs[k]
	i := 0
	for i < len(log) && now.Sub(log[i]) >= budgetWindow+budgetMargin {
		i++
	}
	log = log[i:]
	b.logs[k] = log
	if len(log) >= limit {
		budgetWaits.WithLabelValues(class).Inc()
		return b.slot(k, log, limit).Sub(now)
	}
	if c := b.seen[strings.ToLower(subscription)]; !write && c != nil && now.Sub(c.at) < AzureCountFresh {
		if c.remaining-c.since <= max(0, AzureReadsPer5m-limit) {
			budgetWaits.WithLabelValues(class).Inc()
			return c.at.Add(AzureCountFresh).Sub(now)
		}
		if commit {
			c.since++
		}
	}
	if commit {
		b.logs[k] = append(log, now)
	}
	return 0
}

// slot is when a request held back by the full log k comes back: when the
// first request of the log that leaves the window after the times already
// handed out leaves it. Every request held back used to be told when the
// oldest leaves: all of them came back then, one got the place, and the
// others were told of the next, milliseconds later. At N = 3,000, 1,200
// AzurePrivateEndpoints waiting for the MC's subscription's write window
// were held back 158,298 times, each a reconcile (docs/benchmarks.md, At
// e19133c). Now the k-th held back comes when the k-th place frees.
// Beyond the places the log holds, they come back at the budget's average
// rate, one per window/limit; a place given to someone else in between
// (a request not held back before) only sends the held-back one to the
// end of the line. A time handed out reserves nothing: it is when to
// ask again.
func (b *Budget) slot(k string, log []time.Time, limit int) time.Time {
	span := budgetWindow + budgetMargin
	if b.next == nil {
		b.next = map[string]time.Time{}
	}
	last := b.next[k]
	var at time.Time
	if i := sort.Search(len(log), func(i int) bool { return log[i].Add(span).After(last) }); i < len(log) {
		at = log[i].Add(span)
	} else {
		at = last.Add(span / time.Duration(limit))
	}
	b.next[k] = at
	return at
}

func classOf(write bool) string {
	if write {
		return "writes"
	}
	return "reads"
}

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// ObserveReads notes Azure's count of the reads a subscription has left in
// its window, from a read's answer (azure.RemainingHeader).
func (b *Budget) ObserveReads(subscription string, remaining int) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]*azureCount{}
	}
	b.seen[strings.ToLower(subscription)] = &azureCount{remaining: remaining, at: now}
}

// SpentReads records n reads already sent (the further pages of a list,
// which Azure counts one by one) in the log, without holding any back.
// Azure's count needs no correction: the answers to those pages brought
// it.
func (b *Budget) SpentReads(subscription string, n int) {
	if b == nil || n <= 0 {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logs == nil {
		b.logs = map[string][]time.Time{}
	}
	k := strings.ToLower(subscription) + "|" + classOf(false)
	for range n {
		b.logs[k] = append(b.logs[k], now)
	}
}

// Paced wraps an API so that every request first takes from the budget of
// its subscription; without a token it is not sent, and the error is a
// transient one with the wait (the caller requeues).
func (b *Budget) Paced(api API, subscription string) API {
	return pacedAPI{api: api, budget: b, sub: subscription}
}

type pacedAPI struct {
	api    API
	budget *Budget
	sub    string
}

func (p pacedAPI) take(write bool) error { return p.budget.Wait(p.sub, write, "Private DNS") }

// read takes a read of the budget, or returns the transient error to
// requeue on; the context it returns reports Azure's count of the answer
// (azure.WithRemaining) to the budget. Only reads: Azure's Private DNS
// answers count reads down from the 500 of their window (499, 498 in
// ASO's recordings, Test_Networking_PrivateDnsZone_CRUD), while its
// writes' count stands near 12,000, some other limit than the 1,000
// Network writes the write budget keeps to.
func (p pacedAPI) read(ctx context.Context) (context.Context, error) {
	if err := p.take(false); err != nil {
		return ctx, err
	}
	return azure.WithRemaining(ctx, func(n int) { p.budget.ObserveReads(p.sub, n) }), nil
}

// pages records the further pages of a list of n items as spent: Azure
// answers a list of zones, record sets or links 100 items a page when
// asked for no other size (the $top of PrivateZones_List,
// RecordSets_List and VirtualNetworkLinks_List: "If not specified,
// returns up to 100"), and counts each page's request.
func (p pacedAPI) pages(n int) {
	p.budget.SpentReads(p.sub, (n-1)/listPage)
}

// listPage is Azure's default page of a Private DNS list.
const listPage = 100

// Wait takes a read or a write of a subscription's budget, or returns the
// transient error, with the wait, that a controller requeues on; what
// names the requests in its message. Azure counts a subscription's
// Microsoft.Network writes together, 1,000 in 5 minutes, Private DNS and
// private endpoints alike: an endpoint write takes from the same budget.
func (b *Budget) Wait(subscription string, write bool, what string) error {
	return heldBack(subscription, write, what, b.Take(subscription, write))
}

// Held is Wait's answer without taking from the budget: whether a request
// would be held back now. A caller whose next step is a write asks before
// the read that would precede it: while the budget is spent, every
// object waiting for it would otherwise read Azure each time a place
// frees, though only one of them gets it.
func (b *Budget) Held(subscription string, write bool, what string) error {
	return heldBack(subscription, write, what, b.take(subscription, write, false))
}

func heldBack(subscription string, write bool, what string, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	class := classOf(write)
	return &azure.ClassifiedError{Classification: azure.Classification{
		Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: wait, HeldBack: true,
		Message: fmt.Sprintf("holding back %s %s for %s: subscription %s is at its budget of the 5-minute window", what, class, wait.Round(time.Millisecond), subscription),
	}}
}

func (p pacedAPI) Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error) {
	ctx, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	return p.api.Zone(ctx, rg, zone)
}

// ZoneCount takes one read of the budget for the list's first page; the
// others are recorded as spent once the list is read.
func (p pacedAPI) ZoneCount(ctx context.Context) (int, error) {
	ctx, err := p.read(ctx)
	if err != nil {
		return 0, err
	}
	n, err := p.api.ZoneCount(ctx)
	p.pages(n)
	return n, err
}

func (p pacedAPI) PutZone(ctx context.Context, rg, zone, etag string, body armprivatedns.PrivateZone) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutZone(ctx, rg, zone, etag, body)
}

func (p pacedAPI) DeleteZone(ctx context.Context, rg, zone string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteZone(ctx, rg, zone)
}

func (p pacedAPI) Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error) {
	ctx, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	items, err := p.api.Links(ctx, rg, zone)
	p.pages(len(items))
	return items, err
}

func (p pacedAPI) PutLink(ctx context.Context, rg, zone, name, etag string, body armprivatedns.VirtualNetworkLink) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutLink(ctx, rg, zone, name, etag, body)
}

func (p pacedAPI) DeleteLink(ctx context.Context, rg, zone, name string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteLink(ctx, rg, zone, name)
}

func (p pacedAPI) Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error) {
	ctx, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	return p.api.Record(ctx, rg, zone, rel)
}

func (p pacedAPI) Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error) {
	ctx, err := p.read(ctx)
	if err != nil {
		return nil, err
	}
	items, err := p.api.Records(ctx, rg, zone)
	p.pages(len(items))
	return items, err
}

func (p pacedAPI) PutRecord(ctx context.Context, rg, zone, rel, etag string, body armprivatedns.RecordSet) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutRecord(ctx, rg, zone, rel, etag, body)
}

func (p pacedAPI) DeleteRecord(ctx context.Context, rg, zone, rel, etag string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteRecord(ctx, rg, zone, rel, etag)
}
