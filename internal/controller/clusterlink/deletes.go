package clusterlink

import (
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Every decision that deletes a private endpoint, or lets one go, is made
// here, in pure functions over facts the controllers gathered. The
// controllers only act on the answer (heal.go, layout.go, handover.go,
// orphans.go; the MC's stale entries are StaleEntries in decide.go; which
// connection states count as broken is heal.Policy.Breaks, the rule
// AzurePrivateEndpoint heals by too). Each
// asks for the address to be out of the DNS records first where a record
// could still hold it (DNS mode; dnsOK is true without it): Azure gives a
// freed address to the next endpoint in the subnet, anybody's. dnsOK is
// asked last, only when everything else allows the step: asking marks the
// cluster as waiting for the DNS controller (dnsHandOff).

// healWaitsForDNS says whether a broken endpoint's grace period must not
// start yet: the records may still hold its address.
func healWaitsForDNS(broken, healing bool, dnsOK func() bool) bool {
	return broken && healing && !dnsOK()
}

// layoutSwitched says whether the endpoints of an earlier WC-side layout
// may go: the new layout has endpoints (toMC), the first of them is ready
// (sourceReady), the WC already carries its address in the ingress
// annotation (published, as the observation says it should be: observed),
// and the records hold it.
func layoutSwitched(toMC []Endpoint, sourceReady bool, published, observed string, dnsOK func() bool) bool {
	return len(toMC) > 0 && sourceReady && published == observed && dnsOK()
}

// handOverDone says whether a handing-over WC's managed private link
// service (named managed), and with it the MC's endpoint to it, may go:
// the first of the MC's endpoints to the WC (first) is to a declared link,
// it is ready (apiSourceReady), the API server annotation holds its
// address (observed) on the WC already (published), and the records hold
// it.
func handOverDone(first Endpoint, managed string, apiSourceReady bool, published, observed string, dnsOK func() bool) bool {
	return !strings.EqualFold(first.Link, managed) && apiSourceReady && observed != "" && published == observed && dnsOK()
}

// orphanCandidate says whether an endpoint Azure has for a cluster, or an
// ASO object CAPZ made for one, is an orphan CAPZ left: not in the
// cluster's spec nor wanted (kept), nothing else takes care of it (taken:
// a live ASO object stands behind the Azure endpoint, or the ASO object is
// being deleted already), CAPZ made it for the cluster (madeByCAPZ), and
// it is named like the operator's entries (matches). A candidate is
// deleted only once found so twice, an interval apart
// (OrphanCleaner.ripen).
func orphanCandidate(pe capz.PrivateEndpoint, kept, taken, madeByCAPZ bool, matches func(capz.PrivateEndpoint) bool) bool {
	return !kept && !taken && madeByCAPZ && matches(pe)
}
