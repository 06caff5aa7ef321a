package azuresim

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// throttler keeps ARM's token buckets per subscription, principal and class
// of request (reads, writes, deletes).
type throttler struct {
	mu      sync.Mutex
	cfg     Throttling
	now     func() time.Time
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newThrottler(cfg Throttling, now func() time.Time) *throttler {
	return &throttler{cfg: cfg, now: now, buckets: map[string]*bucket{}}
}

func (t *throttler) configure(cfg Throttling) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg = cfg
	t.buckets = map[string]*bucket{}
}

// requestClass is ARM's class of a request, as in the
// x-ms-ratelimit-remaining-subscription-<class> headers.
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

// take spends a token. It returns how long to wait when the bucket is empty
// (zero otherwise), the tokens remaining (-1 when throttling is off) and the
// request class.
func (t *throttler) take(sub, principal, method string) (time.Duration, int, string) {
	class := requestClass(method)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cfg.Enabled || slices.Contains(t.cfg.Exempt, principal) {
		return 0, -1, class
	}
	cfg := t.cfg.Reads
	switch class {
	case "writes":
		cfg = t.cfg.Writes
	case "deletes":
		cfg = t.cfg.Deletes
	}
	k := strings.ToLower(sub) + "|" + strings.ToLower(principal) + "|" + class
	now := t.now()
	b := t.buckets[k]
	if b == nil {
		b = &bucket{tokens: float64(cfg.Burst), last: now}
		t.buckets[k] = b
	}
	b.tokens = min(float64(cfg.Burst), b.tokens+now.Sub(b.last).Seconds()*cfg.PerSecond)
	b.last = now
	if b.tokens < 1 {
		if cfg.PerSecond <= 0 {
			return time.Hour, 0, class
		}
		wait := time.Duration((1 - b.tokens) / cfg.PerSecond * float64(time.Second))
		return max(wait, time.Millisecond), 0, class
	}
	b.tokens--
	return 0, int(b.tokens), class
}
