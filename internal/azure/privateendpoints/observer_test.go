package privateendpoints_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

func endpoint(name string, manual bool, state string, ips []string, nics ...string) *armnetwork.PrivateEndpoint {
	conn := []*armnetwork.PrivateLinkServiceConnection{{Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
		PrivateLinkServiceID:              new("/pls/" + name),
		PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{Status: new(state), Description: new("why")},
	}}}
	p := &armnetwork.PrivateEndpointProperties{ProvisioningState: new(armnetwork.ProvisioningStateSucceeded)}
	if manual {
		p.ManualPrivateLinkServiceConnections = conn
	} else {
		p.PrivateLinkServiceConnections = conn
	}
	if len(ips) > 0 {
		p.CustomDNSConfigs = []*armnetwork.CustomDNSConfigPropertiesFormat{{IPAddresses: []*string{new(ips[0])}}}
	}
	for _, n := range nics {
		p.NetworkInterfaces = append(p.NetworkInterfaces, &armnetwork.Interface{ID: new(n)})
	}
	return &armnetwork.PrivateEndpoint{Name: new(name), ID: new(peID(name)), Properties: p}
}

func peID(name string) string {
	return "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/" + name
}

func TestObserve(t *testing.T) {
	nicIPs := map[string]string{"/nic/a": "10.0.0.9"}
	tests := []struct {
		reason    string
		pe        *armnetwork.PrivateEndpoint
		want      privateendpoints.Observation
		wantReady bool
	}{
		{
			reason: "automatic, approved, IP in customDnsConfigs: ready",
			pe:     endpoint("a", false, "Approved", []string{"10.0.0.5"}, "/nic/a"),
			want: privateendpoints.Observation{Name: "a", ID: peID("a"), ProvisioningState: "Succeeded", IP: "10.0.0.5",
				ConnectionState: "Approved", ConnectionDescription: "why", PrivateLinkServiceID: "/pls/a", NICIDs: []string{"/nic/a"}},
			wantReady: true,
		},
		{
			reason: "manual, pending: not ready although it has an IP",
			pe:     endpoint("b", true, "Pending", []string{"10.0.0.6"}),
			want: privateendpoints.Observation{Name: "b", ID: peID("b"), ProvisioningState: "Succeeded", IP: "10.0.0.6",
				ConnectionState: "Pending", ConnectionDescription: "why", PrivateLinkServiceID: "/pls/b", ManualApproval: true},
		},
		{
			reason: "no customDnsConfigs: the IP comes from the NIC",
			pe:     endpoint("c", false, "Approved", nil, "/nic/a"),
			want: privateendpoints.Observation{Name: "c", ID: peID("c"), ProvisioningState: "Succeeded", IP: "10.0.0.9",
				ConnectionState: "Approved", ConnectionDescription: "why", PrivateLinkServiceID: "/pls/c", NICIDs: []string{"/nic/a"}},
			wantReady: true,
		},
		{
			reason: "still provisioning: no NIC, no IP, not ready",
			pe: func() *armnetwork.PrivateEndpoint {
				pe := endpoint("d", false, "Approved", nil)
				pe.Properties.ProvisioningState = new(armnetwork.ProvisioningStateUpdating)
				return pe
			}(),
			want: privateendpoints.Observation{Name: "d", ID: peID("d"), ProvisioningState: "Updating",
				ConnectionState: "Approved", ConnectionDescription: "why", PrivateLinkServiceID: "/pls/d"},
		},
		{
			reason: "no properties at all",
			pe:     &armnetwork.PrivateEndpoint{Name: new("e")},
			want:   privateendpoints.Observation{Name: "e"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := privateendpoints.Observe(tc.pe, func(id string) string { return nicIPs[id] })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: observation (-want +got):\n%s", tc.reason, diff)
			}
			if got.Ready() != tc.wantReady {
				t.Errorf("%s: Ready() = %v, want %v", tc.reason, got.Ready(), tc.wantReady)
			}
		})
	}
}

