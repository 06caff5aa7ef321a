package azure

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// TestPacer: no holding back before Azure announced a budget; a budget
// above the reserve is spent; at the reserve, requests wait for the
// documented refill, classified as transient with that wait and not
// retried by the SDK; classes are separate.
func TestPacer(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPacer()
	p.now = func() time.Time { return now }
	if w := p.take("writes", paceReserve); w != 0 {
		t.Fatalf("no budget known yet: wait %s", w)
	}
	p.observe("writes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Writes": []string{"12"}})
	for i := range 2 {
		if w := p.take("writes", paceReserve); w != 0 {
			t.Fatalf("write %d of a budget of 12 (reserve %d) held back %s", i, paceReserve, w)
		}
	}
	w := p.take("writes", paceReserve)
	if w <= 0 || w > time.Second {
		t.Fatalf("at the reserve: wait %s, want up to a second (10 writes/s)", w)
	}
	if w2 := p.take("writes", paceReserve); w2 != w+100*time.Millisecond {
		t.Errorf("a second held-back write: wait %s, want the next refill slot %s", w2, w+100*time.Millisecond)
	}
	// An answer in between (the budget still at the reserve) does not
	// start the queue over: the next held-back write gets the slot after
	// the two handed out, not one a refill interval away.
	p.observe("writes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Writes": []string{"10"}})
	if w3 := p.take("writes", paceReserve); w3 != w+200*time.Millisecond {
		t.Errorf("a held-back write after an answer: wait %s, want the slot after the others %s", w3, w+200*time.Millisecond)
	}
	if r := p.take("reads", paceReserve); r != 0 {
		t.Errorf("reads held back by the writes' budget: %s", r)
	}
	now = now.Add(w + 300*time.Millisecond)
	if w := p.take("writes", paceReserve); w != 0 {
		t.Errorf("after the announced waits: still %s", w)
	}
	// The global header form, as ARM's token-bucket limits send it.
	p.observe("deletes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Global-Deletes": []string{"0"}})
	if w := p.take("deletes", paceReserve); w < time.Second {
		t.Errorf("an empty delete budget: wait %s, want over a second", w)
	}
	err := error(&pacedError{ce: ClassifiedError{Classification: Classification{Class: ClassTransient, Reason: ReasonThrottled, RetryAfter: time.Second}}})
	if c := Classify(err); c.Class != ClassTransient || c.RetryAfter != time.Second {
		t.Errorf("classified %+v", c)
	}
	var nr interface{ NonRetriable() }
	if !errors.As(err, &nr) {
		t.Error("the SDK would retry a paced request")
	}
}

// TestPacerLetsListsFinish: a list's later pages (WithContinuation) may
// spend into the reserve down to continuationFloor, so a list started is
// not held back midway while single requests take every token above the
// reserve; other requests still stop at the reserve.
func TestPacerLetsListsFinish(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPacer()
	p.now = func() time.Time { return now }
	p.observe("reads", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Reads": []string{"11"}})
	pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{PerRetry: []policy.Policy{p}},
		&policy.ClientOptions{Transport: answer{}, Retry: policy.RetryOptions{MaxRetries: -1}})
	send := func(ctx context.Context) error {
		req, err := runtime.NewRequest(ctx, http.MethodGet, "https://management.azure.com/x")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pl.Do(req)
		if resp != nil {
			_ = resp.Body.Close()
		}
		return err
	}
	// The first page takes the one read above the reserve.
	if err := send(context.Background()); err != nil {
		t.Fatalf("first page: %v", err)
	}
	if err := send(context.Background()); err == nil {
		t.Fatal("a request at the reserve was sent")
	}
	next := WithContinuation(context.Background())
	for i := range paceReserve - continuationFloor {
		if err := send(next); err != nil {
			t.Fatalf("later page %d at the reserve: %v", i+2, err)
		}
	}
	if err := send(next); err == nil {
		t.Errorf("a later page was sent with %d reads left, below the floor %d", continuationFloor, continuationFloor)
	}
}

// answer answers every request 200 without a budget header (the pacer
// keeps counting down what it was told).
type answer struct{}

func (answer) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}
