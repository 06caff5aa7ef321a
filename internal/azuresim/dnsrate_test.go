package azuresim

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPrivateDNSRates(t *testing.T) {
	var d dnsTimeline
	t0 := time.Unix(1_000_000, 0)
	for i := range 10 {
		d.add("SUB-A", http.MethodGet, t0.Add(time.Duration(i)*time.Second))
	}
	d.add("sub-a", http.MethodPut, t0)
	// Six minutes later: outside the first window.
	for i := range 4 {
		d.add("sub-a", http.MethodGet, t0.Add(6*time.Minute+time.Duration(i)*time.Second))
	}
	d.add("sub-b", http.MethodDelete, t0)
	got := map[string]DNSRate{}
	for _, r := range d.rates() {
		got[r.Subscription] = r
	}
	want := map[string]DNSRate{
		"sub-a": {Subscription: "sub-a", PeakReads: 10, PeakWrites: 1, Reads: 14, Writes: 1},
		"sub-b": {Subscription: "sub-b", PeakWrites: 1, Writes: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rates (-want +got):\n%s", diff)
	}
}
