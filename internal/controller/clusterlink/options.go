package clusterlink

import (
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// Options configure the AzureCluster controllers. Every field has a flag.
type Options struct {
	Config
	// DNSEngine is the process's Private DNS engine, shared with the
	// AzurePrivateEndpoint controller (one request budget, one memo of
	// what is in place); Setup makes one with DNS's budget when it is nil.
	DNSEngine *dnsengine.Engine
	// ManagementCluster is the MC's AzureCluster.
	ManagementCluster types.NamespacedName
	// AnnotationPrefix prefixes the IP annotations. Default
	// DefaultAnnotationPrefix.
	AnnotationPrefix string
	// WatchFilter, when set, limits the operator to objects labelled
	// cluster.x-k8s.io/watch-filter=<value>, as Cluster API controllers do.
	WatchFilter string
	// PendingRecheck is how soon Azure is read again while an endpoint is
	// not ready. Default 30s. Rechecks are aligned (see untilTick).
	PendingRecheck time.Duration
	// DriftCheck is how often a converged cluster is read again. Default
	// 10m. Drift checks are aligned (see untilTick).
	DriftCheck time.Duration
	// TerminalRecheck is how soon a cluster is retried after an error a
	// person must fix. Default 10m.
	TerminalRecheck time.Duration
	// MCWriteDelay gathers the WC events of this window into one write of
	// the MC. Default 2s.
	MCWriteDelay time.Duration
	// MaxConcurrentReconciles of the WC controller. Default 4.
	MaxConcurrentReconciles int
	// DeleteOrphanedEndpoints deletes, in Azure, private endpoints the
	// operator removed from spec that CAPZ left behind (upstream CAPZ does).
	DeleteOrphanedEndpoints bool
	// PrivateLinkServices enables the upstream-CAPZ loop: the
	// AzurePrivateLinkService controller runs, so private WCs without
	// privateLinks may get one (see ManagePrivateLinkServices).
	PrivateLinkServices bool
	// ManagePrivateLinkServices is the loop's default for every WC; the
	// annotation <prefix>/manage-private-link-service overrides it per WC.
	ManagePrivateLinkServices bool
	// AdoptFieldManagers are the field managers of the older operator:
	// endpoint entries they hold are taken over (upgrade), and removed when
	// stale. An entry of the operator's name held by any other manager is
	// left alone (ReasonPrivateEndpointNameTaken). The cache keeps these
	// managers' managedFields (TrimManagedFields).
	AdoptFieldManagers []string
	// HealDisconnectedAfter is how long an endpoint the operator asked for
	// may stay Disconnected before it is deleted in Azure, so that CAPZ
	// recreates it against the private link service as it is now. Default
	// 2m; negative turns healing off.
	HealDisconnectedAfter time.Duration
	// HealRejected heals Rejected endpoints the same way (off by default: a
	// rejection is usually a person's decision).
	HealRejected bool
	// DNS is the DNS mode (off by default).
	DNS DNSConfig

	// tickPhase offsets this process's recheck ticks (random, so that
	// operators in different installations do not tick together).
	tickPhase time.Duration
}

// DefaultAdoptFieldManagers is the older operator's field manager: its
// image runs the binary /manager and sets no field owner, so the API server
// records "manager".
var DefaultAdoptFieldManagers = []string{"manager"}

// WatchFilterLabel is Cluster API's watch filter label.
const WatchFilterLabel = "cluster.x-k8s.io/watch-filter"

func (o *Options) setDefaults() {
	if o.AnnotationPrefix == "" {
		o.AnnotationPrefix = DefaultAnnotationPrefix
	}
	if o.PendingRecheck <= 0 {
		o.PendingRecheck = 30 * time.Second
	}
	if o.DriftCheck <= 0 {
		o.DriftCheck = 10 * time.Minute
	}
	if o.TerminalRecheck <= 0 {
		o.TerminalRecheck = 10 * time.Minute
	}
	if o.MCWriteDelay < 0 {
		o.MCWriteDelay = 0
	} else if o.MCWriteDelay == 0 {
		o.MCWriteDelay = 2 * time.Second
	}
	if o.tickPhase == 0 {
		o.tickPhase = time.Duration(rand.Int64N(int64(time.Hour))) + 1 //nolint:gosec // G404: spreads replicas' ticks; nothing to guess
	}
	if o.HealDisconnectedAfter == 0 {
		o.HealDisconnectedAfter = 2 * time.Minute
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	o.DNS.setDefaults()
}

func (c *DNSConfig) setDefaults() {
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

func (o *Options) annotation(name string) string { return o.AnnotationPrefix + "/" + name }

// driftCheck is how long until a converged cluster's next drift check.
func (o *Options) driftCheck() time.Duration {
	return untilTick(time.Now(), o.DriftCheck, o.tickPhase)
}

// pendingRecheck is how long until a waiting cluster's next look at Azure.
func (o *Options) pendingRecheck() time.Duration {
	return untilTick(time.Now(), o.PendingRecheck, o.tickPhase)
}

// untilTick returns the time from now to the next tick of a clock that ticks
// every interval, offset by phase; never zero. Rechecks of every cluster
// land on the same ticks, so one observation of Azure (a list per
// subscription, shared for the observer's TTL) serves all of them: a drift
// check of 1,000 clusters costs a few lists, not 1,000. The per-process
// random phase keeps different operators from ticking together.
func untilTick(now time.Time, interval, phase time.Duration) time.Duration {
	if interval <= 0 {
		return time.Second
	}
	since := now.Sub(time.Unix(0, 0).Add(phase)) % interval
	if since < 0 {
		since += interval
	}
	return interval - since
}

func (o *Options) selected(u client.Object) bool {
	return o.WatchFilter == "" || u.GetLabels()[WatchFilterLabel] == o.WatchFilter
}
