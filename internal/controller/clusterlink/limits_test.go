package clusterlink

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TestDesiredMCWithinLimit: beyond --mc-private-endpoint-limit no new
// entry is added and the clusters that would need one are told why; what
// the MC holds always stays, and everyone's entries count.
func TestDesiredMCWithinLimit(t *testing.T) {
	twoLinks := func(a *capz.AzureCluster) {
		second := a.PrivateLinks[0]
		second.Name = a.Name + "-extra-privatelink"
		a.PrivateLinks = append(a.PrivateLinks, second)
	}
	// The MC holds wc1's endpoint and one of a user's: two entries.
	withEntries := func(a *capz.AzureCluster) {
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{
			mcEndpoint(false).PrivateEndpoint,
			{Name: "storage-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{Name: "storage", PrivateLinkServiceID: "/subscriptions/x/storage"}}},
		}
	}
	wcs := []*capz.AzureCluster{wc("wc4"), wc("wc3", twoLinks), wc("wc2"), wc("wc1")}
	tests := []struct {
		reason      string
		limit       int
		want        []string
		wantLimited []string // clusters told PrivateEndpointLimit
	}{
		{
			reason: "no limit: every cluster",
			want: []string{"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint",
				"wc3-extra-privatelink-privateendpoint", "wc4-api-privatelink-privateendpoint"},
		},
		{
			reason:      "room for one: the first new cluster by namespace/name; wc3 needs two and gets none, wc4 after it none",
			limit:       3,
			want:        []string{"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint"},
			wantLimited: []string{"org-a/wc3", "org-a/wc4"},
		},
		{
			reason:      "room for two: wc3's two come together or not at all; wc4 takes the room left",
			limit:       4,
			want:        []string{"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint", "wc4-api-privatelink-privateendpoint"},
			wantLimited: []string{"org-a/wc3"},
		},
		{
			reason: "room for three",
			limit:  5,
			want: []string{"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint",
				"wc3-extra-privatelink-privateendpoint"},
			wantLimited: []string{"org-a/wc4"},
		},
		{
			reason:      "a limit lowered below what the MC holds: nothing is taken away, nothing is added",
			limit:       1,
			want:        []string{"wc1-api-privatelink-privateendpoint"},
			wantLimited: []string{"org-a/wc2", "org-a/wc3", "org-a/wc4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, problems := DesiredMC(mc(withEntries), wcs, Config{MCEndpointLimit: tc.limit}, heldWC1())
			var names []string
			for _, ep := range got {
				names = append(names, ep.Name)
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLimited, limitedClusters(t, problems)); diff != "" {
				t.Errorf("clusters told %s (-want +got):\n%s", ReasonEndpointLimit, diff)
			}
		})
	}
}

// limitedClusters returns the clusters problems tell PrivateEndpointLimit,
// failing on any other problem and on a message that does not name the
// flag or names another's entry.
func limitedClusters(t *testing.T, problems []Problem) []string {
	t.Helper()
	var limited []string
	for _, p := range problems {
		if p.Reason != ReasonEndpointLimit {
			t.Errorf("unexpected problem %+v", p)
			continue
		}
		limited = append(limited, p.Cluster)
		if !strings.Contains(p.Message, "--mc-private-endpoint-limit") || strings.Contains(p.Message, "storage") {
			t.Errorf("message says nothing of the flag, or names another's entry: %s", p.Message)
		}
	}
	return limited
}

// TestPlanWithinLimit: a cluster's own pass reaches the MC pass's verdict
// for it: refused when the MC is full, its held endpoint kept.
func TestPlanWithinLimit(t *testing.T) {
	full := Held{"a-privateendpoint": "x", "b-privateendpoint": "y"}
	eps := []Endpoint{{Cluster: "org-a/wc2", PrivateEndpoint: capz.PrivateEndpoint{Name: "wc2-api-privatelink-privateendpoint"}}}
	got, problems := WithinLimit(eps, full, 2, 2)
	if len(got) != 0 || len(problems) != 1 || problems[0].Cluster != "org-a/wc2" {
		t.Errorf("a new endpoint into a full MC: %v, %v", got, problems)
	}
	if !strings.Contains(problems[0].Message, "holds 2 private endpoint entries, the limit is 2") {
		t.Errorf("message: %s", problems[0].Message)
	}
	full["wc2-api-privatelink-privateendpoint"] = "z"
	if got, problems := WithinLimit(eps, full, 3, 2); len(got) != 1 || len(problems) != 0 {
		t.Errorf("an endpoint the MC holds, over the limit: %v, %v", got, problems)
	}
	if got, problems := WithinLimit(eps, Held{}, 0, 1); len(got) != 1 || len(problems) != 0 {
		t.Errorf("room for one: %v, %v", got, problems)
	}
}

func TestNearLimit(t *testing.T) {
	for _, tc := range []struct {
		entries, limit int
		near           bool
	}{{899, 1000, false}, {900, 1000, true}, {1200, 1000, true}, {1, 2, false}, {2, 2, true}, {5000, 0, false}} {
		if got := nearLimit(tc.entries, tc.limit) != ""; got != tc.near {
			t.Errorf("nearLimit(%d, %d) = %v, want %v", tc.entries, tc.limit, got, tc.near)
		}
	}
}
