package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// TestSimulateShort is make simulate in small, as make test runs it: one
// fixed seed, the real operator binary, every kind of operation; no
// invariant may be violated. On failure it prints the history.
func TestSimulateShort(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	dir := t.TempDir()
	bin, err := sandbox.BuildOperator(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Seed: 3, Histories: 1, Operations: 30, Kills: 2, Every: 250 * time.Millisecond, Grace: time.Minute,
		Settle: 30 * time.Second, Timeout: 4 * time.Minute, OperatorBinary: bin, Dir: t.TempDir(), Logf: t.Logf}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ops, checks, _ := res.Totals()
	if checks < 100 {
		t.Errorf("only %d checks: the checker did not run", checks)
	}
	if ops < cfg.Operations {
		t.Errorf("%d operations, want at least %d", ops, cfg.Operations)
	}
	if res.Histories[0].ObjectAddresses == 0 {
		t.Error("no address an endpoint object published was checked")
	}
	// Two clusters per ingress service: the history fills the first and
	// connects clusters to a further one the operator made.
	if n := res.Histories[0].IngressServices; n < 2 {
		t.Errorf("clusters connected to %d of the MC's ingress services, want a further one used", n)
	}
	// One entry in the MC's AzureCluster: the history places a cluster's
	// MC endpoint beyond it.
	if res.Histories[0].PlacedEndpoints == 0 {
		t.Error("no MC endpoint was placed beyond the MC's AzureCluster")
	}
	if err := failure(res); err != nil {
		t.Error(err)
	}
}

