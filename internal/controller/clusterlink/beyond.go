package clusterlink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// The MC's endpoints beyond its AzureCluster (docs/design.md, *The layout
// at scale*; docs/operations.md, *Endpoints beyond the management
// cluster's AzureCluster*).
//
// Every MC-side endpoint is, by default, an entry in the MC's AzureCluster,
// which CAPZ makes in the MC's network. Both are bounded: the object by
// etcd's 1.5 MiB request (about 3,400 entries), the network by Azure's
// 1,000 private endpoints per virtual network (5,000 with high-scale
// private endpoints). With --mc-endpoint-subnets, a workload cluster whose
// new endpoints no longer fit under --mc-private-endpoint-limit gets them
// as AzurePrivateEndpoint objects instead, in the MC's namespace, each in
// the first declared subnet whose network has room under
// --mc-endpoint-network-limit. The endpoint keeps its name
// (<pl>-privateendpoint) and sits in the MC's subscription and resource
// group, so the wiring observes it, publishes its address and DNS mode
// writes its records exactly as for an entry.
//
// Where each endpoint is, is on objects: an entry is an entry, an object
// labelled MCEndpointOfLabel is an object, and neither ever moves to the
// other (a move would delete a working endpoint to make another with a new
// address). Objects are made with create, never applied over: an object
// of that name that exists is never changed (the subnet is immutable, and
// an object the operator did not make is not its own).
const (
	// MCEndpointOfLabel marks an AzurePrivateEndpoint the operator made as
	// one of the MC's endpoints beyond its AzureCluster; its value is the
	// MC's name.
	MCEndpointOfLabel = "privatelink.giantswarm.io/mc-endpoint-of"
	// ForClusterAnnotation on such an object names the workload cluster
	// ("namespace/name") it is for, for people and for explain.
	ForClusterAnnotation = "privatelink.giantswarm.io/for-cluster"
	// MaxNetworkLimit is the highest --mc-endpoint-network-limit: Azure's
	// private endpoints per virtual network with high-scale private
	// endpoints (privateEndpointVNetPolicies Basic; "Increase Private
	// Endpoint virtual network limits", 2025).
	MaxNetworkLimit = 5000

	// ReasonEndpointPlaced (Normal, on the MC): an endpoint was made as an
	// AzurePrivateEndpoint beyond the MC's AzureCluster.
	ReasonEndpointPlaced = "PrivateEndpointPlaced"
	// ReasonEndpointNotPlaced (Warning, on the MC): such an object could
	// not be created or deleted, or its name is held by an object that is
	// not the operator's.
	ReasonEndpointNotPlaced = "PrivateEndpointNotPlaced"
	// ReasonNetworkLimitNear (Warning, on the MC): a network of
	// --mc-endpoint-subnets holds 90 % of --mc-endpoint-network-limit.
	ReasonNetworkLimitNear = "PrivateEndpointNetworkLimitNear"
)

// Beyond is where the MC's endpoints go that its AzureCluster has no room
// for. Zero: nowhere (a cluster beyond the limit waits, PrivateEndpointLimit).
type Beyond struct {
	// Subnets are subnet resource IDs in the MC's subscription and
	// region, in the order they fill.
	Subnets []string
	// NetworkLimit is how many of these endpoints each virtual network of
	// Subnets may hold at most.
	NetworkLimit int
	// Standard and HighScale are Azure's figures per network without and
	// with high-scale private endpoints; zero: 1,000 and 5,000. (Not
	// flags: tests lower them as they lower azuresim's.)
	Standard, HighScale int
	// Capacity is what each network (lower-case ID) takes, as Azure
	// counts it and within NetworkLimit (NetworkCapacities.Of); a network
	// not in it takes min(NetworkLimit, Standard).
	Capacity map[string]int
}

// limitOf is how many of these endpoints network net may hold.
func (b Beyond) limitOf(net string) int {
	if c, ok := b.Capacity[net]; ok {
		return c
	}
	return min(b.NetworkLimit, b.standard())
}

