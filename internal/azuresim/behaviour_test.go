package azuresim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// fakeClock is a clock tests move by hand, so long-running operations are
// in progress exactly as long as a test wants, with no sleeping.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestLongRunningOperations drives a private endpoint creation through the
// SDK's resume token while the operation is in progress: the endpoint shows
// a non-terminal provisioningState, a second PUT supersedes the first (whose
// poller, resumed from its token as a reconciler would after a requeue,
// ends Canceled with CanceledAndSupersededDueToAnotherOperation, as Azure
// answers), the second finishes, and a write while a DELETE runs is refused
// with AnotherOperationInProgress.
func TestLongRunningOperations(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, azuresim.Options{Now: clock.Now, MaxPollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	pls := prov.pls(t, e, "svc", nil, nil)
	e.srv.SetLatency(time.Minute)

	pes := e.network(t, providerSub).NewPrivateEndpointsClient()
	p, err := pes.BeginCreateOrUpdate(ctx, "wc-rg", "pe", peBody(prov.nodeSubnetID, *pls.ID, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if p.Done() {
		t.Fatal("operation done before its latency passed")
	}
	token, err := p.ResumeToken()
	if err != nil {
		t.Fatal(err)
	}

	got, err := pes.Get(ctx, "wc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := *got.Properties.ProvisioningState; s != armnetwork.ProvisioningStateUpdating {
		t.Errorf("provisioningState in progress: want Updating, got %s", s)
	}
	// As Azure answers: while Updating, the endpoint already names its NIC
	// and an automatic connection it approves reads Approved.
	if n := len(got.Properties.NetworkInterfaces); n != 1 {
		t.Errorf("an endpoint being provisioned names its NIC already; got %d", n)
	}
	if c := got.Properties.PrivateLinkServiceConnections; len(c) != 1 || *c[0].Properties.PrivateLinkServiceConnectionState.Status != azuresim.ConnectionApproved {
		t.Errorf("an auto-approved connection reads Approved while the endpoint is Updating; got %+v", c)
	}
	second, err := pes.BeginCreateOrUpdate(ctx, "wc-rg", "pe", peBody(prov.nodeSubnetID, *pls.ID, false), nil)
	if err != nil {
		t.Fatalf("a second PUT while the first runs supersedes it in Azure, not refused: %v", err)
	}

	wantSuperseded(t, pes, token)
	clock.Advance(time.Minute)
	done, err := second.PollUntilDone(ctx, pollOpts)
	if err != nil {
		t.Fatal(err)
	}
	if s := *done.Properties.ProvisioningState; s != armnetwork.ProvisioningStateSucceeded {
		t.Errorf("provisioningState when done: want Succeeded, got %s", s)
	}
	if n := len(done.Properties.NetworkInterfaces); n != 1 {
		t.Errorf("a provisioned endpoint has its NIC; got %d", n)
	}

	// A delete in progress shows Deleting, then the resource is gone.
	del, err := pes.BeginDelete(ctx, "wc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = pes.Get(ctx, "wc-rg", "pe", nil)
	if err != nil || *got.Properties.ProvisioningState != armnetwork.ProvisioningStateDeleting {
		t.Errorf("while deleting: want provisioningState Deleting, got %v (%v)", got.Properties, err)
	}
	_, err = pes.BeginCreateOrUpdate(ctx, "wc-rg", "pe", peBody(prov.nodeSubnetID, *pls.ID, false), nil)
	wantBusy(t, err)
	clock.Advance(time.Minute)
	if _, err := del.PollUntilDone(ctx, pollOpts); err != nil {
		t.Fatal(err)
	}
	if _, err := pes.Get(ctx, "wc-rg", "pe", nil); err == nil {
		t.Error("endpoint still exists after its delete completed")
	}
}

// TestPaging lists across pages with the SDK's pager and counts the requests.
func TestPaging(t *testing.T) {
	e := newEnv(t, azuresim.Options{PageSize: 2})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	pls := prov.pls(t, e, "svc", nil, nil)
	pes := e.network(t, providerSub).NewPrivateEndpointsClient()
	for i := 0; i < 5; i++ {
		mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
			return pes.BeginCreateOrUpdate(ctx, "wc-rg", fmt.Sprintf("pe-%d", i), peBody(prov.nodeSubnetID, *pls.ID, true), nil)
		})
	}
	e.srv.ResetCounters()
	var names []string
	pager := pes.NewListPager("wc-rg", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, pe := range page.Value {
			names = append(names, *pe.Name)
		}
	}
	if len(names) != 5 {
		t.Errorf("listed %d endpoints, want 5: %v", len(names), names)
	}
	if n := e.srv.Counters().Sum(http.MethodGet, "Microsoft.Network/privateEndpoints", 200, 200); n != 3 {
		t.Errorf("5 items at 2 per page take 3 requests; counted %d", n)
	}
}

// TestThrottlingExempt: an exempt principal is never throttled, even with an
// empty bucket, and gets no remaining-reads header.
func TestThrottlingExempt(t *testing.T) {
	e := newEnv(t, azuresim.Options{Throttling: azuresim.Throttling{
		Enabled: true,
		Reads:   azuresim.Bucket{Burst: 1, PerSecond: 0.001},
		Exempt:  []string{clientID},
	}})
	ctx := context.Background()
	e.seedGroup(t, providerSub, "rg")
	client := e.network(t, providerSub).NewPrivateEndpointsClient()
	for i := 0; i < 5; i++ {
		var raw *http.Response
		_, err := client.Get(policy.WithCaptureResponse(ctx, &raw), "rg", "pe", nil)
		if code, _ := errorCode(err); code != "ResourceNotFound" {
			t.Fatalf("GET %d: want ResourceNotFound, got %v", i, err)
		}
		if h := raw.Header.Get("x-ms-ratelimit-remaining-subscription-reads"); h != "" {
			t.Fatalf("GET %d: an exempt principal got a rate-limit header %q", i, h)
		}
	}
	c := e.srv.Counters()
	if c.Throttled != 0 {
		t.Errorf("an exempt principal was throttled %d times", c.Throttled)
	}
	if n := c.SumFor(clientID, http.MethodGet, "Microsoft.Network/privateEndpoints", 404, 404); n != 5 {
		t.Errorf("counted %d GETs of the principal, want 5: %+v", n, c.Requests)
	}
	if n := c.SumFor("someone-else", "", "", 0, 999); n != 0 {
		t.Errorf("counted %d requests of a principal that made none", n)
	}
	if c.TokensByClient[clientID] == 0 || c.Tokens < c.TokensByClient[clientID] {
		t.Errorf("token requests by client: %v (total %d)", c.TokensByClient, c.Tokens)
	}
}

// TestThrottling exhausts a small read bucket: the SDK's retry policy waits
// out Retry-After and the call succeeds; the 429s are counted.
func TestThrottling(t *testing.T) {
	e := newEnv(t, azuresim.Options{Throttling: azuresim.Throttling{
		Enabled: true,
		Reads:   azuresim.Bucket{Burst: 3, PerSecond: 2},
		Writes:  azuresim.Bucket{Burst: 100, PerSecond: 100},
		Deletes: azuresim.Bucket{Burst: 100, PerSecond: 100},
	}})
	ctx := context.Background()
	e.seedGroup(t, providerSub, "rg")
	client := e.networkPatient(t, providerSub, 5*time.Second).NewPrivateEndpointsClient()
	var remaining []string
	for i := 0; i < 5; i++ {
		var raw *http.Response
		_, err := client.Get(policy.WithCaptureResponse(ctx, &raw), "rg", "pe", nil)
		if code, _ := errorCode(err); code != "ResourceNotFound" {
			t.Fatalf("GET %d: want ResourceNotFound after any retries, got %v", i, err)
		}
		remaining = append(remaining, raw.Header.Get("x-ms-ratelimit-remaining-subscription-reads"))
	}
	c := e.srv.Counters()
	if c.Throttled == 0 {
		t.Errorf("no request was throttled; counters: %+v", c)
	}
	if remaining[0] != "2" {
		t.Errorf("x-ms-ratelimit-remaining-subscription-reads after the first read: want 2, got %q", remaining[0])
	}
	for _, r := range remaining {
		if _, err := strconv.Atoi(r); err != nil {
			t.Errorf("remaining-reads header %q is not a number", r)
		}
	}
}

// TestFaultsAreRetried injects transient failures the SDK retries: a 500
// twice and a dropped connection once.
func TestFaultsAreRetried(t *testing.T) {
	tests := []struct {
		reason string
		fault  azuresim.Fault
	}{
		{reason: "two 500s", fault: azuresim.Fault{Method: http.MethodGet, PathRegex: "/resourceGroups/rg/", Status: 500, Count: 2}},
		{reason: "a dropped connection", fault: azuresim.Fault{Method: http.MethodGet, PathRegex: "/resourceGroups/rg/", Drop: true, Count: 1}},
		{reason: "added latency only", fault: azuresim.Fault{Method: http.MethodGet, PathRegex: "/resourceGroups/rg/", Latency: 20 * time.Millisecond}},
		{reason: "a 429 with Retry-After", fault: azuresim.Fault{Method: http.MethodGet, PathRegex: "/resourceGroups/rg/", Status: 429, Code: "TooManyRequests", RetryAfter: 1, Count: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			e := newEnv(t, azuresim.Options{})
			e.seedGroup(t, providerSub, "rg")
			if _, err := e.srv.AddFault(tc.fault); err != nil {
				t.Fatal(err)
			}
			_, err := e.networkPatient(t, providerSub, 5*time.Second).NewPrivateEndpointsClient().Get(context.Background(), "rg", "pe", nil)
			if code, _ := errorCode(err); code != "ResourceNotFound" {
				t.Errorf("%s: want the real answer (ResourceNotFound) after retries, got %v", tc.reason, err)
			}
			if tc.fault.Drop && e.srv.Counters().Sum(http.MethodGet, "", 0, 0) != 1 {
				t.Errorf("%s: the dropped request is not counted as status 0: %+v", tc.reason, e.srv.Counters())
			}
		})
	}
}

// TestConcurrentWrites creates endpoints in one subnet from many goroutines:
// every request must succeed and every endpoint get its own address.
func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "rg", "10.1")
	pls := prov.pls(t, e, "svc", nil, nil)
	pes := e.network(t, providerSub).NewPrivateEndpointsClient()
	const n = 24
	errs := make(chan error, n)
	for i := range n {
		go func() {
			errs <- pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
				body := peBody(prov.nodeSubnetID, *pls.ID, true)
				if i == 0 {
					body.Properties.CustomNetworkInterfaceName = new("custom-nic")
				}
				return pes.BeginCreateOrUpdate(ctx, "rg", fmt.Sprintf("pe-%02d", i), body, nil)
			})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	seen := map[string]string{}
	for pager := pes.NewListPager("rg", nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, pe := range page.Value {
			ip := nicIP(t, e, providerSub, *pe.Properties.NetworkInterfaces[0].ID)
			if other, dup := seen[ip]; dup {
				t.Errorf("%s and %s share %s", *pe.Name, other, ip)
			}
			seen[ip] = *pe.Name
		}
	}
	if len(seen) != n {
		t.Errorf("want %d endpoints with addresses, got %d", n, len(seen))
	}
	if _, err := e.network(t, providerSub).NewInterfacesClient().Get(ctx, "rg", "custom-nic", nil); err != nil {
		t.Errorf("customNetworkInterfaceName was not used: %v", err)
	}
}

