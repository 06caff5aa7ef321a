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
			{Name: "ours-privateendpoint"}, entry("older-privateendpoint", "older"), {Name: "users-privateendpoint"}, {Name: "nobodys-privateendpoint"},
			// Another controller running as /manager: not the older operator's shape.
			{Name: "other-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{Name: "db", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "wc1-resources", "other")}}},
		}
	})
	owners := map[capz.EndpointKey][]string{
		{Subnet: "mc-nodes", Name: "ours-privateendpoint"}:  {capz.FieldManager, "capz-manager"},
		{Subnet: "mc-nodes", Name: "older-privateendpoint"}: {"manager"},
		{Subnet: "mc-nodes", Name: "users-privateendpoint"}: {"kubectl-edit"},
		{Subnet: "mc-nodes", Name: "other-privateendpoint"}: {"manager"},
	}
	got := TakenNames(ac, owners, OlderInMC([]string{"manager"}))
	want := map[string]bool{"users-privateendpoint": true, "nobodys-privateendpoint": true, "other-privateendpoint": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TakenNames: the operator's and the older operator's entries are not taken, others are, another /manager's too (-want +got):\n%s", diff)
	}
	if got := TakenNames(ac, owners, OlderInMC(nil)); !got["older-privateendpoint"] {
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
			// Another /manager's entry, named like the operator's but with
			// its own connection name: never the older operator's.
			{Name: "db-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{Name: "db", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "wc1-resources", "db")}}},
		}
	})
	owners := map[capz.EndpointKey][]string{
		{Subnet: "mc-control-plane", Name: "old-a-privateendpoint"}: {"manager"},
		{Subnet: "mc-nodes", Name: "old-b-privateendpoint"}:         {"manager"},
		{Subnet: "mc-nodes", Name: "wanted-privateendpoint"}:        {"manager"},
		{Subnet: "mc-nodes", Name: "users-privateendpoint"}:         {"kubectl"},
		{Subnet: "mc-nodes", Name: "old-c-privateendpoint"}:         {"manager", "capz-manager"},
		{Subnet: "mc-nodes", Name: "ours-privateendpoint"}:          {"manager", capz.FieldManager},
		{Subnet: "mc-nodes", Name: "db-privateendpoint"}:            {"manager"},
	}
	got := StaleEntries(ac, owners, OlderInMC([]string{"manager"}), map[string]bool{"wanted-privateendpoint": true}, isMCEndpointName)
	want := []StaleEntry{
		{Subnet: 0, Entry: 0, Name: "old-a-privateendpoint"},
		{Subnet: 1, Entry: 3, Name: "old-c-privateendpoint"},
		{Subnet: 1, Entry: 0, Name: "old-b-privateendpoint"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("only the older operator's unwanted entries, last first within a subnet; never a user's, a wanted one or one the operator applies (-want +got):\n%s", diff)
	}
}

