// Package clusterlink wires management and workload clusters together
// through Azure Private Link (docs/design.md, *The problem*). This file is the pure
// decision of what private endpoints should exist; it reads typed views of
// AzureCluster objects and touches no server.
package clusterlink

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Names and limits existing consumers depend on (docs/design.md, *Compatibility contract*).
const (
	// DefaultAnnotationPrefix prefixes the IP annotations on workload clusters.
	DefaultAnnotationPrefix = "azure-private-endpoint-operator.giantswarm.io"
	// AnnotationAPIServerIP holds the MC-side private endpoint IP of a WC's API server.
	AnnotationAPIServerIP = "private-link-apiserver-ip"
	// AnnotationMCIngressIP holds the WC-side private endpoint IP of the MC's ingress.
	AnnotationMCIngressIP = "private-link-mc-ingress-ip"
	// Finalizer is the finalizer existing installations already carry.
	Finalizer = "azure-private-endpoint-operator.giantswarm.io/azurecluster"
	// MaxRequestMessage is CAPZ's limit on a connection's request message.
	MaxRequestMessage = 140
	// MaxPrivateEndpointName is Azure's limit on a private endpoint's name.
	MaxPrivateEndpointName = 64
)

// Event reasons for what the desired state cannot honour. They are constant
// so that users can filter on them.
const (
	ReasonSubscriptionNotAllowed = "SubscriptionNotAllowed"
	ReasonWaitingForPrivateLinks = "WaitingForPrivateLinks"
	// ReasonPrivateLinkServiceRequested: the operator created an
	// AzurePrivateLinkService for a WC (upstream CAPZ loop).
	ReasonPrivateLinkServiceRequested = "PrivateLinkServiceRequested"
	// ReasonPrivateLinkServiceReleased: the operator deleted the WC's
	// AzurePrivateLinkService (the WC is deleted or opted out).
	ReasonPrivateLinkServiceReleased = "PrivateLinkServiceReleased"
	// ReasonPrivateLinkServiceNotHandedOver: the WC declares (CAPZ v1.27+)
	// a private link under the name of the service the operator made for
	// it, which CAPZ cannot take over; the operator keeps serving it.
	ReasonPrivateLinkServiceNotHandedOver = "PrivateLinkServiceNotHandedOver"
	// ReasonPrivateLinkServiceHandedOver: a link the WC declares under
	// another name serves the API server; the service the operator made
	// for it, and the MC's endpoint to it, go.
	ReasonPrivateLinkServiceHandedOver = "PrivateLinkServiceHandedOver"
	// ReasonPrivateLinkServiceNameTaken: an object of the managed name
	// exists that the operator did not create for the WC.
	ReasonPrivateLinkServiceNameTaken = "PrivateLinkServiceNameTaken"
	ReasonInvalidSpec                 = "InvalidSpec"
	ReasonNameConflict                = "PrivateEndpointNameConflict"
)

// Direction says which way an endpoint connects.
type Direction string

const (
	// DirectionMCToWC endpoints live in the management cluster and reach a workload
	// cluster's API server.
	DirectionMCToWC Direction = "mc-to-wc-api"
	// DirectionWCToMC endpoints live in a workload cluster and reach the management
	// cluster's ingress.
	DirectionWCToMC Direction = "wc-to-mc-ingress"
)

// Layout is the set of endpoints each WC gets to the MC: the layouts of
// the older operator's releases, so that an installation keeps its names.
type Layout string

const (
	// LayoutIngress is one endpoint <wc>-to-<mc>-privatelink-privateendpoint
	// to the MC's ingress link (older operator up to 0.3; the default).
	LayoutIngress Layout = "ingress"
	// LayoutIngressAndGateway adds <wc>-to-<mc>-gateway-privateendpoint to
	// <mc>-gateway-privatelink (older operator 0.4); IngressIPSource picks
	// whose IP the ingress annotation takes.
	LayoutIngressAndGateway Layout = "ingress+gateway"
	// LayoutGateway is the gateway endpoint only, whose IP the ingress
	// annotation takes (older operator 0.5).
	LayoutGateway Layout = "gateway"
)

