package clusterlink

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// entry is an MC endpoint entry to a private link service of wc1.
func entry(name, link string) capz.PrivateEndpoint {
	return capz.PrivateEndpoint{Name: name, Connections: []capz.PrivateLinkServiceConnection{{
		Name: link + "-connection", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "wc1-resources", link),
	}}}
}

// sharedGroup puts a WC in the resource group "shared".
func sharedGroup(a *capz.AzureCluster) { a.ResourceGroup = "shared" }

func sharedEntry(name, link string) capz.PrivateEndpoint {
	return capz.PrivateEndpoint{Name: name, Connections: []capz.PrivateLinkServiceConnection{{
		Name: link + "-connection", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "shared", link),
	}}}
}

func entryNames(m map[string][]capz.PrivateEndpoint) map[string][]string {
	out := map[string][]string{}
	for subnet, eps := range m {
		for _, ep := range eps {
			out[subnet] = append(out[subnet], ep.Name)
		}
	}
	return out
}

func TestLinkServiceIDs(t *testing.T) {
	got := LinkServiceIDs(wc("wc1", func(a *capz.AzureCluster) { a.SubscriptionID = strings.ToUpper(wcSub) }))
	want := map[string]bool{
		strings.ToLower(PrivateLinkServiceID(wcSub, "wc1-resources", "wc1-api-privatelink")): true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declared link and managed link (same name here), lower case (-want +got):\n%s", diff)
	}
	if got := LinkServiceIDs(wc("wc1", func(a *capz.AzureCluster) { a.ResourceGroup = "" })); len(got) != 0 {
		t.Errorf("a WC without resource group has no IDs, got %v", got)
	}
}

