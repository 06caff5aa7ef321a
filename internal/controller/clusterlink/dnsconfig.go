package clusterlink

import (
	"time"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
)

// The DNS mode's configuration and what it shares with the wiring. The
// mode itself (package wiringdns) is a controller of its own; the wiring
// reads what it records on each cluster (AnnotationPrivateDNS, safety.go)
// and waits for it where a step must.

// ConditionGSDNSZoneReady is the WC condition written True once the
// records of both directions resolve, for control plane gates, and
// Unknown with the reason when a person must act (never False, see
// SetWaitingCondition).
const ConditionGSDNSZoneReady = "GSDNSZoneReady"

// BaseDomainAnnotation is, under the annotation prefix, what overrides
// --wiring-dns-base-domain for the names of one cluster.
const BaseDomainAnnotation = "base-domain"

// Defaults of the DNS mode's templates.
const (
	DefaultMCZoneTemplate = "{{.Cluster}}.{{.BaseDomain}}"
	DefaultWCZoneTemplate = "{{.ManagementCluster}}.{{.BaseDomain}}"
)

// Default record names of the DNS mode.
var (
	DefaultMCRecords = []string{"api"}
	DefaultWCRecords = []string{"*"}
)

// DNSConfig configures the DNS mode.
type DNSConfig struct {
	// Enabled turns the mode on. Off, the operator reads and writes no DNS
	// and leaves the records to whoever owns them.
	Enabled bool
	// Tags go on the zones and links the mode creates (--azure-tags).
	Tags map[string]string
	// BaseDomain is the default base domain of every cluster's names.
	BaseDomain string
	// MCZone and MCRecords name the zone and records, in the management
	// cluster's network, of a workload cluster's API (its MC-side endpoint
	// IP); WCZone and WCRecords those, in each workload cluster's network,
	// of the management cluster's ingress or gateway (the WC-side endpoint
	// IP). Go templates over DNSNames.
	MCZone, WCZone       string
	MCRecords, WCRecords []string
	// TTL of the records.
	TTL int64
	// Check is how often DNS that is in place is read again.
	Check time.Duration
	// Adopt takes over record sets of the wiring's names that carry no
	// owner (written by another tool, dns-operator-azure say).
	Adopt bool
	// ReadsPer5m and WritesPer5m bound the Private DNS requests of each
	// subscription in any 5 minutes when Setup makes the engine itself
	// (tests; the binary passes the process's engine, whose budget is
	// --private-dns-max-*). Default half of Azure's limits (500 reads,
	// 1,000 writes); negative: no bound.
	ReadsPer5m, WritesPer5m int
	// AllowedBaseDomains are the base domains a workload cluster's
	// <prefix>/base-domain annotation may name (equal to or under one of
	// them). The MC-side zone sits in the management cluster's network: a
	// tenant must not name it freely. Empty: the annotation on a workload
	// cluster is refused, and --wiring-dns-base-domain is used by nobody
	// else's word.
	AllowedBaseDomains []string
	// Guard refuses zone names that would shadow Azure's own or other
	// protected domains, on both sides.
	Guard dnsguard.Guard
	// MCZoneSubscription and MCZoneResourceGroup put the MC-side zone
	// somewhere else than the management cluster's subscription and
	// resource group (central DNS in a hub), written with MCZoneIdentity
	// (an AzureClusterIdentity; nil: the management cluster's).
	MCZoneSubscription, MCZoneResourceGroup string
	MCZoneIdentity                          *capz.ObjectRef
	// ZoneLimit is how many MC-side zones the per-cluster layout may put
	// in one subscription and link to one network (Azure's 1,000 by
	// default; a raised quota raises it).
	ZoneLimit int
}

// Budget is the Private DNS budget the configuration asks for.
func (c DNSConfig) Budget() *dns.Budget {
	return &dns.Budget{Reads: max(0, c.ReadsPer5m), Writes: max(0, c.WritesPer5m)}
}

// DNSSide says in whose network a DNS set lives.
type DNSSide string

const (
	// DNSSideMC holds the WC's API names, in the MC's resource group and network.
	DNSSideMC DNSSide = "mc"
	// DNSSideWC holds the MC's ingress names, in the WC's resource group and
	// network.
	DNSSideWC DNSSide = "wc"
)

// AzureZoneLimit is Azure's limit of private DNS zones per subscription,
// and of zones linked to one virtual network ("What is an Azure Private
// DNS zone?", Limits; internal/azuresim/limits.go enforces the same).
const AzureZoneLimit = 1000

// SetDefaults fills what the configuration leaves empty.
func (c *DNSConfig) SetDefaults() {
	if c.MCZone == "" {
		c.MCZone = DefaultMCZoneTemplate
	}
	if c.WCZone == "" {
		c.WCZone = DefaultWCZoneTemplate
	}
	if len(c.MCRecords) == 0 {
		c.MCRecords = DefaultMCRecords
	}
	if len(c.WCRecords) == 0 {
		c.WCRecords = DefaultWCRecords
	}
	if c.TTL <= 0 {
		c.TTL = 300
	}
	if c.ZoneLimit <= 0 {
		c.ZoneLimit = AzureZoneLimit
	}
	if c.Check <= 0 {
		c.Check = time.Hour
	}
	if c.ReadsPer5m == 0 {
		c.ReadsPer5m = dns.AzureReadsPer5m / 2
	}
	if c.WritesPer5m == 0 {
		c.WritesPer5m = dns.AzureWritesPer5m / 2
	}
}
