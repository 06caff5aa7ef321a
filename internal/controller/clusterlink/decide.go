package clusterlink

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// The decisions the reconcilers take about entries that already exist:
// which belong to a WC, which to carry unchanged, which belong to someone
// else, which an older operator left. Pure functions of the objects' views
// and managedFields, table-tested (docs/design.md, *Keep what works*).

// ReasonPrivateEndpointNameTaken is the Event reason for an entry of the
// name the operator would write that another field manager holds: the
// operator leaves it alone.
const ReasonPrivateEndpointNameTaken = "PrivateEndpointNameTaken"

// LinkServiceIDs returns, in lower case, the IDs of the private link
// services a WC's MC-side endpoints may target: those of its declared
// links, and the one the operator creates for it when it manages the link.
// An endpoint belongs to a WC when its connection targets one of them; two
// WCs in one resource group never share one.
func LinkServiceIDs(wc *capz.AzureCluster) map[string]bool {
	ids := map[string]bool{}
	if wc.SubscriptionID == "" || wc.ResourceGroup == "" {
		return ids
	}
	for _, pl := range wc.PrivateLinks {
		ids[strings.ToLower(PrivateLinkServiceID(wc.SubscriptionID, wc.ResourceGroup, pl.Name))] = true
	}
	ids[strings.ToLower(PrivateLinkServiceID(wc.SubscriptionID, wc.ResourceGroup, ManagedLinkName(wc)))] = true
	return ids
}

// targetsOneOf reports whether an endpoint's connection targets one of ids.
func targetsOneOf(pe capz.PrivateEndpoint, ids map[string]bool) bool {
	return len(pe.Connections) > 0 && ids[strings.ToLower(pe.Connections[0].PrivateLinkServiceID)]
}

// CarryHeld returns want plus the endpoints the operator holds in the MC now
// (current) for WCs whose entries must stay exactly as they are: paused
// ones, and ones whose AzureCluster cannot be read. An endpoint is carried
// when it targets one of those WCs' private link services; a name want
// already holds is never added twice (list-map keys are unique, and an
// apply with a duplicate is refused whole).
func CarryHeld(want, current map[string][]capz.PrivateEndpoint, held []*capz.AzureCluster) map[string][]capz.PrivateEndpoint {
	ids := map[string]bool{}
	for _, wc := range held {
		for id := range LinkServiceIDs(wc) {
			ids[id] = true
		}
	}
	return carry(want, current, func(ep capz.PrivateEndpoint) bool { return targetsOneOf(ep, ids) })
}

// carry returns want plus the entries of current that keep says stay, in
// the order of their subnets' names; a name want already holds is never
// added twice (list-map keys are unique, and an apply with a duplicate is
// refused whole).
func carry(want, current map[string][]capz.PrivateEndpoint, keep func(capz.PrivateEndpoint) bool) map[string][]capz.PrivateEndpoint {
	out := make(map[string][]capz.PrivateEndpoint, len(want))
	names := map[string]bool{}
	for subnet, eps := range want {
		out[subnet] = slices.Clone(eps)
		for _, ep := range eps {
			names[ep.Name] = true
		}
	}
	subnets := make([]string, 0, len(current))
	for s := range current {
		subnets = append(subnets, s)
	}
	sort.Strings(subnets)
	for _, subnet := range subnets {
		for _, ep := range current[subnet] {
			if names[ep.Name] || !keep(ep) {
				continue
			}
			out[subnet] = append(out[subnet], ep)
			names[ep.Name] = true
		}
	}
	return out
}

// WithoutEndpointsOf returns current without the endpoints that target the
// private link services of wcs.
func WithoutEndpointsOf(current map[string][]capz.PrivateEndpoint, wcs []*capz.AzureCluster) map[string][]capz.PrivateEndpoint {
	ids := map[string]bool{}
	for _, wc := range wcs {
		for id := range LinkServiceIDs(wc) {
			ids[id] = true
		}
	}
	out := make(map[string][]capz.PrivateEndpoint, len(current))
	for subnet, eps := range current {
		for _, ep := range eps {
			if !targetsOneOf(ep, ids) {
				out[subnet] = append(out[subnet], ep)
			}
		}
	}
	return out
}

// HoldsEndpointsOf reports whether the operator's endpoints in the MC
// (mcOwned) still include one to a WC; a deleted WC's finalizer waits until
// none does.
func HoldsEndpointsOf(mcOwned map[string][]capz.PrivateEndpoint, wc *capz.AzureCluster) bool {
	ids := LinkServiceIDs(wc)
	for _, eps := range mcOwned {
		for _, ep := range eps {
			if targetsOneOf(ep, ids) {
				return true
			}
		}
	}
	return false
}

