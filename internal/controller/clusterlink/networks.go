package clusterlink

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// NetworkCapacities says how many private endpoints each network of
// --mc-endpoint-subnets takes, as Azure counts them: 5,000 in a network
// with high-scale private endpoints (privateEndpointVNetPolicies Basic),
// 1,000 in any other ("Azure subscription and service limits", Private
// Link; "Increase Private Endpoint virtual network limits", 2025;
// azuresim enforces both, internal/azuresim/limits.go), never more than
// --mc-endpoint-network-limit. Each network is read once per TTL, with the
// MC's identity. A read that fails keeps what Azure said last and is tried
// again after a minute; a network never read counts 1,000 meanwhile (the
// safe figure: a high-scale network then only fills later than it could).
// Keeping the last answer matters after a restart too: the first passes'
// reads may be held back by the request budget, and a high-scale network
// counted at 1,000 for a TTL would refuse clusters it has room for. The
// MC's pass and every WC's pass share one, so both decide on the same
// figure.
type NetworkCapacities struct {
	// HighScale reads whether a network allows high-scale private
	// endpoints; nil: none is assumed to.
	HighScale func(ctx context.Context, mc *capz.AzureCluster, vnetID string) (bool, error)
	TTL       time.Duration

	now  func() time.Time // time.Now unless a test sets it
	mu   sync.Mutex
	read map[string]capacityRead
}

type capacityRead struct {
	highScale bool
	// next is when to read the network again.
	next time.Time
}

// retryFailedRead is how soon a network whose read failed is read again.
const retryFailedRead = time.Minute

// Of returns b with the capacity of each of its networks.
func (n *NetworkCapacities) Of(ctx context.Context, mc *capz.AzureCluster, b Beyond) Beyond {
	if !b.On() {
		return b
	}
	b.Capacity = map[string]int{}
	for _, net := range b.networks() {
		limit := min(b.NetworkLimit, b.standard())
		if n != nil && n.highScale(ctx, mc, net) {
			limit = min(b.NetworkLimit, b.highScale())
		}
		b.Capacity[net] = limit
	}
	return b
}

func (n *NetworkCapacities) highScale(ctx context.Context, mc *capz.AzureCluster, net string) bool {
	if n.HighScale == nil {
		return false
	}
	now := time.Now
	if n.now != nil {
		now = n.now
	}
	n.mu.Lock()
	last, ok := n.read[net]
	n.mu.Unlock()
	if ok && now().Before(last.next) {
		return last.highScale
	}
	r := capacityRead{next: now().Add(n.TTL)}
	hs, err := n.HighScale(ctx, mc, net)
	if err == nil {
		r.highScale = hs
	} else {
		c := azure.Classify(err)
		ctrl.LoggerFrom(ctx).Info("Cannot read a network of --mc-endpoint-subnets; it keeps what Azure said last (1,000 private endpoints if nothing) and is read again in a minute",
			"network", net, "reason", c.Reason, "message", c.Message)
		r = capacityRead{highScale: ok && last.highScale, next: now().Add(min(retryFailedRead, n.TTL))}
	}
	n.mu.Lock()
	if n.read == nil {
		n.read = map[string]capacityRead{}
	}
	n.read[net] = r
	n.mu.Unlock()
	return r.highScale
}

// AzureHighScale reads a network's privateEndpointVNetPolicies with the
// MC's identity.
func AzureHighScale(clients *azure.Clients) func(ctx context.Context, mc *capz.AzureCluster, vnetID string) (bool, error) {
	return func(ctx context.Context, mc *capz.AzureCluster, vnetID string) (bool, error) {
		sub, rg, name, err := vnetParts(vnetID)
		if err != nil {
			return false, err
		}
		f, _, err := clients.Network(ctx, mc, sub)
		if err != nil {
			return false, err
		}
		v, err := f.NewVirtualNetworksClient().Get(ctx, rg, name, nil)
		if err != nil {
			return false, err
		}
		p := v.Properties
		return p != nil && p.PrivateEndpointVNetPolicies != nil && *p.PrivateEndpointVNetPolicies == armnetwork.PrivateEndpointVNetPoliciesBasic, nil
	}
}

// vnetParts are a network ID's subscription, resource group and name.
func vnetParts(id string) (sub, rg, name string, err error) {
	parts := strings.Split(strings.Trim(id, "/"), "/")
	if len(parts) != 8 || !strings.EqualFold(parts[0], "subscriptions") || !strings.EqualFold(parts[2], "resourceGroups") ||
		!strings.EqualFold(parts[6], "virtualNetworks") {
		return "", "", "", fmt.Errorf("%q is not a virtual network's ID", id)
	}
	return parts[1], parts[3], parts[7], nil
}
