package clusterlink

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// plan is what the wiring serves for one WC: the MC's endpoints to it
// (toWC) and its endpoints to the MC (toMC), each without the entries of
// the operator's name that someone else holds (neither written over nor
// observed as the operator's), the field managers of the WC's entries,
// and the problems found on the way. The DNS mode reads the same plan
// (Wiring.Serves) to know which sides have endpoints.
type plan struct {
	toWC, toMC []Endpoint
	wcOwners   map[capz.EndpointKey][]string
	problems   []Problem
}

// planEndpoints computes the plan of wc (as the wiring sees it, with its
// managed private link) against the MC as mcs shows it, before the MC's
// room is counted (onMCRoom).
func planEndpoints(u *unstructured.Unstructured, wc *capz.AzureCluster, mcs mcState, opts Options) plan {
	mc := mcs.view
	toMC, p1 := WCToMC(mc, wc, opts.Config)
	toWC, p2 := MCToWC(mc, wc, opts.Config, mcs.held)
	toWC, p6 := WithoutHeldForOthers(toWC, mcs.held)
	// The MC's entry limit (and where the endpoints beyond it go) is
	// onMCRoom's, which reads the MC's objects: the callers ask it next.
	wcOwners := capz.EndpointOwners(u)
	toMC, p3 := SkipTaken(toMC, TakenNames(wc, wcOwners, opts.olderInWC(wc, mc)), key(wc))
	toWC, p4 := SkipTaken(toWC, mcs.takenNames(opts), key(mc))
	return plan{toWC: toWC, toMC: toMC, wcOwners: wcOwners, problems: slices.Concat(p1, p2, p6, p3, p4)}
}
