package privatedns

import (
	"container/heap"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// TestBudgetWindow: a caller taking as fast as the budget allows never
// gets more than the budget in any 5-minute window, and gets most of it.
func TestBudgetWindow(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 250, Writes: 500, Now: func() time.Time { return now }}
	var reads, writes []time.Time
	end := now.Add(30 * time.Minute)
	for now.Before(end) {
		if b.Take("sub", false) == 0 {
			reads = append(reads, now)
		}
		if b.Take("SUB", true) == 0 {
			writes = append(writes, now)
		}
		now = now.Add(100 * time.Millisecond)
	}
	for _, c := range []struct {
		name  string
		times []time.Time
		limit int
	}{{"reads", reads, 250}, {"writes", writes, 500}} {
		peak := 0
		for i := range c.times {
			n := 0
			for j := i; j < len(c.times) && c.times[j].Sub(c.times[i]) < 5*time.Minute; j++ {
				n++
			}
			peak = max(peak, n)
		}
		if peak > c.limit || peak < c.limit*9/10 {
			t.Errorf("%s: busiest 5 minutes %d, want at most %d and close to it", c.name, peak, c.limit)
		}
	}
	if wait := b.Take("other", false); wait != 0 {
		t.Errorf("another subscription's budget was spent: it waits %s", wait)
	}
	if wait := (*Budget)(nil).Take("x", true); wait != 0 {
		t.Errorf("no budget waits %s", wait)
	}
}

// TestBudgetBurst: the whole budget may go at once, as Azure's window
// allows (a token bucket refilling over the window would make 1,000 new
// objects wait minutes for nothing); the next request waits until the
// first leaves the window.
func TestBudgetBurst(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 400, Writes: 800, Now: func() time.Time { return now }}
	for i := range 800 {
		if wait := b.Take("sub", true); wait != 0 {
			t.Fatalf("write %d of a budget of 800 waits %s", i+1, wait)
		}
		now = now.Add(10 * time.Millisecond)
	}
	// The first write was at 0: the 801st waits until 5 minutes after it,
	// and the margin.
	if wait, want := b.Take("sub", true), 5*time.Minute+budgetMargin-8*time.Second; wait != want {
		t.Errorf("the write over the budget waits %s, want %s", wait, want)
	}
	now = time.Unix(0, 0).Add(5*time.Minute + budgetMargin)
	if wait := b.Take("sub", true); wait != 0 {
		t.Errorf("after the first write left the window: waits %s", wait)
	}
}

// TestBudgetAzureCount: while Azure's last count of a subscription's
// requests is fresh, the budget sends nothing that would leave Azure fewer
// than the reserve (Azure's limit less the budget), counting what it sent
// since; a stale count, another class or another subscription is not held
// back by it.
func TestBudgetAzureCount(t *testing.T) {
	start := time.Unix(0, 0)
	for _, c := range []struct {
		name      string
		reads     int
		remaining int
		after     time.Duration // from the count to the first take
		taken     int           // reads sent before being held back
		wait      time.Duration // the wait then (0: not held back within 50)
	}{
		{name: "far from the reserve", reads: 400, remaining: 400, taken: 50},
		{name: "near the reserve", reads: 400, remaining: 103, taken: 3, wait: AzureCountFresh},
		{name: "at the reserve", reads: 400, remaining: 100, taken: 0, wait: AzureCountFresh},
		{name: "held back for what is left of the count's life", reads: 400, remaining: 100, after: 4 * time.Second, wait: AzureCountFresh - 4*time.Second},
		{name: "a stale count", reads: 400, remaining: 0, after: AzureCountFresh, taken: 50},
		{name: "a budget of all of Azure's limit keeps no reserve", reads: 500, remaining: 2, taken: 2, wait: AzureCountFresh},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := start
			b := &Budget{Reads: c.reads, Writes: 800, Now: func() time.Time { return now }}
			b.ObserveReads("SUB", c.remaining)
			now = now.Add(c.after)
			taken, wait := 0, time.Duration(0)
			for taken < 50 {
				if wait = b.Take("sub", false); wait != 0 {
					break
				}
				taken++
			}
			if taken != c.taken || wait != c.wait {
				t.Errorf("took %d, then waits %s; want %d, then %s", taken, wait, c.taken, c.wait)
			}
			if w := b.Take("sub", true); w != 0 {
				t.Errorf("a write waits %s on the count of reads", w)
			}
			if w := b.Take("other", false); w != 0 {
				t.Errorf("another subscription waits %s", w)
			}
		})
	}
}

// TestBudgetSpent: requests already sent (a list's further pages) go in
// the log; Azure's count came with their answers.
func TestBudgetSpent(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 400, Now: func() time.Time { return now }}
	b.SpentReads("sub", 390)
	b.ObserveReads("sub", 110)
	for i := range 10 {
		if w := b.Take("sub", false); w != 0 {
			t.Fatalf("read %d of the 10 both counts leave waits %s", i+1, w)
		}
	}
	if w := b.Take("sub", false); w != budgetWindow+budgetMargin {
		t.Errorf("400 in the log: the read waits %s, want %s", w, budgetWindow+budgetMargin)
	}
}