// names returns the names of endpoints grouped by subnet.
func names(eps map[string][]capz.PrivateEndpoint) map[string]bool {
	out := map[string]bool{}
	for _, list := range eps {
		for _, ep := range list {
			out[ep.Name] = true
		}
	}
	return out
}

// TakenNames returns the names of an AzureCluster's endpoint entries that
// belong to someone else: held neither by the operator nor provably by the
// older operator (older: its field managers and its exact entry shape;
// its entries are taken over on upgrade). owners is capz.EndpointOwners of
// the object.
func TakenNames(ac *capz.AzureCluster, owners map[capz.EndpointKey][]string, older Older) map[string]bool {
	taken := map[string]bool{}
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			managers := owners[capz.EndpointKey{Subnet: s.Name, Name: pe.Name}]
			if slices.Contains(managers, capz.FieldManager) || older.Holds(managers, pe) {
				continue
			}
			taken[pe.Name] = true
		}
	}
	return taken
}

// SkipTaken leaves out the endpoints whose name another field manager holds
// in holder ("namespace/name"), with a Problem for the WC each is for. The
// rest keep working.
func SkipTaken(eps []Endpoint, taken map[string]bool, holder string) ([]Endpoint, []Problem) {
	if len(taken) == 0 {
		return eps, nil
	}
	var out []Endpoint
	var problems []Problem
	for _, ep := range eps {
		if !taken[ep.Name] {
			out = append(out, ep)
			continue
		}
		problems = append(problems, Problem{ep.Cluster, ReasonPrivateEndpointNameTaken, fmt.Sprintf(
			"the private endpoint entry %s in %s belongs to another field manager; the operator leaves it as it is and does not wire link %s: rename or remove that entry, or rename the link",
			ep.Name, holder, ep.Link)})
	}
	return out, problems
}

// StaleEntry is an entry to remove, by position, guarded by its name.
type StaleEntry struct {
	Subnet, Entry int
	Name          string
}

// StaleEntries returns the entries of an AzureCluster that the older
// operator wrote (older.Holds, not held by the operator: server-side apply
// cannot remove them) that the caller would remove (looksOwned) and are no
// longer wanted. Entries of any other manager or shape are never returned.
// Within a subnet the positions run from last to first, so that removing
// them one after another keeps the later ones valid.
func StaleEntries(ac *capz.AzureCluster, owners map[capz.EndpointKey][]string, older Older, wanted map[string]bool, looksOwned func(capz.PrivateEndpoint) bool) []StaleEntry {
	var out []StaleEntry
	for si, s := range ac.Subnets {
		for pi := len(s.PrivateEndpoints) - 1; pi >= 0; pi-- {
			pe := s.PrivateEndpoints[pi]
			managers := owners[capz.EndpointKey{Subnet: s.Name, Name: pe.Name}]
			if wanted[pe.Name] || slices.Contains(managers, capz.FieldManager) || !looksOwned(pe) || !older.Holds(managers, pe) {
				continue
			}
			out = append(out, StaleEntry{Subnet: si, Entry: pi, Name: pe.Name})
		}
	}
	return out
}

// Retiring returns a WC's endpoint entries to the MC that an earlier layout
// or link configuration left (docs/design.md, *Switching layouts*): held by
// the operator or provably by the older operator (older), named like the operator's
// WC-side endpoints, connected to a private link service in the MC's
// subscription and resource group (or the group named after the MC, as the
// older operator assumed), and not in want. A user's entry is never one.
// They stay until the endpoint the ingress annotation now takes its IP from
// serves, so the WC never loses its way to the MC.
func Retiring(wc, mc *capz.AzureCluster, owners map[capz.EndpointKey][]string, older Older, want []Endpoint) []Endpoint {
	wanted := map[string]bool{}
	for _, ep := range want {
		wanted[ep.Name] = true
	}
	looksOwned := wcEndpointName(wc.Name)
	var out []Endpoint
	for _, s := range wc.Subnets {
		for _, pe := range s.PrivateEndpoints {
			managers := owners[capz.EndpointKey{Subnet: s.Name, Name: pe.Name}]
			ours := slices.Contains(managers, capz.FieldManager) || older.Holds(managers, pe)
			if wanted[pe.Name] || !ours || !looksOwned(pe) || len(pe.Connections) != 1 {
				continue
			}
			id := pe.Connections[0].PrivateLinkServiceID
			if !targetsGroup(id, mc.SubscriptionID, mc.ResourceGroup) && !targetsGroup(id, mc.SubscriptionID, mc.Name) {
				continue
			}
			link := id[strings.LastIndex(id, "/")+1:]
			out = append(out, Endpoint{Subnet: s.Name, PrivateEndpoint: pe, Direction: DirectionWCToMC, Cluster: key(wc), Link: link})
		}
	}
	return out
}
