package clusterlink

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz/capztest"
)

const (
	mcSub = capztest.MCSub
	wcSub = capztest.WCSub
)

// mc is the management cluster (capztest.MC).
func mc(mutate ...func(*capz.AzureCluster)) *capz.AzureCluster { return capztest.MC(mutate...) }

// wc is a private workload cluster whose resource group is not its name
// (capztest.WC).
func wc(name string, mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	return capztest.WC(name, mutate...)
}

// heldWC1 is the operator holding wc1's MC endpoint, targeting wc1's service.
func heldWC1() Held {
	return Held{"wc1-api-privatelink-privateendpoint": strings.ToLower(mcEndpoint(false).Connections[0].PrivateLinkServiceID)}
}

// heldFor is the operator holding the MC endpoint of link for cluster.
func heldFor(cluster *capz.AzureCluster, link string) Held {
	return Held{link + "-privateendpoint": strings.ToLower(PrivateLinkServiceID(cluster.SubscriptionID, cluster.ResourceGroup, link))}
}

func mcEndpoint(manual bool) Endpoint {
	const wcName = "wc1"
	ep := Endpoint{
		Subnet: "mc-nodes", Direction: DirectionMCToWC, Cluster: "org-a/" + wcName, Link: wcName + "-api-privatelink",
		PrivateEndpoint: capz.PrivateEndpoint{
			Name: wcName + "-api-privatelink-privateendpoint", Location: "westeurope", ManualApproval: manual,
			Connections: []capz.PrivateLinkServiceConnection{{
				Name:                 wcName + "-api-privatelink-connection",
				PrivateLinkServiceID: "/subscriptions/" + wcSub + "/resourceGroups/" + wcName + "-resources/providers/Microsoft.Network/privateLinkServices/" + wcName + "-api-privatelink",
			}},
		},
	}
	if manual {
		ep.Connections[0].RequestMessage = "Management cluster mc requests access to the API server of workload cluster org-a/" + wcName + "."
	}
	return ep
}

