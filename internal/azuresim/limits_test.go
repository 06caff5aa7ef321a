package azuresim_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestLimits reaches each of Azure's resource-count limits, lowered so that
// a few resources reach them: the request over a limit is a 400 with its
// code, an update of what exists is never refused, and another scope (a
// subscription, zone or network) has its own count.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, azuresim.Options{Limits: azuresim.Limits{
		PrivateDNSZonesPerSubscription:        2,
		RecordSetsPerZone:                     3, // the SOA record set and two more
		RecordsPerRecordSet:                   2,
		VirtualNetworkLinksPerZone:            1,
		ZonesPerVirtualNetwork:                2,
		PrivateEndpointsPerVirtualNetwork:     1,
		PrivateLinkServicesPerSubscription:    1,
		PrivateEndpointsPerPrivateLinkService: 2,
	}})
	prov := newProvider(t, e, providerSub, "prov", "10.1")
	prov2 := newProvider(t, e, providerSub, "prov2", "10.2")
	guestA := newProvider(t, e, consumerSub, "guest-a", "10.3")
	guestB := newProvider(t, e, consumerSub, "guest-b", "10.4")
	guestC := newProvider(t, e, consumerSub, "guest-c", "10.5")
	e.seedGroup(t, consumerSub, "dns")

	zones := e.dns(t, consumerSub).NewPrivateZonesClient()
	records := e.dns(t, consumerSub).NewRecordSetsClient()
	links := e.dns(t, consumerSub).NewVirtualNetworkLinksClient()
	zone := func(name string) error {
		return pollErr(func() (*poller[armprivatedns.PrivateZonesClientCreateOrUpdateResponse], error) {
			return zones.BeginCreateOrUpdate(ctx, "dns", name, armprivatedns.PrivateZone{Location: new("global")}, nil)
		})
	}
	record := func(zone, name string, ips ...string) error {
		rs := armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(10))}}
		for _, ip := range ips {
			rs.Properties.ARecords = append(rs.Properties.ARecords, &armprivatedns.ARecord{IPv4Address: new(ip)})
		}
		_, err := records.CreateOrUpdate(ctx, "dns", zone, armprivatedns.RecordTypeA, name, rs, nil)
		return err
	}
	link := func(zone, name, vnetID string) error {
		return pollErr(func() (*poller[armprivatedns.VirtualNetworkLinksClientCreateOrUpdateResponse], error) {
			return links.BeginCreateOrUpdate(ctx, "dns", zone, name, armprivatedns.VirtualNetworkLink{
				Location:   new("global"),
				Properties: &armprivatedns.VirtualNetworkLinkProperties{VirtualNetwork: &armprivatedns.SubResource{ID: new(vnetID)}},
			}, nil)
		})
	}
	services := e.network(t, providerSub).NewPrivateLinkServicesClient()
	service := func(p provider, name string) error {
		return pollErr(func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
			return services.BeginCreateOrUpdate(ctx, p.rg, name, p.plsBody([]string{"*"}, []string{consumerSub}), nil)
		})
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("service", service(prov, "svc"))
	plsID := "/subscriptions/" + providerSub + "/resourceGroups/prov/providers/Microsoft.Network/privateLinkServices/svc"
	endpoints := e.network(t, consumerSub).NewPrivateEndpointsClient()
	endpoint := func(p provider, name string) error {
		return pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
			return endpoints.BeginCreateOrUpdate(ctx, p.rg, name, peBody(p.nodeSubnetID, plsID, false), nil)
		})
	}

	must("zone a.example", zone("a.example"))
	must("zone b.example", zone("b.example"))
	must("zone b.example again (an update)", zone("b.example"))
	must("record api", record("a.example", "api", "10.0.0.1", "10.0.0.2"))
	must("record *.apps", record("a.example", "*.apps", "10.0.0.3"))
	must("record api updated", record("a.example", "api", "10.0.0.4"))
	must("link a.example to guest-a", link("a.example", "guest-a", guestA.vnetID))
	must("link b.example to guest-a", link("b.example", "guest-a", guestA.vnetID))
	must("endpoint in guest-a", endpoint(guestA, "pe-a"))
	must("endpoint in guest-b", endpoint(guestB, "pe-b"))
	must("endpoint pe-a again (an update)", endpoint(guestA, "pe-a"))

	cases := []struct {
		reason string
		err    error
		code   string
	}{
		{"a third zone in the subscription", zone("c.example"), "PrivateDnsZonesPerSubscriptionLimitExceeded"},
		{"a zone of one label", zone("example"), "BadRequest"},
		{"a zone of 35 labels", zone(strings.Repeat("a.", 34) + "example"), "BadRequest"},
		{"a reserved zone name", zone("core.windows.net"), "BadRequest"},
		{"a fourth record set in a zone of three (SOA included)", record("a.example", "oauth", "10.0.0.5"), "RecordSetsPerZoneLimitExceeded"},
		{"three records in one set", record("a.example", "api", "10.0.0.1", "10.0.0.2", "10.0.0.3"), "RecordsPerRecordSetLimitExceeded"},
		{"a second link to a zone", link("a.example", "guest-b", guestB.vnetID), "VirtualNetworkLinksPerZoneLimitExceeded"},
		{"a second endpoint in a network", endpoint(guestA, "pe-a2"), "PrivateEndpointsPerVirtualNetworkLimitExceeded"},
		{"a third endpoint to a service", endpoint(guestC, "pe-c"), "PrivateEndpointsPerPrivateLinkServiceLimitExceeded"},
		{"a second service in the subscription", service(prov2, "svc2"), "PrivateLinkServicesPerSubscriptionLimitExceeded"},
	}
	want := map[string]int{}
	for _, tc := range cases {
		if code, status := errorCode(tc.err); code != tc.code || status != http.StatusBadRequest {
			t.Errorf("%s: want 400 %s, got %d %s", tc.reason, tc.code, status, code)
		}
		want[tc.code]++
	}
	// Each refusal is counted under its code, so a test can tell a limit's
	// refusal from any other 400.
	if got := e.srv.Counters().Errors; !maps.Equal(got, want) {
		t.Errorf("error counters: got %v, want %v", got, want)
	}
	// ErrorAnswers says the same by principal and request: whose request
	// of which kind Azure refused.
	byCode := map[string]int{}
	for _, a := range e.srv.Counters().ErrorAnswers {
		byCode[a.Code] += a.Count
		if a.Principal != clientID || a.Status != http.StatusBadRequest || a.Method != http.MethodPut {
			t.Errorf("error answer %+v: want a PUT of %s answered 400", a, clientID)
		}
		if a.Code == "PrivateEndpointsPerVirtualNetworkLimitExceeded" && a.ResourceType != "Microsoft.Network/privateEndpoints" {
			t.Errorf("error answer %+v: want resource type Microsoft.Network/privateEndpoints", a)
		}
	}
	if !maps.Equal(byCode, want) {
		t.Errorf("error answers by code: got %v, want %v", byCode, want)
	}

	// Zones linked to one network: guest-a has two; the limit is two. The
	// zone in the other subscription has a count of its own.
	e.seedGroup(t, providerSub, "dns")
	other := e.dns(t, providerSub).NewPrivateZonesClient()
	must("a zone in another subscription", pollErr(func() (*poller[armprivatedns.PrivateZonesClientCreateOrUpdateResponse], error) {
		return other.BeginCreateOrUpdate(ctx, "dns", "c.example", armprivatedns.PrivateZone{Location: new("global")}, nil)
	}))
	otherLinks := e.dns(t, providerSub).NewVirtualNetworkLinksClient()
	err := pollErr(func() (*poller[armprivatedns.VirtualNetworkLinksClientCreateOrUpdateResponse], error) {
		return otherLinks.BeginCreateOrUpdate(ctx, "dns", "c.example", "guest-a", armprivatedns.VirtualNetworkLink{
			Location:   new("global"),
			Properties: &armprivatedns.VirtualNetworkLinkProperties{VirtualNetwork: &armprivatedns.SubResource{ID: new(guestA.vnetID)}},
		}, nil)
	})
	if code, status := errorCode(err); code != "ZonesPerVirtualNetworkLimitExceeded" || status != http.StatusBadRequest {
		t.Errorf("a third zone linked to guest-a: want 400 ZonesPerVirtualNetworkLimitExceeded, got %d %s", status, code)
	}
}

