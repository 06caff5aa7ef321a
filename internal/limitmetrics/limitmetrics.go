// Package limitmetrics publishes how much of each Azure limit the
// operator watches is used, and the limit, for every controller that
// watches one: azure_private_endpoint_operator_limit_used and
// azure_private_endpoint_operator_limit, by limit and scope.
package limitmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The limits, as the metrics' limit label names them.
const (
	// MCPrivateEndpoints: the private endpoint entries of the management
	// cluster's AzureCluster; scope the MC, <namespace>/<name>.
	MCPrivateEndpoints = "mc_private_endpoints"
	// MCNetworkEndpoints: the management cluster's private endpoints the
	// operator made beyond its AzureCluster in one network of
	// --mc-endpoint-subnets; scope the network's resource ID (lower case).
	MCNetworkEndpoints = "mc_network_private_endpoints"
	// MCServiceConnections: the clusters connected to one of the MC's
	// private link services; scope <namespace>/<name>/<service>.
	MCServiceConnections = "mc_private_link_service_connections"
	// PrivateLinkServices: the private link services of a subscription
	// (AzurePrivateLinkService creations); scope the subscription ID.
	PrivateLinkServices = "private_link_services"
	// PrivateDNSZones: the MC-side private DNS zones of the per-cluster
	// layout (a zone per workload cluster, DNS mode); scope the
	// subscription ID they are in.
	PrivateDNSZones = "private_dns_zones"
	// PrivateDNSZoneLinks: the virtual network links of a private DNS zone
	// the AzurePrivateEndpoints record (set when one asks for a new link);
	// scope the zone's resource ID.
	PrivateDNSZoneLinks = "private_dns_zone_links"
	// PrivateDNSNetworkZones: the private DNS zones linked to a virtual
	// network as the AzurePrivateEndpoints needing it record them (set
	// when one asks for a new link); scope the network's resource ID.
	PrivateDNSNetworkZones = "private_dns_network_zones"
	// PrivateDNSRecordSets: the record sets of a private DNS zone the
	// operator writes records in, SOA included (set when it creates one);
	// scope the zone's resource ID.
	PrivateDNSRecordSets = "private_dns_record_sets"
	// PrivateDNSSubscriptionZones: the private DNS zones of a subscription
	// the operator creates zones in, everyone's (set when it creates one);
	// scope the subscription ID.
	PrivateDNSSubscriptionZones = "private_dns_subscription_zones"
)

var (
	used = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "azure_private_endpoint_operator_limit_used",
		Help: "How much of a limit the operator watches is used, by limit (mc_private_endpoints: the private endpoint entries of the management cluster's AzureCluster, scope the management cluster; mc_private_link_service_connections: the clusters connected to one of its private link services, scope <management cluster>/<service>; private_link_services: the private link services of a subscription, read when one is created, scope the subscription; private_dns_zones: the management-cluster-side private DNS zones of DNS mode's per-cluster layout, scope the subscription; private_dns_zone_links: the virtual network links of a private DNS zone AzurePrivateEndpoints use, scope the zone's resource ID; private_dns_network_zones: the private DNS zones linked to a virtual network AzurePrivateEndpoints need, scope the network's resource ID; private_dns_record_sets: the record sets of a private DNS zone the operator writes in, set when it creates one, scope the zone's resource ID; private_dns_subscription_zones: the private DNS zones of a subscription, everyone's, set when the operator creates one, scope the subscription).",
	}, []string{"limit", "scope"})
	limit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "azure_private_endpoint_operator_limit",
		Help: "The limits the operator watches, by limit and scope (see azure_private_endpoint_operator_limit_used): beyond one, nothing new is requested.",
	}, []string{"limit", "scope"})
)

func init() {
	metrics.Registry.MustRegister(used, limit)
}

// Set publishes n of most for a limit in a scope; most <= 0 publishes no
// limit (none is enforced).
func Set(name, scope string, n, most int) {
	used.WithLabelValues(name, scope).Set(float64(n))
	if most > 0 {
		limit.WithLabelValues(name, scope).Set(float64(most))
	}
}