// TestWrittenBackEntries: an entry CAPZ wrote back (CAPI's patch helper
// sends the whole subnets list from an older read) is held by CAPZ alone.
// Of the operator's naming contract or the older operator's shape it is
// taken over and, unwanted, removed; of any other shape it stays someone
// else's, as an entry CAPZ co-holds with a user does.
func TestWrittenBackEntries(t *testing.T) {
	const capzManager = "cluster-api-provider-azure-manager"
	manual := entry("manual-privateendpoint", "manual")
	manual.ManualApproval = true
	manual.Connections[0].RequestMessage = "Management cluster mc requests access to the API server of workload cluster org-a/wc1."
	ac := mc(func(a *capz.AzureCluster) {
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{
			entry("back-privateendpoint", "back"), // the operator's (and the older operator's) shape
			manual,                                // the operator's, manual approval: not the older shape
			{Name: "db-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{Name: "db", PrivateLinkServiceID: PrivateLinkServiceID(wcSub, "wc1-resources", "db")}}},
			entry("users-privateendpoint", "users"), // a user's, CAPZ wrote fields of it too
			entry("wanted-privateendpoint", "wanted"),
		}
	})
	owners := map[capz.EndpointKey][]string{
		{Subnet: "mc-nodes", Name: "back-privateendpoint"}:   {capzManager},
		{Subnet: "mc-nodes", Name: "manual-privateendpoint"}: {capzManager},
		{Subnet: "mc-nodes", Name: "db-privateendpoint"}:     {capzManager},
		{Subnet: "mc-nodes", Name: "users-privateendpoint"}:  {capzManager, "kubectl-edit"},
		{Subnet: "mc-nodes", Name: "wanted-privateendpoint"}: {capzManager},
	}
	older := OlderInMC([]string{"manager"})
	older.WrittenBack = []string{capzManager}
	taken := TakenNames(ac, owners, older)
	if diff := cmp.Diff(map[string]bool{"db-privateendpoint": true, "users-privateendpoint": true}, taken); diff != "" {
		t.Errorf("TakenNames: the written-back entry of another shape and the user's are someone else's (-want +got):\n%s", diff)
	}
	stale := StaleEntries(ac, owners, older, map[string]bool{"wanted-privateendpoint": true}, isMCEndpointName)
	want := []StaleEntry{{Subnet: 1, Entry: 1, Name: "manual-privateendpoint"}, {Subnet: 1, Entry: 0, Name: "back-privateendpoint"}}
	if diff := cmp.Diff(want, stale); diff != "" {
		t.Errorf("StaleEntries (-want +got):\n%s", diff)
	}
	if got := TakenNames(ac, owners, OlderInMC([]string{"manager"})); !got["back-privateendpoint"] {
		t.Errorf("without CAPZ's managers, an entry only CAPZ holds is someone else's: %v", got)
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
		if got := LowestNonZeroResult(tc.a, tc.b); got != tc.want {
			t.Errorf("LowestNonZeroResult(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestRetiring(t *testing.T) {
	toMC := func(name, link string) capz.PrivateEndpoint {
		return capz.PrivateEndpoint{Name: name, Connections: []capz.PrivateLinkServiceConnection{{
			Name: name + "-connection", PrivateLinkServiceID: PrivateLinkServiceID(mcSub, "mc-rg", link),
		}}}
	}
	// The older operator's shape: connection <wc>-to-<mc>-gateway-connection,
	// resource group named after the MC.
	olderGateway := capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{
		Name: "wc1-to-mc-gateway-connection", PrivateLinkServiceID: PrivateLinkServiceID(mcSub, "mc", "mc-gateway-privatelink"),
	}}}
	w := wc("wc1")
	w.Subnets[0].PrivateEndpoints = []capz.PrivateEndpoint{
		toMC("wc1-to-mc-privatelink-privateendpoint", "mc-ingress-privatelink"), // wanted
		olderGateway, // the older operator's, no longer wanted
		toMC("wc1-to-mc-other-privateendpoint", "mc-other-privatelink"),             // another /manager's: not the older shape
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
		{Subnet: subnet, Name: "wc1-to-mc-other-privateendpoint"}:             {"manager"},
		{Subnet: subnet, Name: "wc1-to-mc-extra-privatelink-privateendpoint"}: {capz.FieldManager},
		{Subnet: subnet, Name: "wc1-to-mc-users-privateendpoint"}:             {"kubectl"},
		{Subnet: subnet, Name: "wc1-to-other-privateendpoint"}:                {capz.FieldManager},
	}
	want := []Endpoint{{PrivateEndpoint: toMC("wc1-to-mc-privatelink-privateendpoint", "mc-ingress-privatelink")}}
	got := Retiring(w, mc(), owners, OlderInWC([]string{"manager"}, w, mc()), want)
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
	// The older operator put the MC's name as resource group: with the MC
	// in another group, only its entry still retires.
	elsewhere := mc(func(a *capz.AzureCluster) { a.ResourceGroup = "elsewhere" })
	if got := Retiring(w, elsewhere, owners, OlderInWC([]string{"manager"}, w, elsewhere), want); len(got) != 1 || got[0].Name != olderGateway.Name {
		t.Errorf("an MC in another resource group: %v retiring, want only the older operator's", got)
	}
}

func TestOlderShapes(t *testing.T) {
	conn := func(name, id, msg string) []capz.PrivateLinkServiceConnection {
		return []capz.PrivateLinkServiceConnection{{Name: name, PrivateLinkServiceID: id, RequestMessage: msg}}
	}
	pls := PrivateLinkServiceID(wcSub, "wc1-resources", "wc1-api")
	msg := olderRequestMessagePrefix + "mc created private endpoint in order to access private workload cluster wc1"
	for _, tc := range []struct {
		reason string
		pe     capz.PrivateEndpoint
		want   bool
	}{
		{"the older operator's auto-approved MC entry", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", Connections: conn("wc1-api-connection", pls, "")}, true},
		{"the older operator's manual MC entry with its message", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", ManualApproval: true, Connections: conn("wc1-api-connection", pls, msg)}, true},
		{"manual with another message: not the older operator's", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", ManualApproval: true, Connections: conn("wc1-api-connection", pls, "please")}, false},
		{"a message without manual approval", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", Connections: conn("wc1-api-connection", pls, msg)}, false},
		{"another connection name", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", Connections: conn("db", pls, "")}, false},
		{"a name that is not <link>-privateendpoint", capz.PrivateEndpoint{Name: "wc1-db-privateendpoint", Connections: conn("wc1-api-connection", pls, "")}, false},
		{"not a private link service ID", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", Connections: conn("wc1-api-connection", "/subscriptions/s/resourceGroups/r/providers/Microsoft.Storage/storageAccounts/wc1-api", "")}, false},
		{"two connections", capz.PrivateEndpoint{Name: "wc1-api-privateendpoint", Connections: append(conn("wc1-api-connection", pls, ""), conn("x", pls, "")...)}, false},
	} {
		if got := OlderMCEntry(tc.pe); got != tc.want {
			t.Errorf("OlderMCEntry: %s: got %v", tc.reason, got)
		}
	}
	m := mc()
	wcShape := OlderWCEntry("wc1", m)
	for _, tc := range []struct {
		reason string
		pe     capz.PrivateEndpoint
		want   bool
	}{
		{"0.2-0.4 ingress entry", capz.PrivateEndpoint{Name: "wc1-to-mc-privatelink-privateendpoint", Connections: conn("wc1-to-mc-connection", PrivateLinkServiceID(mcSub, "mc", "mc-ingress-privatelink"), "")}, true},
		{"0.4-0.7 gateway entry", capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", Connections: conn("wc1-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "mc", "mc-gateway-privatelink"), "")}, true},
		{"in the MC's real resource group (where it differs from the MC's name, the only entry that worked)", capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", Connections: conn("wc1-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "mc-rg", "mc-gateway-privatelink"), "")}, true},
		{"in another resource group", capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", Connections: conn("wc1-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "elsewhere", "mc-gateway-privatelink"), "")}, false},
		{"another link", capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", Connections: conn("wc1-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "mc", "other"), "")}, false},
		{"manual approval", capz.PrivateEndpoint{Name: "wc1-to-mc-gateway-privateendpoint", ManualApproval: true, Connections: conn("wc1-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "mc", "mc-gateway-privatelink"), "")}, false},
		{"another cluster's name", capz.PrivateEndpoint{Name: "wc2-to-mc-gateway-privateendpoint", Connections: conn("wc2-to-mc-gateway-connection", PrivateLinkServiceID(mcSub, "mc", "mc-gateway-privatelink"), "")}, false},
	} {
		if got := wcShape(tc.pe); got != tc.want {
			t.Errorf("OlderWCEntry: %s: got %v", tc.reason, got)
		}
	}
	if (Older{Managers: []string{"manager"}, Shape: OlderMCEntry}).Holds([]string{"capz"}, entry("wc1-api-privateendpoint", "wc1-api")) {
		t.Error("Holds: an entry of the older shape held by another manager is not the older operator's")
	}
}
