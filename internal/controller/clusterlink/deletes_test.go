package clusterlink

import (
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
)

// TestDeleteDecisions: every decision that deletes an endpoint or lets one
// go, as a table. The DNS hand-off is asked only when everything else
// allows the step (asking marks the cluster as waiting for the DNS
// controller), and its answer decides.
func TestDeleteDecisions(t *testing.T) {
	ep := func(link string) Endpoint {
		return Endpoint{PrivateEndpoint: capz.PrivateEndpoint{Name: link + "-privateendpoint"}, Link: link}
	}
	named := func(pe capz.PrivateEndpoint) bool { return strings.HasSuffix(pe.Name, "-privateendpoint") }
	orphan := capz.PrivateEndpoint{Name: "a-privateendpoint"}
	const managed = "wc1-api-privatelink"
	for _, c := range []struct {
		name   string
		decide func(dns func() bool) bool
		dnsOK  bool
		want   bool
		asks   bool
	}{
		{"disconnected breaks", func(func() bool) bool { return heal.Policy{}.Breaks(stateDisconnected) }, true, true, false},
		{"rejected breaks only when told", func(func() bool) bool { return heal.Policy{}.Breaks(stateRejected) }, true, false, false},
		{"rejected, told", func(func() bool) bool { return heal.Policy{Rejected: true}.Breaks(stateRejected) }, true, true, false},
		{"pending never breaks", func(func() bool) bool { return heal.Policy{Rejected: true}.Breaks(statePending) }, true, false, false},
		{"a heal waits for the records", func(d func() bool) bool { return healWaitsForDNS(true, true, d) }, false, true, true},
		{"records moved: the grace period starts", func(d func() bool) bool { return healWaitsForDNS(true, true, d) }, true, false, true},
		{"healing off: nothing waits", func(d func() bool) bool { return healWaitsForDNS(true, false, d) }, false, false, false},
		{"not broken: nothing waits", func(d func() bool) bool { return healWaitsForDNS(false, true, d) }, false, false, false},
		{"switched", func(d func() bool) bool {
			return layoutSwitched([]Endpoint{ep("mc-ingress")}, true, "10.1.0.4", "10.1.0.4", d)
		}, true, true, true},
		{"switch: records not moved", func(d func() bool) bool {
			return layoutSwitched([]Endpoint{ep("mc-ingress")}, true, "10.1.0.4", "10.1.0.4", d)
		}, false, false, true},
		{"switch: annotation not written yet", func(d func() bool) bool {
			return layoutSwitched([]Endpoint{ep("mc-ingress")}, true, "10.1.0.9", "10.1.0.4", d)
		}, true, false, false},
		{"switch: new endpoint not ready", func(d func() bool) bool {
			return layoutSwitched([]Endpoint{ep("mc-ingress")}, false, "10.1.0.4", "10.1.0.4", d)
		}, true, false, false},
		{"switch: no new layout (the MC's spec must be fixed)", func(d func() bool) bool { return layoutSwitched(nil, true, "", "", d) }, true, false, false},
		{"hand-over done", func(d func() bool) bool {
			return handOverDone(ep("wc1-declared"), managed, true, "10.0.0.7", "10.0.0.7", d)
		}, true, true, true},
		{"hand-over: still on the managed link", func(d func() bool) bool {
			return handOverDone(ep("WC1-API-PRIVATELINK"), managed, true, "10.0.0.7", "10.0.0.7", d)
		}, true, false, false},
		{"hand-over: declared link not ready", func(d func() bool) bool {
			return handOverDone(ep("wc1-declared"), managed, false, "10.0.0.7", "10.0.0.7", d)
		}, true, false, false},
		{"hand-over: no address", func(d func() bool) bool { return handOverDone(ep("wc1-declared"), managed, true, "", "", d) }, true, false, false},
		{"hand-over: address not on the WC yet", func(d func() bool) bool {
			return handOverDone(ep("wc1-declared"), managed, true, "10.0.0.5", "10.0.0.7", d)
		}, true, false, false},
		{"hand-over: records not moved", func(d func() bool) bool {
			return handOverDone(ep("wc1-declared"), managed, true, "10.0.0.7", "10.0.0.7", d)
		}, false, false, true},
		{"orphan", func(func() bool) bool { return orphanCandidate(orphan, false, false, true, named) }, true, true, false},
		{"in spec or wanted", func(func() bool) bool { return orphanCandidate(orphan, true, false, true, named) }, true, false, false},
		{"something else takes care of it", func(func() bool) bool { return orphanCandidate(orphan, false, true, true, named) }, true, false, false},
		{"not CAPZ's for the cluster", func(func() bool) bool { return orphanCandidate(orphan, false, false, false, named) }, true, false, false},
		{"not named like the operator's", func(func() bool) bool {
			return orphanCandidate(capz.PrivateEndpoint{Name: "someone-elses"}, false, false, true, named)
		}, true, false, false},
	} {
		asked := false
		got := c.decide(func() bool { asked = true; return c.dnsOK })
		if got != c.want || asked != c.asks {
			t.Errorf("%s: got %v (DNS asked: %v), want %v (DNS asked: %v)", c.name, got, asked, c.want, c.asks)
		}
	}
}
