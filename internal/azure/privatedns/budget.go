package privatedns

import (
	"context"
	"fmt"
	"math"
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
)

var budgetWaits = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_private_dns_requests_deferred_total",
	Help: "Private DNS requests of the wiring's DNS mode not sent, and retried later, to keep a subscription within its budget (--wiring-dns-max-reads-per-5m, --wiring-dns-max-writes-per-5m).",
}, []string{"class"})

func init() { metrics.Registry.MustRegister(budgetWaits) }

// Budget keeps each subscription's Private DNS requests within a number of
// reads and of writes in any 5-minute window: a token bucket per
// subscription and class whose capacity (a fifth of the budget) plus its
// refill over 5 minutes is the budget.
type Budget struct {
	Reads, Writes int
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens, capacity, rate float64 // rate per second
	last                   time.Time
}

func newBucket(perWindow int, now time.Time) *bucket {
	c := math.Max(1, float64(perWindow)/5)
	return &bucket{tokens: c, capacity: c, rate: math.Max(0, float64(perWindow)-c) / budgetWindow.Seconds(), last: now}
}

// take takes one token, or says how long until one is there.
func (b *bucket) take(now time.Time) time.Duration {
	b.tokens = math.Min(b.capacity, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	if b.rate == 0 {
		return budgetWindow
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// Take takes a read or a write of a subscription's budget; a positive wait
// means none is left for that long. A budget of 0 is no limit.
func (b *Budget) Take(subscription string, write bool) time.Duration {
	if b == nil {
		return 0
	}
	limit, class := b.Reads, "reads"
	if write {
		limit, class = b.Writes, "writes"
	}
	if limit <= 0 {
		return 0
	}
	now := time.Now()
	if b.Now != nil {
		now = b.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets == nil {
		b.buckets = map[string]*bucket{}
	}
	k := strings.ToLower(subscription) + "|" + class
	bk := b.buckets[k]
	if bk == nil {
		bk = newBucket(limit, now)
		b.buckets[k] = bk
	}
	wait := bk.take(now)
	if wait > 0 {
		budgetWaits.WithLabelValues(class).Inc()
	}
	return wait
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

func (p pacedAPI) take(write bool) error {
	wait := p.budget.Take(p.sub, write)
	if wait <= 0 {
		return nil
	}
	class := "reads"
	if write {
		class = "writes"
	}
	return &azure.ClassifiedError{Classification: azure.Classification{
		Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: wait,
		Message: fmt.Sprintf("holding back Private DNS %s for %s: subscription %s is at its budget of the 5-minute window", class, wait.Round(time.Millisecond), p.sub),
	}}
}

func (p pacedAPI) Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Zone(ctx, rg, zone)
}

func (p pacedAPI) PutZone(ctx context.Context, rg, zone string, body armprivatedns.PrivateZone) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutZone(ctx, rg, zone, body)
}

func (p pacedAPI) DeleteZone(ctx context.Context, rg, zone string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteZone(ctx, rg, zone)
}

func (p pacedAPI) Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Links(ctx, rg, zone)
}

func (p pacedAPI) PutLink(ctx context.Context, rg, zone, name string, body armprivatedns.VirtualNetworkLink) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.PutLink(ctx, rg, zone, name, body)
}

func (p pacedAPI) DeleteLink(ctx context.Context, rg, zone, name string) error {
	if err := p.take(true); err != nil {
		return err
	}
	return p.api.DeleteLink(ctx, rg, zone, name)
}

func (p pacedAPI) Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Record(ctx, rg, zone, rel)
}

func (p pacedAPI) Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error) {
	if err := p.take(false); err != nil {
		return nil, err
	}
	return p.api.Records(ctx, rg, zone)
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