// TestObserverSharesOneList observes one resource group from many
// goroutines at once, as many WC reconciles do for the MC's: one list.
func TestObserverSharesOneList(t *testing.T) {
	sim, api := simWithEndpoints(t)
	obs := &privateendpoints.Observer{TTL: time.Hour}
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([]map[string]privateendpoints.Observation, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "auto", "manual")
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	lists := sim.Counters().Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 200, 200)
	if lists != 1 {
		t.Errorf("10 concurrent observers listed %d times, want 1", lists)
	}
	if other, err := obs.ResourceGroup(ctx, api, "cred|s1", "other-rg", time.Time{}); err != nil || len(other) != 0 {
		t.Errorf("another resource group of the subscription: %v, %v", other, err)
	}
	if n := sim.Counters().Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 200, 200); n != 1 {
		t.Errorf("another resource group of the same subscription was listed again: %d lists", n)
	}
	got := results[0]
	ready := map[string]bool{}
	for name, o := range got {
		ready[name] = o.Ready()
	}
	if diff := cmp.Diff(map[string]bool{"auto": true, "manual": false}, ready); diff != "" {
		t.Errorf("readiness (-want +got):\n%s", diff)
	}
	if got["auto"].IP == "" || got["manual"].ConnectionState != "Pending" {
		t.Errorf("observations: %+v", got)
	}
	// The service has no FQDNs, so Azure gives no customDnsConfigs: the IPs
	// come from the NICs, each read once however many callers wait.
	if nics := sim.Counters().Sum(http.MethodGet, "Microsoft.Network/networkInterfaces", 0, 999); nics != 2 {
		t.Errorf("10 concurrent observers of 2 endpoints read NICs %d times, want 2", nics)
	}

	if _, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}); err != nil {
		t.Fatal(err)
	}
	obs.Invalidate("cred|s1", "rg")
	if _, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n := sim.Counters().Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 200, 200); n != 2 {
		t.Errorf("a fresh list answers within TTL and Invalidate forces a new one: want 2 lists, got %d", n)
	}
}

// fakeAPI is a narrow stand-in for Azure that serves endpoints without
// customDnsConfigs, to exercise the NIC fallback, and can refuse or fail
// the subscription-wide list.
type fakeAPI struct {
	mu         sync.Mutex
	pes        []*armnetwork.PrivateEndpoint
	subErr     error // returned by the subscription-wide list
	nicGets    int
	subLists   int
	groupLists int
	gets       int
	noAddress  map[string]bool // interfaces InterfaceIP answers without an address
}

func (f *fakeAPI) ListPrivateEndpoints(context.Context, string) ([]*armnetwork.PrivateEndpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groupLists++
	return f.pes, nil
}

func (f *fakeAPI) ListSubscriptionPrivateEndpoints(context.Context) ([]*armnetwork.PrivateEndpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subLists++
	if f.subErr != nil {
		return nil, f.subErr
	}
	return f.pes, nil
}

func (f *fakeAPI) PrivateEndpoint(_ context.Context, _, name string) (*armnetwork.PrivateEndpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	for _, pe := range f.pes {
		if strings.EqualFold(*pe.Name, name) {
			return pe, nil
		}
	}
	return nil, &azcore.ResponseError{StatusCode: http.StatusNotFound, ErrorCode: "NotFound"}
}

func (f *fakeAPI) InterfaceIP(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nicGets++
	if f.noAddress[id] {
		return "", nil
	}
	return "10.1.0." + id[len(id)-1:], nil
}

