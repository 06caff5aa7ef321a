package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// fixes says, for each reason a chain can stop with, what to change. The
// same reasons key docs/operations.md's troubleshooting table; a test
// holds the two together.
var fixes = map[string]string{
	ReasonNotFound:     "Check the namespace and name (kubectl get azureclusters -A).",
	ReasonIsManagement: "Run explain for a workload cluster of this management cluster.",
	ReasonPaused:       "Unpause the Cluster (spec.paused, annotation cluster.x-k8s.io/paused) when what paused it (clusterctl move, a person) is done.",
	ReasonNotSelected:  "Put the watch-filter label back on the AzureCluster; until then the operator leaves what it wrote as it was.",
	ReasonNoPrivateLinks: "Declare spec.networkSpec.apiServerLB.privateLinks (CAPZ's fork, or upstream v1.27+), " +
		"or run the operator with --manage-private-link-services so that it makes one.",
	ReasonPrivateLinksWait: "Wait for CAPZ; if it does not come, read CAPZ's conditions and logs for the cluster.",
	ReasonNotYetWired: "Wait a recheck (--pending-recheck-interval); if nothing moves, read the cluster's Events " +
		"(kubectl events --for azurecluster/<name>) and the operator's logs.",
	ReasonConditionsMissing: "Check that the operator runs for this management cluster (--management-cluster-name/-namespace) and is the leader.",
	ReasonEndpointNotInAzure: "Wait for CAPZ to make the endpoint from the entry; if it does not come, read CAPZ's conditions and logs " +
		"(its identity must be allowed to write private endpoints in the resource group).",
	ReasonAnnotationOutdated: "Wait a recheck: the operator publishes the endpoint's address as Azure gives it; if it lasts, read the cluster's Events.",
	ReasonDNSRecordMissing:   "Wait for the operator's next DNS check (--wiring-dns-check-interval), which writes the record again; if it lasts, read the cluster's Events.",
	ReasonDNSRecordDiffers: "Wait for the operator's next DNS check, which writes the record back; if something else keeps changing it, " +
		"find what (the zone's activity log) and stop it.",

	clusterlink.ReasonManagementClusterNotFound: "Create the management cluster's AzureCluster, or fix --management-cluster-name/-namespace.",
	clusterlink.ReasonEndpointPending: "The owner of the private link service approves the connection " +
		"(az network private-endpoint-connection approve), or adds the management cluster's subscription to the link's autoApprovedSubscriptions.",
	clusterlink.ReasonEndpointRejected: "The owner of the private link service approves the connection again; or delete the endpoint in Azure " +
		"so that it is requested anew (the operator does it itself with --heal-rejected).",
	clusterlink.ReasonEndpointDisconnected: "The service was deleted or the connection removed: the operator deletes the endpoint after " +
		"--heal-disconnected-after so that CAPZ makes a new one; if healing is off (0s), delete it in Azure yourself.",
	clusterlink.ReasonEndpointProvisioning: "Wait: the endpoint is being created or has no address yet. If it lasts, check that CAPZ created it " +
		"and that the identity may read network interfaces (Microsoft.Network/networkInterfaces/read).",
	clusterlink.ReasonEndpointTargetMismatch: "An endpoint of the cluster's name connects to another service: it is not this cluster's. " +
		"Rename the private link (the endpoint's name follows it), or delete that endpoint if nobody needs it.",
	clusterlink.ReasonNameConflict: "Another workload cluster holds the management cluster's endpoint of that name: rename the private link " +
		"(spec.networkSpec.apiServerLB.privateLinks[].name).",
	clusterlink.ReasonPrivateEndpointNameTaken: "An entry of the operator's name belongs to another field manager: rename or remove it, " +
		"or add its manager to --adopt-field-managers (an older operator) or --capz-field-managers (CAPZ under another user agent).",
	clusterlink.ReasonSubscriptionNotAllowed: "Add the management cluster's subscription to the link's allowedSubscriptions.",
	clusterlink.ReasonEndpointLimit: "The management cluster's AzureCluster holds as many private endpoint entries as --mc-private-endpoint-limit allows " +
		"(Azure: 1,000 per virtual network): enable high-scale private endpoints on the MC's network and raise the limit (at most 3000), " +
		"or remove private links no cluster needs; the cluster is wired once there is room. " +
		"Beyond the AzureCluster (--mc-endpoint-subnets), the networks of those subnets are full too: declare a subnet of another network.",
	clusterlink.ReasonServiceLimit: "The management cluster's private link service has as many connections from clusters as " +
		"--mc-service-connection-limit allows (Azure: 1,000 per private link service): remove endpoints no one needs " +
		"from the service (clusters, other tools' endpoints) or serve the cluster from another management cluster; the cluster is wired once there is room.",
	clusterlink.ReasonIngressServiceWaiting: "Wait: the management cluster's next ingress private link service is being made " +
		"(kubectl get azureprivatelinkservices -n <mc-namespace>); if it is not Ready, its conditions say why. " +
		"If the message says a service does not list the cluster's subscription, add it to --mc-ingress-shard-subscriptions. ",
	clusterlink.ReasonMCServiceNotVisible: "Add the workload cluster's subscription to the visibility of the management cluster's private link service " +
		"the message names (or make it visible to all subscriptions, \"*\", where its accessMode is not Restricted).",
	clusterlink.ReasonMCServiceNotInAzure: "Wait while the management cluster's private link service is being made; if it does not come, make it " +
		"(the first ingress service, <mc>-ingress-privatelink, is the platform's: made by hand, by CAPZ or by the MC's ingress Service).",
	clusterlink.ReasonInvalidSpec:   "Fix the AzureCluster's spec as the message says.",
	clusterlink.ReasonNothingToWire: "Nothing to do unless the cluster should be wired: declare its private links again.",
	clusterlink.ReasonAzureReadsPaced: "Wait: the operator reads the cluster's endpoints as Azure refills the identity's read budget in that subscription " +
		"(25 a second). If it lasts minutes, find what spends it: the operator's reads by resource type " +
		"(azure_private_endpoint_operator_azure_requests_total, _azure_requests_paced_total) or another tool under the same identity.",
	clusterlink.ReasonAzureError: "Read the message: an authorization error names the action and scope to grant to the identity; " +
		"the operator retries every --terminal-recheck-interval.",

	wiringdns.ReasonDNSNameRefused: "The zone's name is refused (a protected domain, or a base domain the operator does not allow): " +
		"fix the base-domain annotation, or --wiring-dns-allowed-base-domains.",
	wiringdns.ReasonDNSNameReserved: "The name belongs to the platform or to a public cluster of the same name that came first: rename the cluster, " +
		"or give it another base domain.",
	wiringdns.ReasonDNSZoneHeld:       "Another workload cluster of the same name made that zone: it is that cluster's while it exists; rename this one.",
	wiringdns.ReasonDNSRecordConflict: "Another workload cluster of the resource group holds those names: give the clusters zones of their own (--wiring-dns-wc-zone with {{.Cluster}}).",
	wiringdns.ReasonDNSRecordNotOwned: "A record set of that name was written by another tool: remove it, or let the operator take it over (--wiring-dns-adopt).",
	wiringdns.ReasonInvalidDNS:        "The DNS names cannot be built: set --wiring-dns-base-domain, or fix the templates.",
	wiringdns.ReasonDNSZoneLimit:      "The subscription or the network has Azure's maximum of private zones: raise the quota (and --wiring-dns-zone-limit) or use a shared zone.",
	wiringdns.ReasonDNSZoneLimitNear:  "Close to Azure's maximum of private zones in the subscription or the network: plan for a shared zone or a raised quota.",
	wiringdns.ReasonDNSRecordSetLimit: "The zone holds Azure's maximum of record sets (25,000): name the MC-side zone per namespace or per cluster " +
		"(--wiring-dns-mc-zone with {{.Namespace}} or {{.Cluster}}), or remove record sets no one needs from it.",
	dnsengine.ReasonRecordSetLimitNear:  "A zone the cluster's records are in is close to Azure's maximum of record sets: plan zones per namespace or per cluster.",
	wiringdns.ReasonDNSNotReleased:      "The cluster's records could not be removed: read the message (usually the MC-side zone's permissions).",
	clusterlink.ReasonHealWaitsForDNS:   "Wait: a broken endpoint is deleted once its records no longer hold its address.",
	clusterlink.ReasonHealWaitsForPause: "Unpause the cluster when clusterctl move is done; the heal follows.",
}

