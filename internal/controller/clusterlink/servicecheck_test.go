package clusterlink

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// fakeServices answers serviceLooker from a table by lower-case ID and
// counts the reads.
type fakeServices struct {
	seen  map[string]serviceSeen
	err   error
	reads int
}

func (f *fakeServices) service(_ context.Context, _ *capz.AzureCluster, id string) (serviceSeen, error) {
	f.reads++
	return f.seen[id], f.err
}

// TestOnServicesInAzure: a new endpoint to one of the MC's services is
// withheld while Azure does not have the service
// (WaitingForManagementClusterService) or does not show it to the
// cluster's subscription (ManagementClusterServiceNotVisible); an endpoint
// whose service the cluster's entries already target is kept without a
// read; a service that cannot be read is not waited for.
func TestOnServicesInAzure(t *testing.T) {
	const (
		ingress = "/subscriptions/mcsub/resourcegroups/mc-rg/providers/microsoft.network/privatelinkservices/mc-ingress-privatelink"
		gateway = "/subscriptions/mcsub/resourcegroups/mc-rg/providers/microsoft.network/privatelinkservices/mc-gateway-privatelink"
	)
	ep := func(name, link, id string) Endpoint {
		return Endpoint{Cluster: "org-a/wc1", Link: link, PrivateEndpoint: capz.PrivateEndpoint{Name: name,
			Connections: []capz.PrivateLinkServiceConnection{{Name: name + "-connection", PrivateLinkServiceID: id}}}}
	}
	toIngress := ep("wc1-to-mc-privatelink-privateendpoint", "mc-ingress-privatelink", ingress)
	toGateway := ep("wc1-to-mc-gateway-privatelink-privateendpoint", "mc-gateway-privatelink", gateway)
	wc := &capz.AzureCluster{Namespace: "org-a", Name: "wc1", SubscriptionID: "WCSUB"}
	holding := &capz.AzureCluster{Namespace: "org-a", Name: "wc1", SubscriptionID: "wcsub",
		Subnets: []capz.Subnet{{Name: "wc1-nodes", PrivateEndpoints: []capz.PrivateEndpoint{toIngress.PrivateEndpoint}}}}
	further := toIngress.PrivateEndpoint
	further.Connections = []capz.PrivateLinkServiceConnection{{Name: "c", PrivateLinkServiceID: ingress + "-2"}}
	onFurther := &capz.AzureCluster{Namespace: "org-a", Name: "wc1", SubscriptionID: "wcsub",
		Subnets: []capz.Subnet{{Name: "wc1-nodes", PrivateEndpoints: []capz.PrivateEndpoint{further}}}}
	visible := serviceSeen{exists: true, subscription: "mcsub", visibility: []string{"*"}}
	for _, c := range []struct {
		name     string
		wc       *capz.AzureCluster
		seen     map[string]serviceSeen
		err      error
		kept     []string
		says     string // in the one problem's message, "" for none
		reason   string // the one problem's
		maxReads int
	}{
		{"visible to all", wc, map[string]serviceSeen{ingress: visible, gateway: visible}, nil, []string{toIngress.Name, toGateway.Name}, "", "", 2},
		{"listed, in another case", wc, map[string]serviceSeen{ingress: {exists: true, subscription: "mcsub", visibility: []string{"wcsub"}}, gateway: visible}, nil, []string{toIngress.Name, toGateway.Name}, "", "", 2},
		{"the service's own subscription", &capz.AzureCluster{Namespace: "org-a", Name: "wc1", SubscriptionID: "mcsub"},
			map[string]serviceSeen{ingress: {exists: true, subscription: "mcsub"}, gateway: visible}, nil, []string{toIngress.Name, toGateway.Name}, "", "", 2},
		{"not in Azure", wc, map[string]serviceSeen{gateway: visible}, nil, []string{toGateway.Name}, "does not exist in Azure", ReasonMCServiceNotInAzure, 2},
		{"not listed", wc, map[string]serviceSeen{ingress: {exists: true, subscription: "mcsub", visibility: []string{"other"}}, gateway: visible}, nil,
			[]string{toGateway.Name}, "is not visible to the cluster's subscription wcsub (its visibility: other)", ReasonMCServiceNotVisible, 2},
		{"restricted: * does not count", wc, map[string]serviceSeen{ingress: {exists: true, subscription: "mcsub", visibility: []string{"*"}, restricted: true}, gateway: visible}, nil,
			[]string{toGateway.Name}, "is not visible", ReasonMCServiceNotVisible, 2},
		{"held: kept without a read", holding, map[string]serviceSeen{gateway: visible}, nil, []string{toIngress.Name, toGateway.Name}, "", "", 1},
		// The entry of its name connects to a further ingress service
		// (onShards gave it one): the plan's service is not looked at.
		{"held on another service: kept without a read", onFurther, map[string]serviceSeen{gateway: visible}, nil, []string{toIngress.Name, toGateway.Name}, "", "", 1},
		{"not readable: kept", wc, nil, errors.New("403 AuthorizationFailed"), []string{toIngress.Name, toGateway.Name}, "", "", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			look := &fakeServices{seen: c.seen, err: c.err}
			kept, problems := onServicesInAzure(context.Background(), look, nil, c.wc, []Endpoint{toIngress, toGateway}, nil)
			var names []string
			for _, e := range kept {
				names = append(names, e.Name)
			}
			if !slices.Equal(names, c.kept) {
				t.Errorf("kept %v, want %v", names, c.kept)
			}
			switch {
			case c.says == "" && len(problems) != 0:
				t.Errorf("problems %+v, want none", problems)
			case c.says != "" && (len(problems) != 1 || problems[0].Reason != c.reason || problems[0].Cluster != "org-a/wc1" ||
				!strings.Contains(problems[0].Message, c.says) || !strings.Contains(problems[0].Message, "wc1-to-mc-privatelink-privateendpoint")):
				t.Errorf("problems %+v, want one %s saying %q", problems, c.reason, c.says)
			}
			if look.reads > c.maxReads {
				t.Errorf("%d reads, want at most %d", look.reads, c.maxReads)
			}
		})
	}
	if kept, problems := onServicesInAzure(context.Background(), nil, nil, wc, []Endpoint{toIngress}, nil); len(kept) != 1 || problems != nil {
		t.Errorf("without a looker: %v, %v", kept, problems)
	}
}

