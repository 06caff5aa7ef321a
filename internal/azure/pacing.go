package azure

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Paced counts requests the operator held back because Azure's remaining
// request budget was nearly spent.
var Paced = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_azure_requests_paced_total",
	Help: "Azure Resource Manager requests not sent, and retried later, because the x-ms-ratelimit-remaining-* headers said the subscription's budget for the identity was nearly spent; by request class (reads, writes, deletes).",
}, []string{"class"})

func init() {
	metrics.Registry.MustRegister(Paced)
}

// refillPerSecond is ARM's documented token bucket refill per subscription
// and principal (reads 25/s, writes and deletes 10/s). Azure announces how
// many requests remain, not how fast they come back, so the pacer assumes
// these rates between two answers.
var refillPerSecond = map[string]float64{"reads": 25, "writes": 10, "deletes": 10}

// paceReserve is how many requests of a class the pacer leaves unspent:
// requests in flight are not in the last header yet.
const paceReserve = 10

// listFloor is how far a list's pages may spend into the reserve. A list
// is many requests in a row that every caller of its subscription shares
// (privateendpoints.Observer): held back midway it fails and starts over,
// and the pages it read are wasted; held back at its first page, every
// reconcile waiting for it waits on. Single requests stop at the reserve,
// so what refills while a list runs goes to the list, and half the
// reserve is still left for requests in flight. At N = 3,000 with
// azuresim at full speed, 2,000 objects reading their own endpoints in
// the management cluster's subscription took every read as it refilled,
// and that subscription's list of 30 pages, which 1,000 workload clusters
// waited for, was held back at its first page 7,972 times in 15 minutes
// (docs/benchmarks.md, At 23fa78f to 9565629).
const listFloor = paceReserve / 2

type listKey struct{}

// WithList marks ctx's requests as the pages of a list: the pacer lets
// them spend down to listFloor and, below it, waits for the next refill
// rather than holding them back. Such a page waits for its own token, not
// behind the slots of held-back single requests: at most (listFloor+1)
// refill intervals, 240 ms for reads, and only as long as ctx allows.
func WithList(ctx context.Context) context.Context {
	return context.WithValue(ctx, listKey{}, true)
}

// IsList says whether ctx is marked by WithList.
func IsList(ctx context.Context) bool {
	l, _ := ctx.Value(listKey{}).(bool)
	return l
}

// pacer holds back requests of a class whose remaining budget, as ARM last
// announced it in x-ms-ratelimit-remaining-subscription-<class> (and
// -global-<class>) and refilled since at the documented rate, is down to
// the reserve. It answers such a request at once with a transient error
// carrying how long to wait, so a controller requeues instead of blocking
// a worker, and Azure never has to answer 429. One pacer serves one
// subscription and identity: that is how ARM counts.
type pacer struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu      sync.Mutex
	classes map[string]*budget
}

type budget struct {
	tokens float64
	at     time.Time
	// next is the last refill slot handed to a held-back request: held-back
	// requests come back one refill interval apart, not all at once.
	next time.Time
}

func newPacer() *pacer { return &pacer{now: time.Now, sleep: sleep, classes: map[string]*budget{}} }

// Do implements policy.Policy.
func (p *pacer) Do(req *policy.Request) (*http.Response, error) {
	class := requestClass(req.Raw().Method)
	ctx := req.Raw().Context()
	list := IsList(ctx)
	for {
		wait := p.take(class, list)
		if wait <= 0 {
			break
		}
		if list {
			// A list's page waits for the next refill: see listFloor.
			if err := p.sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		Paced.WithLabelValues(class).Inc()
		return nil, &pacedError{ce: ClassifiedError{Classification: Classification{
			Class: ClassTransient, Reason: ReasonThrottled, RetryAfter: wait, HeldBack: true,
			Message: fmt.Sprintf("holding back Azure %s for %s: the subscription's remaining budget for this identity is nearly spent", class, wait.Round(time.Millisecond)),
		}}}
	}
	resp, err := req.Next()
	if resp != nil {
		p.observe(class, resp.Header)
	}
	return resp, err
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// take spends one request of a class if more than the reserve remain
// after it (listFloor for a list's pages), or says how long to wait. A
// single request held back gets the next refill slot after those handed
// out already; a list's page waits only for its own floor (listFloor).
func (p *pacer) take(class string, list bool) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.classes[class]
	if b == nil {
		return 0 // nothing announced yet
	}
	floor := float64(paceReserve)
	if list {
		floor = listFloor
	}
	now, rate := p.now(), refillPerSecond[class]
	b.tokens += now.Sub(b.at).Seconds() * rate
	b.at = now
	if b.tokens-1 >= floor {
		b.tokens--
		return 0
	}
	interval := time.Duration(float64(time.Second) / rate)
	first := now.Add(time.Duration((floor + 1 - b.tokens) / rate * float64(time.Second)))
	if list {
		return later(first, now.Add(time.Millisecond)).Sub(now)
	}
	// Held back: the next free refill slot, after the ones already handed
	// out, so that a burst of objects returns spread over the refill.
	b.next = later(later(first, b.next.Add(interval)), now.Add(interval))
	return b.next.Sub(now)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// observe takes the remaining budget ARM announced.
func (p *pacer) observe(class string, h http.Header) {
	v := h.Get("x-ms-ratelimit-remaining-subscription-" + class)
	if v == "" {
		v = h.Get("x-ms-ratelimit-remaining-subscription-global-" + class)
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &budget{tokens: float64(n), at: p.now()}
	if old := p.classes[class]; old != nil {
		// The slots already handed out stay taken: an answer (25 a
		// second while reading) used to start the queue over, and every
		// request held back after it came back within a refill interval
		// or two. With 2,000 objects reading one subscription that was
		// 130,388 requests held back, each a reconcile, in 16 minutes
		// (test/scale, N = 3,000); their slots now follow one another.
		b.next = old.next
	}
	p.classes[class] = b
}

// requestClass is ARM's class of a request for its limits.
func requestClass(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "reads"
	case http.MethodDelete:
		return "deletes"
	default:
		return "writes"
	}
}

// pacedError is the pacer's answer: classified as transient with a wait,
// and not retried by the SDK's retry policy (the controller requeues).
type pacedError struct{ ce ClassifiedError }

func (e *pacedError) Error() string { return e.ce.Error() }
func (e *pacedError) Unwrap() error { return &e.ce }
func (e *pacedError) NonRetriable() {}
