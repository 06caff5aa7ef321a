package azure

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestOperationHint: the hint of an answer that starts an operation, in
// azcore's order of preference; none from other answers.
func TestOperationHint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		header  http.Header
		starts  bool
		hint    time.Duration
		hasHint bool
	}{
		{"network PUT (recorded: 201, Azure-AsyncOperation, Retry-After 10)", 201,
			http.Header{"Azure-Asyncoperation": {"https://x/operations/1"}, "Retry-After": {"10"}}, true, 10 * time.Second, true},
		{"private DNS PUT (recorded: 202, both URLs, Retry-After 30)", 202,
			http.Header{"Azure-Asyncoperation": {"https://x/s/1"}, "Location": {"https://x/r/1"}, "Retry-After": {"30"}}, true, 30 * time.Second, true},
		{"milliseconds first", 202,
			http.Header{"Location": {"https://x/r/1"}, "Retry-After": {"5"}, "Retry-After-Ms": {"4200"}}, true, 4200 * time.Millisecond, true},
		{"x-ms-retry-after-ms", 202,
			http.Header{"Location": {"https://x/r/1"}, "X-Ms-Retry-After-Ms": {"700"}}, true, 700 * time.Millisecond, true},
		{"no hint", 201, http.Header{"Azure-Asyncoperation": {"https://x/operations/1"}}, true, 0, false},
		{"a garbled hint", 201, http.Header{"Azure-Asyncoperation": {"https://x/operations/1"}, "Retry-After": {"soon"}}, true, 0, false},
		{"a synchronous PUT (200)", 200, http.Header{"Retry-After": {"10"}}, false, 0, false},
		{"a 201 without a URL to follow", 201, http.Header{"Retry-After": {"10"}}, false, 0, false},
		{"a 429", 429, http.Header{"Retry-After": {"10"}}, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tc.status, Header: tc.header}
			if got := startsOperation(resp); got != tc.starts {
				t.Errorf("startsOperation = %v, want %v", got, tc.starts)
			}
			if !tc.starts {
				return
			}
			d, ok := operationHint(tc.header)
			if d != tc.hint || ok != tc.hasHint {
				t.Errorf("operationHint = %s, %v; want %s, %v", d, ok, tc.hint, tc.hasHint)
			}
		})
	}
}

// TestRecheckAfter: the soonest hint, at least MinOperationHint and never
// later than the recheck interval; the interval without hints.
func TestRecheckAfter(t *testing.T) {
	const recheck = 10 * time.Second
	if got := RecheckAfter(context.Background(), recheck); got != recheck {
		t.Errorf("a context without hints: %s, want %s", got, recheck)
	}
	ctx, h := WithOperationHints(context.Background())
	if got := RecheckAfter(ctx, recheck); got != recheck {
		t.Errorf("no operation started: %s, want %s", got, recheck)
	}
	h.record(30 * time.Second)
	if got := RecheckAfter(ctx, recheck); got != recheck {
		t.Errorf("Azure asks 30s (Private DNS): %s, want the recheck interval %s", got, recheck)
	}
	h.record(4 * time.Second)
	h.record(6 * time.Second)
	if got := RecheckAfter(ctx, recheck); got != 4*time.Second {
		t.Errorf("hints 30s, 4s, 6s: %s, want the soonest, 4s", got)
	}
	h.record(0)
	if got := RecheckAfter(ctx, recheck); got != MinOperationHint {
		t.Errorf("a hint of 0: %s, want %s", got, MinOperationHint)
	}
}

// TestDueOperations: a resource's operation is due at the time its hint
// gave, case-insensitively by path; none once that time passed, and such
// entries are swept.
func TestDueOperations(t *testing.T) {
	d := &dueOperations{}
	now := time.Now()
	zone := "/subscriptions/s/resourcegroups/rg/providers/microsoft.network/privatednszones/z"
	d.set(zone, now.Add(3*time.Second))
	if left, ok := d.left(zone, now.Add(time.Second)); !ok || left != 2*time.Second {
		t.Errorf("a second later: %s, %v; want 2s", left, ok)
	}
	if _, ok := d.left(zone, now.Add(3*time.Second)); ok {
		t.Error("due at its time: still pending")
	}
	if _, ok := d.left(zone+"/virtualnetworklinks/l", now); ok {
		t.Error("a resource without an operation is due")
	}
	links := zone + "/virtualnetworklinks"
	d.set(links+"/a", now.Add(8*time.Second))
	d.set(links+"/b", now.Add(5*time.Second))
	d.set(links+"/c", now.Add(9*time.Second))
	if left, ok := d.left(links, now); !ok || left != 5*time.Second {
		t.Errorf("the list of links being made in 8s, 5s and 9s: %s, %v; want the soonest, 5s", left, ok)
	}
	// A sweep keeps what is still due and drops what is past.
	d.at[zone] = now.Add(-time.Second)
	d.swept = now.Add(-time.Minute)
	d.set("/other", now.Add(time.Hour))
	if _, ok := d.at[zone]; ok {
		t.Error("an entry past its time was not swept")
	}
	for _, k := range []string{links, links + "/a", "/other"} {
		if _, ok := d.left(k, time.Now()); !ok {
			t.Errorf("%s, still due, was swept", k)
		}
	}
	var none *dueOperations
	none.set(zone, now)
	if _, ok := none.left(zone, now); ok {
		t.Error("no registry has an operation due")
	}
}
