package azuresim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestPrivateDNS creates a zone, A records and a VNet link, checks Azure's
// refusals (a VNet linked twice, a zone deleted while linked), and deletes in
// reverse order: records, link, zone.
func TestPrivateDNS(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "dns-rg", "10.1")
	df := e.dns(t, providerSub)
	zones, records, links := df.NewPrivateZonesClient(), df.NewRecordSetsClient(), df.NewVirtualNetworkLinksClient()
	const zone = "wc1.example.internal"

	z := mustPoll(t, func() (*poller[armprivatedns.PrivateZonesClientCreateOrUpdateResponse], error) {
		return zones.BeginCreateOrUpdate(ctx, "dns-rg", zone, armprivatedns.PrivateZone{Location: new("global")}, nil)
	})
	if *z.Properties.ProvisioningState != armprivatedns.ProvisioningStateSucceeded {
		t.Errorf("zone provisioningState: %s", *z.Properties.ProvisioningState)
	}
	for _, name := range []string{"api", "*.apps"} {
		rs, err := records.CreateOrUpdate(ctx, "dns-rg", zone, armprivatedns.RecordTypeA, name, armprivatedns.RecordSet{
			Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(300)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new("10.2.0.5")}}},
		}, nil)
		if err != nil {
			t.Fatalf("A record %s: %v", name, err)
		}
		if want := name + "." + zone + "."; *rs.Properties.Fqdn != want {
			t.Errorf("fqdn: want %s, got %s", want, *rs.Properties.Fqdn)
		}
	}
	var names []string
	pager := records.NewListByTypePager("dns-rg", zone, armprivatedns.RecordTypeA, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range page.Value {
			names = append(names, *rs.Name)
		}
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"*.apps", "api"}, names); diff != "" {
		t.Errorf("A records (-want +got):\n%s", diff)
	}

	link := armprivatedns.VirtualNetworkLink{Location: new("global"), Properties: &armprivatedns.VirtualNetworkLinkProperties{
		VirtualNetwork: &armprivatedns.SubResource{ID: new(prov.vnetID)},
	}}
	l := mustPoll(t, func() (*poller[armprivatedns.VirtualNetworkLinksClientCreateOrUpdateResponse], error) {
		return links.BeginCreateOrUpdate(ctx, "dns-rg", zone, "vnet-link", link, nil)
	})
	if *l.Properties.VirtualNetworkLinkState != armprivatedns.VirtualNetworkLinkStateCompleted {
		t.Errorf("link state: %s", *l.Properties.VirtualNetworkLinkState)
	}
	secondLinkFails(t, links, zone, link)
	err := pollErr(func() (*poller[armprivatedns.PrivateZonesClientDeleteResponse], error) {
		return zones.BeginDelete(ctx, "dns-rg", zone, nil)
	})
	if got := codeAndStatus(errorCode(err)); got != "CannotDeleteResource 409" {
		t.Errorf("deleting a linked zone: want 409 CannotDeleteResource, got %v", err)
	}

	for _, name := range []string{"api", "*.apps"} {
		if _, err := records.Delete(ctx, "dns-rg", zone, armprivatedns.RecordTypeA, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"vnet-link", "second-link"} {
		mustPoll(t, func() (*poller[armprivatedns.VirtualNetworkLinksClientDeleteResponse], error) {
			return links.BeginDelete(ctx, "dns-rg", zone, name, nil)
		})
	}
	mustPoll(t, func() (*poller[armprivatedns.PrivateZonesClientDeleteResponse], error) {
		return zones.BeginDelete(ctx, "dns-rg", zone, nil)
	})
	if _, err := zones.Get(ctx, "dns-rg", zone, nil); err == nil {
		t.Error("zone still exists after delete")
	}
}