// TestObserverFallsBackToResourceGroups: an identity whose role is scoped
// to resource groups may not list the subscription (403); the observer
// lists resource groups instead and asks for the subscription again only
// after SubscriptionRetry. Other errors are returned as they are.
func TestObserverFallsBackToResourceGroups(t *testing.T) {
	api := &fakeAPI{
		pes:    []*armnetwork.PrivateEndpoint{endpoint("a", false, "Approved", []string{"10.0.0.5"})},
		subErr: &azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailed"},
	}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	obs := &privateendpoints.Observer{TTL: time.Second, SubscriptionRetry: time.Minute, Clock: clk}
	ctx := context.Background()
	for range 3 {
		got, err := obs.ResourceGroup(ctx, api, "scope", "RG", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got["a"].IP != "10.0.0.5" {
			t.Fatalf("observations: %+v", got)
		}
		clk.SetTime(clk.Now().Add(2 * time.Second)) // past TTL: every round lists again
	}
	if api.subLists != 1 || api.groupLists != 3 {
		t.Errorf("subscription lists %d (want 1), resource group lists %d (want 3)", api.subLists, api.groupLists)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	api.subErr = nil
	if _, err := obs.ResourceGroup(ctx, api, "scope", "rg", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if api.subLists != 2 || api.groupLists != 3 {
		t.Errorf("after SubscriptionRetry: subscription lists %d (want 2), resource group lists %d (want 3)", api.subLists, api.groupLists)
	}

	api.subErr = &azcore.ResponseError{StatusCode: http.StatusInternalServerError, ErrorCode: "InternalServerError"}
	other := &privateendpoints.Observer{Clock: clk}
	if _, err := other.ResourceGroup(ctx, api, "scope", "rg", time.Time{}); err == nil {
		t.Error("a 500 from the subscription-wide list was hidden")
	}
	if api.groupLists != 3 {
		t.Errorf("a 500 made the observer list resource groups (%d lists)", api.groupLists)
	}
}

func TestObserverReadsEachNICOnce(t *testing.T) {
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{
		endpoint("a", false, "Approved", nil, "/nic/1"),
		endpoint("b", false, "Approved", nil, "/nic/2"),
	}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	obs := &privateendpoints.Observer{TTL: time.Second, Clock: clk}
	for range 3 {
		got, err := obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{}, "A", "b", "missing")
		if err != nil {
			t.Fatal(err)
		}
		if got["a"].IP != "10.1.0.1" || got["b"].IP != "10.1.0.2" {
			t.Errorf("IPs: %+v", got)
		}
		clk.SetTime(clk.Now().Add(2 * time.Second)) // every round lists again
	}
	if api.nicGets != 2 {
		t.Errorf("3 lists of 2 endpoints read NICs %d times; a NIC's IP never changes, so want 2", api.nicGets)
	}
}

// TestObserverKnowsWhatOthersRead: an address another of the operator's
// readers had from Azure (Know) is not read again; an interface Azure
// answered without an address is read again on the next list.
func TestObserverKnowsWhatOthersRead(t *testing.T) {
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{
		endpoint("a", false, "Approved", nil, "/nic/1"),
		endpoint("b", false, "Approved", nil, "/nic/2"),
	}, noAddress: map[string]bool{"/nic/2": true}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	obs := &privateendpoints.Observer{TTL: time.Second, Clock: clk}
	obs.Know("/NIC/1", "10.9.9.1") // as the AzurePrivateEndpoint controller read it
	obs.Know("/nic/2", "")         // no address: nothing known
	got, err := obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if got["a"].IP != "10.9.9.1" || got["b"].IP != "" || api.nicGets != 1 {
		t.Errorf("first list: IPs %q, %q after %d interface reads; want 10.9.9.1 without a read, none for b after one", got["a"].IP, got["b"].IP, api.nicGets)
	}
	api.mu.Lock()
	api.noAddress = nil // Azure gave b's interface its address
	api.mu.Unlock()
	clk.SetTime(clk.Now().Add(2 * time.Second))
	got, err = obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{}, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if got["a"].IP != "10.9.9.1" || got["b"].IP != "10.1.0.2" || api.nicGets != 2 {
		t.Errorf("second list: IPs %q, %q after %d interface reads; want b read again (2 in all)", got["a"].IP, got["b"].IP, api.nicGets)
	}
}

// TestObserverResolvesOnlyWhatIsAsked: of a group's endpoints without
// customDnsConfigs, only the NICs of the names asked for are read.
func TestObserverResolvesOnlyWhatIsAsked(t *testing.T) {
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{
		endpoint("a", false, "Approved", nil, "/nic/1"),
		endpoint("b", false, "Approved", nil, "/nic/2"),
		endpoint("c", false, "Approved", nil, "/nic/3"),
	}}
	obs := &privateendpoints.Observer{TTL: time.Hour}
	got, err := obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{}, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got["b"].IP != "10.1.0.2" || got["a"].IP != "" || got["c"].IP != "" {
		t.Errorf("IPs: %+v", got)
	}
	if api.nicGets != 1 {
		t.Errorf("asked for one endpoint of three, read %d NICs", api.nicGets)
	}
	if _, err := obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{}); err != nil || api.nicGets != 1 {
		t.Errorf("asked for no IP: %v, %d NIC reads", err, api.nicGets)
	}
}

// blockingAPI lists only when released, to hold a list in flight; entered
// is closed when the list starts.
type blockingAPI struct {
	fakeAPI
	entered, release chan struct{}
}

func (b *blockingAPI) ListSubscriptionPrivateEndpoints(ctx context.Context) ([]*armnetwork.PrivateEndpoint, error) {
	close(b.entered)
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.fakeAPI.ListSubscriptionPrivateEndpoints(ctx)
}

// TestObserverFirstCallerCancelled: the caller that started a shared list
// goes away (its reconcile timed out); the callers waiting on the same list
// still get it.
func TestObserverFirstCallerCancelled(t *testing.T) {
	api := &blockingAPI{fakeAPI: fakeAPI{pes: []*armnetwork.PrivateEndpoint{endpoint("a", false, "Approved", []string{"10.0.0.5"})}},
		entered: make(chan struct{}), release: make(chan struct{})}
	obs := &privateendpoints.Observer{TTL: time.Hour}
	first, cancel := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := obs.ResourceGroup(first, api, "scope", "rg", time.Time{})
		firstDone <- err
	}()
	<-api.entered
	type answer struct {
		obs map[string]privateendpoints.Observation
		err error
	}
	second := make(chan answer, 1)
	go func() {
		got, err := obs.ResourceGroup(context.Background(), api, "scope", "rg", time.Time{})
		second <- answer{got, err}
	}()
	cancel()
	close(api.release)
	got := <-second
	if got.err != nil || got.obs["a"].IP != "10.0.0.5" {
		t.Errorf("the waiting caller got %+v, %v; the first caller's cancellation must not fail it", got.obs, got.err)
	}
	if err := <-firstDone; err != nil {
		t.Logf("the first caller: %v", err)
	}
	if api.subLists != 1 {
		t.Errorf("%d lists, want the one shared", api.subLists)
	}
}