func (b Beyond) standard() int {
	if b.Standard > 0 {
		return b.Standard
	}
	return AzureEndpointsPerVNet
}

func (b Beyond) highScale() int {
	if b.HighScale > 0 {
		return b.HighScale
	}
	return MaxNetworkLimit
}

// On says endpoints go beyond the MC's AzureCluster.
func (b Beyond) On() bool { return len(b.Subnets) > 0 }

// isPlacedSubnet says an Endpoint's Subnet is a subnet's resource ID (an
// endpoint beyond the MC's AzureCluster) rather than the name of one of
// the cluster's subnets (an entry).
func isPlacedSubnet(s string) bool { return strings.HasPrefix(strings.ToLower(s), "/subscriptions/") }

// placed says the endpoint is, or is to be, an AzurePrivateEndpoint.
func (e Endpoint) placed() bool { return isPlacedSubnet(e.Subnet) }

// networkOf is the virtual network's resource ID (lower case) of a
// subnet's.
func networkOf(subnetID string) string {
	s := strings.ToLower(subnetID)
	if i := strings.LastIndex(s, "/subnets/"); i >= 0 {
		return s[:i]
	}
	return s
}

// networkUse counts the placed endpoints of each network.
func networkUse(placed map[string][]capz.PrivateEndpoint) map[string]int {
	bySubnet := make(map[string]int, len(placed))
	for subnet, eps := range placed {
		bySubnet[subnet] += len(eps)
	}
	return useOfSubnets(bySubnet)
}

// useOfSubnets adds up the endpoints of each subnet (by ID) per network.
func useOfSubnets(bySubnet map[string]int) map[string]int {
	use := map[string]int{}
	for subnet, n := range bySubnet {
		use[networkOf(subnet)] += n
	}
	return use
}

// PlaceBeyond places the endpoints the MC's AzureCluster has no room for
// (refused, in the order clusters are served): each cluster's all in the
// first subnet of b whose network holds no more than its limit with
// them (use: what each network holds now, updated), so a cluster is wired
// all or none; a cluster that fits nowhere gets a Problem and leaves the
// room to the next ones. Pure.
func PlaceBeyond(refused []Endpoint, b Beyond, use map[string]int) ([]Endpoint, []Problem) {
	var clusters []string
	of := map[string][]Endpoint{}
	for _, ep := range refused {
		if _, ok := of[ep.Cluster]; !ok {
			clusters = append(clusters, ep.Cluster)
		}
		of[ep.Cluster] = append(of[ep.Cluster], ep)
	}
	var out []Endpoint
	var problems []Problem
	for _, c := range clusters {
		eps := of[c]
		i := slices.IndexFunc(b.Subnets, func(s string) bool { return use[networkOf(s)]+len(eps) <= b.limitOf(networkOf(s)) })
		if i < 0 {
			problems = append(problems, Problem{c, ReasonEndpointLimit, fmt.Sprintf(
				"no private endpoint %s is requested for the management cluster: its AzureCluster is full (--mc-private-endpoint-limit) and no "+
					"network of --mc-endpoint-subnets has room for this cluster's %d (%s; Azure allows %d per virtual network, %d with high-scale "+
					"private endpoints, at most --mc-endpoint-network-limit); declare a subnet of another network, or remove private links no cluster needs",
				eps[0].Name, len(eps), networkFigures(b, use), AzureEndpointsPerVNet, MaxNetworkLimit)})
			continue
		}
		use[networkOf(b.Subnets[i])] += len(eps)
		for _, ep := range eps {
			ep.Subnet = b.Subnets[i]
			out = append(out, ep)
		}
	}
	return out, problems
}

// placedEndpoint is the endpoint an object of the operator's stands for,
// as an entry would carry it.
func placedEndpoint(o *v1alpha1.AzurePrivateEndpoint) capz.PrivateEndpoint {
	name := o.AzurePrivateEndpointName()
	return capz.PrivateEndpoint{
		Name: name, Location: o.Spec.Location, ManualApproval: o.Spec.ManualApproval,
		Connections: []capz.PrivateLinkServiceConnection{{
			Name: name + "-connection", PrivateLinkServiceID: o.Spec.PrivateLinkServiceID, RequestMessage: o.Spec.RequestMessage,
		}},
	}
}

