package dnsengine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	clocktesting "k8s.io/utils/clock/testing"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// TestRecordSetLimit: a zone holds as many record sets as Azure allows
// (five here, its SOA record set included). The engine counts them from
// the zone's own figures and its own writes: the record set that takes
// the zone to 90 % gets a Warning, one beyond the limit is not requested
// (a RecordSetLimitError, no PUT, no refusal from Azure), a record set
// that exists is still written at the limit, and room made by someone
// else deleting one is seen (near the limit the zone is read before each
// new record set), as are record sets others made (a restarted engine
// reads the zone's count).
func TestRecordSetLimit(t *testing.T) {
	w := newLimitedWorld(t, azuresim.Limits{RecordSetsPerZone: 5})
	ctx := context.Background()
	e := &dnsengine.Engine{}
	api := &counted{API: w.sdk}
	var warnings []string
	tg := func(name string) dnsengine.Target {
		t := target(api, "shared.example.internal", true, owner(name))
		t.Warning = func(reason, msg string) { warnings = append(warnings, reason+": "+msg) }
		return t
	}
	converge2(t, e, tg("a"), []string{"api.a", "*.apps.a"}, "10.9.2.4", false) // SOA and 2
	if len(warnings) != 0 {
		t.Errorf("warnings at 3 of 5: %v", warnings)
	}
	converge2(t, e, tg("b"), []string{"api.b", "*.apps.b"}, "10.9.2.5", false) // 5 of 5
	if len(warnings) != 1 {
		t.Errorf("want one %s warning, for the fifth record set: %v", dnsengine.ReasonRecordSetLimitNear, warnings)
	}

	_, writes := api.counts()
	_, err := e.WriteRecord(ctx, tg("c"), "api.c", []string{"10.9.2.6"}, 300, false)
	var full *dnsengine.RecordSetLimitError
	if !errors.As(err, &full) || full.Used != 5 || full.Limit != 5 || full.FQDN != "api.c.shared.example.internal" {
		t.Fatalf("a sixth record set: %v, want a RecordSetLimitError of 5 of 5", err)
	}
	if _, wr := api.counts(); wr != writes {
		t.Errorf("%d writes sent for a record set beyond the limit", wr-writes)
	}
	if n := w.sim.Counters().Errors["RecordSetsPerZoneLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d record sets", n)
	}
	if w.sim.Resolve(vnet, "api.c.shared.example.internal").Status == azuresim.ResolveOK {
		t.Error("a record set beyond the limit resolves")
	}

	// At the limit a record set that exists is written (an address moved).
	if taken, err := e.WriteRecord(ctx, tg("a"), "api.a", []string{"10.9.2.9"}, 300, true); err != nil || taken != nil {
		t.Fatalf("rewriting an existing record set at the limit: %v %+v", err, taken)
	}
	if res := w.sim.Resolve(vnet, "api.a.shared.example.internal"); res.Status != azuresim.ResolveOK || res.Addresses[0] != "10.9.2.9" {
		t.Errorf("api.a after its rewrite: %+v", res)
	}

	// Someone deletes a record set outside the operator: the zone is read
	// before the next new one, and c gets its place.
	if _, err := w.sdk.Factory.NewRecordSetsClient().Delete(ctx, rg, "shared.example.internal", armprivatedns.RecordTypeA, "*.apps.b", nil); err != nil {
		t.Fatal(err)
	}
	if taken, err := e.WriteRecord(ctx, tg("c"), "api.c", []string{"10.9.2.6"}, 300, false); err != nil || taken != nil {
		t.Fatalf("a record set once there is room: %v %+v", err, taken)
	}

	// A new process counts what is there, whoever made it: someone
	// else's record set takes the last place first.
	restarted := &dnsengine.Engine{}
	if _, err := w.sdk.Factory.NewRecordSetsClient().Delete(ctx, rg, "shared.example.internal", armprivatedns.RecordTypeA, "api.c", nil); err != nil {
		t.Fatal(err)
	}
	other := dns.RecordBody(nil, []string{"10.9.9.9"}, 300, "")
	delete(other.Properties.Metadata, dns.OwnerMetadata)
	if _, err := w.sdk.Factory.NewRecordSetsClient().CreateOrUpdate(ctx, rg, "shared.example.internal", armprivatedns.RecordTypeA, "by-hand", other, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.EnsureZone(ctx, tg("d"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.WriteRecord(ctx, tg("d"), "api.d", []string{"10.9.2.7"}, 300, false); !errors.As(err, &full) {
		t.Fatalf("a restarted engine in a zone filled by someone else: %v", err)
	}
	if n := w.sim.Counters().Errors["RecordSetsPerZoneLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d record sets", n)
	}
}

// TestZoneLimit: a subscription holds three private DNS zones (azuresim
// refuses a fourth, as Azure does beyond its 1,000), one of them made by
// hand. The engine counts them by listing the subscription's zones: the
// zone that takes the last place gets a Warning; one beyond it is not
// requested (a ZoneLimitError, no PUT, no refusal from Azure) while a zone
// that exists is used as always, also by a restarted engine; room made by
// someone else is seen (near the limit the zones are listed before each
// new one). An identity that may not list the subscription's zones
// creates its zone without the count.
func TestZoneLimit(t *testing.T) {
	w := newLimitedWorld(t, azuresim.Limits{PrivateDNSZonesPerSubscription: 3})
	ctx := context.Background()
	zones := w.sdk.Factory.NewPrivateZonesClient()
	byHand := func(name string) {
		t.Helper()
		p, err := zones.BeginCreateOrUpdate(ctx, rg, name, armprivatedns.PrivateZone{Location: new("global")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.PollUntilDone(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	byHand("by-hand.internal")
	clock := clocktesting.NewFakePassiveClock(time.Now())
	e := &dnsengine.Engine{ZoneLimit: 3, Clock: clock}
	api := &counted{API: w.sdk}
	var warnings []string
	tg := func(zone string) dnsengine.Target {
		t := target(api, zone, false, owner(strings.Split(zone, ".")[0]))
		t.Warning = func(reason, msg string) { warnings = append(warnings, reason+": "+msg) }
		return t
	}
	converge(t, e, tg("a.internal"), false)
	if len(warnings) != 0 {
		t.Errorf("warnings at 2 of 3: %v", warnings)
	}
	converge(t, e, tg("b.internal"), false)
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], dnsengine.ReasonZoneLimitNear) {
		t.Errorf("want one %s warning, for the third zone: %v", dnsengine.ReasonZoneLimitNear, warnings)
	}

	_, writes := api.counts()
	_, err := e.EnsureZone(ctx, tg("c.internal"), false)
	var full *dnsengine.ZoneLimitError
	if !errors.As(err, &full) || full.Used != 3 || full.Limit != 3 || full.Zone != "c.internal" {
		t.Fatalf("a fourth zone: %v, want a ZoneLimitError of 3 of 3", err)
	}
	if _, wr := api.counts(); wr != writes {
		t.Errorf("%d writes sent for a zone beyond the limit", wr-writes)
	}
	if n := w.sim.Counters().Errors["PrivateDnsZonesPerSubscriptionLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d zones", n)
	}

	// A restarted engine that does not know a.internal exists uses it.
	if st, err := (&dnsengine.Engine{ZoneLimit: 3}).EnsureZone(ctx, tg("a.internal"), false); err != nil || !st.Ready {
		t.Fatalf("a zone that exists, at the limit: %+v %v", st, err)
	}

	// Someone deletes the zone they made: near the limit the zones are
	// listed again once the last list is a minute old, and c gets its
	// place.
	p, err := zones.BeginDelete(ctx, rg, "by-hand.internal", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.EnsureZone(ctx, tg("c.internal"), false); !errors.As(err, &full) {
		t.Fatalf("a fourth zone within a minute of the last list: %v, want the count as listed", err)
	}
	clock.SetTime(clock.Now().Add(time.Minute))
	converge(t, e, tg("c.internal"), false)
	if n := w.sim.Counters().Errors["PrivateDnsZonesPerSubscriptionLimitExceeded"]; n != 0 {
		t.Errorf("Azure refused %d zones", n)
	}

	// An identity scoped to the resource group cannot list the
	// subscription's zones: it requests its zone without the count, and
	// gets Azure's refusal at the limit (as before the count existed).
	w.sim.AddPrincipal(azuresim.Principal{TenantID: tenant, ClientID: "rg-only", ClientSecret: "rg-secret", Scopes: []string{"/subscriptions/" + sub + "/resourceGroups/" + rg}})
	scoped := dns.SDK{Factory: factory(t, w.sim, "rg-only", "rg-secret")}
	if _, err := scoped.ZoneCount(ctx); err == nil {
		t.Fatal("a principal scoped to a resource group listed the subscription's zones: the case is not shown")
	}
	_, err = (&dnsengine.Engine{ZoneLimit: 3}).EnsureZone(ctx, target(scoped, "d.internal", false, owner("d")), false)
	if errors.As(err, &full) || w.sim.Counters().Errors["PrivateDnsZonesPerSubscriptionLimitExceeded"] != 1 {
		t.Fatalf("an identity that cannot count: %v, want the zone requested and Azure's refusal", err)
	}
}