// simWithEndpoints seeds a private link service with an automatic and a
// manual endpoint and returns the SDK API against it.
func simWithEndpoints(t *testing.T) (*azuresim.Server, privateendpoints.API) {
	t.Helper()
	sim, f, _ := simWithEndpointsPaged(t, 0)
	return sim, privateendpoints.NewSDK(f)
}

// simWithEndpointsPaged is simWithEndpoints with pageSize endpoints per page
// of a list (0: azuresim's 100), returning the factory and an ARM client
// made with its options.
func simWithEndpointsPaged(t *testing.T, pageSize int) (*azuresim.Server, *armnetwork.ClientFactory, *arm.Client) {
	t.Helper()
	sim := azuresim.New(azuresim.Options{TLS: true, PageSize: pageSize})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	rg := "/subscriptions/s1/resourceGroups/rg"
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	pls := rg + "/providers/Microsoft.Network/privateLinkServices/svc"
	raw := func(v string) json.RawMessage { return json.RawMessage(v) }
	err := sim.Seed(azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: "s1", Name: "rg", Location: "westeurope"}},
		Resources: []azuresim.SeedResource{
			{ID: vnet, Body: raw(`{"location":"westeurope","properties":{"addressSpace":{"addressPrefixes":["10.0.0.0/16"]},"subnets":[
				{"name":"nodes","properties":{"addressPrefix":"10.0.0.0/24"}},
				{"name":"nat","properties":{"addressPrefix":"10.0.1.0/24","privateLinkServiceNetworkPolicies":"Disabled"}}]}}`)},
			{ID: rg + "/providers/Microsoft.Network/loadBalancers/lb", Body: raw(`{"location":"westeurope","sku":{"name":"Standard"},"properties":{
				"frontendIPConfigurations":[{"name":"fe","properties":{"subnet":{"id":"` + vnet + `/subnets/nodes"}}}]}}`)},
			{ID: pls, Body: raw(`{"location":"westeurope","properties":{
				"loadBalancerFrontendIpConfigurations":[{"id":"` + rg + `/providers/Microsoft.Network/loadBalancers/lb/frontendIPConfigurations/fe"}],
				"ipConfigurations":[{"name":"nat","properties":{"primary":true,"subnet":{"id":"` + vnet + `/subnets/nat"}}}]}}`)},
			{ID: rg + "/providers/Microsoft.Network/privateEndpoints/auto", Body: raw(`{"location":"westeurope","properties":{
				"subnet":{"id":"` + vnet + `/subnets/nodes"},
				"privateLinkServiceConnections":[{"name":"c","properties":{"privateLinkServiceId":"` + pls + `"}}]}}`)},
			{ID: rg + "/providers/Microsoft.Network/privateEndpoints/manual", Body: raw(`{"location":"westeurope","properties":{
				"subnet":{"id":"` + vnet + `/subnets/nodes"},
				"manualPrivateLinkServiceConnections":[{"name":"c","properties":{"privateLinkServiceId":"` + pls + `","requestMessage":"hi"}}]}}`)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := azcore.ClientOptions{
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: sim.URL() + "/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: sim.URL(), Audience: sim.URL()},
		}},
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: sim.CertPool(), MinVersion: tls.VersionTLS12}}},
	}
	cred, err := azidentity.NewClientSecretCredential("t", "c", "s", &azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := armnetwork.NewClientFactory("s1", cred, &arm.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	armClient, err := arm.NewClient("test", "v0.0.1", cred, &arm.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	sim.ResetCounters()
	return sim, f, armClient
}

// TestObserverLearns: what another source says of an endpoint (CAPZ's ASO
// object) answers callers until the list expires, without a read of Azure,
// and never changes a map a caller already holds.
func TestObserverLearns(t *testing.T) {
	id := func(name string) string {
		return "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/" + name
	}
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{{
		ID: new(id("old")), Name: new("old"),
		Properties: &armnetwork.PrivateEndpointProperties{ProvisioningState: new(armnetwork.ProvisioningStateSucceeded)},
	}}}
	obs := &privateendpoints.Observer{TTL: time.Hour}
	ctx := context.Background()
	if obs.Learn("cred|s1", privateendpoints.Observation{ID: id("new"), Name: "new"}) {
		t.Error("learned without a list to learn into")
	}
	before, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	learned := privateendpoints.Observation{ID: id("new"), Name: "New", ProvisioningState: "Succeeded", ConnectionState: "Approved",
		NICIDs: []string{"nic1"}}
	if obs.Learn("other-cred|s1", learned) {
		t.Error("a list of another credential learned: one cluster's objects must not change another credential's view")
	}
	if obs.Learn("cred|s2", learned) {
		t.Error("a list of another subscription learned")
	}
	elsewhere := learned
	elsewhere.ID = "/subscriptions/s2/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/new"
	if obs.Learn("cred|s1", elsewhere) {
		t.Error("an endpoint whose ID is in another subscription was learned into s1's list")
	}
	if !obs.Learn("CRED|S1", learned) {
		t.Fatal("a finished list of the credential and subscription did not learn")
	}
	after, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "new")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["new"]; ok {
		t.Error("Learn changed a map a caller held")
	}
	got := after["new"]
	if !got.Ready() || got.IP != "10.1.0.1" || len(after) != 1 {
		t.Errorf("after Learn (the IP from the NIC): %+v, %d endpoints (want only the one asked for)", got, len(after))
	}
	all, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{})
	if err != nil || len(all) != 2 || all["new"].ConnectionState != "Approved" {
		t.Errorf("the whole group after Learn: %d endpoints (new: %+v), %v; want 2", len(all), all["new"], err)
	}
	// What was learned is learned over too, under the same rule: Pending
	// on the same network interface after Approved is ASO's older status.
	pending := learned
	pending.ConnectionState = "Pending"
	if obs.Learn("cred|s1", pending) {
		t.Error("a Pending status of the same interface was learned over a learned Approved")
	}
	gone := learned
	gone.ConnectionState = "Disconnected"
	if !obs.Learn("cred|s1", gone) {
		t.Fatal("a Disconnected status was not learned over a learned Approved")
	}
	if all["new"].ConnectionState != "Approved" {
		t.Error("Learn changed a whole group's map a caller held")
	}
	if now, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "new"); err != nil || now["new"].ConnectionState != "Disconnected" {
		t.Errorf("after the second Learn: %+v, %v; want Disconnected", now["new"], err)
	}
	if api.subLists != 1 {
		t.Errorf("Learn cost %d lists, want the 1 before it", api.subLists)
	}
}

