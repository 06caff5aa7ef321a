package clusterlink

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// ownedByCAPZ says whether Azure tags carry CAPZ's owned tag for the
// cluster: CAPZ names it after the Cluster API cluster (ClusterName), which
// usually, not always, is the AzureCluster's name.
func ownedByCAPZ(tags map[string]string, ac *capz.AzureCluster) bool {
	return tags[capz.OwnedTagPrefix+clusterNameOf(ac)] == "owned"
}

func clusterNameOf(ac *capz.AzureCluster) string {
	if ac.ClusterName != "" {
		return ac.ClusterName
	}
	return ac.Name
}

// OrphanCleaner deletes private endpoints that CAPZ created from the
// operator's entries and left behind when the operator removed them from
// spec: upstream CAPZ before v1.27 does not delete them. How depends on
// what is installed (Detector):
//
//   - CAPZ v1.27 and later delete them themselves: the cleaner does nothing.
//   - Upstream CAPZ before v1.27 with ASO: the cleaner deletes the ASO
//     PrivateEndpoint object CAPZ left (ASO then deletes the Azure
//     resource), only one the AzureCluster controls, labelled with its
//     cluster, named like the operator's entries and neither in spec nor
//     wanted.
//   - Otherwise (the fork, or no ASO) it deletes, in Azure, an endpoint
//     with CAPZ's owned tag for the cluster, named like the operator's
//     entries and neither in spec nor wanted.
//
// Either way a candidate must be found so in two sweeps at least Interval
// apart (a CAPZ that deletes what leaves spec gets that long to do it, so
// the two do not race), and the cleaner never deletes an Azure endpoint
// while an ASO object stands behind it: ASO would make it again.
type OrphanCleaner struct {
	Client   client.Client
	Clients  *azure.Clients
	Observer *privateendpoints.Observer
	Recorder events.EventRecorder
	// Detector tells what is installed; nil means the fork without ASO.
	Detector *Detector
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
	in := Installed{Cleanup: capz.OrphansInAzure}
	if o.Detector != nil {
		in = o.Detector.Get(ctx)
	}
	if in.Cleanup == capz.OrphansByCAPZ {
		return ctrl.Result{}, nil
	}
	keep := keepSet(ac, wanted)
	var live map[string]bool
	asoWaiting := false
	if in.ASO {
		objs, err := o.asoEndpoints(ctx, ac.Namespace)
		if err != nil {
			// Never delete in Azure without knowing what ASO holds.
			ctrl.LoggerFrom(ctx).Info("Cannot list ASO private endpoints; looking for orphans later", "error", err.Error())
			return ctrl.Result{RequeueAfter: o.Interval}, nil
		}
		live = map[string]bool{}
		for _, obj := range objs {
			live[strings.ToLower(obj.AzureName)] = true
		}
		if in.Cleanup == capz.OrphansThroughASO {
			asoWaiting = o.sweepASO(ctx, ac, objs, keep, matches)
		}
	}
	res := o.sweepAzure(ctx, ac, keep, live, matches)
	if asoWaiting && res.IsZero() {
		res.RequeueAfter = o.Interval
	}
	return res, nil
}

// sweepAzure deletes, in Azure, the cluster's orphaned endpoints no ASO
// object stands behind (live: lower-case Azure names).
func (o *OrphanCleaner) sweepAzure(ctx context.Context, ac *capz.AzureCluster, keep, live map[string]bool, matches func(capz.PrivateEndpoint) bool) ctrl.Result {
	f, cred, err := o.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return ctrl.Result{} // the WC reconcile that needs the credential reports it; the sweep waits for the next one
	}
	scope := privateendpoints.Scope(cred, ac.SubscriptionID)
	obs, err := o.Observer.ResourceGroup(ctx, privateendpoints.NewSDK(f).WithLister(privateendpoints.ListerFor(o.Clients, f)), scope, ac.ResourceGroup, time.Time{})
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot look for orphaned private endpoints", "error", azure.Classify(err).Message)
		return ctrl.Result{}
	}
	prefix := scope + "/" + strings.ToLower(ac.ResourceGroup) + "/"
	var candidates []string
	for name, ob := range obs {
		candidate := capz.PrivateEndpoint{Name: ob.Name, Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: ob.PrivateLinkServiceID}}}
		if !orphanCandidate(candidate, keep[name], live[name], ownedByCAPZ(ob.Tags, ac), matches) {
			continue
		}
		candidates = append(candidates, name)
	}
	ripe, waiting := o.ripen(prefix, candidates, time.Now())
	for _, name := range ripe {
		o.delete(ctx, f.NewPrivateEndpointsClient(), ac, obs[name].Name, scope)
	}
	if waiting {
		return ctrl.Result{RequeueAfter: o.Interval}
	}
	return ctrl.Result{}
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
	ctx = azure.WithDeletionReason(ctx, "orphan: the operator removed the entry from "+ac.Namespace+"/"+ac.Name+" and CAPZ left the endpoint in Azure")
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

