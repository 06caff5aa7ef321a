package clusterlink

import (
	"slices"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// The older operator (releases 0.1 to 0.7) runs as /manager and sets no
// field owner, so its writes carry the field manager "manager" — the same
// as CAPI's, CAPZ's and every kubebuilder scaffold's. The manager alone
// therefore proves nothing: an entry is the older operator's only when it
// is held by an adopted manager *and* has exactly the shape the older
// operator wrote. Facts from its source (pkg/privateendpoints/service.go
// and controllers/azurecluster_controller.go at each release tag):
//
//   - MC side, one entry per WC private link <pl>: name <pl>-privateendpoint,
//     one connection <pl>-connection to
//     /subscriptions/<wc-sub>/resourceGroups/<wc-rg>/providers/Microsoft.Network/privateLinkServices/<pl>,
//     with a request message only when approval is manual, starting with
//     olderRequestMessagePrefix;
//   - WC side (0.2-0.4): <wc>-to-<mc>-privatelink-privateendpoint with one
//     connection <wc>-to-<mc>-connection to <mc>-ingress-privatelink;
//     (0.4-0.7): <wc>-to-<mc>-gateway-privateendpoint with one connection
//     <wc>-to-<mc>-gateway-connection to <mc>-gateway-privatelink; both in
//     the MC's subscription and the resource group named after the MC (or
//     the MC's real group, the only one that worked where they differ),
//     never manual, no request message.
const olderRequestMessagePrefix = "Giant Swarm azure-private-endpoint-operator that is running in management cluster "

// Older tells, in one AzureCluster, the endpoint entries the operator takes
// over although it does not hold them: the older operator's, and those CAPZ
// wrote back.
type Older struct {
	// Managers are the older operator's field managers
	// (--adopt-field-managers).
	Managers []string
	// Shape reports whether an entry has the older operator's exact shape
	// for this AzureCluster.
	Shape func(capz.PrivateEndpoint) bool
	// WrittenBack are CAPZ's field managers (--capz-field-managers). CAPZ
	// never declares an entry, but CAPI's patch helper, which CAPZ writes
	// its AzureClusters with, sends spec changes as a JSON merge patch
	// without optimistic locking (cluster-api util/patch, patch.go), and a
	// merge patch replaces a list whole: a CAPZ reconcile that read the
	// object before the operator removed an entry, and then changes
	// anything in the subnets (their IDs, when a cluster is new), writes
	// the entry back, held by CAPZ alone. An entry of the operator's
	// naming contract or of the older operator's shape that one of these
	// managers holds is such an entry.
	WrittenBack []string
}

// Holds reports whether an entry held by managers is one to take over:
// one of them is an adopted manager and the entry has the older shape, or
// CAPZ alone holds it and it has the older shape or the operator's
// (operatorShape). An entry a user holds as well stays the user's.
func (o Older) Holds(managers []string, pe capz.PrivateEndpoint) bool {
	older := o.Shape != nil && o.Shape(pe)
	inWrittenBack := func(m string) bool { return slices.Contains(o.WrittenBack, m) }
	return older && slices.ContainsFunc(managers, func(m string) bool { return slices.Contains(o.Managers, m) }) ||
		(older || operatorShape(pe)) && len(managers) > 0 && !slices.ContainsFunc(managers, func(m string) bool { return !inWrittenBack(m) })
}

// operatorShape reports whether an entry follows the operator's naming
// contract on either side: <base>-privateendpoint with one connection
// <base>-connection (DesiredMC, DesiredWC; docs/design.md, *Names*).
func operatorShape(pe capz.PrivateEndpoint) bool {
	base, ok := strings.CutSuffix(pe.Name, "-privateendpoint")
	return ok && base != "" && len(pe.Connections) == 1 && pe.Connections[0].Name == base+"-connection"
}

// OlderInMC is Older for the management cluster's AzureCluster.
func OlderInMC(managers []string) Older { return Older{Managers: managers, Shape: OlderMCEntry} }

// OlderInWC is Older for a workload cluster's AzureCluster.
func OlderInWC(managers []string, wc, mc *capz.AzureCluster) Older {
	return Older{Managers: managers, Shape: OlderWCEntry(wc.Name, mc)}
}

// OlderMCEntry reports whether an MC entry has the shape the older
// operator gave its MC -> WC endpoints.
func OlderMCEntry(pe capz.PrivateEndpoint) bool {
	pl, ok := strings.CutSuffix(pe.Name, "-privateendpoint")
	if !ok || pl == "" || len(pe.Connections) != 1 {
		return false
	}
	c := pe.Connections[0]
	sub, rg, name, ok := splitLinkServiceID(c.PrivateLinkServiceID)
	if !ok || sub == "" || rg == "" || name != pl || c.Name != pl+"-connection" {
		return false
	}
	if pe.ManualApproval {
		return strings.HasPrefix(c.RequestMessage, olderRequestMessagePrefix)
	}
	return c.RequestMessage == ""
}

// OlderWCEntry returns whether a WC entry has the shape the older operator
// gave the endpoints of the WC named wc to the MC.
func OlderWCEntry(wc string, mc *capz.AzureCluster) func(capz.PrivateEndpoint) bool {
	shapes := map[string][2]string{ // endpoint name -> connection name, link
		wc + "-to-" + mc.Name + "-privatelink-privateendpoint": {wc + "-to-" + mc.Name + "-connection", mc.Name + "-ingress-privatelink"},
		wc + "-to-" + mc.Name + "-gateway-privateendpoint":     {wc + "-to-" + mc.Name + "-gateway-connection", mc.Name + "-gateway-privatelink"},
	}
	return func(pe capz.PrivateEndpoint) bool {
		want, ok := shapes[pe.Name]
		if !ok || len(pe.Connections) != 1 || pe.ManualApproval {
			return false
		}
		c := pe.Connections[0]
		// The older operator named the group after the MC; where the MC's
		// group has another name, only an entry to the real group worked.
		return c.Name == want[0] && c.RequestMessage == "" &&
			(strings.EqualFold(c.PrivateLinkServiceID, PrivateLinkServiceID(mc.SubscriptionID, mc.Name, want[1])) ||
				strings.EqualFold(c.PrivateLinkServiceID, PrivateLinkServiceID(mc.SubscriptionID, mc.ResourceGroup, want[1])))
	}
}

// splitLinkServiceID splits a private link service's resource ID.
func splitLinkServiceID(id string) (sub, rg, name string, ok bool) {
	parts := strings.Split(id, "/")
	if len(parts) != 9 || parts[0] != "" || !strings.EqualFold(parts[1], "subscriptions") || !strings.EqualFold(parts[3], "resourceGroups") ||
		!strings.EqualFold(parts[5], "providers") || !strings.EqualFold(parts[6], "Microsoft.Network") || !strings.EqualFold(parts[7], "privateLinkServices") {
		return "", "", "", false
	}
	return parts[2], parts[4], parts[8], true
}