// TestAdminAPI uses the admin API over plain HTTP the way a user with curl
// would: seed, list, approve a pending connection as the owner, inject a
// fault, read counters, change settings, reset.
// secondLinkFails links the zone's network again under another name:
// Azure accepts it and fails its operation with Conflict; the link stays,
// Failed.
func secondLinkFails(t *testing.T, links *armprivatedns.VirtualNetworkLinksClient, zone string, link armprivatedns.VirtualNetworkLink) {
	t.Helper()
	ctx := context.Background()
	err := pollErr(func() (*poller[armprivatedns.VirtualNetworkLinksClientCreateOrUpdateResponse], error) {
		return links.BeginCreateOrUpdate(ctx, "dns-rg", zone, "second-link", link, nil)
	})
	if code, status := errorCode(err); code != "Conflict" || status != http.StatusOK {
		t.Errorf("linking a VNet twice: want the operation to fail with Conflict, got %d %s", status, code)
	}
	second, err := links.Get(ctx, "dns-rg", zone, "second-link", nil)
	if err != nil || ptr.Deref(second.Properties.ProvisioningState, "") != armprivatedns.ProvisioningStateFailed {
		t.Errorf("the second link after its operation failed: want Failed, got %v (%v)", second.Properties, err)
	}
}

func TestAdminAPI(t *testing.T) {
	srv := azuresim.New(azuresim.Options{NoAuth: true})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	a := adminClient{t: t, base: srv.URL()}
	rg := "/subscriptions/" + providerSub + "/resourceGroups/rg"
	peURL := rg + "/providers/Microsoft.Network/privateEndpoints/pe?api-version=2024-06-01"

	if code, body := a.do(http.MethodGet, "/_sim/health", ""); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("health: %d %s", code, body)
	}
	if code, body := a.do(http.MethodPost, "/_sim/seed", string(mustJSON(t, adminSeed(t, rg)))); code != http.StatusNoContent {
		t.Fatalf("seed: %d %s", code, body)
	}
	if code, body := a.do(http.MethodPost, "/_sim/seed", `{"resources":[{"id":"/nonsense","body":{}}]}`); code != http.StatusBadRequest {
		t.Errorf("a bad seed: want 400, got %d %s", code, body)
	}
	code, body := a.do(http.MethodGet, "/_sim/resources?type=Microsoft.Network/privateEndpoints", "")
	var infos []azuresim.ResourceInfo
	if err := json.Unmarshal([]byte(body), &infos); err != nil || code != 200 || len(infos) != 1 || infos[0].ProvisioningState != "Succeeded" {
		t.Fatalf("resources: %d %s", code, body)
	}

	if s := a.endpointStatus(peURL); s != azuresim.ConnectionPending {
		t.Errorf("before approval: %s", s)
	}
	action := azuresim.ConnectionAction{PrivateLinkServiceID: rg + "/providers/Microsoft.Network/privateLinkServices/svc",
		PrivateEndpointID: rg + "/providers/Microsoft.Network/privateEndpoints/pe", Status: "Approved", Description: "ok by owner"}
	if code, body := a.do(http.MethodPost, "/_sim/connections", string(mustJSON(t, action))); code != http.StatusNoContent {
		t.Fatalf("approve: %d %s", code, body)
	}
	if s := a.endpointStatus(peURL); s != azuresim.ConnectionApproved {
		t.Errorf("after approval: %s", s)
	}
	a.checkFaultsAndCounters(peURL)
	a.checkConfigAndReset()
}

type adminClient struct {
	t    *testing.T
	base string
}

func (a adminClient) do(method, path, body string) (int, string) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (a adminClient) endpointStatus(peURL string) string {
	a.t.Helper()
	_, b := a.do(http.MethodGet, peURL, "")
	var pe armnetwork.PrivateEndpoint
	if err := json.Unmarshal([]byte(b), &pe); err != nil {
		a.t.Fatalf("endpoint: %v: %s", err, b)
	}
	return *pe.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status
}