// TestChecker: the checker counts what breaks an invariant — once per
// episode, only when seen twice in a row, and an unapproved address only
// after the grace an out-of-band change gives — and nothing else.
func TestChecker(t *testing.T) {
	n := names()
	wc1 := cluster{Key: "org-alpha/wc1", Name: "wc1", Scope: scopeOf(tenantSubscription(0), "wc1"), APIIP: "10.0.128.4", IngressIP: "172.16.128.4",
		IngressService: n.IngressPLS, PersonNote: "org-alpha/wc1", PersonLabel: personLabelValue}
	wc1b := cluster{Key: "org-beta/wc1", Name: "wc1", Scope: scopeOf(tenantSubscription(1), "wc1"), PersonNote: "org-beta/wc1", PersonLabel: personLabelValue}
	mcEP := func(name, ip, pls, state string) azuresim.EndpointInfo {
		return azuresim.EndpointInfo{ID: n.MCScope + "providers/microsoft.network/privateendpoints/" + name, Name: name, IP: ip, PrivateLinkService: pls, ConnectionState: state}
	}
	wcEP := azuresim.EndpointInfo{ID: wc1.Scope + "providers/microsoft.network/privateendpoints/wc1-to-mc", Name: "wc1-to-mc", IP: "172.16.128.4",
		PrivateLinkService: n.IngressPLS, ConnectionState: azuresim.ConnectionApproved}
	pls1 := wc1.Scope + "providers/microsoft.network/privatelinkservices/wc1-api-privatelink"
	pls1b := wc1b.Scope + "providers/microsoft.network/privatelinkservices/wc1-api-privatelink"
	good := func() snapshot {
		return snapshot{
			MCResolve:    map[string]azuresim.Resolution{n.APIName("wc1"): {Status: azuresim.ResolveOK, Addresses: []string{"10.0.128.4"}}},
			WCResolve:    map[string]azuresim.Resolution{wc1.Key: {Name: n.IngressName, Status: azuresim.ResolveOK, Addresses: []string{"172.16.128.4"}}},
			Endpoints:    []azuresim.EndpointInfo{mcEP("wc1-api-privatelink-privateendpoint", "10.0.128.4", pls1, azuresim.ConnectionApproved), wcEP},
			Clusters:     []cluster{wc1, wc1b},
			MCEntries:    map[string]string{"wc1-api-privatelink-privateendpoint": pls1},
			MCPersonNote: "the management cluster", MCPersonLabel: personLabelValue,
		}
	}
	for _, c := range []struct {
		name    string
		change  func(*snapshot)
		excused bool
		want    []string
	}{
		{name: "a wired world", change: func(*snapshot) {}},
		{name: "the MC entry re-targeted to another tenant's service", change: func(s *snapshot) {
			s.MCEntries["wc1-api-privatelink-privateendpoint"] = pls1b
		}, want: []string{InvEntryRetargeted}},
		{name: "the endpoint deleted under its annotation and record", change: func(s *snapshot) {
			s.Endpoints = s.Endpoints[1:]
		}, want: []string{InvGoneAddress, InvGoneAddress}},
		{name: "its address handed to another tenant's endpoint", change: func(s *snapshot) {
			s.Endpoints[0] = mcEP("other-privateendpoint", "10.0.128.4", pls1b, azuresim.ConnectionApproved)
		}, want: []string{InvForeignAddress, InvRecordRetargeted}},
		{name: "the connection removed by its owner, within the grace", excused: true, change: func(s *snapshot) {
			s.Endpoints[0].ConnectionState = azuresim.ConnectionDisconnected
		}},
		{name: "an unapproved endpoint published without an out-of-band change", change: func(s *snapshot) {
			s.Endpoints[0].ConnectionState = azuresim.ConnectionPending
		}, want: []string{InvUnapprovedAddress, InvUnapprovedAddress}},
		{name: "the MC's own domain shadowed", change: func(s *snapshot) {
			s.MCResolve[n.MCNames[1]] = azuresim.Resolution{Status: azuresim.ResolveNXDomain, Zone: "mc." + baseDomain}
		}, want: []string{InvShadow}},
		{name: "a public cluster's name shadowed by a private namesake that came later", change: func(s *snapshot) {
			shadowPublic(s, n, time.Hour)
		}, want: []string{InvPublicShadowed}},
		{name: "a private namesake that came first holds the name", change: func(s *snapshot) {
			shadowPublic(s, n, -time.Hour)
		}},
		{name: "a person's annotation on a workload cluster removed", change: func(s *snapshot) {
			s.Clusters[0].PersonNote = ""
		}, want: []string{InvPersonsEditChanged}},
		{name: "a person's label on the MC rewritten", change: func(s *snapshot) {
			s.MCPersonLabel = "operator"
		}, want: []string{InvPersonsEditChanged}},
		{name: "a cluster's ingress entry moved to a further service", change: func(s *snapshot) {
			s.Clusters[0].IngressService = n.IngressServices[1]
		}, want: []string{InvClusterMoved}},
		{name: "more clusters on an ingress service than the limit", change: func(s *snapshot) {
			for i := range n.ServiceLimit {
				s.Clusters = append(s.Clusters, another(i, n.IngressPLS))
			}
		}, want: []string{InvServiceOverfilled}},
		{name: "as many clusters on a further service as the limit", change: func(s *snapshot) {
			for i := range n.ServiceLimit {
				s.Clusters = append(s.Clusters, another(i, n.IngressServices[1]))
			}
		}},
		{name: "an MC endpoint both an entry and an object", change: func(s *snapshot) {
			s.MCPlaced = map[string]string{"wc1-api-privatelink-privateendpoint": strings.ToLower(placedSubnets()[0])}
		}, want: []string{InvPlacedTwice}},
		{name: "as many MC endpoints in a declared network as the limit", change: func(s *snapshot) {
			for i := range n.NetworkLimit {
				ep := mcEP(fmt.Sprintf("p%d-privateendpoint", i), fmt.Sprintf("10.70.1.%d", 4+i), pls1b, azuresim.ConnectionApproved)
				ep.Subnet = placedSubnets()[0]
				s.Endpoints = append(s.Endpoints, ep)
			}
		}},
		{name: "more MC endpoints in a declared network than the limit", change: func(s *snapshot) {
			for i := range n.NetworkLimit + 1 {
				ep := mcEP(fmt.Sprintf("p%d-privateendpoint", i), fmt.Sprintf("10.70.1.%d", 4+i), pls1b, azuresim.ConnectionApproved)
				ep.Subnet = placedSubnets()[0]
				s.Endpoints = append(s.Endpoints, ep)
			}
		}, want: []string{InvNetworkOverfilled}},
		{name: "the WC-side record to another network's endpoint", change: func(s *snapshot) {
			s.WCResolve[wc1.Key] = azuresim.Resolution{Name: n.IngressName, Status: azuresim.ResolveOK, Addresses: []string{"172.16.128.9"}}
		}, want: []string{InvGoneAddress}},
	} {
		t.Run(c.name, func(t *testing.T) {
			excused := ""
			if c.excused {
				excused = wc1.Key
			}
			if got := breaches(t, good, c.change, excused); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("violations %v, want %v", got, c.want)
			}
		})
	}
}

