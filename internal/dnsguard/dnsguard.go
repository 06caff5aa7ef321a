// Package dnsguard refuses Private DNS zone names that would take names
// away from the networks they are linked to. A private zone linked to a
// virtual network answers every query for its name and the names under it
// in that network; a zone named management.azure.com (or azure.com) would
// make Azure Resource Manager unresolvable there, and with it CAPZ, Azure
// Service Operator and this operator. Zone names come, in part, from
// tenants (a workload cluster's name and annotations, an
// AzurePrivateEndpoint's spec): both DNS writers check every zone name here
// before they create or adopt a zone.
package dnsguard

import (
	"fmt"
	"slices"
	"strings"
)

// Builtin are the domains no zone may equal, sit under or sit above: the
// service domains of Azure's public, US Government and China clouds
// (Resource Manager, Microsoft Entra ID sign-in, storage, Key Vault,
// container registries, AKS, App Service and the rest, as listed for each
// cloud in the azure-sdk-for-go cloud configuration and in Azure's
// "Azure services DNS zone configuration" reference) and the domains their
// sign-in depends on.
var Builtin = []string{
	// Public cloud.
	"azure.com", "azure.net", "windows.net", "microsoftonline.com", "microsoftonline-p.com",
	"microsoft.com", "windowsazure.com", "azurecr.io", "azmk8s.io", "azure-api.net",
	"azurewebsites.net", "azureedge.net", "azurefd.net", "trafficmanager.net", "cloudapp.net",
	"msauth.net", "msftauth.net", "live.com", "azure-automation.net", "azure-devices.net",
	"servicebus.net", "azuresynapse.net", "azurehdinsight.net", "azuredatabricks.net",
	// US Government cloud.
	"usgovcloudapi.net", "usgovtrafficmanager.net", "microsoftonline.us", "azure.us", "azurecr.us",
	// China cloud.
	"chinacloudapi.cn", "chinacloudapp.cn", "microsoftonline.cn", "azure.cn", "azurecr.cn", "chinacloudsites.cn",
}

// Guard checks zone names against the built-in domains and the ones the
// operator is given. The zero Guard checks the built-in ones.
type Guard struct {
	denied []string
}

// New returns a Guard that also refuses the given domains (lower-cased,
// without a trailing dot; empty entries are ignored).
func New(extra []string) Guard {
	var g Guard
	for _, d := range extra {
		if d = normalize(d); d != "" {
			g.denied = append(g.denied, d)
		}
	}
	return g
}

// Check returns an error naming the reason when a zone of that name would
// shadow a protected name: the zone equals a protected domain, is under one
// (a private zone for a service domain takes all its names), or is above
// one (a zone azure.com would answer for management.azure.com); or it is
// one of Azure's private endpoint zones (first label privatelink), which
// belong to whoever runs the network's private endpoint DNS.
func (g Guard) Check(zone string) error {
	z := normalize(zone)
	if z == "" {
		return fmt.Errorf("zone name is empty")
	}
	if first, _, _ := strings.Cut(z, "."); first == "privatelink" {
		return fmt.Errorf("zone %s is one of Azure's private endpoint zones (privatelink.*); the operator never creates or adopts one", z)
	}
	for _, list := range [][]string{Builtin, g.denied} {
		if i := slices.IndexFunc(list, func(d string) bool { return overlaps(z, d) }); i >= 0 {
			return fmt.Errorf("zone %s would shadow %s, a protected domain (Azure's own, or --dns-denied-zones)", z, list[i])
		}
	}
	return nil
}

// Under reports whether name equals or is under one of domains.
func Under(name string, domains []string) bool {
	n := normalize(name)
	return n != "" && slices.ContainsFunc(domains, func(d string) bool {
		d = normalize(d)
		return d != "" && (n == d || strings.HasSuffix(n, "."+d))
	})
}

// overlaps reports whether z equals d, is under d, or is above d.
func overlaps(z, d string) bool {
	return z == d || strings.HasSuffix(z, "."+d) || strings.HasSuffix(d, "."+z)
}

func normalize(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}