// TestLongRetryAfterIsReturned documents azcore's rule that the operator's
// error classification relies on: a 429 whose Retry-After is longer than the
// client's MaxRetryDelay is not retried but returned, with the header, so the
// caller can requeue instead of blocking.
func TestLongRetryAfterIsReturned(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	e.seedGroup(t, providerSub, "rg")
	if _, err := e.srv.AddFault(azuresim.Fault{Method: http.MethodGet, Status: 429, Code: "SubscriptionRequestsThrottled", RetryAfter: 30, Count: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := e.network(t, providerSub).NewPrivateEndpointsClient().Get(context.Background(), "rg", "pe", nil)
	code, status := errorCode(err)
	if status != http.StatusTooManyRequests || code != "SubscriptionRequestsThrottled" {
		t.Fatalf("want the 429 returned, got %d %s", status, code)
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse.Header.Get("Retry-After") != "30" {
		t.Errorf("Retry-After on the returned 429: want 30, got %q", re.RawResponse.Header.Get("Retry-After"))
	}
}

// TestAuthentication covers the token endpoint with azidentity and ARM's
// answers without a valid token.
func TestAuthentication(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	e.seedGroup(t, providerSub, "rg")

	tok, err := e.cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{e.srv.URL() + "/.default"}})
	if err != nil || tok.Token == "" {
		t.Fatalf("azidentity token: %v", err)
	}
	if e.srv.Counters().Tokens == 0 {
		t.Error("token request not counted")
	}

	wrong, err := azidentity.NewClientSecretCredential(tenant, clientID, "wrong", &azidentity.ClientSecretCredentialOptions{
		ClientOptions: e.armOpts.ClientOptions, DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{e.srv.URL() + "/.default"}}); err == nil {
		t.Error("a wrong client secret got a token")
	}

	for _, tc := range []struct {
		reason, header, wantCode string
	}{
		{"no Authorization header", "", "AuthenticationFailed"},
		{"a token the server never issued", "Bearer forged", "InvalidAuthenticationToken"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL()+"/subscriptions/"+providerSub+"/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints?api-version=2024-06-01", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := e.httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("x-ms-error-code") != tc.wantCode {
			t.Errorf("%s: want 401 %s, got %d %s", tc.reason, tc.wantCode, resp.StatusCode, resp.Header.Get("x-ms-error-code"))
		}
	}
}

// TestScopedPrincipal gives the principal one resource group: reading
// another is AuthorizationFailed, referencing a subnet in another is
// LinkedAuthorizationFailed.
func TestScopedPrincipal(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "network-rg", "10.1")
	pls := prov.pls(t, e, "svc", nil, nil)
	e.seedGroup(t, providerSub, "app-rg")
	e.srv.AddPrincipal(azuresim.Principal{TenantID: tenant, ClientID: "scoped", ClientSecret: "pw",
		Scopes: []string{"/subscriptions/" + providerSub + "/resourceGroups/app-rg"}})
	cred, err := azidentity.NewClientSecretCredential(tenant, "scoped", "pw", &azidentity.ClientSecretCredentialOptions{
		ClientOptions: e.armOpts.ClientOptions, DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	nf, err := armnetwork.NewClientFactory(providerSub, cred, e.armOpts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = nf.NewPrivateLinkServicesClient().Get(ctx, "network-rg", "svc", nil)
	if code, status := errorCode(err); code != "AuthorizationFailed" || status != http.StatusForbidden {
		t.Errorf("reading outside the scope: want 403 AuthorizationFailed, got %d %s", status, code)
	}
	_, err = nf.NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, "app-rg", "pe", peBody(prov.nodeSubnetID, *pls.ID, true), nil)
	if code, status := errorCode(err); code != "LinkedAuthorizationFailed" || status != http.StatusForbidden {
		t.Errorf("a subnet outside the scope: want 403 LinkedAuthorizationFailed, got %d %s", status, code)
	}
}

// TestReferencedResourceNotProvisioned: while a load balancer is being
// updated, a private link service that refers to it is refused with
// Azure's ReferencedResourceNotProvisioned (a wait, not a person's
// problem), and accepted once the update ends.
func TestReferencedResourceNotProvisioned(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, azuresim.Options{Now: clock.Now, MaxPollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	e.srv.SetLatency(time.Minute)
	lbs := e.network(t, providerSub).NewLoadBalancersClient()
	if _, err := lbs.BeginCreateOrUpdate(ctx, "wc-rg", "api-lb", internalLB("api", prov.nodeSubnetID, ""), nil); err != nil {
		t.Fatal(err)
	}
	plss := e.network(t, providerSub).NewPrivateLinkServicesClient()
	_, err := plss.BeginCreateOrUpdate(ctx, "wc-rg", "svc", prov.plsBody(nil, nil), nil)
	if code, status := errorCode(err); code != "ReferencedResourceNotProvisioned" || status != http.StatusBadRequest {
		t.Fatalf("a service on a load balancer being updated: got %v", err)
	}
	e.srv.SetLatency(0)
	clock.Advance(2 * time.Minute)
	if _, err := lbs.Get(ctx, "wc-rg", "api-lb", nil); err != nil {
		t.Fatal(err)
	}
	prov.pls(t, e, "svc", nil, nil)
}

// TestFaultsByPrincipal: a fault aimed at one principal hits only its
// requests, and every hit is counted with its kind and principal; a fault
// on the token endpoint keeps a client from getting a token.
func TestFaultsByPrincipal(t *testing.T) {
	e := newEnv(t, azuresim.Options{Principals: []azuresim.Principal{
		{TenantID: tenant, ClientID: clientID, ClientSecret: clientSecret},
		{TenantID: tenant, ClientID: "other", ClientSecret: "other-secret"},
	}})
	ctx := context.Background()
	e.seedGroup(t, providerSub, "rg")
	other, err := azidentity.NewClientSecretCredential(tenant, "other", "other-secret", &azidentity.ClientSecretCredentialOptions{
		ClientOptions: e.armOpts.ClientOptions, DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	otherNet, err := armnetwork.NewClientFactory(providerSub, other, e.armOpts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.srv.AddFault(azuresim.Fault{Method: http.MethodGet, PathRegex: "privateEndpoints", Status: 503, Code: "ServiceUnavailable", Principal: "other"}); err != nil {
		t.Fatal(err)
	}
	list := func(f *armnetwork.ClientFactory) error {
		_, err := f.NewPrivateEndpointsClient().NewListPager("rg", nil).NextPage(ctx)
		return err
	}
	if err := list(e.network(t, providerSub)); err != nil {
		t.Errorf("a fault for another principal hit this one: %v", err)
	}
	if code, _ := errorCode(list(otherNet)); code != "ServiceUnavailable" {
		t.Errorf("the targeted principal: want ServiceUnavailable, got %q", code)
	}
	faults := e.srv.Counters().Faults
	if len(faults) != 1 || faults[0].Kind != "ServiceUnavailable" || faults[0].Principal != "other" || faults[0].Count < 1 {
		t.Errorf("fault counters %+v, want ServiceUnavailable hits counted for other", faults)
	}

	// The token endpoint is down for a third client.
	if _, err := e.srv.AddFault(azuresim.Fault{Method: http.MethodPost, PathRegex: "/oauth2/", Status: 503, Code: "temporarily_unavailable", Principal: "third"}); err != nil {
		t.Fatal(err)
	}
	e.srv.AddPrincipal(azuresim.Principal{TenantID: tenant, ClientID: "third", ClientSecret: "third-secret"})
	third, err := azidentity.NewClientSecretCredential(tenant, "third", "third-secret", &azidentity.ClientSecretCredentialOptions{
		ClientOptions: e.armOpts.ClientOptions, DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	thirdNet, err := armnetwork.NewClientFactory(providerSub, third, e.armOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := list(thirdNet); err == nil {
		t.Error("a client got through while its token endpoint was down")
	}
	if !slices.ContainsFunc(e.srv.Counters().Faults, func(f azuresim.FaultCount) bool {
		return f.Kind == "temporarily_unavailable" && f.Principal == "third"
	}) {
		t.Errorf("the token endpoint's fault was not counted: %+v", e.srv.Counters().Faults)
	}
}

// TestChildOfDeletingParent: while a virtual network is being deleted, a
// write to one of its subnets is refused with Azure's 400
// ReferencedResourceNotProvisioned, which names the parent and its delete
// operation; once the network is gone, its subnets are too.
func TestChildOfDeletingParent(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, azuresim.Options{Now: clock.Now, MaxPollInterval: 10 * time.Millisecond})
	ctx := context.Background()
	e.seedGroup(t, providerSub, "rg")
	nf := e.network(t, providerSub)
	vnet := mustPoll(t, func() (*poller[armnetwork.VirtualNetworksClientCreateOrUpdateResponse], error) {
		return nf.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, "rg", "vnet", armnetwork.VirtualNetwork{
			Location: new(location),
			Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.9.0.0/16")}},
				Subnets:      []*armnetwork.Subnet{{Name: new("a"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.9.0.0/24")}}},
			},
		}, nil)
	})
	e.srv.SetLatency(time.Minute)
	if _, err := nf.NewVirtualNetworksClient().BeginDelete(ctx, "rg", "vnet", nil); err != nil {
		t.Fatal(err)
	}
	_, err := nf.NewSubnetsClient().BeginCreateOrUpdate(ctx, "rg", "vnet", "b", armnetwork.Subnet{Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.9.1.0/24")}}, nil)
	if code, status := errorCode(err); code != "ReferencedResourceNotProvisioned" || status != http.StatusBadRequest {
		t.Fatalf("a subnet written while its network is being deleted: want 400 ReferencedResourceNotProvisioned, got %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, *vnet.ID) || !strings.Contains(msg, "DeleteVirtualNetworkOperation") {
		t.Errorf("the error names the network and its delete operation: %s", msg)
	}
	_, err = nf.NewSubnetsClient().BeginDelete(ctx, "rg", "vnet", "a", nil)
	if code, _ := errorCode(err); code != "ReferencedResourceNotProvisioned" {
		t.Errorf("a subnet deleted while its network is being deleted: want ReferencedResourceNotProvisioned, got %v", err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := nf.NewSubnetsClient().Get(ctx, "rg", "vnet", "a", nil); !notFound(err) {
		t.Errorf("the subnet outlived its network: %v", err)
	}
}

// wantSuperseded resumes a PUT's poller from its token, as a reconciler
// would after a requeue, and checks Azure's answer for a PUT a later PUT
// superseded: Canceled, with the detail
// CanceledAndSupersededDueToAnotherOperation, which the operator retries.
func wantSuperseded(t *testing.T, pes *armnetwork.PrivateEndpointsClient, token string) {
	t.Helper()
	ctx := context.Background()
	resumed, err := pes.BeginCreateOrUpdate(ctx, "wc-rg", "pe", armnetwork.PrivateEndpoint{},
		&armnetwork.PrivateEndpointsClientBeginCreateOrUpdateOptions{ResumeToken: token})
	if err != nil {
		t.Fatal(err)
	}
	_, err = resumed.PollUntilDone(ctx, pollOpts)
	if code, _ := errorCode(err); code != "Canceled" ||
		!strings.Contains(err.Error(), "CanceledAndSupersededDueToAnotherOperation") ||
		!strings.Contains(err.Error(), "was canceled and superseded by operation PutPrivateEndpointOperation") {
		t.Errorf("the superseded PUT's operation: want Canceled / CanceledAndSupersededDueToAnotherOperation, got %v", err)
	}
	if c := azure.Classify(err); c.Class != azure.ClassTransient {
		t.Errorf("the operator classifies a superseded operation as %s, want transient (retry)", c.Class)
	}
}

func notFound(err error) bool {
	_, status := errorCode(err)
	return status == http.StatusNotFound
}

// wantBusy checks Azure's answer to a write while an operation runs: 409
// AnotherOperationInProgress, naming the running operation's status URL.
func wantBusy(t *testing.T, err error) {
	t.Helper()
	if code, status := errorCode(err); code != "AnotherOperationInProgress" || status != http.StatusConflict {
		t.Errorf("second write while busy: want 409 AnotherOperationInProgress, got %d %s", status, code)
		return
	}
	if !strings.Contains(err.Error(), "/providers/Microsoft.Network/locations/"+location+"/operations/") {
		t.Errorf("AnotherOperationInProgress names the running operation's status URL, as Azure's does: %v", err)
	}
}

// TestCloseWithARequestInFlight: a request still being answered when the
// emulator stops (here held by injected latency past Close's 5-second grace
// period) does not make Close fail: a test's teardown must not depend on
// what a stopped client left behind.
func TestCloseWithARequestInFlight(t *testing.T) {
	srv := azuresim.New(azuresim.Options{NoAuth: true})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.AddFault(azuresim.Fault{Method: "GET", PathRegex: "slow", Latency: 8 * time.Second}); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() {
		close(started)
		resp, err := http.Get(srv.URL() + "/subscriptions/s/resourceGroups/slow?api-version=2021-04-01")
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-started
	// Wait until the request is being answered (counted faults are the
	// emulator's own record of it) before closing.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for len(srv.Counters().Faults) == 0 {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the slow request never reached the emulator")
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close with a request in flight: %v", err)
	}
}