// TestObserverKeepsApprovalOverStaleASO: ASO keeps the status it read
// when its object turned Ready (Pending, for a manual connection) until
// its next sync; a Ready event carrying it after the approval must not
// take the endpoint back to Pending (the API server annotation went empty
// for a moment in TestMigrationNewLinkName). A recreated endpoint (new
// NIC) that is Pending, and a Disconnected one, are learned.
func TestObserverKeepsApprovalOverStaleASO(t *testing.T) {
	id := "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/pe"
	approved := &armnetwork.PrivateEndpoint{
		ID: new(id), Name: new("pe"),
		Properties: &armnetwork.PrivateEndpointProperties{
			ProvisioningState: new(armnetwork.ProvisioningStateSucceeded),
			NetworkInterfaces: []*armnetwork.Interface{{ID: new("nic1")}},
			ManualPrivateLinkServiceConnections: []*armnetwork.PrivateLinkServiceConnection{{Name: new("c"), Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
				PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{Status: new("Approved")},
			}}},
		},
	}
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{approved}}
	obs := &privateendpoints.Observer{TTL: time.Hour}
	ctx := context.Background()
	state := func() string {
		t.Helper()
		got, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "pe")
		if err != nil {
			t.Fatal(err)
		}
		return got["pe"].ConnectionState
	}
	if s := state(); s != "Approved" {
		t.Fatalf("listed: %s", s)
	}
	old := privateendpoints.Observation{ID: id, Name: "pe", ProvisioningState: "Succeeded", ConnectionState: "Pending", NICIDs: []string{"NIC1"}}
	if obs.Learn("cred|s1", old) || state() != "Approved" {
		t.Errorf("a stale Pending of the same NIC was learned over Approved: %s", state())
	}
	gone := old
	gone.ConnectionState = "Disconnected"
	if !obs.Learn("cred|s1", gone) || state() != "Disconnected" {
		t.Errorf("Disconnected was not learned: %s", state())
	}
	recreated := old
	recreated.NICIDs = []string{"nic2"}
	obs2 := &privateendpoints.Observer{TTL: time.Hour}
	if _, err := obs2.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "pe"); err != nil {
		t.Fatal(err)
	}
	if !obs2.Learn("cred|s1", recreated) {
		t.Error("a recreated endpoint (another NIC) that is Pending was not learned")
	}
}

