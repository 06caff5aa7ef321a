package clusterlink

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the AzureCluster controllers.
var (
	mcWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_management_cluster_writes_total",
		Help: "Writes of the management cluster's AzureCluster by the operator.",
	})
	wcWrites = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_workload_cluster_writes_total",
		Help: "Writes of workload clusters' AzureClusters (spec, annotations, finalizer, status) by the operator.",
	})
	mcPaused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_management_cluster_paused_reconciles_total",
		Help: "Reconciles of the management cluster that wrote nothing because it (or its Cluster) is paused.",
	})
	// endpointStates publishes the private endpoints gauge.
	endpointStates = newEndpointStateCollector()
	capzFlavor     = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "azure_private_endpoint_operator_capz_flavor",
		Help: "1 for the CAPZ flavor the operator detected from the AzureCluster CRD (fork, upstream, upstream-private-links, unknown), with whether ASO's PrivateEndpoint CRD is installed and how orphaned endpoints are cleaned up (azure, aso, capz).",
	}, []string{"flavor", "aso", "orphan_cleanup"})
	asoEventsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_aso_events_total",
		Help: "Changes of CAPZ's ASO PrivateEndpoint objects that made the operator look at a cluster's endpoints at once.",
	})
	asoEventsIgnored = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_aso_events_ignored_total",
		Help: "Changes of ASO PrivateEndpoint objects controlled by an AzureCluster that are not provably CAPZ's for it (cluster-name label, an endpoint entry of its spec): not followed, not learned from.",
	})
)

func init() {
	metrics.Registry.MustRegister(mcWrites, wcWrites, mcPaused, endpointStates, capzFlavor, asoEventsTotal, asoEventsIgnored)
}

// setFlavorMetric exports what the detector found, and only that.
func setFlavorMetric(in Installed) {
	capzFlavor.Reset()
	capzFlavor.WithLabelValues(string(in.Flavor), fmt.Sprint(in.ASO), string(in.Cleanup)).Set(1)
}

var endpointsDesc = prometheus.NewDesc("azure_private_endpoint_operator_private_endpoints",
	"Private endpoints the operator wired, by direction (mc-to-wc-api, wc-to-mc-ingress) and state.",
	[]string{"direction", "state"}, nil)

// endpointStateCollector keeps each WC's endpoint states and counts them
// when Prometheus scrapes: a reconcile only replaces its WC's entry (no
// recount, no gauge reset that a scrape could see half done).
type endpointStateCollector struct {
	mu     sync.Mutex
	states map[string]map[Direction]string // WC key -> direction -> state
}

func newEndpointStateCollector() *endpointStateCollector {
	return &endpointStateCollector{states: map[string]map[Direction]string{}}
}

// set replaces a WC's states; nil or empty forgets the WC.
func (c *endpointStateCollector) set(wc string, states map[Direction]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(states) == 0 {
		delete(c.states, wc)
		return
	}
	c.states[wc] = states
}

// Describe implements prometheus.Collector.
func (c *endpointStateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- endpointsDesc }

// Collect implements prometheus.Collector.
func (c *endpointStateCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[[2]string]float64{}
	c.mu.Lock()
	for _, byDir := range c.states {
		for dir, st := range byDir {
			counts[[2]string{string(dir), st}]++
		}
	}
	c.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(endpointsDesc, prometheus.GaugeValue, n, k[0], k[1])
	}
}
