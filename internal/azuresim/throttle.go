package azuresim

import (
	"fmt"
	"math"
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
	// windows are the times of each subscription's requests in a resource
	// provider's window (Throttling's provider limits).
	windows map[string][]time.Time
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
	t.windows = nil
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

// Resource provider windows: the classes of Throttling's provider limits.
const (
	windowDNSReads      = "privatedns-reads"
	windowNetworkWrites = "network-writes"
	windowNetworkReads  = "network-reads"
)

// providerWindow is the provider limit a request counts against, if any,
// and whether it is a Private DNS request.
func (t *throttler) providerWindow(p armPath, method string) (string, Window, bool) {
	if !strings.EqualFold(p.provider, "Microsoft.Network") || len(p.types) == 0 {
		return "", Window{}, false
	}
	dns := strings.EqualFold(p.types[0], "privateDnsZones") || isPrivateDNSOperationPath(p)
	switch {
	case requestClass(method) != "reads":
		return windowNetworkWrites, t.cfg.NetworkWrites, dns
	case dns:
		return windowDNSReads, t.cfg.PrivateDNSReads, dns
	default:
		return windowNetworkReads, t.cfg.NetworkReads, dns
	}
}

// provider counts a request against its resource provider's window and
// refuses it with 429 when the window is full. An exempt principal's
// request neither counts nor is refused (see Throttling.Exempt). The answer's Retry-After is
// Private DNS's 10 seconds (a Microsoft engineer's account of its 429s,
// kubernetes-sigs/external-dns issue #4839); for Microsoft.Network, whose
// value was not found in a recording, the time until the window has room.
// The error code is the emulator's own (TooManyRequests): no recording of
// the body was found; classify by status.
func (t *throttler) provider(w http.ResponseWriter, p armPath, principal, method string) *armError {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.cfg.Enabled || slices.Contains(t.cfg.Exempt, principal) {
		return nil
	}
	class, win, dns := t.providerWindow(p, method)
	if class == "" || win.Limit <= 0 || win.Period <= 0 {
		return nil
	}
	if t.windows == nil {
		t.windows = map[string][]time.Time{}
	}
	k := strings.ToLower(p.sub) + "|" + class
	now := t.now()
	times := t.windows[k]
	i := 0
	for i < len(times) && now.Sub(times[i]) >= win.Period {
		i++
	}
	times = times[i:]
	if len(times) >= win.Limit {
		t.windows[k] = times
		retry := 10 * time.Second
		if !dns {
			retry = max(time.Second, win.Period-now.Sub(times[0]))
		}
		secs := int(math.Ceil(retry.Seconds()))
		w.Header().Set("Retry-After", fmt.Sprint(secs))
		return newError(http.StatusTooManyRequests, "TooManyRequests",
			"The request is being throttled: subscription '%s' made %d %s requests in %s, the limit. Please try again after '%d' seconds.",
			p.sub, len(times), class, win.Period, secs)
	}
	t.windows[k] = append(times, now)
	if dns && class == windowDNSReads {
		// ASO's recordings of Private DNS (Test_Networking_PrivateDnsZone_CRUD)
		// show this header on reads, operation polls included, counting down
		// from the 500 of the read window (499, 498). Its writes carry it
		// too, but near 12,000 (11,999, 11,998): a count of some other limit,
		// not the 1,000 Network writes, which the emulator does not send.
		w.Header().Set("x-ms-ratelimit-remaining-subscription-resource-requests", fmt.Sprint(max(0, win.Limit-len(t.windows[k]))))
	}
	return nil
}