// TestObserverConfirmsForANewcomer: a list asked of Azure before the
// caller's object was first seen is not trusted for the names it asks:
// those the list holds are read again (an object created again under an
// earlier one's name must not be told of the earlier one's endpoint,
// which the list may still hold); those it lacks cost nothing; a list
// asked afterwards is trusted.
func TestObserverConfirmsForANewcomer(t *testing.T) {
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{
		endpoint("wc1-ingress", false, "Approved", []string{"10.0.0.4"}),
		endpoint("wc2-ingress", false, "Approved", []string{"10.0.0.5"}),
	}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	obs := &privateendpoints.Observer{TTL: time.Hour, Clock: clk}
	ctx := context.Background()
	if _, err := obs.ResourceGroup(ctx, api, "scope", "rg", time.Time{}); err != nil {
		t.Fatal(err)
	}
	// wc1's endpoint goes with its cluster; wc2's is rejected; wc1 is
	// created again and first seen a second later.
	api.mu.Lock()
	api.pes = []*armnetwork.PrivateEndpoint{endpoint("wc2-ingress", false, "Rejected", []string{"10.0.0.5"})}
	api.mu.Unlock()
	clk.SetTime(clk.Now().Add(time.Second))
	seen := clk.Now()

	if got, err := obs.ResourceGroup(ctx, api, "scope", "rg", time.Time{}, "wc1-ingress"); err != nil || got["wc1-ingress"].IP != "10.0.0.4" {
		t.Fatalf("a caller without a bound is answered by the list: %v, %v", got, err)
	}
	got, err := obs.ResourceGroup(ctx, api, "scope", "rg", seen, "WC1-ingress", "wc2-ingress", "wc2-ingress", "wc3-ingress")
	if err != nil {
		t.Fatal(err)
	}
	if ob, ok := got["wc1-ingress"]; ok {
		t.Errorf("the newcomer was told of an endpoint that went before it was seen: %+v", ob)
	}
	if got["wc2-ingress"].ConnectionState != "Rejected" {
		t.Errorf("wc2-ingress: %+v; want what Azure says now (Rejected)", got["wc2-ingress"])
	}
	if api.subLists != 1 || api.gets != 2 {
		t.Errorf("%d lists and %d GETs; want 1 list and a GET for each name the old list holds (2), none for wc3-ingress", api.subLists, api.gets)
	}
	// The shared list is left as it was for everyone else.
	if again, _ := obs.ResourceGroup(ctx, api, "scope", "rg", time.Time{}, "wc1-ingress"); again["wc1-ingress"].IP != "10.0.0.4" {
		t.Errorf("the shared list was changed: %v", again)
	}

	// Once the list is older than the TTL, the next one is asked after
	// the newcomer was seen, and trusted.
	clk.SetTime(clk.Now().Add(time.Hour))
	got, err = obs.ResourceGroup(ctx, api, "scope", "rg", seen, "wc2-ingress")
	if err != nil || got["wc2-ingress"].ConnectionState != "Rejected" {
		t.Fatalf("after the TTL: %v, %v", got, err)
	}
	if api.subLists != 2 || api.gets != 2 {
		t.Errorf("%d lists and %d GETs after the TTL; want 2 and still 2", api.subLists, api.gets)
	}
}

// TestObserverLargeListAnswersLonger: a list answers for TTL, or for
// TTLPer1000 per 1,000 endpoints it holds when that is longer, so that a
// subscription holding thousands of endpoints is not listed whole every
// TTL; a list that learned an endpoint (Learn) keeps its size and age.
func TestObserverLargeListAnswersLonger(t *testing.T) {
	many := func(n int) []*armnetwork.PrivateEndpoint {
		pes := make([]*armnetwork.PrivateEndpoint, n)
		for i := range pes {
			pes[i] = endpoint(fmt.Sprintf("pe%04d", i), false, "Approved", []string{"10.0.0.5"})
		}
		return pes
	}
	for _, tc := range []struct {
		name       string
		endpoints  int
		per1000    time.Duration
		answersFor time.Duration // the list is asked again only after this
	}{
		{"a small list: TTL", 500, 10 * time.Second, 10 * time.Second},
		{"1,000 endpoints: TTL", 1000, 10 * time.Second, 10 * time.Second},
		{"2,500 endpoints: 25 s", 2500, 10 * time.Second, 25 * time.Second},
		{"10,000 endpoints: 100 s", 10000, 10 * time.Second, 100 * time.Second},
		{"scaling off", 10000, 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &fakeAPI{pes: many(tc.endpoints)}
			clk := clocktesting.NewFakePassiveClock(time.Now())
			obs := &privateendpoints.Observer{TTL: 10 * time.Second, TTLPer1000: tc.per1000, Clock: clk}
			ctx := context.Background()
			observe := func() {
				t.Helper()
				got, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, "pe0000")
				if err != nil || !got["pe0000"].Ready() {
					t.Fatalf("observations: %+v, %v", got, err)
				}
			}
			start := clk.Now()
			observe()
			clk.SetTime(start.Add(tc.answersFor - time.Millisecond))
			if !obs.Learn("cred|s1", privateendpoints.Observation{Name: "pe0001", ID: peID("pe0001"), ProvisioningState: "Succeeded"}) {
				t.Fatal("the list did not learn an endpoint")
			}
			observe()
			if api.subLists != 1 {
				t.Fatalf("listed %d times within %s, want once", api.subLists, tc.answersFor)
			}
			clk.SetTime(start.Add(tc.answersFor))
			observe()
			if api.subLists != 2 {
				t.Errorf("listed %d times at %s, want twice", api.subLists, tc.answersFor)
			}
		})
	}
}