// TestBudgetListPages: a list takes one read to start and records each
// further page Azure counts (100 items a page).
func TestBudgetListPages(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 10, Now: func() time.Time { return now }}
	api := b.Paced(listAPI{records: 250}, "sub")
	if _, err := api.Records(t.Context(), "rg", "z"); err != nil {
		t.Fatal(err)
	}
	if _, err := api.Records(t.Context(), "rg", "z"); err != nil {
		t.Fatal(err)
	}
	// 2 lists of 3 pages: 6 of 10 reads.
	for i := range 4 {
		if w := b.Take("sub", false); w != 0 {
			t.Fatalf("read %d after the lists waits %s", i+7, w)
		}
	}
	if w := b.Take("sub", false); w == 0 {
		t.Error("the 11th read was not held back: the lists' further pages were not counted")
	}
}

// listAPI answers lists of a number of record sets.
type listAPI struct {
	API
	records int
}

func (l listAPI) Records(context.Context, string, string) ([]*armprivatedns.RecordSet, error) {
	return make([]*armprivatedns.RecordSet, l.records), nil
}

// TestBudgetHeld: Held answers as Wait would, without taking: asking
// leaves the budget as it was, for reads (Azure's count included) and
// writes, and a spent budget says how long with a transient error.
func TestBudgetHeld(t *testing.T) {
	now := time.Unix(0, 0)
	b := &Budget{Reads: 400, Writes: 2, Now: func() time.Time { return now }}
	for range 10 {
		if err := b.Held("sub", true, "private endpoint"); err != nil {
			t.Fatalf("an empty budget holds a write back: %v", err)
		}
	}
	for i := range 2 {
		if b.Take("sub", true) != 0 {
			t.Fatalf("asking took from the budget: a budget of 2 writes refuses write %d", i+1)
		}
	}
	err := b.Held("sub", true, "private endpoint")
	c := azure.Classify(err)
	if err == nil || c.Class != azure.ClassTransient || c.Reason != azure.ReasonThrottled || !c.HeldBack || c.RetryAfter <= 0 || c.RetryAfter > budgetWindow+budgetMargin {
		t.Fatalf("a spent budget: %v (%+v), want a transient wait within the window, held back", err, c)
	}
	if !strings.Contains(err.Error(), "private endpoint writes") {
		t.Errorf("message %q does not name what is held back", err)
	}
	if err := b.Held("sub", false, "Private DNS"); err != nil {
		t.Errorf("reads are held back by spent writes: %v", err)
	}
	// Azure's count: 101 reads left, the reserve is 100 (500 − 400), so
	// one read may go; asking does not spend it.
	b.ObserveReads("sub", 101)
	for range 3 {
		if err := b.Held("sub", false, "Private DNS"); err != nil {
			t.Fatalf("asking spent Azure's count: %v", err)
		}
	}
	if b.Take("sub", false) != 0 {
		t.Fatal("the read Azure's count leaves was not given")
	}
	if err := b.Held("sub", false, "Private DNS"); err == nil {
		t.Error("Azure's count at the reserve: a read is not held back")
	}
	now = now.Add(budgetWindow + budgetMargin)
	if err := b.Held("sub", true, "private endpoint"); err != nil {
		t.Errorf("after the window: %v", err)
	}
}

// TestBudgetHeldBackInLine: requests held back by a full window come back
// one after another as places free, not all when the oldest frees. 2,000
// objects arrive 100 ms apart (ARM's write refill), each wanting one
// write of a budget of 800, and ask again when they are told: every one
// is written, no window holds more than the budget, the last goes when
// the windows allow, and each is held back at most twice (1,600 in all;
// when every one was told of the oldest place, 720,600 in all and up to
// 1,200 for one object, with the same last write at 10m43.9s).
func TestBudgetHeldBackInLine(t *testing.T) {
	const n, limit = 2000, 800
	start := time.Unix(0, 0)
	now := start
	b := &Budget{Writes: limit, Now: func() time.Time { return now }}
	q := &asks{}
	for i := range n {
		heap.Push(q, ask{at: start.Add(time.Duration(i) * 100 * time.Millisecond), id: i})
	}
	held := make([]int, n)
	var written []time.Time
	for q.Len() > 0 {
		a := heap.Pop(q).(ask)
		now = a.at
		if wait := b.Take("sub", true); wait > 0 {
			held[a.id]++
			heap.Push(q, ask{at: now.Add(wait), id: a.id})
			continue
		}
		written = append(written, now)
	}
	if len(written) != n {
		t.Fatalf("%d writes, want %d", len(written), n)
	}
	span := budgetWindow + budgetMargin
	for i := range written {
		if j := i + limit; j < len(written) && written[j].Sub(written[i]) < span {
			t.Fatalf("writes %d and %d within %s: more than %d in a window", i, j, span, limit)
		}
	}
	// The first 800 at 0–80 s, the next 800 as those leave the window
	// (302–382 s), the last 400 as those leave it (604–644 s).
	if last, want := written[n-1].Sub(start), 2*span+40*time.Second; last > want {
		t.Errorf("the last write at %s, want by %s", last, want)
	}
	for id, h := range held {
		if h > 2 {
			t.Errorf("object %d held back %d times, want at most 2", id, h)
			break
		}
	}
}

type ask struct {
	at time.Time
	id int
}

// asks is a queue of asks by time, then by id.
type asks []ask

func (q asks) Len() int { return len(q) }
func (q asks) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].id < q[j].id
}
func (q asks) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *asks) Push(x any)   { *q = append(*q, x.(ask)) }
func (q *asks) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