// Layouts lists the valid layouts.
var Layouts = []Layout{LayoutIngress, LayoutIngressAndGateway, LayoutGateway}

// IP sources of the ingress annotation.
const (
	SourceIngress = "ingress"
	SourceGateway = "gateway"
)

// Config is the operator configuration the wiring depends on.
type Config struct {
	// MCLinkNames are the MC-side private link services WCs connect to; the
	// first one is the ingress link (default "<mc-name>-ingress-privatelink"),
	// each further one gets an endpoint <wc>-to-<link>-privateendpoint.
	MCLinkNames []string
	// Layout chooses the ingress and gateway endpoints. Default
	// LayoutIngress.
	Layout Layout
	// IngressIPSource, in LayoutIngressAndGateway, is whose IP the ingress
	// annotation takes: SourceIngress (default) or SourceGateway.
	IngressIPSource string
	// MCSubnet and WCSubnet name the subnet that receives private endpoints
	// on each side. Default: the first subnet with role node, else the first.
	MCSubnet, WCSubnet string
	// MCEndpointLimit is how many private endpoint entries the MC's
	// AzureCluster may hold, everyone's (limits.go); beyond it no new one
	// is added. 0: no limit.
	MCEndpointLimit int
	// MCServiceConnectionLimit is how many clusters may connect to each
	// of the MC's private link services a WC connects to (servicelimit.go);
	// beyond it a WC gets no new endpoint to that service. 0: no limit.
	MCServiceConnectionLimit int
	// IngressShards are the MC's ingress services beyond the first, which
	// the operator makes (shards.go). Zero: only the first.
	IngressShards IngressShards
	// Beyond is where the MC's endpoints go that its AzureCluster has no
	// room for (beyond.go). Zero: nowhere.
	Beyond Beyond
}

// LinkNames returns the configured MC link names or the default.
func (c Config) LinkNames(mcName string) []string {
	if len(c.MCLinkNames) > 0 {
		return c.MCLinkNames
	}
	return []string{mcName + "-ingress-privatelink"}
}

// GatewayLinkName is the MC's gateway private link service, as the older
// operator names it.
func GatewayLinkName(mcName string) string { return mcName + "-gateway-privatelink" }

