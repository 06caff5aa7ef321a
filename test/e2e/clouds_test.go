package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestWellKnownClouds runs the operator binary on clusters whose
// spec.azureEnvironment is AzureChinaCloud or AzureUSGovernmentCloud,
// with no custom cloud for them: the operator must derive the cloud's
// Resource Manager endpoint, its authority host and its token audience by
// itself (azcore's cloud package and arm/runtime: management.chinacloudapi.cn,
// login.chinacloudapi.cn, https://management.core.chinacloudapi.cn/;
// management.usgovcloudapi.net, login.microsoftonline.us,
// https://management.core.usgovcloudapi.net/). The emulator answers as
// those hosts through an HTTPS proxy that refuses every other host, with a
// certificate naming them that the operator trusts through SSL_CERT_FILE
// (Go's way to add roots on Linux), so a request to any other endpoint —
// the public cloud's, a discovery host — fails and is listed. The WC is
// wired both ways. (azcore asks for "<audience>/.default" and the
// audiences end in a slash: the scope has two, as for the public cloud.)
func TestWellKnownClouds(t *testing.T) {
	bin := operatorBinary(t)
	for _, tc := range []struct {
		cloud    string
		hosts    []string // Resource Manager, authority
		audience string
	}{
		{azure.ChinaCloud, sandbox.ChinaCloudHosts, "https://management.core.chinacloudapi.cn"},
		{azure.USGovernmentCloud, sandbox.USGovernmentCloudHosts, "https://management.core.usgovcloudapi.net"},
	} {
		t.Run(tc.cloud, func(t *testing.T) {
			wellKnownCloud(t, bin, tc.cloud, tc.hosts, tc.audience)
		})
	}
}

// wellKnownCloud wires a WC of the cloud with the operator binary behind
// the cloud proxy and checks what it asked.
func wellKnownCloud(t *testing.T, bin, cloud string, hosts []string, audience string) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork, CloudHosts: hosts,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}}}})
	w.Namespace(t, wcNS)
	proxy, err := sandbox.StartCloudProxy(strings.TrimPrefix(w.Sim.URL(), "https://"), hosts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	ctx := context.Background()
	mc := testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10, AzureEnvironment: cloud}
	wc := testworld.Cluster{Namespace: wcNS, Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20, AzureEnvironment: cloud,
		PrivateLinks: []testworld.PrivateLink{{Name: "wc1-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
	for _, c := range []testworld.Cluster{mc, wc} {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaFork)); err != nil {
			t.Fatal(err)
		}
	}
	w.Sim.ResetCounters()
	startOperator(t, w, bin, []string{"HTTPS_PROXY=" + proxy.URL, "https_proxy=" + proxy.URL, "NO_PROXY=", "no_proxy=", "SSL_CERT_FILE=" + w.CAFile})
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	annotated(t, w, key, apiAnn, true)
	annotated(t, w, key, ingAnn, true)

	checkCloudRequests(t, w, proxy, hosts, audience)
}

// checkCloudRequests checks that the operator asked the cloud's hosts, for
// tokens of the cloud's audience, and nothing the proxy refused. capzsim
// (CAPZ's stand-in) reaches the emulator by its own address, as a custom
// cloud: its tokens and requests are not the operator's.
func checkCloudRequests(t *testing.T, w *testworld.World, proxy *sandbox.CloudProxy, hosts []string, audience string) {
	t.Helper()
	c := w.Sim.Counters()
	for _, h := range hosts {
		if c.Hosts[h] == 0 {
			t.Errorf("no request to %s; requests by host: %v", h, c.Hosts)
		}
	}
	var scopes []string
	for s := range c.TokenScopes {
		if strings.HasPrefix(s, w.Sim.URL()) {
			continue
		}
		scopes = append(scopes, s)
		if !strings.HasPrefix(s, audience) {
			t.Errorf("a token was asked for %q, not for %s", s, audience)
		}
	}
	if len(scopes) == 0 {
		t.Errorf("no token was asked for; requests by host: %v", c.Hosts)
	}
	if refused := proxy.Refused(); len(refused) > 0 {
		t.Errorf("the operator tried hosts of no cloud it was given: %v", refused)
	}
	t.Logf("requests by host: %v; token scopes: %v", c.Hosts, scopes)
}