// placedOf groups the operator's objects by subnet ID, as entries are
// grouped by subnet name.
func placedOf(objs []v1alpha1.AzurePrivateEndpoint) map[string][]capz.PrivateEndpoint {
	out := map[string][]capz.PrivateEndpoint{}
	for i := range objs {
		out[objs[i].Spec.SubnetID] = append(out[objs[i].Spec.SubnetID], placedEndpoint(&objs[i]))
	}
	return out
}

// placedUse is networkUse(placedOf(objs)) without the endpoints: what each
// network holds of the objects.
func placedUse(objs []v1alpha1.AzurePrivateEndpoint) map[string]int {
	bySubnet := map[string]int{}
	for i := range objs {
		bySubnet[objs[i].Spec.SubnetID]++
	}
	return useOfSubnets(bySubnet)
}

// splitPlaced splits endpoints grouped by subnet into entries (by subnet
// name) and placed ones (by subnet ID).
func splitPlaced(eps map[string][]capz.PrivateEndpoint) (entries, placed map[string][]capz.PrivateEndpoint) {
	entries, placed = map[string][]capz.PrivateEndpoint{}, map[string][]capz.PrivateEndpoint{}
	for subnet, list := range eps {
		if isPlacedSubnet(subnet) {
			placed[subnet] = list
		} else {
			entries[subnet] = list
		}
	}
	return entries, placed
}

// joinPlaced is entries and placed in one map (their keys never meet: a
// subnet's name has no slash).
func joinPlaced(entries, placed map[string][]capz.PrivateEndpoint) map[string][]capz.PrivateEndpoint {
	out := maps.Clone(entries)
	if out == nil {
		out = map[string][]capz.PrivateEndpoint{}
	}
	maps.Copy(out, placed)
	return out
}

// placedObjectName is the object's name for an endpoint's Azure name:
// the name in lower case (Azure's names are unique without regard to
// case) when Kubernetes takes it, else a name derived from it.
func placedObjectName(azureName string) string {
	n := strings.ToLower(azureName)
	if len(validation.IsDNS1123Subdomain(n)) == 0 {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return "mc-endpoint-" + hex.EncodeToString(sum[:10])
}

// desiredPlaced is the AzurePrivateEndpoint of an endpoint placed beyond
// the MC's AzureCluster: in the MC's subscription, resource group,
// region and cloud, with its identity, so the wiring finds it where it
// finds the entries' endpoints. No owner reference: a clusterctl move or
// the MC object's deletion must not garbage-collect (and so delete in
// Azure) every placed cluster's way in; DeletionPolicy Delete: the MC's
// pass deletes the object when the cluster no longer needs the endpoint,
// and the endpoint goes with it.
func desiredPlaced(mc *capz.AzureCluster, ep Endpoint) *v1alpha1.AzurePrivateEndpoint {
	o := &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mc.Namespace, Name: placedObjectName(ep.Name),
			Labels:      map[string]string{MCEndpointOfLabel: mc.Name},
			Annotations: map[string]string{ForClusterAnnotation: ep.Cluster},
		},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: mc.SubscriptionID, ResourceGroup: mc.ResourceGroup, Location: mc.Location,
			Name: ep.Name, AzureEnvironment: mc.AzureEnvironment, SubnetID: ep.Subnet,
			PrivateLinkServiceID: ep.Connections[0].PrivateLinkServiceID, ManualApproval: ep.ManualApproval,
			RequestMessage: ep.Connections[0].RequestMessage, DeletionPolicy: v1alpha1.DeletionPolicyDelete,
		},
	}
	if mc.IdentityRef != nil {
		o.Spec.IdentityRef = &v1alpha1.IdentityReference{Name: mc.IdentityRef.Name, Namespace: mc.IdentityRef.Namespace}
	}
	return o
}