// TestProviderThrottling fills the Private DNS read window of a
// subscription: the next read is 429 with Retry-After 10 (Azure's value),
// whichever principal asks; another subscription and the writes are not
// affected; an exempt principal is never refused.
func TestProviderThrottling(t *testing.T) {
	ctx := context.Background()
	open := azuresim.Bucket{Burst: 1000, PerSecond: 1000}
	throttling := azuresim.Throttling{
		Enabled: true, Reads: open, Writes: open, Deletes: open,
		PrivateDNSReads: azuresim.Window{Limit: 3, Period: time.Hour},
		NetworkWrites:   azuresim.Window{Limit: 100, Period: time.Hour},
	}
	e := newEnv(t, azuresim.Options{Throttling: throttling})
	e.seedGroup(t, consumerSub, "dns")
	e.seedGroup(t, providerSub, "dns")
	zones := e.dns(t, consumerSub).NewPrivateZonesClient()
	mustPoll(t, func() (*poller[armprivatedns.PrivateZonesClientCreateOrUpdateResponse], error) {
		return zones.BeginCreateOrUpdate(ctx, "dns", "a.example", armprivatedns.PrivateZone{Location: new("global")}, nil)
	})
	var raw *http.Response
	var err error
	for i := 0; err == nil && i < 10; i++ {
		_, err = zones.Get(policy.WithCaptureResponse(ctx, &raw), "dns", "a.example", nil)
	}
	if code, status := errorCode(err); status != http.StatusTooManyRequests || code != "TooManyRequests" {
		t.Fatalf("reads past the window: want 429 TooManyRequests, got %d %s", status, code)
	}
	if ra := raw.Header.Get("Retry-After"); ra != "10" {
		t.Errorf("Retry-After = %q, want Azure's 10", ra)
	}
	if _, err := e.dns(t, providerSub).NewPrivateZonesClient().Get(ctx, "dns", "nothing.example", nil); func() bool {
		code, _ := errorCode(err)
		return code != "ResourceNotFound"
	}() {
		t.Errorf("another subscription's read: want ResourceNotFound, got %v", err)
	}
	if _, err := e.dns(t, consumerSub).NewRecordSetsClient().CreateOrUpdate(ctx, "dns", "a.example", armprivatedns.RecordTypeA, "api",
		armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(10))}}, nil); err != nil {
		t.Errorf("a write while reads are throttled: %v", err)
	}

	// The CAPZ stand-in of a benchmark is exempt: never refused.
	throttling.Exempt = []string{clientID}
	e.srv.SetThrottling(throttling)
	for i := range 5 {
		if _, err := zones.Get(ctx, "dns", "a.example", nil); err != nil {
			t.Fatalf("exempt read %d: %v", i, err)
		}
	}
}