// another is a further cluster of org-beta with an ingress entry to svc.
func another(i int, svc string) cluster {
	name := fmt.Sprintf("wc%d", i+2)
	return cluster{Key: "org-beta/" + name, Name: name, Scope: scopeOf(tenantSubscription(1), name), IngressService: svc,
		PersonNote: "org-beta/" + name, PersonLabel: personLabelValue}
}

// TestEndpointObjectChecks: what the tenants' AzurePrivateEndpoints
// publish (a ConfigMap's address, a record of their shared zone) is held
// to their own Approved endpoint, and a record does not move to another
// object while its first owner exists.
func TestEndpointObjectChecks(t *testing.T) {
	app1 := apeSpec{Tenant: 0, Name: "app1", Records: []string{"db"}, Target: ingressPLSID()}
	app2 := apeSpec{Tenant: 0, Name: "app2", Records: []string{"cache"}, Target: ingressPLSID()}
	object := func(a apeSpec) endpointObject {
		return endpointObject{Key: a.Key(), EndpointID: a.EndpointID(), Target: strings.ToLower(a.Target), Records: a.Records}
	}
	ep := func(a apeSpec, ip string) azuresim.EndpointInfo {
		return azuresim.EndpointInfo{ID: a.EndpointID(), Name: a.Name, IP: ip, PrivateLinkService: ingressPLSID(), ConnectionState: azuresim.ConnectionApproved}
	}
	resolved := func(ip string) azuresim.Resolution {
		return azuresim.Resolution{Status: azuresim.ResolveOK, Addresses: []string{ip}}
	}
	good := func() snapshot {
		return snapshot{
			MCPersonNote: "the management cluster", MCPersonLabel: personLabelValue,
			Endpoints: []azuresim.EndpointInfo{ep(app1, "10.60.1.4"), ep(app2, "10.60.1.5")},
			APEs:      []endpointObject{object(app1), object(app2)},
			Published: []publishedMap{{Key: "org-alpha/endpoints", Owner: app1.Key(), IP: "10.60.1.4"}, {Key: "org-alpha/mine", IP: "192.0.2.1"}},
			AppResolve: map[string]azuresim.Resolution{
				"org-alpha db." + appsZone: resolved("10.60.1.4"), "org-alpha cache." + appsZone: resolved("10.60.1.5"),
				"org-alpha gw." + appsZone: {Status: azuresim.ResolveNXDomain},
			},
		}
	}
	for _, c := range []struct {
		name    string
		change  func(*snapshot)
		excused bool
		want    []string
	}{
		{name: "two objects published", change: func(*snapshot) {}},
		{name: "the endpoint deleted under its ConfigMap and record", change: func(s *snapshot) {
			s.Endpoints = s.Endpoints[1:]
		}, want: []string{InvGoneAddress, InvGoneAddress}},
		{name: "a ConfigMap with another object's address", change: func(s *snapshot) {
			s.Published[0].IP = "10.60.1.5"
		}, want: []string{InvForeignAddress}},
		{name: "a record resolving to an object that does not claim it", change: func(s *snapshot) {
			s.AppResolve["org-alpha db."+appsZone] = resolved("10.60.1.5")
		}, want: []string{InvForeignAddress}},
		{name: "a record moved to a later claimant while its holder exists", change: func(s *snapshot) {
			s.APEs[1].Records = []string{"cache", "db"}
			s.AppResolve["org-alpha db."+appsZone] = resolved("10.60.1.5")
		}, want: []string{InvRecordRetargeted}},
		{name: "published by an object that is gone", change: func(s *snapshot) {
			s.APEs = s.APEs[1:]
		}, want: []string{InvGoneAddress, InvForeignAddress}},
		{name: "the endpoint connected to another service", change: func(s *snapshot) {
			s.Endpoints[0].PrivateLinkService = "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/privateLinkServices/z"
		}, want: []string{InvEndpointRetargeted, InvForeignAddress, InvForeignAddress}},
		{name: "the connection rejected by its owner, within the grace", excused: true, change: func(s *snapshot) {
			s.Endpoints[0].ConnectionState = azuresim.ConnectionRejected
		}},
		{name: "a Pending endpoint published", change: func(s *snapshot) {
			s.Endpoints[0].ConnectionState = azuresim.ConnectionPending
		}, want: []string{InvUnapprovedAddress, InvUnapprovedAddress}},
	} {
		t.Run(c.name, func(t *testing.T) {
			excused := ""
			if c.excused {
				excused = app1.excuseKey()
			}
			if got := breaches(t, good, c.change, excused); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("violations %v, want %v", got, c.want)
			}
		})
	}
}