func (a adminClient) checkFaultsAndCounters(peURL string) {
	t := a.t
	t.Helper()
	if code, body := a.do(http.MethodPost, "/_sim/faults", `{"method":"GET","status":503,"count":1}`); code != http.StatusCreated {
		t.Fatalf("fault: %d %s", code, body)
	}
	if code, _ := a.do(http.MethodGet, peURL, ""); code != 503 {
		t.Errorf("injected fault: want 503, got %d", code)
	}
	if code, body := a.do(http.MethodPost, "/_sim/faults", `{"status":200}`); code != http.StatusBadRequest {
		t.Errorf("a fault with a success status: want 400, got %d %s", code, body)
	}
	_, body := a.do(http.MethodGet, "/_sim/counters", "")
	var c azuresim.Counters
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatal(err)
	}
	if n := c.Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 503, 503); n != 1 {
		t.Errorf("counted %d 503s on private endpoints, want 1: %s", n, body)
	}
}

func (a adminClient) checkConfigAndReset() {
	t := a.t
	t.Helper()
	if code, body := a.do(http.MethodPut, "/_sim/config", `{"latency":"2s","pageSize":5}`); code != 200 || !strings.Contains(body, `"latency":"2s"`) {
		t.Errorf("config: %d %s", code, body)
	}
	if code, _ := a.do(http.MethodPost, "/_sim/reset", ""); code != http.StatusNoContent {
		t.Errorf("reset: %d", code)
	}
	if _, body := a.do(http.MethodGet, "/_sim/resources", ""); strings.TrimSpace(body) != "[]" {
		t.Errorf("after reset: %s", body)
	}
}

// adminSeed is a seed document: a VNet, an internal Standard load balancer,
// a private link service and a manual private endpoint to it.
func adminSeed(t testing.TB, rg string) azuresim.Seed {
	t.Helper()
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	prov := provider{sub: providerSub, rg: "rg", natSubnetID: vnet + "/subnets/nat", frontendID: rg + "/providers/Microsoft.Network/loadBalancers/lb/frontendIPConfigurations/fe"}
	return azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: providerSub, Name: "rg", Location: location}},
		Resources: []azuresim.SeedResource{
			{ID: vnet, Body: mustJSON(t, armnetwork.VirtualNetwork{Location: new(location), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.5.0.0/16")}},
				Subnets: []*armnetwork.Subnet{
					{Name: new("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.5.0.0/24")}},
					{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.5.1.0/24"),
						PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)}},
				},
			}})},
			{ID: rg + "/providers/Microsoft.Network/loadBalancers/lb", Body: mustJSON(t, armnetwork.LoadBalancer{
				Location: new(location), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
				Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
					Name: new("fe"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: new(vnet + "/subnets/nodes")}},
				}}},
			})},
			{ID: rg + "/providers/Microsoft.Network/privateLinkServices/svc", Body: mustJSON(t, prov.plsBody(nil, nil))},
			{ID: rg + "/providers/Microsoft.Network/privateEndpoints/pe", Body: mustJSON(t,
				peBody(vnet+"/subnets/nodes", rg+"/providers/Microsoft.Network/privateLinkServices/svc", true))},
		},
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b)
}