// TestHighScaleNetwork: a network whose privateEndpointVNetPolicies is
// Basic (high-scale private endpoints) takes the high-scale limit, any
// other network the usual one; the answer beyond either is the same 400.
func TestHighScaleNetwork(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, azuresim.Options{Limits: azuresim.Limits{PrivateEndpointsPerVirtualNetwork: 1, PrivateEndpointsPerHighScaleVirtualNetwork: 2}})
	prov := newProvider(t, e, providerSub, "prov", "10.1")
	mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
		return e.network(t, providerSub).NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, prov.rg, "svc", prov.plsBody([]string{"*"}, []string{consumerSub}), nil)
	})
	plsID := "/subscriptions/" + providerSub + "/resourceGroups/prov/providers/Microsoft.Network/privateLinkServices/svc"
	e.seedGroup(t, consumerSub, "guest")
	vnets := e.network(t, consumerSub).NewVirtualNetworksClient()
	for i, policy := range []armnetwork.PrivateEndpointVNetPolicies{armnetwork.PrivateEndpointVNetPoliciesBasic, armnetwork.PrivateEndpointVNetPoliciesDisabled} {
		mustPoll(t, func() (*poller[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], error) {
			return vnets.BeginCreateOrUpdate(ctx, "guest", string(policy), armnetwork.VirtualNetwork{Location: new(location), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace:                &armnetwork.AddressSpace{AddressPrefixes: []*string{new(fmt.Sprintf("10.%d.0.0/16", 20+i))}},
				Subnets:                     []*armnetwork.Subnet{{Name: new("pe"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(fmt.Sprintf("10.%d.0.0/24", 20+i))}}},
				PrivateEndpointVNetPolicies: new(policy),
			}}, nil)
		})
	}
	endpoints := e.network(t, consumerSub).NewPrivateEndpointsClient()
	endpoint := func(vnet, name string) error {
		subnet := "/subscriptions/" + consumerSub + "/resourceGroups/guest/providers/Microsoft.Network/virtualNetworks/" + vnet + "/subnets/pe"
		return pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
			return endpoints.BeginCreateOrUpdate(ctx, "guest", name, peBody(subnet, plsID, false), nil)
		})
	}
	basic, disabled := string(armnetwork.PrivateEndpointVNetPoliciesBasic), string(armnetwork.PrivateEndpointVNetPoliciesDisabled)
	for _, tc := range []struct {
		vnet, name, code string
	}{
		{basic, "hs-1", ""}, {basic, "hs-2", ""}, {basic, "hs-3", "PrivateEndpointsPerVirtualNetworkLimitExceeded"},
		{disabled, "std-1", ""}, {disabled, "std-2", "PrivateEndpointsPerVirtualNetworkLimitExceeded"},
	} {
		err := endpoint(tc.vnet, tc.name)
		if code, _ := errorCode(err); code != tc.code {
			t.Errorf("%s in the %s network: %v, want %q", tc.name, tc.vnet, err, tc.code)
		}
	}
}