func TestMCToWC(t *testing.T) {
	tests := []struct {
		reason       string
		mc, wc       *capz.AzureCluster
		cfg          Config
		existing     Held
		want         []Endpoint
		wantProblems []Problem
	}{
		{
			reason: "a public workload cluster needs no endpoint",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.APIServerLBType = capz.LBTypePublic }),
		},
		{
			reason: "an unset load balancer type is CAPZ's default, Public",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.APIServerLBType = "" }),
		},
		{
			reason: "an unknown load balancer type is reported with its field",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.APIServerLBType = "Intrnal" }),
			wantProblems: []Problem{{"org-a/wc1", ReasonInvalidSpec, `spec.networkSpec.apiServerLB.type "Intrnal" is neither Internal nor Public`}},
		},
		{
			reason: "upstream CAPZ without private links: nothing to reach",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks = nil }),
		},
		{
			reason: "an auto-approved link gets an automatic connection to the PLS in the WC's resource group",
			mc:     mc(), wc: wc("wc1"),
			want: []Endpoint{mcEndpoint(false)},
		},
		{
			reason: "subscriptions match case-insensitively",
			mc:     mc(func(a *capz.AzureCluster) { a.SubscriptionID = strings.ToUpper(mcSub) }), wc: wc("wc1"),
			want: []Endpoint{mcEndpoint(false)},
		},
		{
			reason: "a link that does not auto-approve the MC gets a manual connection with a request message",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].AutoApprovedSubscriptions = nil }),
			want: []Endpoint{mcEndpoint(true)},
		},
		{
			reason: "a link that does not allow the MC's subscription is reported, nothing written",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].AllowedSubscriptions = []string{"other"} }),
			wantProblems: []Problem{{"org-a/wc1", ReasonSubscriptionNotAllowed,
				"private link wc1-api-privatelink does not list the management cluster's subscription " + mcSub + " in allowedSubscriptions"}},
		},
		{
			reason: "of two links only the allowed one gets an endpoint; the other is reported",
			mc:     mc(),
			wc: wc("wc1", func(a *capz.AzureCluster) {
				a.PrivateLinks = append(a.PrivateLinks, capz.PrivateLink{Name: "wc1-other", AllowedSubscriptions: []string{"other"}})
			}),
			want: []Endpoint{mcEndpoint(false)},
			wantProblems: []Problem{{"org-a/wc1", ReasonSubscriptionNotAllowed,
				"private link wc1-other does not list the management cluster's subscription " + mcSub + " in allowedSubscriptions"}},
		},
		{
			reason: "links not ready yet and no endpoint in the MC: wait",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinksReady = false }),
			wantProblems: []Problem{{"org-a/wc1", ReasonWaitingForPrivateLinks, "waiting for the private link services (CAPZ's condition PrivateLinksReady, or the Ready condition of the AzurePrivateLinkService the operator created)"}},
		},
		{
			reason: "links not ready (a CAPZ flap) but the MC holds the endpoint: it stays, nothing waits",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinksReady = false }),
			existing: heldWC1(),
			want:     []Endpoint{mcEndpoint(false)},
		},
		{
			reason: "links not ready: the held endpoint stays, a newly declared link waits",
			mc:     mc(),
			wc: wc("wc1", func(a *capz.AzureCluster) {
				a.PrivateLinksReady = false
				a.PrivateLinks = append(a.PrivateLinks, capz.PrivateLink{Name: "wc1-new", AllowedSubscriptions: []string{mcSub}})
			}),
			existing:     heldWC1(),
			want:         []Endpoint{mcEndpoint(false)},
			wantProblems: []Problem{{"org-a/wc1", ReasonWaitingForPrivateLinks, "waiting for the private link services (CAPZ's condition PrivateLinksReady, or the Ready condition of the AzurePrivateLinkService the operator created)"}},
		},
		{
			reason: "a held endpoint whose link no longer allows the MC's subscription goes",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) {
				a.PrivateLinksReady = false
				a.PrivateLinks[0].AllowedSubscriptions = []string{"other"}
			}),
			existing: heldWC1(),
			wantProblems: []Problem{{"org-a/wc1", ReasonSubscriptionNotAllowed,
				"private link wc1-api-privatelink does not list the management cluster's subscription " + mcSub + " in allowedSubscriptions"}},
		},
		{
			reason: "a held endpoint of a link removed from the WC's spec goes",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinksReady = false; a.PrivateLinks[0].Name = "wc1-renamed" }),
			existing:     heldWC1(),
			wantProblems: []Problem{{"org-a/wc1", ReasonWaitingForPrivateLinks, "waiting for the private link services (CAPZ's condition PrivateLinksReady, or the Ready condition of the AzurePrivateLinkService the operator created)"}},
		},
		{
			reason: "a WC without resource group: the PLS ID cannot be built",
			mc:     mc(), wc: wc("wc1", func(a *capz.AzureCluster) { a.ResourceGroup = "" }),
			wantProblems: []Problem{{"org-a/wc1", ReasonInvalidSpec, "spec.resourceGroup of org-a/wc1 is empty, so the private link service ID cannot be built"}},
		},
		{
			reason: "the first subnet is used when none has role node",
			mc: mc(func(a *capz.AzureCluster) {
				a.Subnets = []capz.Subnet{{Name: "only", Role: capz.SubnetRoleControlPlane}}
			}),
			wc: wc("wc1"),
			want: func() []Endpoint {
				ep := mcEndpoint(false)
				ep.Subnet = "only"
				return []Endpoint{ep}
			}(),
		},
		{
			reason: "a configured subnet is used",
			mc:     mc(), wc: wc("wc1"), cfg: Config{MCSubnet: "mc-control-plane"},
			want: func() []Endpoint {
				ep := mcEndpoint(false)
				ep.Subnet = "mc-control-plane"
				return []Endpoint{ep}
			}(),
		},
		{
			reason: "a configured subnet that does not exist is reported on the MC",
			mc:     mc(), wc: wc("wc1"), cfg: Config{MCSubnet: "missing"},
			wantProblems: []Problem{{"org-giantswarm/mc", ReasonInvalidSpec,
				`spec.networkSpec.subnets has no subnet "missing", which the operator is configured to put private endpoints in`}},
		},
		{
			reason: "an MC without subnets is reported",
			mc:     mc(func(a *capz.AzureCluster) { a.Subnets = nil }), wc: wc("wc1"),
			wantProblems: []Problem{{"org-giantswarm/mc", ReasonInvalidSpec, "spec.networkSpec.subnets is empty: there is no subnet for private endpoints"}},
		},
		{
			reason: "a name longer than Azure allows is reported",
			mc:     mc(), wc: wc(strings.Repeat("w", 50)),
			wantProblems: []Problem{{"org-a/" + strings.Repeat("w", 50), ReasonInvalidSpec, "private endpoint name " + strings.Repeat("w", 50) +
				"-api-privatelink-privateendpoint is 82 characters; Azure allows 64: shorten the private link or cluster name"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, problems := MCToWC(tc.mc, tc.wc, tc.cfg, tc.existing)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: endpoints (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("%s: problems (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestWCToMC(t *testing.T) {
	wcEndpoint := func(name, base, link string, manual bool) Endpoint {
		ep := Endpoint{
			Subnet: "nodes", Direction: DirectionWCToMC, Cluster: "org-a/wc1", Link: link,
			PrivateEndpoint: capz.PrivateEndpoint{
				Name: name, Location: "northeurope", ManualApproval: manual,
				Connections: []capz.PrivateLinkServiceConnection{{
					Name:                 base + "-connection",
					PrivateLinkServiceID: "/subscriptions/" + mcSub + "/resourceGroups/mc-rg/providers/Microsoft.Network/privateLinkServices/" + link,
				}},
			},
		}
		if manual {
			ep.Connections[0].RequestMessage = "Workload cluster org-a/wc1 requests access to the ingress of management cluster mc."
		}
		return ep
	}
	tests := []struct {
		reason       string
		mc           *capz.AzureCluster
		cfg          Config
		want         []Endpoint
		wantProblems []Problem
	}{
		{
			reason: "a public MC needs no endpoint in its WCs",
			mc:     mc(func(a *capz.AzureCluster) { a.APIServerLBType = capz.LBTypePublic }),
		},
		{
			reason: "a private MC: the WC gets the endpoint existing installations carry, to <mc>-ingress-privatelink",
			mc:     mc(),
			want:   []Endpoint{wcEndpoint("wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-privatelink", "mc-ingress-privatelink", false)},
		},
		{
			reason: "an extra MC link gets its own endpoint; the first keeps the contract name",
			mc:     mc(), cfg: Config{MCLinkNames: []string{"mc-ingress-privatelink", "mc-gateway-privatelink"}},
			want: []Endpoint{
				wcEndpoint("wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-privatelink", "mc-ingress-privatelink", false),
				wcEndpoint("wc1-to-mc-gateway-privatelink-privateendpoint", "wc1-to-mc-gateway-privatelink", "mc-gateway-privatelink", false),
			},
		},
		{
			reason: "layout ingress+gateway: the older operator 0.4's two endpoints, the ingress one's IP annotated first",
			mc:     mc(), cfg: Config{Layout: LayoutIngressAndGateway},
			want: []Endpoint{
				wcEndpoint("wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-privatelink", "mc-ingress-privatelink", false),
				wcEndpoint("wc1-to-mc-gateway-privateendpoint", "wc1-to-mc-gateway", "mc-gateway-privatelink", false),
			},
		},
		{
			reason: "layout ingress+gateway with the gateway as IP source: the gateway endpoint first",
			mc:     mc(), cfg: Config{Layout: LayoutIngressAndGateway, IngressIPSource: SourceGateway},
			want: []Endpoint{
				wcEndpoint("wc1-to-mc-gateway-privateendpoint", "wc1-to-mc-gateway", "mc-gateway-privatelink", false),
				wcEndpoint("wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-privatelink", "mc-ingress-privatelink", false),
			},
		},
		{
			reason: "layout gateway: the older operator 0.5's one endpoint; an extra link to the gateway is not made twice",
			mc:     mc(), cfg: Config{Layout: LayoutGateway, MCLinkNames: []string{"mc-ingress-privatelink", "mc-gateway-privatelink", "mc-extra-privatelink"}},
			want: []Endpoint{
				wcEndpoint("wc1-to-mc-gateway-privateendpoint", "wc1-to-mc-gateway", "mc-gateway-privatelink", false),
				wcEndpoint("wc1-to-mc-extra-privatelink-privateendpoint", "wc1-to-mc-extra-privatelink", "mc-extra-privatelink", false),
			},
		},
		{
			reason: "an unknown MC load balancer type is a problem, not a public MC",
			mc:     mc(func(a *capz.AzureCluster) { a.APIServerLBType = "Hybrid" }),
			wantProblems: []Problem{{"org-a/wc1", ReasonInvalidSpec,
				`the management cluster's spec.networkSpec.apiServerLB.type "Hybrid" is neither Internal nor Public: no endpoint to it is wired or removed`}},
		},
		{
			reason: "an MC link declared without the WC's subscription auto-approved gets a manual connection",
			mc: mc(func(a *capz.AzureCluster) {
				a.PrivateLinks = []capz.PrivateLink{{Name: "mc-ingress-privatelink", AllowedSubscriptions: []string{wcSub}}}
			}),
			want: []Endpoint{wcEndpoint("wc1-to-mc-privatelink-privateendpoint", "wc1-to-mc-privatelink", "mc-ingress-privatelink", true)},
		},
		{
			reason: "an MC without resource group is reported on the WC",
			mc:     mc(func(a *capz.AzureCluster) { a.ResourceGroup = "" }),
			wantProblems: []Problem{{"org-a/wc1", ReasonInvalidSpec,
				"spec.resourceGroup of org-giantswarm/mc is empty, so the management cluster's private link service ID cannot be built"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, problems := WCToMC(tc.mc, wc("wc1"), tc.cfg)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: endpoints (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("%s: problems (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDesiredMC(t *testing.T) {
	tests := []struct {
		reason       string
		wcs          []*capz.AzureCluster
		existing     Held
		want         []string
		wantOwner    map[string]string // endpoint name -> the cluster it is for
		wantProblems []Problem
	}{
		{
			reason: "every WC's endpoints in one set, sorted by name; the MC itself and deleting WCs are left out",
			wcs: []*capz.AzureCluster{
				wc("wc3"), wc("wc1"),
				wc("wc2", func(a *capz.AzureCluster) { a.Deleting = true }),
				mc(),
			},
			want: []string{"wc1-api-privatelink-privateendpoint", "wc3-api-privatelink-privateendpoint"},
		},
		{
			reason: "two new WCs needing one endpoint name: the first by namespace/name gets it",
			wcs: []*capz.AzureCluster{
				wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
				wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
			},
			want:      []string{"shared-api-privateendpoint"},
			wantOwner: map[string]string{"shared-api-privateendpoint": "org-a/wc1"},
			wantProblems: []Problem{{"org-a/wc2", ReasonNameConflict,
				"private endpoint shared-api-privateendpoint in the management cluster is already held for workload cluster org-a/wc1; rename private link shared-api"}},
		},
		{
			reason: "the holder keeps its name: a later WC that sorts first does not take it over",
			wcs: []*capz.AzureCluster{
				wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
				wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
			},
			existing:  heldFor(wc("wc2"), "shared-api"),
			want:      []string{"shared-api-privateendpoint"},
			wantOwner: map[string]string{"shared-api-privateendpoint": "org-a/wc2"},
			wantProblems: []Problem{{"org-a/wc1", ReasonNameConflict,
				"private endpoint shared-api-privateendpoint in the management cluster is already held for workload cluster org-a/wc2; rename private link shared-api"}},
		},
		{
			reason: "two WCs named alike in two namespaces: the holder keeps it, the other is not told the holder's name",
			wcs: []*capz.AzureCluster{
				wc("wc1", func(a *capz.AzureCluster) { a.Namespace = "org-a" }),
				wc("wc1", func(a *capz.AzureCluster) { a.Namespace = "org-b"; a.ResourceGroup = "org-b-wc1" }),
			},
			existing:  heldFor(wc("wc1", func(a *capz.AzureCluster) { a.ResourceGroup = "org-b-wc1" }), "wc1-api-privatelink"),
			want:      []string{"wc1-api-privatelink-privateendpoint"},
			wantOwner: map[string]string{"wc1-api-privatelink-privateendpoint": "org-b/wc1"},
			wantProblems: []Problem{{"org-a/wc1", ReasonNameConflict,
				"private endpoint wc1-api-privatelink-privateendpoint in the management cluster is already held for another workload cluster; rename private link wc1-api-privatelink"}},
		},
		{
			reason: "a name whose entry targets a service no WC claims now is not re-targeted: it is free once the entry is gone",
			wcs: []*capz.AzureCluster{
				wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks[0].Name = "shared-api" }),
			},
			existing: heldFor(wc("gone"), "shared-api"),
			wantProblems: []Problem{{"org-a/wc1", ReasonNameConflict,
				"private endpoint shared-api-privateendpoint in the management cluster is already held for another workload cluster; rename private link shared-api"}},
		},
		{
			reason: "a WC whose links flap to not ready keeps the endpoint the MC holds; one never wired waits",
			wcs: []*capz.AzureCluster{
				wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinksReady = false }),
				wc("wc2", func(a *capz.AzureCluster) { a.PrivateLinksReady = false }),
			},
			existing: heldWC1(),
			want:     []string{"wc1-api-privatelink-privateendpoint"},
			wantProblems: []Problem{{"org-a/wc2", ReasonWaitingForPrivateLinks,
				"waiting for the private link services (CAPZ's condition PrivateLinksReady, or the Ready condition of the AzurePrivateLinkService the operator created)"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, problems := DesiredMC(mc(), tc.wcs, Config{}, tc.existing)
			var names []string
			for _, ep := range got {
				names = append(names, ep.Name)
				if want, ok := tc.wantOwner[ep.Name]; ok && ep.Cluster != want {
					t.Errorf("%s: endpoint %s is for %s, want %s", tc.reason, ep.Name, ep.Cluster, want)
				}
			}
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("%s: endpoint names (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantProblems, problems); diff != "" {
				t.Errorf("%s: problems (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRequestMessage(t *testing.T) {
	tests := []struct {
		reason string
		in     string
	}{
		{"a short message is kept", "hello"},
		{"a long ASCII message is cut to 140", strings.Repeat("a", 300)},
		{"a cut never splits a multi-byte character", strings.Repeat("a", 136) + "ééééé"},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got := requestMessage(tc.in)
			if len(got) > MaxRequestMessage || !utf8.ValidString(got) {
				t.Errorf("%s: %q (%d bytes) is not a valid message of at most %d bytes", tc.reason, got, len(got), MaxRequestMessage)
			}
			if len(tc.in) <= MaxRequestMessage && got != tc.in {
				t.Errorf("%s: a short message changed: %q", tc.reason, got)
			}
		})
	}
}

func TestUntilTick(t *testing.T) {
	epoch := time.Unix(0, 0)
	for _, tc := range []struct {
		reason          string
		now             time.Time
		interval, phase time.Duration
		want            time.Duration
	}{
		{"just after a tick: a whole interval", epoch.Add(10*time.Minute + time.Second), 10 * time.Minute, 0, 10*time.Minute - time.Second},
		{"on a tick: the next one, never zero", epoch.Add(20 * time.Minute), 10 * time.Minute, 0, 10 * time.Minute},
		{"just before a tick: soon", epoch.Add(30*time.Minute - time.Second), 10 * time.Minute, 0, time.Second},
		{"the phase moves the ticks", epoch.Add(10 * time.Minute), 10 * time.Minute, 3 * time.Minute, 3 * time.Minute},
		{"a phase longer than the interval", epoch.Add(10 * time.Minute), 10 * time.Minute, 53 * time.Minute, 3 * time.Minute},
		{"before the phase's epoch", epoch.Add(time.Minute), 10 * time.Minute, 53 * time.Minute, 2 * time.Minute},
		{"no interval", epoch, 0, 0, time.Second},
	} {
		if got := untilTick(tc.now, tc.interval, tc.phase); got != tc.want {
			t.Errorf("%s: untilTick = %s, want %s", tc.reason, got, tc.want)
		}
	}
	// Clusters reconciled at different moments of one interval meet on one tick.
	a := epoch.Add(time.Hour + time.Minute + 17*time.Second) // ticks at 1:01, 1:11, ...
	b := a.Add(4 * time.Minute)
	if a.Add(untilTick(a, 10*time.Minute, time.Minute)) != b.Add(untilTick(b, 10*time.Minute, time.Minute)) {
		t.Error("two clusters reconciled 4 minutes apart do not recheck together")
	}
}

// TestTrimCached: the cache keeps the operator's entry of spec and
// the kept managers' entries of spec, these with only what the operator
// reads of them: the endpoint entries' owners and the finalizers come out
// as from the whole entries.
func TestTrimCached(t *testing.T) {
	u := trimFixture()
	ownersBefore := capz.EndpointOwners(u)
	out, err := TrimCached("manager", "cluster-api-provider-azure-manager")(u.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := out.(*unstructured.Unstructured)
	var kept []string
	for _, f := range trimmed.GetManagedFields() {
		kept = append(kept, f.Manager+"/"+f.Subresource)
	}
	// Of the kept managers only spec: status is the larger part of CAPZ's.
	if diff := cmp.Diff([]string{"cluster-api-provider-azure-manager/", capz.FieldManager + "/", "manager/"}, kept); diff != "" {
		t.Errorf("kept managers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ownersBefore, capz.EndpointOwners(trimmed)); diff != "" || len(ownersBefore) != 1 {
		t.Errorf("endpoint owners changed by the trim (-before +after):\n%s", diff)
	}
	raw := trimmed.GetManagedFields()[0].FieldsV1.GetRawString()
	for _, want := range []string{`"f:finalizers"`, `azurecluster.infrastructure.cluster.x-k8s.io`, `wc1-privateendpoint`} {
		if !strings.Contains(raw, want) {
			t.Errorf("trimmed fields lack %s: %s", want, raw)
		}
	}
	for _, gone := range []string{"f:vnet", "f:cidrBlocks", "f:securityGroup", "f:location", "f:labels", `\"cp\"`} {
		if strings.Contains(raw, gone) {
			t.Errorf("trimmed fields still hold %s: %s", gone, raw)
		}
	}
	if out, err := TrimCached()("not an object"); err != nil || out != "not an object" {
		t.Errorf("a non-object changed: %v, %v", out, err)
	}
}

// trimFixture is an object with the managedFields TestTrimCached trims.
func trimFixture() *unstructured.Unstructured {
	capzFields := `{"f:metadata":{"f:finalizers":{".":{},"v:\"azurecluster.infrastructure.cluster.x-k8s.io\"":{}},"f:labels":{"f:x":{}}},` +
		`"f:spec":{"f:location":{},"f:networkSpec":{"f:vnet":{"f:id":{},"f:cidrBlocks":{}},"f:subnets":{` +
		`"k:{\"name\":\"node\"}":{".":{},"f:id":{},"f:cidrBlocks":{},"f:privateEndpoints":{"k:{\"name\":\"wc1-privateendpoint\"}":{".":{},"f:name":{},"f:location":{}}}},` +
		`"k:{\"name\":\"cp\"}":{".":{},"f:id":{},"f:securityGroup":{"f:name":{}}}}}}}`
	u := &unstructured.Unstructured{}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "cluster-api-provider-azure-manager", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(capzFields)},
		{Manager: "cluster-api-provider-azure-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		{Manager: capz.FieldManager, Operation: metav1.ManagedFieldsOperationApply},
		{Manager: capz.FieldManager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status"},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
		{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate},
	})
	return u
}

// TestTrimCachedAzureCluster: an AzureCluster keeps the same managedFields
// entries as other kinds, as text, read the same, and the transform is
// idempotent.
func TestTrimCachedAzureCluster(t *testing.T) {
	u := trimFixture()
	ownersBefore := capz.EndpointOwners(u)
	kept := []string{"cluster-api-provider-azure-manager/", capz.FieldManager + "/", "manager/"}
	ac := u.DeepCopy()
	ac.SetGroupVersionKind(capz.AzureClusterGVK)
	out, err := TrimCached("manager", "cluster-api-provider-azure-manager")(ac.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cachedAC := out.(*unstructured.Unstructured)
	var keptAC []string
	for _, f := range capz.ManagedFields(cachedAC) {
		keptAC = append(keptAC, f.Manager+"/"+f.Subresource)
	}
	if diff := cmp.Diff(kept, keptAC); diff != "" {
		t.Errorf("kept managers of an AzureCluster (-other kinds +AzureCluster):\n%s", diff)
	}
	if len(cachedAC.GetManagedFields()) != 0 {
		t.Error("an AzureCluster in the cache still has metadata.managedFields")
	}
	if diff := cmp.Diff(ownersBefore, capz.EndpointOwners(cachedAC)); diff != "" {
		t.Errorf("endpoint owners changed by the cache's form (-before +after):\n%s", diff)
	}
	// Idempotent: client-go may hand the transform an object it made.
	again, err := TrimCached("manager", "cluster-api-provider-azure-manager")(cachedAC.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cachedAC.Object, again.(*unstructured.Unstructured).Object); diff != "" {
		t.Errorf("transforming a cached object again changed it (-once +twice):\n%s", diff)
	}

	// An object that comes with the cache's key (a schema that keeps
	// unknown fields) does not name its own managers: the key is written
	// over from metadata.managedFields.
	spoofed := ac.DeepCopy()
	spoofed.Object[capz.CachedManagedFieldsKey] = []any{[]any{capz.FieldManager, "Apply", "",
		`{"f:spec":{"f:networkSpec":{"f:subnets":{"k:{\"name\":\"node\"}":{"f:privateEndpoints":{"k:{\"name\":\"someone-elses\"}":{}}}}}}}`}}
	out, err = TrimCached("manager", "cluster-api-provider-azure-manager")(spoofed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ownersBefore, capz.EndpointOwners(out.(*unstructured.Unstructured))); diff != "" {
		t.Errorf("an object's own cache key named its managers (-from metadata +cached):\n%s", diff)
	}
}

func TestWithoutNamesInAzure(t *testing.T) {
	ep := mcEndpoint(false)
	own := strings.ToLower(ep.Connections[0].PrivateLinkServiceID)
	other := strings.ToLower(PrivateLinkServiceID(wcSub, "wc3-resources", "wc1-api-privatelink"))
	name := strings.ToLower(ep.Name)
	for _, tc := range []struct {
		reason   string
		existing Held
		inAzure  map[string]string
		wantKept bool
	}{
		{reason: "a new name Azure does not have: the entry is made", inAzure: map[string]string{}, wantKept: true},
		{reason: "a new name whose endpoint in Azure connects to another service (the earlier holder's, on its way out): withheld",
			inAzure: map[string]string{name: other}},
		{reason: "a new name whose endpoint in Azure connects to the claimant's own service (created again in its resource group): the entry is made",
			inAzure: map[string]string{name: own}, wantKept: true},
		{reason: "a name the operator holds stays, whatever Azure has under it (its endpoint's state is the observation's to report)",
			existing: heldWC1(), inAzure: map[string]string{name: other}, wantKept: true},
	} {
		kept, problems := WithoutNamesInAzure([]Endpoint{ep}, tc.existing, tc.inAzure)
		if got := len(kept) == 1; got != tc.wantKept {
			t.Errorf("%s: kept %v, want %v", tc.reason, got, tc.wantKept)
		}
		if tc.wantKept != (len(problems) == 0) {
			t.Errorf("%s: problems %v", tc.reason, problems)
		}
		for _, p := range problems {
			if p.Cluster != ep.Cluster || p.Reason != ReasonNameConflict || !strings.Contains(p.Message, ep.Name) || strings.Contains(p.Message, "wc3") {
				t.Errorf("%s: problem %+v: want one on %s, reason %s, naming the endpoint and not the other service", tc.reason, p, ep.Cluster, ReasonNameConflict)
			}
		}
	}
}

// TestWithoutHeldForOthers: a WC's own pass leaves out an MC entry whose
// name the MC holds for another service, with the conflict; its own and
// free names stay.
func TestWithoutHeldForOthers(t *testing.T) {
	ep := mcEndpoint(false)
	other := strings.ToLower(PrivateLinkServiceID(wcSub, "wc3-resources", "wc1-api-privatelink"))
	for _, tc := range []struct {
		reason   string
		held     Held
		wantKept bool
	}{
		{reason: "a free name", held: Held{}, wantKept: true},
		{reason: "the WC's own entry", held: heldWC1(), wantKept: true},
		{reason: "held for another service", held: Held{ep.Name: other}},
	} {
		kept, problems := WithoutHeldForOthers([]Endpoint{ep}, tc.held)
		if got := len(kept) == 1; got != tc.wantKept || got == (len(problems) == 1) {
			t.Errorf("%s: kept %v, problems %v; want kept %v", tc.reason, kept, problems, tc.wantKept)
		}
		for _, p := range problems {
			if p.Cluster != ep.Cluster || p.Reason != ReasonNameConflict || !strings.Contains(p.Message, ep.Name) || strings.Contains(p.Message, "wc3") {
				t.Errorf("%s: problem %+v: want one on %s, reason %s, naming the endpoint and not the holder", tc.reason, p, ep.Cluster, ReasonNameConflict)
			}
		}
	}
}

func TestFreshNames(t *testing.T) {
	a, b := mcEndpoint(false).PrivateEndpoint, mcEndpoint(false).PrivateEndpoint
	b.Name = "wc2-api-privatelink-privateendpoint"
	current := map[string][]capz.PrivateEndpoint{"mc-nodes": {a}}
	want := map[string][]capz.PrivateEndpoint{"mc-nodes": {a, b}}
	if got := freshNames(want, current); !slices.Equal(got, []string{b.Name}) {
		t.Errorf("added: got %v, want [%s]", got, b.Name)
	}
	// The MC pass asks with the arguments swapped which entries a write removes.
	if got := freshNames(current, want); len(got) != 0 {
		t.Errorf("removed by adding: got %v, want none", got)
	}
	if got := freshNames(want /* before */, current /* after */); !slices.Equal(got, []string{b.Name}) {
		t.Errorf("removed: got %v, want [%s]", got, b.Name)
	}
	if got := freshNames(want, want); len(got) != 0 {
		t.Errorf("no change: got %v", got)
	}
}

// BenchmarkCachedAzureCluster is the memory a workload cluster's
// AzureCluster takes in the cache (capz's testdata/azurecluster-wc.json,
// as the benchmark's world leaves it): decoded whole, with only the kept
// managedFields (the cache before capz.TrimAzureCluster), and as TrimCached
// leaves it. Run with -benchtime=1000x: KiB/object is the live heap each
// object adds.
func BenchmarkCachedAzureCluster(b *testing.B) {
	raw, err := os.ReadFile("../../capz/testdata/azurecluster-wc.json")
	if err != nil {
		b.Fatal(err)
	}
	keep := slices.Concat(DefaultAdoptFieldManagers, DefaultCAPZFieldManagers)
	for _, tc := range []struct {
		name string
		gvk  schema.GroupVersionKind
		trim bool
	}{
		{"whole", capz.AzureClusterGVK, false},
		{"managedFields-only", capz.AzureClusterGVK.GroupVersion().WithKind("NotTrimmed"), true},
		{"cached", capz.AzureClusterGVK, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			objs := make([]any, 0, b.N)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(raw); err != nil {
					b.Fatal(err)
				}
				u.SetGroupVersionKind(tc.gvk)
				var o any = u
				if tc.trim {
					if o, err = TrimCached(keep...)(u); err != nil {
						b.Fatal(err)
					}
				}
				objs = append(objs, o)
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(objs))/1024, "KiB/object")
			runtime.KeepAlive(objs)
		})
	}
}
