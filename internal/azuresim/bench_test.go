package azuresim_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// benchEnv is a provider with a private link service and n manual private
// endpoints to it, for read benchmarks.
func benchEnv(b *testing.B, n int) (*env, provider) {
	b.Helper()
	e := newEnv(b, azuresim.Options{})
	prov := newProvider(b, e, providerSub, "wc-rg", "10.1")
	pls := prov.pls(b, e, "svc", nil, nil)
	pes := e.network(b, providerSub).NewPrivateEndpointsClient()
	for i := range n {
		p, err := pes.BeginCreateOrUpdate(context.Background(), prov.rg, fmt.Sprintf("pe-%d", i), peBody(prov.nodeSubnetID, *pls.ID, true), nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.PollUntilDone(context.Background(), pollOpts); err != nil {
			b.Fatal(err)
		}
	}
	return e, prov
}

// BenchmarkSDKGet measures GETs of one private endpoint through the real SDK
// client (HTTPS, bearer token, full pipeline), from parallel goroutines.
func BenchmarkSDKGet(b *testing.B) {
	e, prov := benchEnv(b, 1)
	client := e.network(b, providerSub).NewPrivateEndpointsClient()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.Get(context.Background(), prov.rg, "pe-0", &armnetwork.PrivateEndpointsClientGetOptions{Expand: new("networkInterfaces")}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkSDKListPage measures listing 100 private endpoints in one page.
func BenchmarkSDKListPage(b *testing.B) {
	e, prov := benchEnv(b, 100)
	client := e.network(b, providerSub).NewPrivateEndpointsClient()
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			pager := client.NewListPager(prov.rg, nil)
			for pager.More() {
				if _, err := pager.NextPage(context.Background()); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// BenchmarkRawGet measures the server alone as far as a shared machine
// allows: plain HTTP keep-alive GETs with a valid token, no SDK pipeline.
func BenchmarkRawGet(b *testing.B) {
	srv := azuresim.New(azuresim.Options{NoAuth: true})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	rg := "/subscriptions/" + providerSub + "/resourceGroups/rg"
	if err := srv.Seed(adminSeed(b, rg)); err != nil {
		b.Fatal(err)
	}
	url := srv.URL() + rg + "/providers/Microsoft.Network/privateEndpoints/pe?api-version=2024-06-01"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
}

// fleetSeed is a consumer's world of n: one network whose n private
// endpoints connect to one service, and n private DNS zones, each linked to
// the network with an "api" record — what the consumer benchmark
// (test/scale) builds at N = 1,000.
func fleetSeed(b *testing.B, rg string, n int) azuresim.Seed {
	b.Helper()
	seed := adminSeed(b, rg)
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	// The endpoints' own subnet, large enough for them and the benchmark's
	// creates.
	seed.Resources = append(seed.Resources, azuresim.SeedResource{ID: vnet + "/subnets/endpoints", Body: mustJSON(b, armnetwork.Subnet{
		Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.5.128.0/17")},
	})})
	svc := rg + "/providers/Microsoft.Network/privateLinkServices/svc"
	for i := range n {
		zone := fmt.Sprintf("%s/providers/Microsoft.Network/privateDnsZones/z%d.example", rg, i)
		seed.Resources = append(seed.Resources,
			azuresim.SeedResource{ID: fmt.Sprintf("%s/providers/Microsoft.Network/privateEndpoints/pe-%d", rg, i), Body: mustJSON(b, peBody(vnet+"/subnets/endpoints", svc, true))},
			azuresim.SeedResource{ID: zone, Body: mustJSON(b, armprivatedns.PrivateZone{Location: new("global")})},
			azuresim.SeedResource{ID: zone + "/A/api", Body: mustJSON(b, armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{
				TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new("10.5.0.4")}},
			}})},
			azuresim.SeedResource{ID: zone + "/virtualNetworkLinks/link", Body: mustJSON(b, armprivatedns.VirtualNetworkLink{
				Location: new("global"), Properties: &armprivatedns.VirtualNetworkLinkProperties{VirtualNetwork: &armprivatedns.SubResource{ID: new(vnet)}},
			})},
		)
	}
	return seed
}

// fleetServer is a plain-HTTP server (no token) holding fleetSeed(n).
func fleetServer(b *testing.B, n int) (*azuresim.Server, string) {
	b.Helper()
	srv := azuresim.New(azuresim.Options{NoAuth: true, Limits: azuresim.Limits{PrivateEndpointsPerVirtualNetwork: 1 << 30, PrivateEndpointsPerPrivateLinkService: 1 << 30}})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	rg := "/subscriptions/" + providerSub + "/resourceGroups/rg"
	if err := srv.Seed(fleetSeed(b, rg, n)); err != nil {
		b.Fatal(err)
	}
	return srv, rg
}

// BenchmarkResolveInFleet measures what the consumer benchmark asks of
// every object once all are Ready: resolving a name from a network linked
// to 1,000 zones.
func BenchmarkResolveInFleet(b *testing.B) {
	srv, rg := fleetServer(b, 1000)
	vnet := rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	b.ResetTimer()
	for i := range b.N {
		if r := srv.Resolve(vnet, fmt.Sprintf("api.z%d.example", i%1000)); r.Status != azuresim.ResolveOK {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkCreateEndpointInFleet measures a private endpoint's PUT in a
// network that holds 1,000 and beside 1,000 zones: the limits are counted
// on every create.
func BenchmarkCreateEndpointInFleet(b *testing.B) {
	srv, rg := fleetServer(b, 1000)
	body := mustJSON(b, peBody(rg+"/providers/Microsoft.Network/virtualNetworks/vnet/subnets/endpoints", rg+"/providers/Microsoft.Network/privateLinkServices/svc", true))
	client := &http.Client{}
	b.ResetTimer()
	for i := range b.N {
		req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("%s%s/providers/Microsoft.Network/privateEndpoints/new-%d?api-version=2024-06-01", srv.URL(), rg, i), bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}
