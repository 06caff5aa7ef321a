package clusterlink

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Options configure the AzureCluster controllers. Every field has a flag.
type Options struct {
	Config
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

	// tickPhase offsets this process's recheck ticks (random, so that
	// operators in different installations do not tick together).
	tickPhase time.Duration
}

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
		o.tickPhase = time.Duration(rand.Int64N(int64(time.Hour))) + 1
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = 4
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

// Event reasons beyond those of the desired state. Constant, so users can
// filter on them.
const (
	ReasonManagementClusterNotFound = "ManagementClusterNotFound"
	ReasonEndpointReady             = "PrivateEndpointReady"
	ReasonEndpointPending           = "PrivateEndpointPendingApproval"
	ReasonEndpointRejected          = "PrivateEndpointRejected"
	ReasonEndpointDisconnected      = "PrivateEndpointDisconnected"
	ReasonEndpointProvisioning      = "WaitingForPrivateEndpoint"
	ReasonEndpointNotReady          = "PrivateEndpointNotReady"
	ReasonAzureError                = "AzureError"
	ReasonFinalizerReleased         = "FinalizerReleased"
	ReasonOrphanDeleted             = "OrphanedPrivateEndpointDeleted"
	// ConditionGSPrivateLinksReady is the compatibility condition existing
	// installations read; it is only ever written True.
	ConditionGSPrivateLinksReady = "GSPrivateLinksReady"
)

// Endpoint states for the metrics.
const (
	stateReady        = "ready"
	statePending      = "pending_approval"
	stateRejected     = "rejected"
	stateDisconnected = "disconnected"
	stateProvisioning = "provisioning"
	stateUnknown      = "unknown"
)

var (
	endpointsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "azure_private_endpoint_operator_private_endpoints",
		Help: "Private endpoints the operator wired, by direction (mc-to-wc-api, wc-to-mc-ingress) and state.",
	}, []string{"direction", "state"})
	mcWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_management_cluster_writes_total",
		Help: "Writes of the management cluster's AzureCluster by the operator.",
	})
	wcWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_workload_cluster_writes_total",
		Help: "Writes of workload clusters' AzureClusters (spec, annotations, finalizer, status) by the operator.",
	})
)

func init() {
	metrics.Registry.MustRegister(endpointsGauge, mcWrites, wcWrites)
}

// stateTracker keeps each WC's endpoint states to publish the gauge.
type stateTracker struct {
	mu     sync.Mutex
	states map[string]map[Direction]string // WC key -> direction -> state
}

func (s *stateTracker) set(wc string, states map[Direction]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]map[Direction]string{}
	}
	if len(states) == 0 {
		delete(s.states, wc)
	} else {
		s.states[wc] = states
	}
	counts := map[[2]string]float64{}
	for _, byDir := range s.states {
		for dir, st := range byDir {
			counts[[2]string{string(dir), st}]++
		}
	}
	endpointsGauge.Reset()
	for k, n := range counts {
		endpointsGauge.WithLabelValues(k[0], k[1]).Set(n)
	}
}

// getAzureCluster reads an AzureCluster; nil when it does not exist.
func getAzureCluster(ctx context.Context, c client.Reader, key types.NamespacedName) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(ctx, key, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}

// paused reports whether Cluster API pauses a cluster: the annotation on the
// AzureCluster, or spec.paused of its Cluster.
func paused(ctx context.Context, c client.Reader, u *unstructured.Unstructured, view *capz.AzureCluster) bool {
	if _, ok := u.GetAnnotations()[capz.PausedAnnotation]; ok {
		return true
	}
	if view.ClusterName == "" {
		return false
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capz.ClusterGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: view.Namespace, Name: view.ClusterName}, cl); err != nil {
		return false
	}
	if _, ok := cl.GetAnnotations()[capz.PausedAnnotation]; ok {
		return true
	}
	p, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
	return p
}

func (o *Options) selected(u client.Object) bool {
	return o.WatchFilter == "" || u.GetLabels()[WatchFilterLabel] == o.WatchFilter
}

// groupBySubnet turns endpoints into the subnet-keyed shape of Owned.
func groupBySubnet(eps []Endpoint) map[string][]capz.PrivateEndpoint {
	out := map[string][]capz.PrivateEndpoint{}
	for _, ep := range eps {
		out[ep.Subnet] = append(out[ep.Subnet], ep.PrivateEndpoint)
	}
	return out
}

// targetsGroup reports whether a private link service ID is in a
// subscription and resource group.
func targetsGroup(plsID, subscription, resourceGroup string) bool {
	prefix := strings.ToLower("/subscriptions/" + subscription + "/resourceGroups/" + resourceGroup + "/providers/Microsoft.Network/privateLinkServices/")
	return strings.HasPrefix(strings.ToLower(plsID), prefix)
}

// TrimManagedFields is the operator's cache transform: it keeps only the
// managedFields entries of the operator's field manager, the only ones it
// reads (capz.CurrentOwned). Other managers' entries (CAPZ's, users') are
// often the larger part of an AzureCluster; at 1,000 workload clusters they
// cost tens of MiB of cache for nothing.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	fields := o.GetManagedFields()
	kept := make([]metav1.ManagedFieldsEntry, 0, 1)
	for _, f := range fields {
		if f.Manager == capz.FieldManager {
			kept = append(kept, f)
		}
	}
	if len(kept) != len(fields) {
		o.SetManagedFields(kept)
	}
	return obj, nil
}

// mcSnapshot reads the management cluster for WC reconciles: from the cache
// without copying it, and parsed once per resourceVersion. Every MC change
// reconciles every WC, and at 1,000 WCs the MC object is about 450 KiB, so a
// copy and a parse per WC reconcile would dominate the operator's CPU.
// Callers must not modify what it returns.
type mcSnapshot struct {
	mu   sync.Mutex
	u    *unstructured.Unstructured
	view *capz.AzureCluster
}

func (s *mcSnapshot) get(ctx context.Context, c client.Reader, key types.NamespacedName) (*unstructured.Unstructured, *capz.AzureCluster, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.List(ctx, list, client.InNamespace(key.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var u *unstructured.Unstructured
	for i := range list.Items {
		if list.Items[i].GetName() == key.Name {
			u = &list.Items[i]
		}
	}
	if u == nil {
		return nil, nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.u == nil || s.u.GetUID() != u.GetUID() || s.u.GetResourceVersion() != u.GetResourceVersion() {
		// What could be read is used even when some field is malformed;
		// the MC reconcile reports the errors.
		s.view, _ = capz.FromUnstructured(u)
		s.u = u
	}
	return s.u, s.view, nil
}