// Steps of the chain a reason can stop at, for the troubleshooting
// table; "<...>" stands for a name.
const (
	atAzureEndpoint = "in Azure: <endpoint>"
	atLinksReady    = "private links ready"
	atDNSReady      = "private DNS ready"
	atFirstWait     = "the first step that waits (`..`)"
	// atMCEntries: the management cluster's own condition, when explain
	// is run for the management cluster.
	atMCEntries = "workload clusters' entries"
)

// stopsAt says where each reason stops the chain. Tests hold it to what
// explain does (StopsHere) for every reason they reach.
var stopsAt = map[string][]string{
	ReasonNotFound:           {"cluster"},
	ReasonIsManagement:       {"management cluster"},
	ReasonPaused:             {"not paused"},
	ReasonNotSelected:        {"selected"},
	ReasonNoPrivateLinks:     {"private links"},
	ReasonPrivateLinksWait:   {"CAPZ's private links"},
	ReasonNotYetWired:        {atFirstWait},
	ReasonConditionsMissing:  {atLinksReady},
	ReasonEndpointNotInAzure: {atAzureEndpoint},
	ReasonAnnotationOutdated: {"annotation <name>"},
	ReasonDNSRecordMissing:   {"record <name>"},
	ReasonDNSRecordDiffers:   {"record <name>"},

	clusterlink.ReasonManagementClusterNotFound: {"management cluster", atLinksReady},
	clusterlink.ReasonEndpointPending:           {atAzureEndpoint, atLinksReady},
	clusterlink.ReasonEndpointRejected:          {atAzureEndpoint, atLinksReady},
	clusterlink.ReasonEndpointDisconnected:      {atAzureEndpoint, atLinksReady},
	clusterlink.ReasonEndpointProvisioning:      {atAzureEndpoint, atLinksReady},
	clusterlink.ReasonEndpointTargetMismatch:    {atAzureEndpoint, atLinksReady},
	// Reasons of the management cluster's condition as well as of a
	// workload cluster's.
	clusterlink.ReasonEndpointLimit:            {atLinksReady, atMCEntries},
	clusterlink.ReasonServiceLimit:             {atLinksReady, atMCEntries},
	clusterlink.ReasonIngressServiceWaiting:    {atLinksReady, atMCEntries},
	clusterlink.ReasonMCServiceNotInAzure:      {atLinksReady},
	clusterlink.ReasonMCServiceNotVisible:      {atLinksReady},
	clusterlink.ReasonNameConflict:             {atLinksReady, atMCEntries},
	clusterlink.ReasonPrivateEndpointNameTaken: {atLinksReady, atMCEntries},
	clusterlink.ReasonInvalidSpec:              {atLinksReady, atMCEntries},
}