// TestPrivateDNSResolution checks Azure's resolution through linked private
// zones: the most specific linked zone answers, exact names beat wildcards,
// a linked zone without the name answers NXDOMAIN (no fallback), and a zone
// not linked to the network is not consulted.
func TestPrivateDNSResolution(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	a := newProvider(t, e, providerSub, "net-a", "10.1")
	b := newProvider(t, e, providerSub, "net-b", "10.2")
	df := e.dns(t, providerSub)
	zones, records, links := df.NewPrivateZonesClient(), df.NewRecordSetsClient(), df.NewVirtualNetworkLinksClient()
	zone := func(name string, recs map[string]string, vnets ...string) {
		mustPoll(t, func() (*poller[armprivatedns.PrivateZonesClientCreateOrUpdateResponse], error) {
			return zones.BeginCreateOrUpdate(ctx, "net-a", name, armprivatedns.PrivateZone{Location: new("global")}, nil)
		})
		for rel, ip := range recs {
			if _, err := records.CreateOrUpdate(ctx, "net-a", name, armprivatedns.RecordTypeA, rel, armprivatedns.RecordSet{
				Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new(ip)}}},
			}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i, v := range vnets {
			mustPoll(t, func() (*poller[armprivatedns.VirtualNetworkLinksClientCreateOrUpdateResponse], error) {
				return links.BeginCreateOrUpdate(ctx, "net-a", name, fmt.Sprintf("link-%d", i), armprivatedns.VirtualNetworkLink{
					Location: new("global"), Properties: &armprivatedns.VirtualNetworkLinkProperties{VirtualNetwork: &armprivatedns.SubResource{ID: new(v)}},
				}, nil)
			})
		}
	}
	zone("wc1.example.internal", map[string]string{"api": "10.1.0.10", "*.apps": "10.1.0.11", "@": "10.1.0.12"}, a.vnetID)
	zone("example.internal", map[string]string{"missing.wc1": "10.9.9.9", "*": "10.9.0.1"}, a.vnetID, b.vnetID)
	zone("unlinked.internal", map[string]string{"api": "10.8.0.1"})

	for _, c := range []struct {
		vnet, name, status, ip string
	}{
		{a.vnetID, "api.wc1.example.internal", azuresim.ResolveOK, "10.1.0.10"},
		{a.vnetID, "API.wc1.example.internal.", azuresim.ResolveOK, "10.1.0.10"},
		{a.vnetID, "console.apps.wc1.example.internal", azuresim.ResolveOK, "10.1.0.11"},
		{a.vnetID, "a.b.apps.wc1.example.internal", azuresim.ResolveOK, "10.1.0.11"},
		{a.vnetID, "wc1.example.internal", azuresim.ResolveOK, "10.1.0.12"},
		// The most specific linked zone lacks it: no fallback to the parent zone.
		{a.vnetID, "missing.wc1.example.internal", azuresim.ResolveNXDomain, ""},
		// From b the child zone is not linked: the parent answers.
		{b.vnetID, "missing.wc1.example.internal", azuresim.ResolveOK, "10.9.9.9"},
		{b.vnetID, "api.wc1.example.internal", azuresim.ResolveOK, "10.9.0.1"},
		{a.vnetID, "api.unlinked.internal", azuresim.ResolveNotPrivate, ""},
		{b.vnetID, "example.com", azuresim.ResolveNotPrivate, ""},
	} {
		got := e.srv.Resolve(c.vnet, c.name)
		if got.Status != c.status || (c.ip != "" && (len(got.Addresses) != 1 || got.Addresses[0] != c.ip)) {
			t.Errorf("%s from %s: want %s %s, got %+v", c.name, c.vnet, c.status, c.ip, got)
		}
	}

	// The same over the admin API, as the demo and a user with curl ask.
	resp, err := e.httpc.Get(e.srv.URL() + "/_sim/dns/resolve?vnet=" + url.QueryEscape(a.vnetID) + "&name=api.wc1.example.internal")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var r azuresim.Resolution
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != azuresim.ResolveOK || len(r.Addresses) != 1 || r.Addresses[0] != "10.1.0.10" {
		t.Errorf("admin resolve: %v %+v", err, r)
	}
	if z, err := zones.Get(ctx, "net-a", "unlinked.internal", nil); err != nil || *z.Properties.NumberOfRecordSets != 2 {
		t.Errorf("a zone with one A record set counts it and the SOA: %v %v", err, z.Properties.NumberOfRecordSets)
	}
}

// codeAndStatus is an ARM error's code and status, "<code> <status>".
func codeAndStatus(code string, status int) string { return fmt.Sprintf("%s %d", code, status) }
