package clusterlink

import (
	"math/rand/v2"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
)

// Options configure the AzureCluster controllers; every field has a flag.
// The fields here are read by the wiring and, for the cluster they name and
// the annotations they write, by every controller of the package; a
// controller's own settings are in its own file: ManagedLinks
// (managedlink.go), DNSConfig (dnsconfig.go, read by the DNS mode in
// package wiringdns), heal.Policy (internal/heal).
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
	// MCConditionInterval is how often at most the MC's
	// GSWorkloadClusterEndpointsReady is written again when only its
	// message changed (the counts and names it gives move at nearly every
	// pass while a fleet is wired); a new status or reason is written at
	// once. Default 30s; negative: every change at once.
	MCConditionInterval time.Duration
	// MaxConcurrentReconciles of the WC controller. Default 4.
	MaxConcurrentReconciles int
	// DeleteOrphanedEndpoints deletes, in Azure, private endpoints the
	// operator removed from spec that CAPZ left behind (upstream CAPZ does).
	DeleteOrphanedEndpoints bool
	// ManagedLinks are the managed-private-link-service controller's.
	ManagedLinks
	// AdoptFieldManagers are the field managers of the older operator:
	// endpoint entries they hold are taken over (upgrade), and removed when
	// stale. An entry of the operator's name held by any other manager is
	// left alone (ReasonPrivateEndpointNameTaken). The cache keeps these
	// managers' managedFields (TrimCached).
	AdoptFieldManagers []string
	// CAPZFieldManagers are CAPZ's field managers. CAPZ never writes an
	// endpoint entry of its own, but its patch helper sends the whole
	// subnets list as a JSON merge patch without optimistic locking: from a
	// read older than the operator's removal of an entry, it writes the
	// entry back, and then only CAPZ holds it. An entry of the operator's
	// (or the older operator's) exact shape that these managers hold is
	// therefore taken over and, when stale, removed like the older
	// operator's (Older.WrittenBack). The cache keeps their managedFields
	// of spec (TrimCached).
	CAPZFieldManagers []string
	// Heal is when an endpoint the operator asked for is deleted in Azure,
	// so that CAPZ recreates it against the private link service as it is
	// now. Heal.DisconnectedAfter defaults to 2m; negative turns healing off.
	Heal heal.Policy
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

// DefaultCAPZFieldManagers is CAPZ's field manager: CAPZ's main.go sets its
// REST config's user agent to "cluster-api-provider-azure-manager" (v1.23.0
// and v1.27.0, main.go), CAPI's patch helper sets no field owner, and the
// API server takes the field manager from the user agent.
var DefaultCAPZFieldManagers = []string{"cluster-api-provider-azure-manager"}

// KeptFieldManagers are the managers whose managedFields of spec the cache
// keeps (TrimCached): the older operator's and CAPZ's.
func (o Options) KeptFieldManagers() []string {
	return slices.Concat(o.AdoptFieldManagers, o.CAPZFieldManagers)
}

// olderInMC tells, in the MC's AzureCluster, the entries the operator takes
// over: the older operator's and those CAPZ wrote back.
func (o Options) olderInMC() Older {
	older := OlderInMC(o.AdoptFieldManagers)
	older.WrittenBack = o.CAPZFieldManagers
	return older
}

// olderInWC is olderInMC for a WC's AzureCluster.
func (o Options) olderInWC(wc, mc *capz.AzureCluster) Older {
	older := OlderInWC(o.AdoptFieldManagers, wc, mc)
	older.WrittenBack = o.CAPZFieldManagers
	return older
}

// WatchFilterLabel is Cluster API's watch filter label.
const WatchFilterLabel = "cluster.x-k8s.io/watch-filter"

// SetDefaults fills what the options leave empty.
func (o *Options) SetDefaults() {
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
	if o.MCConditionInterval < 0 {
		o.MCConditionInterval = 0
	} else if o.MCConditionInterval == 0 {
		o.MCConditionInterval = 30 * time.Second
	}
	if o.tickPhase == 0 {
		o.tickPhase = time.Duration(rand.Int64N(int64(time.Hour))) + 1 //nolint:gosec // G404: spreads replicas' ticks; nothing to guess
	}
	if o.Heal.DisconnectedAfter == 0 {
		o.Heal.DisconnectedAfter = 2 * time.Minute
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
	}
	o.DNS.SetDefaults()
}

// Annotation is the key of an annotation of the operator's (under
// AnnotationPrefix).
func (o *Options) Annotation(name string) string { return o.AnnotationPrefix + "/" + name }

// Selected reports whether the operator handles u: it carries the watch
// filter's label, or there is no filter.
func (o *Options) Selected(u client.Object) bool {
	return o.WatchFilter == "" || u.GetLabels()[WatchFilterLabel] == o.WatchFilter
}
