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
	if w := p.take("writes", false); w != 0 {
		t.Fatalf("no budget known yet: wait %s", w)
	}
	p.observe("writes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Writes": []string{"12"}})
	for i := range 2 {
		if w := p.take("writes", false); w != 0 {
			t.Fatalf("write %d of a budget of 12 (reserve %d) held back %s", i, paceReserve, w)
		}
	}
	w := p.take("writes", false)
	if w <= 0 || w > time.Second {
		t.Fatalf("at the reserve: wait %s, want up to a second (10 writes/s)", w)
	}
	if w2 := p.take("writes", false); w2 != w+100*time.Millisecond {
		t.Errorf("a second held-back write: wait %s, want the next refill slot %s", w2, w+100*time.Millisecond)
	}
	// An answer in between (the budget still at the reserve) does not
	// start the queue over: the next held-back write gets the slot after
	// the two handed out, not one a refill interval away.
	p.observe("writes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Writes": []string{"10"}})
	if w3 := p.take("writes", false); w3 != w+200*time.Millisecond {
		t.Errorf("a held-back write after an answer: wait %s, want the slot after the others %s", w3, w+200*time.Millisecond)
	}
	if r := p.take("reads", false); r != 0 {
		t.Errorf("reads held back by the writes' budget: %s", r)
	}
	now = now.Add(w + 300*time.Millisecond)
	if w := p.take("writes", false); w != 0 {
		t.Errorf("after the announced waits: still %s", w)
	}
	// The global header form, as ARM's token-bucket limits send it.
	p.observe("deletes", http.Header{"X-Ms-Ratelimit-Remaining-Subscription-Global-Deletes": []string{"0"}})
	if w := p.take("deletes", false); w < time.Second {
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

// TestPacerPutsListsFirst: a list's pages (WithList), its first as much
// as its later ones, spend into the reserve down to listFloor while single
// requests stop at the reserve; below the floor a page waits for the next
// refill instead of being held back, and does not wait behind the slots
// handed to held-back single requests; a page waits only as long as its
// context allows.
func TestPacerPutsListsFirst(t *testing.T) {
	now := time.Unix(0, 0)
	p := newPacer()
	p.now = func() time.Time { return now }
	var slept []time.Duration
	p.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		slept = append(slept, d)
		now = now.Add(d)
		return nil
	}
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
	if err := send(context.Background()); err != nil {
		t.Fatalf("a single read above the reserve: %v", err)
	}
	// Single reads at the reserve are held back, each to a later slot.
	for range 50 {
		if err := send(context.Background()); err == nil {
			t.Fatal("a single read at the reserve was sent")
		}
	}
	list := WithList(context.Background())
	for i := range paceReserve - listFloor {
		if err := send(list); err != nil {
			t.Fatalf("list page %d at the reserve: %v", i+1, err)
		}
	}
	if len(slept) > 0 {
		t.Fatalf("pages above the floor waited %v", slept)
	}
	// At the floor: the next page waits for one refill (40 ms at 25
	// reads a second), not for the 50 slots (2 s) handed out before it.
	if err := send(list); err != nil {
		t.Fatalf("a list page at the floor: %v", err)
	}
	if len(slept) != 1 || slept[0] > 40*time.Millisecond {
		t.Errorf("a page at the floor waited %v, want one wait of at most 40ms", slept)
	}
	ctx, cancel := context.WithCancel(list)
	cancel()
	if err := send(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a page whose caller went away: %v, want context.Canceled", err)
	}
}

// answer answers every request 200 without a budget header (the pacer
// keeps counting down what it was told).
type answer struct{}

func (answer) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}
