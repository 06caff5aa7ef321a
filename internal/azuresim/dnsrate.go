package azuresim

import (
	"net/http"
	"strings"
	"sync"
	"time"
)

// Azure's resource providers limit requests per subscription (and region)
// on top of ARM's buckets, in 5-minute windows ("Understand how Azure
// Resource Manager throttles requests"): Azure DNS and Private DNS 500 reads
// (GET); Microsoft.Network, Private DNS included, 1,000 writes (PUT, PATCH,
// DELETE) and 10,000 reads. The 500 reads are quoted from Microsoft's page;
// the Network figures are as a summary of that page's Network throttling
// table gives them (rate-limits.apis.io), the table itself not seen whole.
// With throttling on the emulator enforces them (Throttling's windows); it
// also keeps a per-second timeline of each subscription's Private DNS
// requests so that a benchmark can show the busiest window against them.
const (
	PrivateDNSWindow      = 5 * time.Minute
	PrivateDNSReadsLimit  = 500
	PrivateDNSWritesLimit = NetworkWritesLimit
	NetworkWritesLimit    = 1000
	NetworkReadsLimit     = 10000
)

// DNSRate is the busiest PrivateDNSWindow of one subscription's Private
// DNS requests, and the requests in all.
type DNSRate struct {
	Subscription string `json:"subscription"`
	PeakReads    int    `json:"peakReadsPer5m"`
	PeakWrites   int    `json:"peakWritesPer5m"`
	Reads        int    `json:"reads"`
	Writes       int    `json:"writes"`
}

type dnsSecond struct{ reads, writes int }

type dnsTimeline struct {
	mu    sync.Mutex
	bySub map[string]map[int64]dnsSecond
}

func (d *dnsTimeline) add(sub, method string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bySub == nil {
		d.bySub = map[string]map[int64]dnsSecond{}
	}
	sub = strings.ToLower(sub)
	if d.bySub[sub] == nil {
		d.bySub[sub] = map[int64]dnsSecond{}
	}
	s := d.bySub[sub][at.Unix()]
	if method == http.MethodGet || method == http.MethodHead {
		s.reads++
	} else {
		s.writes++
	}
	d.bySub[sub][at.Unix()] = s
}

// rates computes each subscription's busiest window.
func (d *dnsTimeline) rates() []DNSRate {
	d.mu.Lock()
	defer d.mu.Unlock()
	window := int64(PrivateDNSWindow / time.Second)
	out := make([]DNSRate, 0, len(d.bySub))
	for sub, secs := range d.bySub {
		r := DNSRate{Subscription: sub}
		for start := range secs {
			var reads, writes int
			for t, s := range secs {
				if t >= start && t < start+window {
					reads += s.reads
					writes += s.writes
				}
			}
			r.PeakReads, r.PeakWrites = max(r.PeakReads, reads), max(r.PeakWrites, writes)
		}
		for _, s := range secs {
			r.Reads += s.reads
			r.Writes += s.writes
		}
		out = append(out, r)
	}
	return out
}

// PrivateDNSRates returns, per subscription, the Private DNS requests
// (every principal's) and the most in any 5-minute window since the
// emulator started or ResetPrivateDNSRates.
func (s *Server) PrivateDNSRates() []DNSRate { return s.dnsRate.rates() }

// ResetPrivateDNSRates forgets the timeline.
func (s *Server) ResetPrivateDNSRates() {
	s.dnsRate.mu.Lock()
	defer s.dnsRate.mu.Unlock()
	s.dnsRate.bySub = nil
}
