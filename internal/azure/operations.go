package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Azure answers the request that starts a long-running operation with when
// to ask about it again: Retry-After in seconds (ARM's header, on the 201
// or 202 beside Azure-AsyncOperation or Location), and retry-after-ms or
// x-ms-retry-after-ms where a service gives milliseconds (azcore's pollers
// read all three, the millisecond ones first). Recorded on a live
// subscription (internal/azuresim/conformance/testdata, from ASO's
// recordings): a private endpoint's or private link service's PUT asks for
// 10 s, a private DNS zone's or virtual network link's PUT for 30 s, a
// network's or subnet's for 3 s. The operator does not poll: it requeues
// the object, and OperationHints is how a reconcile learns how soon.

// OperationHints collects the hints of the operations one reconcile starts.
// Safe for concurrent use.
type OperationHints struct {
	mu      sync.Mutex
	soonest time.Duration
}

type hintsKey struct{}

// WithOperationHints returns a context whose ARM requests record, in the
// returned OperationHints, when Azure asks to be asked again about the
// operations they start.
func WithOperationHints(ctx context.Context) (context.Context, *OperationHints) {
	h := &OperationHints{}
	return context.WithValue(ctx, hintsKey{}, h), h
}

// MinOperationHint is the shortest hint taken: a service that answered 0
// (or a proxy that rewrote the header) does not make a controller spin.
const MinOperationHint = 50 * time.Millisecond

// Soonest is the shortest hint recorded, and whether there is one.
func (h *OperationHints) Soonest() (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.soonest, h.soonest > 0
}

func (h *OperationHints) record(d time.Duration) {
	if h == nil {
		return
	}
	d = max(d, MinOperationHint)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.soonest == 0 || d < h.soonest {
		h.soonest = d
	}
}

// RecheckAfter is when to look again at what Azure works on: Azure's
// soonest hint for the operations ctx's reconcile started, never later
// than recheck; recheck when it started none or Azure gave no hint.
func RecheckAfter(ctx context.Context, recheck time.Duration) time.Duration {
	h, _ := ctx.Value(hintsKey{}).(*OperationHints)
	if d, ok := h.Soonest(); ok && (recheck <= 0 || d < recheck) {
		return d
	}
	return recheck
}

// operationHintPolicy records the hint of every answer that starts a
// long-running operation, for the OperationHints of the request's context,
// and remembers it per resource: a reconcile that reads a resource while
// an operation another reconcile started on it runs learns the time left
// (a thousand objects sharing one zone wait for the one that creates it,
// and would otherwise come back only at the recheck interval). It is a
// per-call policy: it sees the answer azcore's retries settled on.
type operationHintPolicy struct{ due *dueOperations }

func (p operationHintPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil || resp == nil {
		return resp, err
	}
	h, _ := req.Raw().Context().Value(hintsKey{}).(*OperationHints)
	switch {
	case startsOperation(resp):
		if d, ok := operationHint(resp.Header); ok {
			p.due.set(strings.ToLower(req.Raw().URL.Path), time.Now().Add(d))
			h.record(d)
		}
	case h != nil && req.Raw().Method == http.MethodGet && resp.StatusCode == http.StatusOK:
		if d, ok := p.due.left(strings.ToLower(req.Raw().URL.Path), time.Now()); ok {
			h.record(d)
		}
	}
	return resp, err
}

// dueOperations is, per resource (its URL path, lower case), when Azure
// asked to be asked again about the last operation this process started
// on it, and per collection (the path of the list the resource is in) the
// soonest such time of its resources: a pass that lists a zone's links
// while another pass's link is being made learns when that one is due.
// Timing only: a restart loses seconds, never a decision. Entries past
// their time are swept at most once a minute.
type dueOperations struct {
	mu    sync.Mutex
	at    map[string]time.Time
	swept time.Time
}

func (d *dueOperations) set(key string, due time.Time) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[string]time.Time{}
	}
	now := time.Now()
	if now.Sub(d.swept) >= time.Minute {
		for k, t := range d.at {
			if !t.After(now) {
				delete(d.at, k)
			}
		}
		d.swept = now
	}
	d.at[key] = due
	if i := strings.LastIndexByte(key, '/'); i > 0 {
		coll := key[:i]
		if t, ok := d.at[coll]; !ok || !t.After(now) || due.Before(t) {
			d.at[coll] = due
		}
	}
}

// left is the time left until the resource's operation is due, if one is.
func (d *dueOperations) left(key string, now time.Time) (time.Duration, bool) {
	if d == nil {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[key]
	if !ok || !t.After(now) {
		return 0, false
	}
	return t.Sub(now), true
}

// startsOperation says whether an answer started a long-running operation:
// a write accepted (201 or 202) with a URL to follow it by.
func startsOperation(resp *http.Response) bool {
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusAccepted {
		return false
	}
	return resp.Header.Get("Azure-AsyncOperation") != "" || resp.Header.Get("Location") != "" ||
		resp.Header.Get("Operation-Location") != ""
}

// operationHint reads an answer's retry hint, in azcore's order of
// preference.
func operationHint(h http.Header) (time.Duration, bool) {
	for _, name := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if ms, err := strconv.Atoi(h.Get(name)); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond, true
		}
	}
	return parseRetryAfter(h.Get("Retry-After"))
}