// shadowPublic adds a public org-gamma/wc2 and a private org-alpha/wc2
// created after it by later (before it when negative), and the private
// one's zone answering for the public one's API name in the MC's network.
func shadowPublic(s *snapshot, n worldNames, later time.Duration) {
	created := time.Unix(1_700_000_000, 0)
	s.Clusters = append(s.Clusters,
		cluster{Key: "org-gamma/wc2", Name: "wc2", Scope: scopeOf(tenantSubscription(2), "wc2"), Public: true, Created: created,
			PersonNote: "org-gamma/wc2", PersonLabel: personLabelValue},
		cluster{Key: "org-alpha/wc2", Name: "wc2", Scope: scopeOf(tenantSubscription(0), "wc2"), Created: created.Add(later),
			PersonNote: "org-alpha/wc2", PersonLabel: personLabelValue})
	s.MCResolve[n.APIName("wc2")] = azuresim.Resolution{Status: azuresim.ResolveNXDomain, Zone: "wc2." + baseDomain}
}

// breaches checks a good snapshot, then three changed ones a second
// apart (excused: a cluster an out-of-band change excuses), and returns
// the invariants counted; none may count at the first sight.
func breaches(t *testing.T, good func() snapshot, change func(*snapshot), excused string) []string {
	t.Helper()
	start := time.Now()
	k := newChecker(names(), start, time.Minute)
	s := good()
	s.At = start
	if v := k.check(s); len(v) != 0 {
		t.Fatalf("the wired world violates: %v", v)
	}
	if excused != "" {
		k.excuse(excused, start)
	}
	var got []string
	for i := 1; i <= 3; i++ {
		s := good()
		s.At = start.Add(time.Duration(i) * time.Second)
		change(&s)
		for _, v := range k.check(s) {
			if i == 1 {
				t.Errorf("counted at the first sight: %v", v)
			}
			got = append(got, v.Invariant)
		}
	}
	return got
}

// TestGraceEnds: an unapproved published address is counted once the
// grace after the out-of-band change is over.
func TestGraceEnds(t *testing.T) {
	n := names()
	start := time.Now()
	k := newChecker(n, start, 10*time.Second)
	wc := cluster{Key: "org-alpha/wc1", Name: "wc1", Scope: scopeOf(tenantSubscription(0), "wc1"), APIIP: "10.0.128.4",
		PersonNote: "org-alpha/wc1", PersonLabel: personLabelValue}
	k.excuse(wc.Key, start)
	s := snapshot{MCPersonNote: "the management cluster", MCPersonLabel: personLabelValue, Clusters: []cluster{wc}, Endpoints: []azuresim.EndpointInfo{{
		ID: n.MCScope + "providers/microsoft.network/privateendpoints/e", Name: "e", IP: "10.0.128.4",
		PrivateLinkService: wc.Scope + "providers/microsoft.network/privatelinkservices/l", ConnectionState: azuresim.ConnectionDisconnected,
	}}}
	var count int
	for i := range 30 {
		s.At = start.Add(time.Duration(i) * time.Second)
		for _, v := range k.check(s) {
			count++
			if v.At < 10*time.Second {
				t.Errorf("counted within the grace: %v", v)
			}
		}
	}
	if count != 1 {
		t.Errorf("%d violations, want 1 (once per episode)", count)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.cfg.Histories != 10 || o.cfg.Operations != 44 || o.cfg.Every != 250*time.Millisecond {
		t.Errorf("defaults: %+v, %v", o.cfg, err)
	}
	if _, err := parseFlags([]string{"--histories=0"}, io.Discard); err == nil {
		t.Error("--histories=0 was accepted")
	}
}

// TestWriteSection: the run's section replaces the one between the
// markers and keeps everything else; without markers it is added.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reliability.md")
	if err := os.WriteFile(path, []byte("# Reliability\n\nnotes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"first run\n", "second run\n"} {
		if err := writeSection(path, text); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := os.ReadFile(path)
	got := string(raw)
	if !strings.HasPrefix(got, "# Reliability\n\nnotes\n") || strings.Contains(got, "first run") || strings.Count(got, "second run") != 1 ||
		strings.Count(got, beginMarker) != 1 {
		t.Errorf("after two runs:\n%s", got)
	}
}