// TestOnServicesInAzureSharded: the first service of a sharded set that
// does not show itself to the cluster's subscription does not hold the
// endpoint back (the shard choice may give it a further service listing
// the subscription); one Azure does not have does.
func TestOnServicesInAzureSharded(t *testing.T) {
	const ingress = "/subscriptions/mcsub/resourcegroups/mc-rg/providers/microsoft.network/privatelinkservices/mc-ingress-privatelink"
	toIngress := Endpoint{Cluster: "org-a/wc1", Link: "mc-ingress-privatelink", PrivateEndpoint: capz.PrivateEndpoint{Name: "wc1-to-mc-privatelink-privateendpoint",
		Connections: []capz.PrivateLinkServiceConnection{{Name: "c", PrivateLinkServiceID: ingress}}}}
	wc := &capz.AzureCluster{Namespace: "org-a", Name: "wc1", SubscriptionID: "wcsub"}
	sharded := []string{"mc-ingress-privatelink"}
	hidden := &fakeServices{seen: map[string]serviceSeen{ingress: {exists: true, subscription: "mcsub", visibility: []string{"other"}}}}
	if kept, problems := onServicesInAzure(context.Background(), hidden, nil, wc, []Endpoint{toIngress}, sharded); len(kept) != 1 || len(problems) != 0 {
		t.Errorf("not visible, sharded: kept %v, problems %+v; want it kept for the shard choice", kept, problems)
	}
	if kept, problems := onServicesInAzure(context.Background(), &fakeServices{}, nil, wc, []Endpoint{toIngress}, sharded); len(kept) != 0 ||
		len(problems) != 1 || problems[0].Reason != ReasonMCServiceNotInAzure {
		t.Errorf("not in Azure, sharded: kept %v, problems %+v; want it withheld", kept, problems)
	}
}

// TestAzureServicesRemembers: one read per service per TTL, whoever asks;
// a failed read is remembered as long, so that clusters waiting on the
// same tick do not each send it again; after the TTL it is read again. A
// service Azure does not have is read again after MissTTL.
func TestAzureServicesRemembers(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	reads := map[string]int{}
	answer := map[string]error{"a": nil, "b": errors.New("403 AuthorizationFailed"), "missing": nil}
	a := &AzureServices{TTL: 30 * time.Second, MissTTL: 2500 * time.Millisecond, Clock: clk,
		readAzure: func(_ context.Context, _ *capz.AzureCluster, id string) (serviceSeen, error) {
			reads[id]++
			return serviceSeen{exists: answer[id] == nil && id != "missing"}, answer[id]
		}}
	ask := func(id string) (serviceSeen, error) { return a.service(context.Background(), nil, id) }
	askAll := func() {
		t.Helper()
		if s, err := ask("a"); err != nil || !s.exists {
			t.Fatalf("a: %+v, %v", s, err)
		}
		if _, err := ask("b"); err == nil {
			t.Fatal("b: the failed read was not returned")
		}
		if s, err := ask("missing"); err != nil || s.exists {
			t.Fatalf("missing: %+v, %v", s, err)
		}
	}
	for range 3 {
		askAll()
	}
	if want := map[string]int{"a": 1, "b": 1, "missing": 1}; !maps.Equal(reads, want) {
		t.Errorf("reads %v within MissTTL, want %v", reads, want)
	}
	clk.SetTime(clk.Now().Add(2500 * time.Millisecond))
	askAll()
	askAll()
	if want := map[string]int{"a": 1, "b": 1, "missing": 2}; !maps.Equal(reads, want) {
		t.Errorf("reads %v after MissTTL, want %v", reads, want)
	}
	clk.SetTime(clk.Now().Add(30 * time.Second))
	askAll()
	if want := map[string]int{"a": 2, "b": 2, "missing": 3}; !maps.Equal(reads, want) {
		t.Errorf("reads %v after the TTL, want %v", reads, want)
	}
}
