package clusterlink

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// wcEntry is the MC's endpoint entry to a WC's API server private link.
func wcEntry(name string) capz.PrivateEndpoint {
	ep := mcEndpoint(false).PrivateEndpoint
	ep.Name = name + "-api-privatelink-privateendpoint"
	ep.Connections = []capz.PrivateLinkServiceConnection{{
		Name: name + "-api-privatelink-connection", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, name+"-resources", name+"-api-privatelink"),
	}}
	return ep
}

func onNodes(eps ...capz.PrivateEndpoint) map[string][]capz.PrivateEndpoint {
	return map[string][]capz.PrivateEndpoint{"mc-nodes": eps}
}

// mcWith is an MC whose node subnet holds eps.
func mcWith(eps ...capz.PrivateEndpoint) *capz.AzureCluster {
	return mc(func(a *capz.AzureCluster) { a.Subnets[1].PrivateEndpoints = eps })
}

func deleting(a *capz.AzureCluster) { a.Deleting = true }

func ownedBy(manager string, names ...string) map[capz.EndpointKey][]string {
	out := map[capz.EndpointKey][]string{}
	for _, n := range names {
		out[capz.EndpointKey{Subnet: "mc-nodes", Name: n}] = []string{manager}
	}
	return out
}

func TestDecideMC(t *testing.T) {
	opts := Options{AdoptFieldManagers: DefaultAdoptFieldManagers, DeleteOrphanedEndpoints: true}
	older := entry("old-privateendpoint", "old") // the older operator's, to a service in wc1's group
	for _, tc := range []struct {
		reason        string
		seen          mcSeen
		want          map[string][]string
		stale         []StaleEntry
		sweep         bool
		conflicts     int
		taken         int
		noOrphanSweep bool
	}{
		{
			reason: "a new WC: its endpoint is applied; nothing is removed or swept in the pass that writes",
			seen:   mcSeen{mc: mcWith(), active: []*capz.AzureCluster{wc("wc1")}},
			want:   map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
		},
		{
			reason: "everything applied: the older operator's entry to a WC's group no longer wanted is removed, then the sweep runs",
			seen: mcSeen{
				mc: mcWith(wcEntry("wc1"), older), active: []*capz.AzureCluster{wc("wc1")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"))},
				owners:  merge(ownedBy(capz.FieldManager, "wc1-api-privatelink-privateendpoint"), ownedBy("manager", "old-privateendpoint")),
			},
			want:  map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			stale: []StaleEntry{{Subnet: 1, Entry: 1, Name: "old-privateendpoint"}},
			sweep: true,
		},
		{
			reason: "everything applied, orphan deletion off: no sweep",
			seen: mcSeen{
				mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"))},
				owners:  ownedBy(capz.FieldManager, "wc1-api-privatelink-privateendpoint"),
			},
			want:          map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
			noOrphanSweep: true,
		},
		{
			reason: "a deleting WC's endpoint leaves; a paused WC's stays as it is although its links are not ready",
			seen: mcSeen{
				mc:      mcWith(wcEntry("wc1"), wcEntry("wc2")),
				active:  []*capz.AzureCluster{wc("wc1", deleting)},
				held:    []*capz.AzureCluster{wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinksReady = false })},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"), wcEntry("wc2"))},
			},
			want: map[string][]string{"mc-nodes": {"wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "a malformed MC: a deleting WC's endpoint still leaves, the others stay, nothing new is added, nothing removed or swept",
			seen: mcSeen{
				mc: mcWith(wcEntry("wc1"), wcEntry("wc2"), older), specErr: errors.New("spec.networkSpec.subnets[0].role: Unsupported value"),
				active:  []*capz.AzureCluster{wc("wc1", deleting), wc("wc2"), wc("wc3")},
				current: capz.Owned{Endpoints: onNodes(wcEntry("wc1"), wcEntry("wc2"))},
				owners:  ownedBy("manager", "old-privateendpoint"),
			},
			want: map[string][]string{"mc-nodes": {"wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "an entry of the name the WC needs belongs to someone else: skipped, reported on the MC",
			seen: mcSeen{
				mc: mcWith(wcEntry("wc1")), active: []*capz.AzureCluster{wc("wc1"), wc("wc2")},
				owners: ownedBy("kubectl-edit", "wc1-api-privatelink-privateendpoint"),
			},
			want:  map[string][]string{"mc-nodes": {"wc2-api-privatelink-privateendpoint"}},
			taken: 1,
		},
		{
			reason: "two WCs needing one name: the first keeps it, the second gets a conflict",
			seen: mcSeen{mc: mcWith(), active: []*capz.AzureCluster{
				wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
				wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
			}},
			want:      map[string][]string{"mc-nodes": {"shared-api-privateendpoint"}},
			conflicts: 1,
		},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			o := opts
			o.DeleteOrphanedEndpoints = !tc.noOrphanSweep
			// The views are the MC pass's memo's (views.go), shared
			// between passes: deciding must not write them.
			before := viewsJSON(t, tc.seen)
			got := decideMC(&tc.seen, o)
			if after := viewsJSON(t, tc.seen); after != before {
				t.Errorf("decideMC changed the views it read:\nbefore %s\nafter  %s", before, after)
			}
			if diff := cmp.Diff(tc.want, entryNames(got.want.Endpoints)); diff != "" {
				t.Errorf("endpoints to hold (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stale, got.stale); diff != "" {
				t.Errorf("stale entries (-want +got):\n%s", diff)
			}
			if got.sweep != tc.sweep {
				t.Errorf("sweep = %v, want %v", got.sweep, tc.sweep)
			}
			if len(got.conflicts) != tc.conflicts || len(got.taken) != tc.taken {
				t.Errorf("conflicts %v, taken %v; want %d and %d", got.conflicts, got.taken, tc.conflicts, tc.taken)
			}
		})
	}
}

// viewsJSON is the MC's and the WCs' views of seen, for comparison.
func viewsJSON(t *testing.T, seen mcSeen) string {
	t.Helper()
	b, err := json.Marshal([]any{seen.mc, seen.active, seen.held})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func merge(ms ...map[capz.EndpointKey][]string) map[capz.EndpointKey][]string {
	out := map[capz.EndpointKey][]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
