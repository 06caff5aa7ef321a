package azuresim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

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