// TestObserverCountsLists: every list started is counted once, with its
// subscription, what it listed, why — the first, one older than its TTL,
// one Invalidate dropped, one after a list that failed or was held back —
// and how it ended, and what it returned; an answer from a list the
// observer holds is not a list. A failed list answers with its error,
// and is not asked again, for a second, or for as long as its error says
// to wait when that is longer.
func TestObserverCountsLists(t *testing.T) {
	const sub = "s-counted"
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{
		endpoint("pe", false, "Approved", []string{"10.0.0.5"}), endpoint("pe2", false, "Approved", []string{"10.0.0.6"}),
	}}
	clk := clocktesting.NewFakePassiveClock(time.Now())
	obs := &privateendpoints.Observer{TTL: 10 * time.Second, Clock: clk}
	ctx := context.Background()
	observe := func() error {
		_, err := obs.ResourceGroup(ctx, api, "cred|"+sub, "rg", time.Time{}, "pe")
		return err
	}
	type key struct{ reason, result string }
	count := func(k key) float64 {
		return testutil.ToFloat64(privateendpoints.ListsTotal.WithLabelValues(sub, "subscription", k.reason, k.result))
	}
	later := func() { clk.SetTime(clk.Now().Add(10 * time.Second)) }
	want := map[key]float64{
		{"first", "ok"}: 1, {"expired", "ok"}: 1, {"invalidated", "ok"}: 1,
		{"expired", "failed"}: 1, {"retry", "held_back"}: 1, {"retry", "ok"}: 1,
	}
	// The counters are the process's: count what this test adds.
	before := map[key]float64{}
	for k := range want {
		before[k] = count(k)
	}
	listedBefore := testutil.ToFloat64(privateendpoints.ListedTotal.WithLabelValues(sub))
	steps := []struct {
		name string
		do   func()
		fail bool
	}{
		{"first", func() {}, false},
		{"answered from the list", func() {}, false},
		{"expired", later, false},
		{"invalidated", func() { obs.Invalidate("cred|"+sub, "rg") }, false},
		{"expired, and Azure fails it", func() {
			later()
			api.subErr = &azcore.ResponseError{StatusCode: http.StatusInternalServerError, ErrorCode: "InternalServerError"}
		}, true},
		{"within a second of the failure: its error, not a list", func() {
			api.subErr = nil
			clk.SetTime(clk.Now().Add(999 * time.Millisecond))
		}, true},
		{"held back by the operator's pacing", func() {
			clk.SetTime(clk.Now().Add(time.Millisecond))
			api.subErr = &azure.ClassifiedError{Classification: azure.Classification{Class: azure.ClassTransient, HeldBack: true, RetryAfter: 3 * time.Second, Message: "holding back"}}
		}, true},
		{"within the wait the pacer asked for: its error, not a list", func() {
			api.subErr = nil
			clk.SetTime(clk.Now().Add(3*time.Second - time.Millisecond))
		}, true},
		{"after it", func() { clk.SetTime(clk.Now().Add(time.Millisecond)) }, false},
	}
	for _, s := range steps {
		s.do()
		if err := observe(); (err != nil) != s.fail {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	got := map[key]float64{}
	for k := range want {
		got[k] = count(k) - before[k]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lists by reason and result (-want +got):\n%s", diff)
	}
	if api.subLists != 6 {
		t.Errorf("%d lists started, want the 6 counted", api.subLists)
	}
	// Four lists answered, two endpoints each.
	if n := testutil.ToFloat64(privateendpoints.ListedTotal.WithLabelValues(sub)) - listedBefore; n != 8 {
		t.Errorf("%v endpoints counted as listed, want 8", n)
	}
}

// BenchmarkObserverLearn: what one ASO event costs the observer when the
// management cluster's subscription holds n endpoints (one per workload
// cluster), followed by the workload cluster's pass asking for its name.
func BenchmarkObserverLearn(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			pes := make([]*armnetwork.PrivateEndpoint, n)
			for i := range pes {
				pes[i] = endpoint(fmt.Sprintf("pe%05d", i), false, "Approved", []string{"10.0.0.5"})
			}
			obs := &privateendpoints.Observer{TTL: time.Hour}
			ctx := context.Background()
			api := &fakeAPI{pes: pes}
			if _, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				name := fmt.Sprintf("pe%05d", i%n)
				ob := privateendpoints.Observation{Name: name, ID: peID(name), ProvisioningState: "Succeeded", ConnectionState: "Approved", IP: "10.0.0.5"}
				if !obs.Learn("cred|s1", ob) {
					b.Fatal("not learned")
				}
				if got, err := obs.ResourceGroup(ctx, api, "cred|s1", "rg", time.Time{}, name); err != nil || !got[name].Ready() {
					b.Fatalf("%+v, %v", got, err)
				}
			}
		})
	}
}