// StopsHere says whether reason may stop the chain at step (as the
// troubleshooting table says). A reason of the operator's own conditions
// stops at the condition's step.
func StopsHere(reason, step string) bool {
	at, ok := stopsAt[reason]
	if !ok {
		at = []string{atLinksReady, atDNSReady}
	}
	for _, a := range at {
		prefix, wild := strings.CutSuffix(a, "<endpoint>")
		if !wild {
			prefix, wild = strings.CutSuffix(a, "<name>")
		}
		if a == step || wild && strings.HasPrefix(step, prefix) || a == atFirstWait {
			return true
		}
	}
	return false
}

// where is the table's column: where a reason stops the chain, as
// explain prints that step's line (its state's mark, its name).
func where(reason string) string {
	at, ok := stopsAt[reason]
	if !ok {
		at = []string{atLinksReady}
		if strings.HasPrefix(reason, "DNS") || reason == wiringdns.ReasonInvalidDNS {
			at = []string{atDNSReady}
		}
	}
	mark := stateMarks[StateStop]
	if waits(reason) {
		mark = stateMarks[StateWaiting]
	}
	out := make([]string, 0, len(at))
	for _, a := range at {
		if a == atFirstWait {
			out = append(out, a)
			continue
		}
		out = append(out, "`"+mark+"  "+a+"`")
	}
	return strings.Join(out, " or ")
}

// Fix is what to change for a reason ("" when explain knows none: read the
// message).
func Fix(reason string) string {
	if f, ok := fixes[reason]; ok {
		return f
	}
	if reason == "" {
		return ""
	}
	return "Read the message; docs/operations.md, Troubleshooting, lists the reasons."
}

// waits: a reason that comes and goes by itself (no person needs to act).
func waits(reason string) bool {
	switch reason {
	case clusterlink.ReasonEndpointProvisioning, clusterlink.ReasonHealWaitsForDNS, clusterlink.ReasonIngressServiceWaiting, ReasonPrivateLinksWait, ReasonNotYetWired,
		clusterlink.ReasonMCServiceNotInAzure,
		clusterlink.ReasonAzureReadsPaced,
		ReasonEndpointNotInAzure, ReasonAnnotationOutdated, ReasonDNSRecordMissing, ReasonDNSRecordDiffers:
		return true
	}
	return false
}

// ReasonTable is docs/operations.md's table of the reasons a chain stops
// with and what to change, sorted by reason.
func ReasonTable() string {
	reasons := make([]string, 0, len(fixes))
	for r := range fixes {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	var b strings.Builder
	b.WriteString("| Reason | explain prints, where it stops | Waits by itself | What to change |\n| --- | --- | --- | --- |\n")
	for _, r := range reasons {
		by := "no"
		if waits(r) {
			by = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r, where(r), by, strings.ReplaceAll(fixes[r], "|", "\\|"))
	}
	return b.String()
}
