package clusterlink

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestEndpointStateCollector: the gauge counts every WC's current states
// at scrape time; a WC set again replaces its states, and one set to
// nothing is forgotten (no stale series).
func TestEndpointStateCollector(t *testing.T) {
	c := newEndpointStateCollector()
	c.set("org-a/wc1", map[Direction]string{DirectionMCToWC: stateReady, DirectionWCToMC: stateReady})
	c.set("org-a/wc2", map[Direction]string{DirectionMCToWC: statePending})
	c.set("org-a/wc3", map[Direction]string{DirectionMCToWC: stateReady})
	c.set("org-a/wc3", map[Direction]string{DirectionMCToWC: stateDisconnected})
	c.set("org-a/wc4", map[Direction]string{DirectionMCToWC: stateReady})
	c.set("org-a/wc4", nil)
	want := `
# HELP azure_private_endpoint_operator_private_endpoints Private endpoints the operator wired, by direction (mc-to-wc-api, wc-to-mc-ingress) and state.
# TYPE azure_private_endpoint_operator_private_endpoints gauge
azure_private_endpoint_operator_private_endpoints{direction="mc-to-wc-api",state="disconnected"} 1
azure_private_endpoint_operator_private_endpoints{direction="mc-to-wc-api",state="pending_approval"} 1
azure_private_endpoint_operator_private_endpoints{direction="mc-to-wc-api",state="ready"} 1
azure_private_endpoint_operator_private_endpoints{direction="wc-to-mc-ingress",state="ready"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