// +kubebuilder:rbac:groups=network.azure.com,resources=privateendpoints,verbs=get;list;watch;delete

// asoEndpoints lists ASO PrivateEndpoint objects in a namespace (from the
// cache, trimmed).
func (o *OrphanCleaner) asoEndpoints(ctx context.Context, namespace string) ([]capz.ASOObject, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.ASOPrivateEndpointGVK.GroupVersion().WithKind("PrivateEndpointList"))
	if err := o.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := make([]capz.ASOObject, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, capz.ReadASO(&list.Items[i]))
	}
	return out, nil
}

// sweepASO deletes the ASO objects CAPZ left for the cluster's orphaned
// endpoints and says whether some candidates are not ripe yet.
func (o *OrphanCleaner) sweepASO(ctx context.Context, ac *capz.AzureCluster, objs []capz.ASOObject, keep map[string]bool, matches func(capz.PrivateEndpoint) bool) bool {
	byName := map[string]capz.ASOObject{}
	var candidates []string
	for _, obj := range objs {
		name := strings.ToLower(obj.AzureName)
		if !orphanCandidate(asoCandidate(obj), keep[name], obj.Deleting, obj.Controller == ac.Name && obj.ClusterName == clusterNameOf(ac), matches) {
			continue
		}
		byName[name] = obj
		candidates = append(candidates, name)
	}
	ripe, waiting := o.ripen("aso/"+ac.Namespace+"/"+ac.Name+"/", candidates, time.Now())
	for _, name := range ripe {
		obj := byName[name]
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
		u.SetNamespace(obj.Namespace)
		u.SetName(obj.Name)
		uid := types.UID(obj.UID)
		if err := o.Client.Delete(ctx, u, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			ctrl.LoggerFrom(ctx).Info("Cannot delete an orphaned ASO private endpoint", "object", obj.Name, "error", err.Error())
			continue
		}
		if acU, err := getAzureCluster(ctx, o.Client, types.NamespacedName{Namespace: ac.Namespace, Name: ac.Name}); err == nil && acU != nil {
			o.Recorder.Eventf(acU, nil, corev1.EventTypeNormal, ReasonOrphanDeleted, "Cleanup",
				"deleted ASO PrivateEndpoint %s/%s (Azure private endpoint %s), which left spec but CAPZ kept; ASO deletes the Azure resource",
				obj.Namespace, obj.Name, obj.AzureName)
		}
	}
	return waiting
}

// asoCandidate is an ASO object as the naming contract sees it.
func asoCandidate(obj capz.ASOObject) capz.PrivateEndpoint {
	pe := capz.PrivateEndpoint{Name: obj.AzureName}
	for _, id := range obj.PrivateLinkServiceIDs {
		pe.Connections = append(pe.Connections, capz.PrivateLinkServiceConnection{PrivateLinkServiceID: id})
	}
	return pe
}

// orphanSweeper deletes endpoints of ac that CAPZ left in Azure: those
// matches accepts that are not wanted.
type orphanSweeper interface {
	Sweep(ctx context.Context, ac *capz.AzureCluster, matches func(capz.PrivateEndpoint) bool, wanted ...string) (ctrl.Result, error)
}

// wcEndpointName matches the operator's WC-side naming contract.
func wcEndpointName(wcName string) func(capz.PrivateEndpoint) bool {
	return func(pe capz.PrivateEndpoint) bool {
		return strings.HasPrefix(pe.Name, wcName+"-to-") && strings.HasSuffix(pe.Name, "-privateendpoint")
	}
}

// uniqueNames lists the endpoints' names, each once.
func uniqueNames(eps []Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		if !slices.Contains(out, ep.Name) {
			out = append(out, ep.Name)
		}
	}
	return out
}
