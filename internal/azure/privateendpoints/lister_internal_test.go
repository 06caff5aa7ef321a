package privateendpoints

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// simEndpoint is a private endpoint as azuresim lists it (the endpoint
// "auto" of simWithEndpoints, observer_test.go, as the SDK's list
// returned it, re-encoded), with tags added.
const simEndpoint = `{"etag":"W/\"7314af3a-e1fc-4d9b-8f82-24dab697d4be\"","id":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/auto","location":"westeurope","name":"auto","tags":{"owner":"apeo","empty":null},"properties":{"customDnsConfigs":[],"customNetworkInterfaceName":"","ipConfigurations":[],"manualPrivateLinkServiceConnections":[],"networkInterfaces":[{"id":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/auto.nic.52c2a804-1533-4b2c-8302-528b2db6e1c5"}],"privateLinkServiceConnections":[{"etag":"W/\"7314af3a-e1fc-4d9b-8f82-24dab697d4be\"","id":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/auto/privateLinkServiceConnections/c","name":"c","properties":{"privateLinkServiceConnectionState":{"actionsRequired":"None","description":"Auto Approved","status":"Approved"},"privateLinkServiceId":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateLinkServices/svc","provisioningState":"Succeeded"},"type":"Microsoft.Network/privateEndpoints/privateLinkServiceConnections"}],"provisioningState":"Succeeded","subnet":{"id":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/nodes"}},"type":"Microsoft.Network/privateEndpoints"}`

// TestListedEndpointObservesAsTheSDK: of every shape of endpoint Azure may
// list — whole, manual, with an address, half-made, with nulls where
// lists or objects go — the Lister's model gives the observation the
// SDK's model gives.
func TestListedEndpointObservesAsTheSDK(t *testing.T) {
	nicIP := func(id string) string { return "10.9.0." + fmt.Sprint(len(id)%10) }
	for name, body := range map[string]string{
		"azuresim's":       simEndpoint,
		"manual, Pending":  `{"id":"/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/m","name":"m","properties":{"provisioningState":"Succeeded","privateLinkServiceConnections":[],"manualPrivateLinkServiceConnections":[{"name":"c","properties":{"privateLinkServiceId":"/pls","requestMessage":"hi","privateLinkServiceConnectionState":{"status":"Pending","description":"Awaiting approval"}}}],"networkInterfaces":[{"id":"/nic/1"}]}}`,
		"with an address":  `{"id":"/x/a","name":"a","properties":{"provisioningState":"Succeeded","customDnsConfigs":[{"fqdn":"a","ipAddresses":["10.0.0.4","10.0.0.5"]}],"privateLinkServiceConnections":[{"properties":{"privateLinkServiceId":"/pls","privateLinkServiceConnectionState":{"status":"Approved"}}}]}}`,
		"empty address":    `{"id":"/x/a","name":"a","properties":{"customDnsConfigs":[{"ipAddresses":[]},{"ipAddresses":[""]},{"ipAddresses":["10.0.0.6"]}],"networkInterfaces":[{"id":"/nic/2"}]}}`,
		"being made":       `{"id":"/x/b","name":"b","properties":{"provisioningState":"Updating","privateLinkServiceConnections":[{"properties":{"privateLinkServiceId":"/pls"}}]}}`,
		"no properties":    `{"id":"/x/c","name":"c"}`,
		"null properties":  `{"id":"/x/c","name":"c","properties":null,"tags":null}`,
		"null lists":       `{"id":"/x/d","name":"d","properties":{"privateLinkServiceConnections":null,"manualPrivateLinkServiceConnections":null,"customDnsConfigs":null,"networkInterfaces":null}}`,
		"null elements":    `{"id":"/x/e","name":"e","properties":{"privateLinkServiceConnections":[null],"customDnsConfigs":[null,{"ipAddresses":[null]}],"networkInterfaces":[null,{"id":null},{"id":"/nic/3"}]}}`,
		"connection, null": `{"id":"/x/f","name":"f","properties":{"manualPrivateLinkServiceConnections":[{"properties":null}]}}`,
		"state, null":      `{"id":"/x/g","name":"g","properties":{"privateLinkServiceConnections":[{"properties":{"privateLinkServiceId":null,"privateLinkServiceConnectionState":null}}]}}`,
		"two connections":  `{"id":"/x/h","name":"h","properties":{"privateLinkServiceConnections":[{"properties":{"privateLinkServiceId":"/one","privateLinkServiceConnectionState":{"status":"Rejected","description":"no"}}},{"properties":{"privateLinkServiceId":"/two"}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var sdk armnetwork.PrivateEndpoint
			if err := json.Unmarshal([]byte(body), &sdk); err != nil {
				t.Fatal(err)
			}
			var lean listedEndpoint
			if err := json.Unmarshal([]byte(body), &lean); err != nil {
				t.Fatal(err)
			}
			want, got := Observe(&sdk, nicIP), Observe(lean.model(), nicIP)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("observation (-the SDK's +the Lister's):\n%s", diff)
			}
		})
	}
}

// recorder answers every request with an empty page and keeps the last.
type recorder struct{ last *http.Request }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.last = req
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"value":[]}`)), Request: req}, nil
}