// mcServices are the MC's private link services a WC connects to in the
// configured layout.
func (c Config) mcServices(mcName string) []string {
	slots := c.wcToMCSlots("", mcName)
	out := make([]string, 0, len(slots))
	for _, s := range slots {
		out = append(out, s.link)
	}
	for _, name := range c.furtherServices(mcName) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// wcToMCSlot is one endpoint a WC gets to the MC: the link it reaches and
// the base of its endpoint and connection names.
type wcToMCSlot struct{ link, base string }

// wcToMCSlots returns the WC's endpoints to the MC in the configured
// layout, the one whose IP the ingress annotation takes first. A link gets
// one endpoint: the ingress or gateway name wins over the extra-link one.
func (c Config) wcToMCSlots(wcName, mcName string) []wcToMCSlot {
	links := c.LinkNames(mcName)
	ingress := wcToMCSlot{links[0], wcName + "-to-" + mcName + "-privatelink"} // the name existing installations carry
	gateway := wcToMCSlot{GatewayLinkName(mcName), wcName + "-to-" + mcName + "-gateway"}
	var out []wcToMCSlot
	switch {
	case c.Layout == LayoutGateway:
		out = []wcToMCSlot{gateway}
	case c.Layout == LayoutIngressAndGateway && c.IngressIPSource == SourceGateway:
		out = []wcToMCSlot{gateway, ingress}
	case c.Layout == LayoutIngressAndGateway:
		out = []wcToMCSlot{ingress, gateway}
	default:
		out = []wcToMCSlot{ingress}
	}
	for _, link := range links[1:] {
		if !slices.ContainsFunc(out, func(s wcToMCSlot) bool { return s.link == link }) {
			out = append(out, wcToMCSlot{link, wcName + "-to-" + link})
		}
	}
	return out
}

// Endpoint is a private endpoint the operator wants in one AzureCluster.
type Endpoint struct {
	// Subnet is the subnet entry whose privateEndpoints list holds it.
	Subnet string
	capz.PrivateEndpoint
	// Direction, Cluster (the WC, "namespace/name") and Link say what it is
	// for, for status and events.
	Direction Direction
	Cluster   string
	Link      string
}

// Problem is something a user must fix or wait for, reported as an Event on
// Cluster ("namespace/name").
type Problem struct {
	Cluster string
	Reason  string
	Message string
}

// MCToWC returns the endpoints the management cluster needs to reach a
// workload cluster's API server: one per private link of the WC that allows
// the MC's subscription. Readiness gates only creation (docs/design.md,
// *Keep what works*): while the WC's private links are not ready, an
// endpoint the MC already holds for this WC's service (existing) stays, and
// only the missing ones wait.
func MCToWC(mc, wc *capz.AzureCluster, cfg Config, existing Held) ([]Endpoint, []Problem) {
	id := key(wc)
	switch wc.APIServerLBType {
	case capz.LBTypeInternal:
	case capz.LBTypePublic, "":
		return nil, nil // a public API server needs no private endpoint
	default:
		return nil, []Problem{{id, ReasonInvalidSpec, fmt.Sprintf(
			"spec.networkSpec.apiServerLB.type %q is neither Internal nor Public", wc.APIServerLBType)}}
	}
	if len(wc.PrivateLinks) == 0 {
		return nil, nil // no private links declared (upstream CAPZ): nothing to reach
	}
	if p := missingIDs(wc, "the private link service ID"); p != nil {
		return nil, []Problem{*p}
	}
	subnet, p := endpointSubnet(mc, cfg.MCSubnet)
	if p != nil {
		return nil, []Problem{*p}
	}
	var out []Endpoint
	var problems []Problem
	waiting := false
	for _, pl := range wc.PrivateLinks {
		if !slices.ContainsFunc(pl.AllowedSubscriptions, equalFold(mc.SubscriptionID)) {
			problems = append(problems, Problem{id, ReasonSubscriptionNotAllowed, fmt.Sprintf(
				"private link %s does not list the management cluster's subscription %s in allowedSubscriptions", pl.Name, mc.SubscriptionID)})
			continue
		}
		name := pl.Name + "-privateendpoint"
		if p := checkName(id, name); p != nil {
			problems = append(problems, *p)
			continue
		}
		plsID := PrivateLinkServiceID(wc.SubscriptionID, wc.ResourceGroup, pl.Name)
		if !wc.PrivateLinksReady && !existing.Holds(name, plsID) {
			waiting = true
			continue
		}
		manual := !slices.ContainsFunc(pl.AutoApprovedSubscriptions, equalFold(mc.SubscriptionID))
		ep := Endpoint{
			Subnet: subnet, Direction: DirectionMCToWC, Cluster: id, Link: pl.Name,
			PrivateEndpoint: capz.PrivateEndpoint{
				Name: name, Location: mc.Location, ManualApproval: manual,
				Connections: []capz.PrivateLinkServiceConnection{{
					Name:                 pl.Name + "-connection",
					PrivateLinkServiceID: plsID,
				}},
			},
		}
		if manual {
			ep.Connections[0].RequestMessage = requestMessage(fmt.Sprintf(
				"Management cluster %s requests access to the API server of workload cluster %s.", mc.Name, id))
		}
		out = append(out, ep)
	}
	if waiting {
		problems = append(problems, Problem{id, ReasonWaitingForPrivateLinks,
			"waiting for the private link services (CAPZ's condition PrivateLinksReady, or the Ready condition of the AzurePrivateLinkService the operator created)"})
	}
	return out, problems
}

// WCToMC returns the endpoints a workload cluster needs to reach the
// management cluster's ingress or gateway, in the configured layout, when
// the MC's API server load balancer is internal (a private MC). The first
// is the one whose IP the ingress annotation takes.
func WCToMC(mc, wc *capz.AzureCluster, cfg Config) ([]Endpoint, []Problem) {
	id := key(wc)
	switch mc.APIServerLBType {
	case capz.LBTypeInternal:
	case capz.LBTypePublic, "":
		return nil, nil
	default:
		// Not silently public: the WC would lose its endpoint to the MC.
		return nil, []Problem{{id, ReasonInvalidSpec, fmt.Sprintf(
			"the management cluster's spec.networkSpec.apiServerLB.type %q is neither Internal nor Public: no endpoint to it is wired or removed", mc.APIServerLBType)}}
	}
	if p := missingIDs(mc, "the management cluster's private link service ID"); p != nil {
		p.Cluster = id
		return nil, []Problem{*p}
	}
	subnet, p := endpointSubnet(wc, cfg.WCSubnet)
	if p != nil {
		return nil, []Problem{*p}
	}
	var out []Endpoint
	var problems []Problem
	for _, slot := range cfg.wcToMCSlots(wc.Name, mc.Name) {
		link, base := slot.link, slot.base
		name := base + "-privateendpoint"
		if p := checkName(id, name); p != nil {
			problems = append(problems, *p)
			continue
		}
		// The MC may declare its link (fork schema) with the subscriptions
		// it auto-approves; otherwise the connection is automatic.
		manual := false
		if pl, ok := findLink(mc, link); ok {
			manual = !slices.ContainsFunc(pl.AutoApprovedSubscriptions, equalFold(wc.SubscriptionID))
		}
		ep := Endpoint{
			Subnet: subnet, Direction: DirectionWCToMC, Cluster: id, Link: link,
			PrivateEndpoint: capz.PrivateEndpoint{
				Name: name, Location: wc.Location, ManualApproval: manual,
				Connections: []capz.PrivateLinkServiceConnection{{
					Name:                 base + "-connection",
					PrivateLinkServiceID: PrivateLinkServiceID(mc.SubscriptionID, mc.ResourceGroup, link),
				}},
			},
		}
		if manual {
			ep.Connections[0].RequestMessage = requestMessage(fmt.Sprintf(
				"Workload cluster %s requests access to the ingress of management cluster %s.", id, mc.Name))
		}
		out = append(out, ep)
	}
	return out, problems
}

// Held is what the operator holds in the MC: endpoint entry name →
// lower-case resource ID of the private link service its connection
// targets. The target records the entry's owner: the WC whose service it
// is (docs/design.md, *Shared names*).
type Held map[string]string

// Holds says the entry name is held and targets plsID.
func (h Held) Holds(name, plsID string) bool {
	target, ok := h[name]
	return ok && target == strings.ToLower(plsID)
}

// heldTargets returns Held for entries grouped by subnet.
func heldTargets(eps map[string][]capz.PrivateEndpoint) Held {
	out := Held{}
	for _, list := range eps {
		for _, ep := range list {
			target := ""
			if len(ep.Connections) > 0 {
				target = strings.ToLower(ep.Connections[0].PrivateLinkServiceID)
			}
			out[ep.Name] = target
		}
	}
	return out
}

// DesiredMC computes the management cluster's complete set of operator
// endpoints for all workload clusters at once, so that it can be applied in
// one write however many WC events arrived (docs/design.md, *One write to
// the MC*). Deleting clusters get none. existing is what the operator holds
// in the MC now (see MCToWC). Endpoints are sorted by name.
//
// An entry name is a shared name: the MC's endpoints of every tenant sit in
// one list, and the name carries no namespace. Its holder keeps it: the WC
// whose service the entry the MC holds targets. Any other WC that needs
// that name gets a Problem, and so does every WC that needs a name whose
// entry targets a service no WC claims now (its endpoint is on its way
// out; the name is free once the entry is gone). Among new claimants of a
// free name, the first by namespace/name gets it. An entry is never
// re-targeted from one service to another.
func DesiredMC(mc *capz.AzureCluster, wcs []*capz.AzureCluster, cfg Config, existing Held) ([]Endpoint, []Problem) {
	out, problems := claimsMC(mc, wcs, cfg, existing)
	out, limited := WithinLimit(out, existing, EntryCount(mc), cfg.MCEndpointLimit)
	return sortedByName(out), append(problems, limited...)
}

// sortedByName sorts eps by name and returns them.
func sortedByName(eps []Endpoint) []Endpoint {
	sort.Slice(eps, func(i, j int) bool { return eps[i].Name < eps[j].Name })
	return eps
}

// claimsMC is DesiredMC before the MC's room is counted: every WC's
// endpoints, with the name rules applied, in the order the clusters are
// served (by namespace and name), which the room's count relies on
// (fitInMC, WithinLimit).
func claimsMC(mc *capz.AzureCluster, wcs []*capz.AzureCluster, cfg Config, existing Held) (out []Endpoint, problems []Problem) {
	sorted := slices.Clone(wcs)
	sort.Slice(sorted, func(i, j int) bool { return key(sorted[i]) < key(sorted[j]) })
	var claims []Endpoint
	for _, wc := range sorted {
		if wc.Deleting || key(wc) == key(mc) {
			continue
		}
		eps, ps := MCToWC(mc, wc, cfg, existing)
		problems = append(problems, ps...)
		claims = append(claims, eps...)
	}
	winner := map[string]int{} // endpoint name -> index in claims
	for i, ep := range claims {
		if _, ok := winner[ep.Name]; !ok && existing.Holds(ep.Name, ep.Connections[0].PrivateLinkServiceID) {
			winner[ep.Name] = i // the holder
		}
	}
	for i, ep := range claims {
		if _, ok := winner[ep.Name]; !ok {
			if _, held := existing[ep.Name]; !held {
				winner[ep.Name] = i // the first new claimant of a free name
			}
		}
		w, ok := winner[ep.Name]
		switch {
		case ok && w == i:
			out = append(out, ep)
		case ok:
			problems = append(problems, nameConflict(ep, claims[w].Cluster))
		default:
			problems = append(problems, nameConflict(ep, ""))
		}
	}
	return out, problems
}

// WithoutNamesInAzure withholds the new entries among eps (names existing
// does not hold) whose name Azure still gives a private endpoint in the
// MC's resource group that connects to another service: inAzure is what
// Azure has under those names (lower-case name -> lower-case target). An
// entry's name is the name of the endpoint CAPZ makes from it, and Azure
// never moves an endpoint to another service (it refuses the PUT,
// CannotChangePrivateLinkConnectionOnPrivateEndpoint): a name whose holder
// left is free once its entry is gone *and* Azure has deleted the
// endpoint, which CAPZ does after the entry is gone. Given sooner, the new
// holder's entry would ask CAPZ for a change Azure refuses, and CAPZ would
// keep the old endpoint, the new cluster would never be wired. An endpoint
// of the name that connects to the claimant's own service (a cluster
// created again in its predecessor's resource group) is no obstacle.
func WithoutNamesInAzure(eps []Endpoint, existing Held, inAzure map[string]string) ([]Endpoint, []Problem) {
	var out []Endpoint
	var problems []Problem
	for _, ep := range eps {
		_, held := existing[ep.Name]
		target, inUse := inAzure[strings.ToLower(ep.Name)]
		if held || !inUse || target == strings.ToLower(ep.Connections[0].PrivateLinkServiceID) {
			out = append(out, ep)
			continue
		}
		problems = append(problems, Problem{ep.Cluster, ReasonNameConflict, fmt.Sprintf(
			"private endpoint %s is still in the management cluster's resource group in Azure, connected to another private link service "+
				"(an earlier holder's endpoint on its way out, or one made outside the operator): the entry is made once Azure no longer has it; "+
				"if it stays, rename private link %s", ep.Name, ep.Link)})
	}
	return out, problems
}

// WithoutHeldForOthers leaves out of a WC's endpoints in the MC those
// whose name the MC holds for another service (another cluster's, or an
// entry on its way out), each with the PrivateEndpointNameConflict the
// MC's pass gives it too (DesiredMC): the WC's own pass then says why it
// waits, instead of observing the holder's endpoint in Azure
// (PrivateEndpointTargetMismatch, which is left for a name Azure still
// has after its entry went).
func WithoutHeldForOthers(eps []Endpoint, held Held) ([]Endpoint, []Problem) {
	var out []Endpoint
	var problems []Problem
	for _, ep := range eps {
		if _, ok := held[ep.Name]; ok && !held.Holds(ep.Name, ep.Connections[0].PrivateLinkServiceID) {
			problems = append(problems, nameConflict(ep, ""))
			continue
		}
		out = append(out, ep)
	}
	return out, problems
}

// nameConflict is the Problem of a WC that needs an entry name another
// cluster holds (other; "" when it is an entry on its way out). It names
// the holder only when it is in the same namespace: a tenant learns
// nothing of another tenant's clusters.
func nameConflict(ep Endpoint, other string) Problem {
	holder := "another workload cluster"
	if ns, _, _ := strings.Cut(ep.Cluster, "/"); other != "" && strings.HasPrefix(other, ns+"/") {
		holder = "workload cluster " + other
	}
	return Problem{ep.Cluster, ReasonNameConflict, fmt.Sprintf(
		"private endpoint %s in the management cluster is already held for %s; rename private link %s", ep.Name, holder, ep.Link)}
}

// PrivateLinkServiceID is the resource ID of a private link service.
func PrivateLinkServiceID(subscription, resourceGroup, name string) string {
	return "/subscriptions/" + subscription + "/resourceGroups/" + resourceGroup +
		"/providers/Microsoft.Network/privateLinkServices/" + name
}

// endpointSubnet picks the subnet that receives endpoints: the named one,
// else the first with role node, else the first.
func endpointSubnet(ac *capz.AzureCluster, name string) (string, *Problem) {
	if name != "" {
		for _, s := range ac.Subnets {
			if s.Name == name {
				return name, nil
			}
		}
		return "", &Problem{key(ac), ReasonInvalidSpec, fmt.Sprintf(
			"spec.networkSpec.subnets has no subnet %q, which the operator is configured to put private endpoints in", name)}
	}
	for _, s := range ac.Subnets {
		if s.Role == capz.SubnetRoleNode {
			return s.Name, nil
		}
	}
	if len(ac.Subnets) > 0 && ac.Subnets[0].Name != "" {
		return ac.Subnets[0].Name, nil
	}
	return "", &Problem{key(ac), ReasonInvalidSpec, "spec.networkSpec.subnets is empty: there is no subnet for private endpoints"}
}

func missingIDs(ac *capz.AzureCluster, what string) *Problem {
	var missing []string
	if ac.SubscriptionID == "" {
		missing = append(missing, "spec.subscriptionID")
	}
	if ac.ResourceGroup == "" {
		missing = append(missing, "spec.resourceGroup")
	}
	if len(missing) == 0 {
		return nil
	}
	return &Problem{key(ac), ReasonInvalidSpec, fmt.Sprintf(
		"%s of %s is empty, so %s cannot be built", strings.Join(missing, " and "), key(ac), what)}
}

func checkName(cluster, name string) *Problem {
	if len(name) <= MaxPrivateEndpointName {
		return nil
	}
	return &Problem{cluster, ReasonInvalidSpec, fmt.Sprintf(
		"private endpoint name %s is %d characters; Azure allows %d: shorten the private link or cluster name", name, len(name), MaxPrivateEndpointName)}
}

func findLink(ac *capz.AzureCluster, name string) (capz.PrivateLink, bool) {
	for _, pl := range ac.PrivateLinks {
		if pl.Name == name {
			return pl, true
		}
	}
	return capz.PrivateLink{}, false
}

// requestMessage cuts a message to CAPZ's limit, on a rune boundary.
func requestMessage(s string) string {
	if len(s) <= MaxRequestMessage {
		return s
	}
	cut := s[:MaxRequestMessage-len("...")]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	return cut + "..."
}

func equalFold(a string) func(string) bool {
	return func(b string) bool { return strings.EqualFold(a, b) }
}

func key(ac *capz.AzureCluster) string { return ac.Namespace + "/" + ac.Name }