// TestObserverListed: Listed answers from a list the observer holds, never
// asking Azure, only with a list of the same credential and subscription
// that Azure answered after the time given, and not for an endpoint Learn
// has told it of since (that overlay is not Azure's list). Of two lists
// (the subscription's and the group's), the newer answers.
func TestObserverListed(t *testing.T) {
	id := func(name string) string {
		return "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/" + name
	}
	pe := func(name, etag string) *armnetwork.PrivateEndpoint {
		return &armnetwork.PrivateEndpoint{ID: new(id(name)), Name: new(name), Etag: new(etag),
			Properties: &armnetwork.PrivateEndpointProperties{ProvisioningState: new(armnetwork.ProvisioningStateSucceeded)}}
	}
	api := &fakeAPI{pes: []*armnetwork.PrivateEndpoint{pe("a", `W/"1"`), pe("b", `W/"2"`)}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC))
	obs := &privateendpoints.Observer{TTL: time.Minute, Clock: clk}
	t0 := clk.Now()
	if _, _, ok := obs.Listed("cred|s1", "rg", "a", time.Time{}); ok {
		t.Error("answered without a list")
	}
	clk.Step(time.Second)
	if _, err := obs.ResourceGroup(context.Background(), api, "cred|s1", "rg", time.Time{}); err != nil {
		t.Fatal(err)
	}
	ob, started, ok := obs.Listed("CRED|S1", "RG", "A", t0)
	if !ok || ob.ETag != `W/"1"` || !started.Equal(t0.Add(time.Second)) {
		t.Errorf("Listed after the list: %+v at %v, %v; want etag W/\"1\" listed at %v", ob, started, ok, t0.Add(time.Second))
	}
	for _, c := range []struct {
		reason, scope, rg, name string
		since                   time.Time
	}{
		{"a list asked at the time given is not newer than it", "cred|s1", "rg", "a", started},
		{"another credential's list", "other|s1", "rg", "a", t0},
		{"another subscription", "cred|s2", "rg", "a", t0},
		{"another resource group", "cred|s1", "rg2", "a", t0},
		{"an endpoint the list does not hold", "cred|s1", "rg", "c", t0},
	} {
		if ob, _, ok := obs.Listed(c.scope, c.rg, c.name, c.since); ok {
			t.Errorf("%s: answered %+v", c.reason, ob)
		}
	}
	if !obs.Learn("cred|s1", privateendpoints.Observation{ID: id("b"), Name: "b", ProvisioningState: "Succeeded", ConnectionState: "Approved"}) {
		t.Fatal("Learn did not take b")
	}
	if _, _, ok := obs.Listed("cred|s1", "rg", "b", t0); ok {
		t.Error("answered for an endpoint Learn told the observer of since the list")
	}
	if api.subLists != 1 || api.gets != 0 {
		t.Errorf("Listed asked Azure: %d lists, %d reads; want the 1 list ResourceGroup made", api.subLists, api.gets)
	}

	// A failed list answers nothing; the one before it no longer does
	// either (the observer holds one list per key).
	clk.Step(2 * time.Minute)
	api.subErr = &azcore.ResponseError{StatusCode: http.StatusInternalServerError, ErrorCode: "InternalServerError"}
	if _, err := obs.ResourceGroup(context.Background(), api, "cred|s1", "rg", time.Time{}); err == nil {
		t.Fatal("the failing list did not fail")
	}
	if _, _, ok := obs.Listed("cred|s1", "rg", "a", t0); ok {
		t.Error("answered from a failed list")
	}
}