type token struct{}

func (token) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestListerAsksAsTheSDKDoes: the Lister's first page asks for what
// armnetwork's pager asks for — path, api-version, Accept — so that a
// newer SDK that changes its api-version is noticed here.
func TestListerAsksAsTheSDKDoes(t *testing.T) {
	rec := &recorder{}
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rec}}
	c, err := armnetwork.NewPrivateEndpointsClient("s1", token{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := arm.NewClient("test", "v0.0.1", token{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	l := Lister{Client: raw, Subscription: "s1"}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		sdk, lean func() error
	}{
		{"subscription", func() error { _, err := c.NewListBySubscriptionPager(nil).NextPage(ctx); return err },
			func() error { _, err := l.SubscriptionEndpoints(ctx); return err }},
		{"resource group", func() error { _, err := c.NewListPager("rg", nil).NextPage(ctx); return err },
			func() error { _, err := l.ResourceGroupEndpoints(ctx, "rg"); return err }},
	} {
		if err := tc.sdk(); err != nil {
			t.Fatal(err)
		}
		want := rec.last
		if err := tc.lean(); err != nil {
			t.Fatal(err)
		}
		got := rec.last
		if want.URL.String() != got.URL.String() || want.Header.Get("Accept") != got.Header.Get("Accept") {
			t.Errorf("%s: the SDK asks %s (Accept %q), the Lister %s (Accept %q)", tc.name, want.URL, want.Header.Get("Accept"), got.URL, got.Header.Get("Accept"))
		}
	}
}

// pages answers a first page with a nextLink and the next without, and
// records whether each request was marked as a list's page.
type pages struct{ marked []bool }

func (p *pages) Do(req *http.Request) (*http.Response, error) {
	p.marked = append(p.marked, azure.IsList(req.Context()))
	body := `{"value":[]}`
	if len(p.marked) == 1 {
		body = `{"value":[],"nextLink":"https://management.azure.com/subscriptions/s1/providers/Microsoft.Network/privateEndpoints?api-version=2025-09-01&$skiptoken=1"}`
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// TestListerMarksPages: every page of a list, the first and the later
// ones, is marked as such, so the pacer lets it into its reserve
// (azure.WithList): a list is held back neither midway nor at its first
// page while single reads take every token above the reserve.
func TestListerMarksPages(t *testing.T) {
	rec := &pages{}
	raw, err := arm.NewClient("test", "v0.0.1", token{}, &arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Lister{Client: raw, Subscription: "s1"}).SubscriptionEndpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true}; !slices.Equal(rec.marked, want) {
		t.Errorf("pages marked %v, want %v", rec.marked, want)
	}
}

// BenchmarkListDecode: what one page of 100 endpoints costs to decode, by
// the SDK's model and by the Lister's.
func BenchmarkListDecode(b *testing.B) {
	items := make([]string, 100)
	for i := range items {
		items[i] = simEndpoint
	}
	page := []byte(`{"value":[` + strings.Join(items, ",") + `],"nextLink":"https://management.azure.com/next"}`)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r armnetwork.PrivateEndpointListResult
			if err := json.Unmarshal(page, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lister", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r listPage
			if err := json.Unmarshal(page, &r); err != nil {
				b.Fatal(err)
			}
			for _, pe := range r.Value {
				_ = pe.model()
			}
		}
	})
}