func TestCarryHeld(t *testing.T) {
	current := map[string][]capz.PrivateEndpoint{"mc-nodes": {
		sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink"),
		sharedEntry("wc2-api-privatelink-privateendpoint", "wc2-api-privatelink"),
	}}
	for _, tc := range []struct {
		reason string
		want   map[string][]capz.PrivateEndpoint
		held   []*capz.AzureCluster
		result map[string][]string
	}{
		{
			reason: "two WCs in one resource group, one paused: only the paused one's entry is carried, and no name twice",
			want:   map[string][]capz.PrivateEndpoint{"mc-nodes": {sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink")}},
			held:   []*capz.AzureCluster{wc("wc2", sharedGroup)},
			result: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "the active WC of the group is held too (unreadable): its entry is not added a second time",
			want:   map[string][]capz.PrivateEndpoint{"mc-nodes": {sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink")}},
			held:   []*capz.AzureCluster{wc("wc1", sharedGroup), wc("wc2", sharedGroup)},
			result: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint", "wc2-api-privatelink-privateendpoint"}},
		},
		{
			reason: "nothing held: want as it is",
			want:   map[string][]capz.PrivateEndpoint{"mc-nodes": {sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink")}},
			result: map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}},
		},
		{
			reason: "a held WC in another group of the same subscription carries nothing of this group",
			want:   map[string][]capz.PrivateEndpoint{},
			held:   []*capz.AzureCluster{wc("wc2")},
			result: map[string][]string{},
		},
	} {
		got := CarryHeld(tc.want, current, tc.held)
		if diff := cmp.Diff(tc.result, entryNames(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.reason, diff)
		}
	}
}

func TestHoldsEndpointsOf(t *testing.T) {
	mcOwned := map[string][]capz.PrivateEndpoint{"mc-nodes": {sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink")}}
	for _, tc := range []struct {
		reason string
		wc     *capz.AzureCluster
		want   bool
	}{
		{"its own entry holds the WC", wc("wc1", sharedGroup), true},
		{"another WC of the same resource group is not held by it (it would wait forever)", wc("wc2", sharedGroup), false},
		{"the managed link's entry holds the WC too", wc("wc1", sharedGroup, func(a *capz.AzureCluster) { a.PrivateLinks = nil }), true},
	} {
		if got := HoldsEndpointsOf(mcOwned, tc.wc); got != tc.want {
			t.Errorf("%s: got %v", tc.reason, got)
		}
	}
}

func TestWithoutEndpointsOf(t *testing.T) {
	current := map[string][]capz.PrivateEndpoint{"mc-nodes": {
		sharedEntry("wc1-api-privatelink-privateendpoint", "wc1-api-privatelink"),
		sharedEntry("wc2-api-privatelink-privateendpoint", "wc2-api-privatelink"),
	}}
	got := WithoutEndpointsOf(current, []*capz.AzureCluster{wc("wc2", sharedGroup)})
	if diff := cmp.Diff(map[string][]string{"mc-nodes": {"wc1-api-privatelink-privateendpoint"}}, entryNames(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTakenNamesAndSkipTaken(t *testing.T) {
	ac := mc(func(a *capz.AzureCluster) {
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{
			{Name: "ours-privateendpoint"}, {Name: "older-privateendpoint"}, {Name: "users-privateendpoint"}, {Name: "nobodys-privateendpoint"},
		}
	})
	owners := map[capz.EndpointKey][]string{
		{Subnet: "mc-nodes", Name: "ours-privateendpoint"}:  {capz.FieldManager, "capz-manager"},
		{Subnet: "mc-nodes", Name: "older-privateendpoint"}: {"manager"},
		{Subnet: "mc-nodes", Name: "users-privateendpoint"}: {"kubectl-edit"},
	}
	got := TakenNames(ac, owners, []string{"manager"})
	want := map[string]bool{"users-privateendpoint": true, "nobodys-privateendpoint": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TakenNames: the operator's and the older operator's entries are not taken, others are (-want +got):\n%s", diff)
	}
	if got := TakenNames(ac, owners, nil); !got["older-privateendpoint"] {
		t.Errorf("with nothing to adopt, the older operator's entry is someone else's: %v", got)
	}

	eps := []Endpoint{
		{Cluster: "org-a/wc1", Link: "users", PrivateEndpoint: capz.PrivateEndpoint{Name: "users-privateendpoint"}},
		{Cluster: "org-a/wc2", Link: "ours", PrivateEndpoint: capz.PrivateEndpoint{Name: "ours-privateendpoint"}},
	}
	kept, problems := SkipTaken(eps, got, "org-giantswarm/mc")
	if len(kept) != 1 || kept[0].Name != "ours-privateendpoint" {
		t.Errorf("kept %v, want only the endpoint whose name is free", kept)
	}
	if len(problems) != 1 || problems[0].Cluster != "org-a/wc1" || problems[0].Reason != ReasonPrivateEndpointNameTaken ||
		!strings.Contains(problems[0].Message, "users-privateendpoint in org-giantswarm/mc belongs to another field manager") {
		t.Errorf("problems %+v, want one %s on org-a/wc1 naming the entry and its holder", problems, ReasonPrivateEndpointNameTaken)
	}
}

func TestStaleEntries(t *testing.T) {
	ac := mc(func(a *capz.AzureCluster) {
		a.Subnets[0].PrivateEndpoints = []capz.PrivateEndpoint{entry("old-a-privateendpoint", "old-a")}
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{
			entry("old-b-privateendpoint", "old-b"),
			entry("wanted-privateendpoint", "wanted"),
			entry("users-privateendpoint", "users"),
			entry("old-c-privateendpoint", "old-c"),
			entry("ours-privateendpoint", "ours"),
		}
	})
	owners := map[capz.EndpointKey][]string{
		{Subnet: "mc-control-plane", Name: "old-a-privateendpoint"}: {"manager"},
		{Subnet: "mc-nodes", Name: "old-b-privateendpoint"}:         {"manager"},
		{Subnet: "mc-nodes", Name: "wanted-privateendpoint"}:        {"manager"},
		{Subnet: "mc-nodes", Name: "users-privateendpoint"}:         {"kubectl"},
		{Subnet: "mc-nodes", Name: "old-c-privateendpoint"}:         {"manager", "capz-manager"},
		{Subnet: "mc-nodes", Name: "ours-privateendpoint"}:          {"manager", capz.FieldManager},
	}
	got := StaleEntries(ac, owners, []string{"manager"}, map[string]bool{"wanted-privateendpoint": true}, isMCEndpointName)
	want := []StaleEntry{
		{Subnet: 0, Entry: 0, Name: "old-a-privateendpoint"},
		{Subnet: 1, Entry: 3, Name: "old-c-privateendpoint"},
		{Subnet: 1, Entry: 0, Name: "old-b-privateendpoint"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("only the older operator's unwanted entries, last first within a subnet; never a user's, a wanted one or one the operator applies (-want +got):\n%s", diff)
	}
}

func TestLowestNonZeroResult(t *testing.T) {
	r := func(d time.Duration) ctrl.Result { return ctrl.Result{RequeueAfter: d} }
	for _, tc := range []struct {
		a, b, want ctrl.Result
	}{
		{r(0), r(0), r(0)},
		{r(0), r(time.Minute), r(time.Minute)},
		{r(time.Minute), r(0), r(time.Minute)},
		{r(10 * time.Minute), r(time.Second), r(time.Second)},
		{r(time.Second), r(10 * time.Minute), r(time.Second)},
	} {
		if got := lowestNonZeroResult(tc.a, tc.b); got != tc.want {
			t.Errorf("lowestNonZeroResult(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRetiring(t *testing.T) {
	toMC := func(name, link string) capz.PrivateEndpoint {
		return capz.PrivateEndpoint{Name: name, Connections: []capz.PrivateLinkServiceConnection{{
			Name: name + "-connection", PrivateLinkServiceID: PrivateLinkServiceID(mcSub, "mc-rg", link),
		}}}
	}
	w := wc("wc1")
	w.Subnets[0].PrivateEndpoints = []capz.PrivateEndpoint{
		toMC("wc1-to-mc-privatelink-privateendpoint", "mc-ingress-privatelink"),     // wanted
		toMC("wc1-to-mc-gateway-privateendpoint", "mc-gateway-privatelink"),         // the older operator's, no longer wanted
		toMC("wc1-to-mc-extra-privatelink-privateendpoint", "mc-extra-privatelink"), // ours, an extra link dropped
		toMC("wc1-to-mc-users-privateendpoint", "mc-users-privatelink"),             // a user's
		{Name: "wc1-to-other-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{ // ours by name, but not to the MC
			Name: "x", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "elsewhere", "other"),
		}}},
	}
	subnet := w.Subnets[0].Name
	owners := map[capz.EndpointKey][]string{
		{Subnet: subnet, Name: "wc1-to-mc-privatelink-privateendpoint"}:       {capz.FieldManager},
		{Subnet: subnet, Name: "wc1-to-mc-gateway-privateendpoint"}:           {"manager"},
		{Subnet: subnet, Name: "wc1-to-mc-extra-privatelink-privateendpoint"}: {capz.FieldManager},
		{Subnet: subnet, Name: "wc1-to-mc-users-privateendpoint"}:             {"kubectl"},
		{Subnet: subnet, Name: "wc1-to-other-privateendpoint"}:                {capz.FieldManager},
	}
	want := []Endpoint{{PrivateEndpoint: toMC("wc1-to-mc-privatelink-privateendpoint", "mc-ingress-privatelink")}}
	got := Retiring(w, mc(), owners, []string{"manager"}, want)
	var gotNames []string
	for _, ep := range got {
		gotNames = append(gotNames, ep.Name+"->"+ep.Link)
		if ep.Direction != DirectionWCToMC || ep.Subnet != subnet || ep.Cluster != "org-a/wc1" {
			t.Errorf("%s: direction %s, subnet %s, cluster %s", ep.Name, ep.Direction, ep.Subnet, ep.Cluster)
		}
	}
	wantNames := []string{"wc1-to-mc-gateway-privateendpoint->mc-gateway-privatelink", "wc1-to-mc-extra-privatelink-privateendpoint->mc-extra-privatelink"}
	if diff := cmp.Diff(wantNames, gotNames); diff != "" {
		t.Errorf("retiring (-want +got):\n%s", diff)
	}
	// The older operator put the MC's name as resource group.
	older := mc(func(a *capz.AzureCluster) { a.ResourceGroup = "elsewhere" })
	if got := Retiring(w, older, owners, []string{"manager"}, want); len(got) != 0 {
		t.Errorf("an MC in another resource group: %d retiring, want none", len(got))
	}
}
