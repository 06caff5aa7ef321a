package wiringdns

import (
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz/capztest"
)

// Fixtures of the DNS mode's unit tests, shared with the wiring's.
const (
	mcSub = capztest.MCSub
	wcSub = capztest.WCSub
)

// mc is the management cluster (capztest.MC).
func mc(mutate ...func(*capz.AzureCluster)) *capz.AzureCluster { return capztest.MC(mutate...) }

// wc is a private workload cluster (capztest.WC).
func wc(name string, mutate ...func(*capz.AzureCluster)) *capz.AzureCluster {
	return capztest.WC(name, mutate...)
}
