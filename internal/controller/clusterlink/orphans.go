package clusterlink

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// capzOwnedTag is the tag CAPZ puts on what it creates for a cluster.
const capzOwnedTag = "sigs.k8s.io_cluster-api-provider-azure_cluster_"

// OrphanCleaner deletes, in Azure, private endpoints that CAPZ created from
// the operator's entries and left behind when the operator removed them
// from spec: upstream CAPZ v1.23 does not delete them. It deletes only an
// endpoint that carries CAPZ's owned tag for the cluster, matches the
// operator's naming contract, is neither in spec nor wanted, and was found
// so in two sweeps at least Interval apart: a CAPZ that deletes what leaves
// spec (the fork) gets that long to do it, so the two do not race.
type OrphanCleaner struct {
	Client   client.Client
	Clients  *azure.Clients
	Observer *privateendpoints.Observer
	Recorder events.EventRecorder
	// Interval limits sweeps per cluster.
	Interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
	// seen is when each candidate (scope/resource group/name) was first
	// found orphaned.
	seen map[string]time.Time
}

// Sweep looks for orphans of one cluster, at most once per Interval.
func (o *OrphanCleaner) Sweep(ctx context.Context, ac *capz.AzureCluster, matches func(capz.PrivateEndpoint) bool, wanted ...string) (ctrl.Result, error) {
	if !o.due(ac.Namespace + "/" + ac.Name) {
		return ctrl.Result{}, nil
	}
	f, cred, err := o.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return ctrl.Result{}, nil //nolint:nilerr // the WC reconcile that needs the credential reports it; the sweep waits for the next one
	}
	scope := cred.Key + "|" + ac.SubscriptionID
	obs, err := o.Observer.ResourceGroup(ctx, privateendpoints.NewSDK(f), scope, ac.ResourceGroup)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot look for orphaned private endpoints", "error", azure.Classify(err).Message)
		return ctrl.Result{}, nil
	}
	keep := keepSet(ac, wanted)
	prefix := scope + "/" + strings.ToLower(ac.ResourceGroup) + "/"
	var candidates []string
	for name, ob := range obs {
		candidate := capz.PrivateEndpoint{Name: ob.Name, Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: ob.PrivateLinkServiceID}}}
		if keep[name] || ob.Tags[capzOwnedTag+ac.Name] != "owned" || !matches(candidate) {
			continue
		}
		candidates = append(candidates, name)
	}
	ripe, waiting := o.ripen(prefix, candidates, time.Now())
	for _, name := range ripe {
		o.delete(ctx, f.NewPrivateEndpointsClient(), ac, obs[name].Name, scope)
	}
	if waiting {
		return ctrl.Result{RequeueAfter: o.Interval}, nil
	}
	return ctrl.Result{}, nil
}

// ripen records when each candidate under prefix was first found orphaned,
// forgets those under prefix that are no longer candidates, and returns the
// ones orphaned for at least Interval; waiting says some are not yet.
func (o *OrphanCleaner) ripen(prefix string, candidates []string, now time.Time) (ripe []string, waiting bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil {
		o.seen = map[string]time.Time{}
	}
	current := map[string]bool{}
	for _, name := range candidates {
		k := prefix + name
		current[k] = true
		first, ok := o.seen[k]
		switch {
		case !ok:
			o.seen[k] = now
			waiting = true
		case now.Sub(first) >= o.Interval:
			ripe = append(ripe, name)
			delete(o.seen, k)
		default:
			waiting = true
		}
	}
	for k := range o.seen {
		if strings.HasPrefix(k, prefix) && !current[k] {
			delete(o.seen, k)
		}
	}
	return ripe, waiting
}

// due limits sweeps of a cluster to one per Interval.
func (o *OrphanCleaner) due(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last == nil {
		o.last = map[string]time.Time{}
	}
	if time.Since(o.last[key]) < o.Interval {
		return false
	}
	o.last[key] = time.Now()
	return true
}

// keepSet is every endpoint name in spec or wanted, lower-case.
func keepSet(ac *capz.AzureCluster, wanted []string) map[string]bool {
	keep := map[string]bool{}
	for _, n := range wanted {
		keep[strings.ToLower(n)] = true
	}
	for _, s := range ac.Subnets {
		for _, pe := range s.PrivateEndpoints {
			keep[strings.ToLower(pe.Name)] = true
		}
	}
	return keep
}

func (o *OrphanCleaner) delete(ctx context.Context, pes *armnetwork.PrivateEndpointsClient, ac *capz.AzureCluster, name, scope string) {
	if _, err := pes.BeginDelete(ctx, ac.ResourceGroup, name, nil); err != nil && !azure.IsNotFound(err) {
		c := azure.Classify(err)
		ctrl.LoggerFrom(ctx).Info("Cannot delete an orphaned private endpoint", "endpoint", name, "reason", c.Reason, "message", c.Message)
		return
	}
	o.Observer.Invalidate(scope, ac.ResourceGroup)
	if u, err := getAzureCluster(ctx, o.Client, types.NamespacedName{Namespace: ac.Namespace, Name: ac.Name}); err == nil && u != nil {
		o.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonOrphanDeleted, "Cleanup",
			"deleted private endpoint %s, which left spec but remained in Azure", name)
	}
}