// placedObjects are the operator's objects of the MC's endpoints beyond
// its AzureCluster, from the cache.
//
// The items share their maps and slices with the cache's objects (no deep
// copy): callers read them, and write only to the API server. The MC's
// pass and every WC's pass that is new beyond the entries' limit list
// them, up to N − 1,000, and the copies were 6.1 s of the 140 s of CPU
// the operator spent converging at N = 3,000 (test/scale --profile-dir).
func placedObjects(ctx context.Context, c client.Reader, mc types.NamespacedName) ([]v1alpha1.AzurePrivateEndpoint, error) {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := c.List(ctx, list, client.InNamespace(mc.Namespace), client.MatchingLabels{MCEndpointOfLabel: mc.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the management cluster's AzurePrivateEndpoints: %w", err)
	}
	return list.Items, nil
}

// placedServiceIndex indexes the MC's endpoint objects (those with
// MCEndpointOfLabel) by the lower-case ID of the private link service
// they connect to.
const placedServiceIndex = "apeo.placedPrivateLinkServiceID"

// placedService is placedServiceIndex's value of o.
func placedService(o client.Object) []string {
	ape, ok := o.(*v1alpha1.AzurePrivateEndpoint)
	if !ok || ape.Labels[MCEndpointOfLabel] == "" || ape.Spec.PrivateLinkServiceID == "" {
		return nil
	}
	return []string{strings.ToLower(ape.Spec.PrivateLinkServiceID)}
}

// placedFor says whether the MC still has an object for one of wc's
// services (its release waits for them to go). It looks each service up
// in placedServiceIndex: a deleted cluster's release asks this at every
// pass until the MC's pass has deleted its object, and listing every
// object each time (N − 1,000 of them) was 60 % of the operator's CPU
// while 3,000 workload clusters were deleted (docs/benchmarks.md, *The
// MC's condition, paced; the release looks its objects up*).
func placedFor(ctx context.Context, c client.Reader, mc types.NamespacedName, wc *capz.AzureCluster) (bool, error) {
	for id := range LinkServiceIDs(wc) {
		list := &v1alpha1.AzurePrivateEndpointList{}
		if err := c.List(ctx, list, client.InNamespace(mc.Namespace), client.MatchingFields{placedServiceIndex: id},
			client.MatchingLabels{MCEndpointOfLabel: mc.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return false, fmt.Errorf("listing the management cluster's AzurePrivateEndpoints: %w", err)
		}
		if len(list.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// onMCRoom decides, for one WC's endpoints in the MC (toWC, as
// planEndpoints gives them), which are held (an entry, or an object
// beyond the MC's AzureCluster, whose subnet they take) and which new ones
// fit: under the MC's entry limit, else, with Beyond, in a network with
// room (the MC's pass then makes the object; the cluster waits for it).
// Only a cluster that is new beyond the limit lists the objects.
func onMCRoom(ctx context.Context, c client.Reader, mcs mcState, toWC []Endpoint, opts Options, caps *NetworkCapacities) ([]Endpoint, []Problem, error) {
	// What is held of this cluster's names only: the snapshot's Held has
	// every entry of the MC, and a copy of it per pass would be a million
	// map writes per MC change at 1,000 clusters (snapshot.go).
	held := make(Held, len(toWC))
	for _, ep := range toWC {
		if target, ok := mcs.held[ep.Name]; ok {
			held[ep.Name] = target
		}
	}
	var problems []Problem
	// Objects are looked up whether Beyond is on or not: once made, an
	// object is where the endpoint is, also after Beyond is turned off
	// (an entry of its name would ask CAPZ for an endpoint Azure has in
	// another subnet).
	if len(toWC) > 0 {
		kept := toWC[:0:0]
		for _, ep := range toWC {
			o := &v1alpha1.AzurePrivateEndpoint{}
			err := c.Get(ctx, types.NamespacedName{Namespace: mcs.view.Namespace, Name: placedObjectName(ep.Name)}, o)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return nil, nil, err
			case o.Labels[MCEndpointOfLabel] == mcs.view.Name && strings.EqualFold(o.AzurePrivateEndpointName(), ep.Name):
				if !strings.EqualFold(o.Spec.PrivateLinkServiceID, ep.Connections[0].PrivateLinkServiceID) {
					problems = append(problems, nameConflict(ep, o.Annotations[ForClusterAnnotation]))
					continue
				}
				held[ep.Name] = strings.ToLower(o.Spec.PrivateLinkServiceID)
				ep.Subnet = o.Spec.SubnetID
			}
			kept = append(kept, ep)
		}
		toWC = kept
	}
	cfg := opts.Config
	var use map[string]int
	if cfg.Beyond.On() && !fitsInEntries(toWC, held, EntryCount(mcs.view), cfg.MCEndpointLimit) {
		// Only a cluster new beyond the entries' limit reads the objects
		// and the networks' capacities.
		objs, err := placedObjects(ctx, c, types.NamespacedName{Namespace: mcs.view.Namespace, Name: mcs.view.Name})
		if err != nil {
			return nil, nil, err
		}
		use, cfg.Beyond = placedUse(objs), caps.Of(ctx, mcs.view, cfg.Beyond)
	}
	out, full := fitInMC(toWC, held, EntryCount(mcs.view), cfg, use)
	return out, append(problems, full...), nil
}

// fitInMC is where the MC's endpoints eps (in the order clusters are
// served) go: those held (an entry, or an object beyond the MC's
// AzureCluster) stay; a cluster's new ones become entries while the
// entries' limit has room; beyond it, with Beyond, objects in the first
// network with room (PlaceBeyond; use is updated); a cluster that fits
// nowhere gets PrivateEndpointLimit. The MC's pass and each WC's pass
// decide through it.
func fitInMC(eps []Endpoint, held Held, entries int, cfg Config, use map[string]int) ([]Endpoint, []Problem) {
	in, refused, limited := limitSplit(eps, held, entries, cfg.MCEndpointLimit)
	if !cfg.Beyond.On() || len(refused) == 0 {
		return in, limited
	}
	if use == nil {
		use = map[string]int{}
	}
	placed, unplaced := PlaceBeyond(refused, cfg.Beyond, use)
	return append(in, placed...), unplaced
}

// fitsInEntries says no endpoint of eps is refused by the entries' limit.
func fitsInEntries(eps []Endpoint, held Held, entries, limit int) bool {
	_, refused, _ := limitSplit(eps, held, entries, limit)
	return len(refused) == 0
}

// ensurePlaced makes the objects of plan.placed that do not exist and
// deletes the operator's objects plan no longer has. An object of a name
// that is not the operator's is neither changed nor deleted (a Warning).
func (r *MCReconciler) ensurePlaced(ctx context.Context, seen *mcSeen, plan mcPlan) error {
	if !r.Opts.Beyond.On() && len(seen.placedObjs) == 0 {
		return nil
	}
	have := map[string]*v1alpha1.AzurePrivateEndpoint{}
	for i := range seen.placedObjs {
		have[strings.ToLower(seen.placedObjs[i].AzurePrivateEndpointName())] = &seen.placedObjs[i]
	}
	wanted := map[string]bool{}
	var errs []error
	for _, subnet := range slices.Sorted(maps.Keys(plan.placed)) {
		for _, pe := range plan.placed[subnet] {
			wanted[strings.ToLower(pe.Name)] = true
			if have[strings.ToLower(pe.Name)] != nil {
				continue
			}
			if err := r.createPlaced(ctx, seen, Endpoint{Subnet: subnet, PrivateEndpoint: pe, Cluster: plan.placedFor[pe.Name]}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for name, o := range have {
		if wanted[name] || o.DeletionTimestamp != nil {
			continue
		}
		uid := o.UID
		if err := r.Client.Delete(ctx, o, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			r.warnPlaced(seen, "delete:"+o.Name, "AzurePrivateEndpoint %s/%s cannot be deleted (its private endpoint stays in Azure meanwhile): %v; tried again every --pending-recheck-interval", o.Namespace, o.Name, err)
			errs = append(errs, err)
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Deleted a private endpoint beyond the management cluster's AzureCluster: no workload cluster needs it", "azurePrivateEndpoint", o.Namespace+"/"+o.Name)
	}
	if len(errs) > 0 {
		return fmt.Errorf("the management cluster's AzurePrivateEndpoints: %w", errs[0])
	}
	return nil
}

// createPlaced creates one object; one of that name that exists is left
// as it is (the operator's, which the cache did not show yet, or someone
// else's: a Warning).
func (r *MCReconciler) createPlaced(ctx context.Context, seen *mcSeen, ep Endpoint) error {
	o := desiredPlaced(seen.mc, ep)
	err := r.Client.Create(ctx, o, client.FieldOwner(capz.FieldManager))
	switch {
	case err == nil:
		// One Event per creation: a second create of the name is
		// AlreadyExists, so nothing needs remembering.
		r.Recorder.Eventf(seen.u, nil, corev1.EventTypeNormal, ReasonEndpointPlaced, "Wire",
			"created AzurePrivateEndpoint %s/%s in subnet %s for workload cluster %s: the AzureCluster's entries reached --mc-private-endpoint-limit (%d)",
			o.Namespace, o.Name, ep.Subnet, ep.Cluster, r.Opts.MCEndpointLimit)
		return nil
	case apierrors.IsAlreadyExists(err):
		live := &v1alpha1.AzurePrivateEndpoint{}
		if err := apiOr(r.APIReader, r.Client).Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			return err
		}
		if live.Labels[MCEndpointOfLabel] != seen.mc.Name {
			r.warnPlaced(seen, "taken:"+o.Name, "AzurePrivateEndpoint %s/%s exists and is not the operator's (no label %s=%s): it is neither used nor changed, "+
				"and workload cluster %s waits for its endpoint; rename or remove it", o.Namespace, o.Name, MCEndpointOfLabel, seen.mc.Name, ep.Cluster)
		}
		return nil
	default:
		r.warnPlaced(seen, "create:"+o.Name+":"+err.Error(), "AzurePrivateEndpoint %s/%s cannot be created, so workload cluster %s waits for its endpoint: %v; tried again every --pending-recheck-interval",
			o.Namespace, o.Name, ep.Cluster, err)
		return fmt.Errorf("creating AzurePrivateEndpoint %s/%s: %w", o.Namespace, o.Name, err)
	}
}

// warnPlaced gives a Warning on the MC once per memKey.
func (r *MCReconciler) warnPlaced(seen *mcSeen, memKey, format string, args ...any) {
	if r.shardMemory.first(key(seen.mc), ReasonEndpointNotPlaced+":"+memKey) {
		r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonEndpointNotPlaced, "Wire", format, args...)
	}
}

// reportNetworks publishes each declared network's placed endpoints and
// warns once while the last one holds 90 % of the limit or more
// (nearestNetwork); it returns the memory keys of the Warnings that last.
func (r *MCReconciler) reportNetworks(seen *mcSeen, b Beyond) []string {
	use := networkUse(seen.placed)
	for _, net := range b.networks() {
		limitmetrics.Set(limitmetrics.MCNetworkEndpoints, net, use[net], b.limitOf(net))
	}
	net, near := nearestNetwork(b, use)
	if !near {
		return nil
	}
	memKey := ReasonNetworkLimitNear + ":" + net
	if r.memory.first(key(seen.mc), memKey) {
		r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonNetworkLimitNear, "Wire", "%s", nearNetworkLimit(b, net, use[net]))
	}
	return []string{memKey}
}

// nearNetworkLimit is the Warning of the last network near its limit.
func nearNetworkLimit(b Beyond, net string, n int) string {
	return fmt.Sprintf("network %s, the last of --mc-endpoint-subnets, holds %d of the operator's private endpoints, the limit is %d "+
		"(Azure allows %d per virtual network, %d with high-scale private endpoints, at most --mc-endpoint-network-limit): when it is full, "+
		"new workload clusters get no endpoint (PrivateEndpointLimit); declare a subnet of another network", net, n, b.limitOf(net), AzureEndpointsPerVNet, MaxNetworkLimit)
}

// IsMCEndpointObject says o is one of the AzurePrivateEndpoints the
// wiring makes for the management cluster mc beyond its AzureCluster
// (isPlaced).
func IsMCEndpointObject(mc types.NamespacedName, o client.Object) bool { return isPlaced(mc, o) }

// isPlaced says o is one of the MC's endpoint objects: in the MC's
// namespace, labelled with its name. Objects elsewhere (a tenant may
// label its own) are nobody's business here.
func isPlaced(mc types.NamespacedName, o client.Object) bool {
	return o.GetNamespace() == mc.Namespace && o.GetLabels()[MCEndpointOfLabel] == mc.Name
}

// mcOfPlaced selects the MC's endpoint objects for the MC's request.
func mcOfPlaced(mc types.NamespacedName) func(client.Object) bool {
	return func(o client.Object) bool { return isPlaced(mc, o) }
}

// wcOfPlaced maps one of the MC's endpoint objects to the workload
// cluster it is for: its endpoint turning Ready is what that cluster's
// wiring waits for.
func wcOfPlaced(mc types.NamespacedName) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		if !isPlaced(mc, o) {
			return nil
		}
		ns, name, ok := strings.Cut(o.GetAnnotations()[ForClusterAnnotation], "/")
		if !ok {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
	}
}

// onPlacedSubnets gives each endpoint of eps that one of the operator's
// objects holds that object's subnet ID: it stays where it is.
func onPlacedSubnets(eps []Endpoint, placed map[string][]capz.PrivateEndpoint) []Endpoint {
	if len(placed) == 0 {
		return eps
	}
	at := map[string]string{}
	for subnet, list := range placed {
		for _, pe := range list {
			at[pe.Name] = subnet
		}
	}
	for i := range eps {
		if s, ok := at[eps[i].Name]; ok {
			eps[i].Subnet = s
		}
	}
	return eps
}

// placedNames are the Azure names of the operator's objects and of those
// plan makes: the orphan sweep keeps them. (It takes only endpoints CAPZ
// tagged as the MC's, which these are not: the AzurePrivateEndpoint
// controller tags its own; the names are a second guard, not the first.)
func placedNames(seen *mcSeen, plan mcPlan) []string {
	var out []string
	for _, m := range []map[string][]capz.PrivateEndpoint{seen.placed, plan.placed} {
		for _, list := range m {
			for _, pe := range list {
				out = append(out, pe.Name)
			}
		}
	}
	return out
}

// placedCount is how many placed endpoints there are.
func placedCount(placed map[string][]capz.PrivateEndpoint) int {
	n := 0
	for _, list := range placed {
		n += len(list)
	}
	return n
}

// networks are b's networks, each once, in the order they fill.
func (b Beyond) networks() []string {
	var out []string
	for _, s := range b.Subnets {
		if n := networkOf(s); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// networkFigures says what each of b's networks holds ("<name> 12/1000").
func networkFigures(b Beyond, use map[string]int) string {
	parts := make([]string, 0, len(b.Subnets))
	for _, net := range b.networks() {
		parts = append(parts, fmt.Sprintf("%s %d/%d", net[strings.LastIndex(net, "/")+1:], use[net], b.limitOf(net)))
	}
	return strings.Join(parts, ", ")
}

// nearestNetwork is b's last network when it holds 90 % of the limit or
// more: networks fill in order, so one before it near its limit is what
// sends clusters to the next, and only the last one's is worth saying.
func nearestNetwork(b Beyond, use map[string]int) (string, bool) {
	nets := b.networks()
	if len(nets) == 0 {
		return "", false
	}
	last := nets[len(nets)-1]
	return last, b.limitOf(last) > 0 && use[last]*10 >= b.limitOf(last)*9
}
