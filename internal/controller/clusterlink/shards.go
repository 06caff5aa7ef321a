package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// The MC's ingress, sharded (docs/operations.md, *Ingress services beyond
// the first*). Every workload cluster's ingress endpoint connects to one
// private link service, and Azure accepts 1,000 endpoints on one. With
// IngressShards set, the operator makes further services on the ingress
// load balancer as AzurePrivateLinkService objects — up to Azure's 8
// private link services per load balancer ("Azure subscription and
// service limits", Private Link; one service per frontend IP
// configuration, which is why each needs a frontend of its own:
// cloud-provider-azure keys its private link services by frontend,
// kubernetes-sigs/cloud-provider-azure#10943) — and
// gives each new workload cluster the first with room. The first service
// stays whoever made it (by hand, cloud-provider-azure, CAPZ): the operator
// never writes it. A cluster whose spec holds an entry to one of them keeps
// it, whatever the counts: the entry is the record of the assignment, on
// the object (docs/design.md, *Safety state lives on objects*), and a
// working endpoint is never moved. Endpoint and connection names do not
// change with the service, so what reads the ingress annotation sees no
// difference.

// IngressShards configures the MC's ingress services beyond the first:
// the ingress link's and, in the gateway layouts, the gateway's.
type IngressShards struct {
	// LoadBalancer is the MC's internal load balancer the ingress is on,
	// in the MC's resource group (cloud-provider-azure's default:
	// kubernetes-internal).
	LoadBalancer string
	// Frontends are the frontend IP configurations for the second, third,
	// … service, in that order: a frontend of LoadBalancer by its name,
	// or one of another load balancer of the MC's resource group as
	// <load-balancer>/<frontend> (Azure allows MaxIngressShards private
	// link services per load balancer, the first service counted on
	// LoadBalancer). Empty: no service beyond the first.
	Frontends []string
	// GatewayLoadBalancer and GatewayFrontends are the same for the
	// gateway's service (<mc>-gateway-privatelink) in the gateway layouts.
	GatewayLoadBalancer string
	GatewayFrontends    []string
	// NATSubnet is the subnet of the load balancer's network the services'
	// NAT IP configurations take their addresses from (its private link
	// service network policies are disabled). Default: the subnet the
	// MC's private endpoints go in.
	NATSubnet string
	// Subscriptions are the lower-case subscription IDs the services show
	// themselves to and auto-approve: the workload clusters'. Configured,
	// never read from the clusters' specs: a tenant who could name any
	// subscription in its AzureCluster would otherwise open the MC's
	// ingress to that subscription.
	Subscriptions []string
}

const (
	// MaxIngressShards is Azure's limit of private link services on one
	// load balancer, the first one included ("Number of private link
	// services per Standard Load Balancer: 8", Azure's networking limits,
	// Private Link).
	MaxIngressShards = 8
	// MaxShardFrontends bounds the further services of one set, over all
	// load balancers: 31 beside the first, 32,000 clusters at Azure's
	// 1,000 endpoints per service.
	MaxShardFrontends = 31
	// ShardOfLabel marks an AzurePrivateLinkService the operator made as
	// one of the MC's ingress services; its value is the MC's name.
	ShardOfLabel = "privatelink.giantswarm.io/mc-ingress-shard-of"
	// ShardThresholdPercent is the share of --mc-service-connection-limit
	// every service before the next must have for the next to be made, so
	// that it is Ready before the last room goes.
	ShardThresholdPercent = 90

	// ReasonIngressServiceWaiting says the ingress services that can take
	// a cluster are full and no further one can take it yet (not made,
	// not Ready, or not listing its subscription).
	ReasonIngressServiceWaiting = "WaitingForIngressService"
	// ReasonIngressServiceRequested says the operator created the MC's next
	// ingress service (a Normal Event on the MC).
	ReasonIngressServiceRequested = "IngressPrivateLinkServiceRequested"
	// ReasonIngressServiceNotApplied says the API server refused one of
	// the MC's further ingress services (a Warning on the MC).
	ReasonIngressServiceNotApplied = "IngressPrivateLinkServiceNotApplied"
	// ReasonIngressServiceNameTaken says an AzurePrivateLinkService of the
	// name of one of the MC's ingress services exists and is not the
	// operator's: it is neither used nor changed (a Warning on the MC).
	ReasonIngressServiceNameTaken = "IngressPrivateLinkServiceNameTaken"
)

// MaxShardSubscriptions is spec.visibility's and spec.autoApproval's
// MaxItems.
const MaxShardSubscriptions = 64

// shardSet is one MC service WCs connect to that has further services:
// the first's name, and the load balancer and frontends of the others.
type shardSet struct {
	first, loadBalancer string
	frontends           []string
}

// frontend is where service k (1 is the second) goes: its load balancer
// and frontend IP configuration.
func (s shardSet) frontend(k int) (loadBalancer, frontend string) {
	return SplitShardFrontend(s.loadBalancer, s.frontends[k-1])
}

// SplitShardFrontend reads an entry of --mc-ingress-shard-frontends
// (--mc-gateway-shard-frontends): <frontend> of the flag's load balancer
// lb, or <load-balancer>/<frontend> (Azure's names of either hold no
// "/").
func SplitShardFrontend(lb, entry string) (loadBalancer, frontend string) {
	if l, fe, ok := strings.Cut(entry, "/"); ok {
		return l, fe
	}
	return lb, entry
}

// services are the set's services in order: the first (whoever made it),
// then the operator's, named <first>-2, <first>-3, … (the objects' and
// Azure's names).
func (s shardSet) services() []string {
	out := make([]string, 0, 1+len(s.frontends))
	out = append(out, s.first)
	for k := range s.frontends {
		out = append(out, fmt.Sprintf("%s-%d", s.first, k+2))
	}
	return out
}

// shardSets are the MC's services with further services in the
// configured layout: the ingress link's (layouts with the ingress
// endpoint), then the gateway's (layouts with the gateway endpoint).
func (c Config) shardSets(mcName string) []shardSet {
	var out []shardSet
	sh := c.IngressShards
	if len(sh.Frontends) > 0 && c.Layout != LayoutGateway {
		out = append(out, shardSet{first: c.LinkNames(mcName)[0], loadBalancer: sh.LoadBalancer, frontends: sh.Frontends})
	}
	if len(sh.GatewayFrontends) > 0 && (c.Layout == LayoutGateway || c.Layout == LayoutIngressAndGateway) {
		out = append(out, shardSet{first: GatewayLinkName(mcName), loadBalancer: sh.GatewayLoadBalancer, frontends: sh.GatewayFrontends})
	}
	return out
}

// shardFirsts are the names of the first services of the MC's shard sets.
func (c Config) shardFirsts(mcName string) []string {
	sets := c.shardSets(mcName)
	out := make([]string, 0, len(sets))
	for _, set := range sets {
		out = append(out, set.first)
	}
	return out
}

// Sharded says whether one of the MC's services WCs connect to has
// further services in the configured layout (which sets there are does
// not depend on the MC's name).
func (c Config) Sharded() bool { return len(c.shardSets("")) > 0 }

// desiredShard is the AzurePrivateLinkService of the MC's service k (1 is
// the second) of set: on frontend k of the set's load balancer, its NAT
// IPs in the configured subnet, visible to and auto-approving the
// configured subscriptions. Not owned by the MC's
// AzureCluster: a clusterctl move deletes that object in the source, and
// garbage collection must not take every cluster's way to the MC with it.
// DeletionPolicy Orphan: deleting the object leaves Azure's service and
// its connections; removing one is a person's decision.
func desiredShard(mc *capz.AzureCluster, cfg Config, set shardSet, k int) *unstructured.Unstructured {
	nat := cfg.IngressShards.NATSubnet
	if nat == "" {
		nat, _ = endpointSubnet(mc, cfg.MCSubnet)
	}
	subs := make([]string, 0, len(cfg.IngressShards.Subscriptions))
	for _, s := range cfg.IngressShards.Subscriptions {
		subs = append(subs, strings.ToLower(s))
	}
	slices.Sort(subs)
	lb, fe := set.frontend(k)
	listed := make([]any, 0, len(subs))
	for _, s := range slices.Compact(subs) {
		listed = append(listed, s)
	}
	spec := map[string]any{
		"subscriptionID": mc.SubscriptionID,
		"resourceGroup":  mc.ResourceGroup,
		"location":       mc.Location,
		"frontend": map[string]any{"loadBalancer": map[string]any{
			"name": lb, "frontendIPConfigurationName": fe,
		}},
		"natSubnet":      map[string]any{"name": nat, "fixNetworkPolicies": true},
		"visibility":     listed,
		"autoApproval":   slices.Clone(listed),
		"deletionPolicy": string(v1alpha1.DeletionPolicyOrphan),
	}
	return linkServiceOf(mc, spec, set.services()[k], ShardOfLabel)
}

// WantedShards are the positions (1 is the second) of the MC's further
// ingress services that should exist: those that exist or that a cluster
// connects to, and the next one once every service before it has
// ShardThresholdPercent of limit. services are a set's, use the
// clusters connected to each (mcServiceUse).
func WantedShards(services []string, use map[string]int, exists map[string]bool, limit int) []int {
	var out []int
	full := true // every service before k is near its limit
	for k := 1; k < len(services); k++ {
		prev := services[k-1]
		full = full && limit > 0 && use[prev]*100 >= limit*ShardThresholdPercent
		if exists[services[k]] || use[services[k]] > 0 || full {
			out = append(out, k)
		}
	}
	return out
}

// ingressShard is one of the MC's ingress services as a workload cluster's
// pass sees it.
type ingressShard struct {
	name, id string
	// ready: the first (whoever made it), or the operator's object is
	// Ready for its spec; subs are its auto-approved subscriptions (nil:
	// the first, whose approval is as the MC declares it).
	ready bool
	subs  []string
	// why says, for a service not ready, what it waits for.
	why string
}

// serves says whether a new cluster of subscription sub can connect to s.
func (s ingressShard) serves(sub string) bool {
	return s.ready && (s.subs == nil || slices.Contains(s.subs, strings.ToLower(sub)))
}

// ingressShards are the services of set in order, from the
// AzurePrivateLinkService objects of the MC's namespace (objs, by name).
func ingressShards(mc *capz.AzureCluster, set shardSet, objs map[string]*v1alpha1.AzurePrivateLinkService) []ingressShard {
	names := set.services()
	out := make([]ingressShard, 0, len(names))
	for i, name := range names {
		s := ingressShard{name: name, id: strings.ToLower(PrivateLinkServiceID(mc.SubscriptionID, mc.ResourceGroup, name))}
		p := objs[name]
		switch {
		case i == 0:
			s.ready = true
		case p == nil:
			s.why = "not created yet"
		case p.Labels[ShardOfLabel] != mc.Name:
			s.why = "the AzurePrivateLinkService of its name is not the operator's"
		case p.DeletionTimestamp != nil:
			s.why = "being deleted"
		default:
			c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
			s.ready = c != nil && c.Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation
			s.subs = p.Spec.AutoApproval
			if !s.ready {
				s.why = "not Ready"
				if c != nil && c.Message != "" {
					s.why += ": " + c.Message
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// onShards gives wc's endpoints to the MC their services in every set of
// the MC's (onIngressShards, one set within the other) and admits them;
// admit alone when nothing is sharded.
func onShards(ctx context.Context, c client.Reader, mc, wc *capz.AzureCluster, cfg Config, toMC []Endpoint, admit admitFunc) ([]Endpoint, []Problem, error) {
	objs, err := shardObjects(ctx, c, mc, cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, set := range cfg.shardSets(mc.Name) {
		inner, shards, first := admit, ingressShards(mc, set, objs), set.first
		admit = func(toMC []Endpoint) ([]Endpoint, []Problem, error) {
			return onIngressShards(toMC, wc, shards, first, inner)
		}
	}
	return admit(toMC)
}

// shardObjects reads the AzurePrivateLinkServices of the names of the
// MC's further services, by name, whoever made them (ingressShards tells
// the operator's from others by label). They are the cache's own objects,
// not copies, and must not be changed: every WC's pass reads every further
// service, whose status lists up to 1,000 connections, and the copies
// were, at N = 3,000 (make bench at 3283d7f), 36 MiB of the live heap at
// its peak and 8.0 s of the operator's CPU, besides their collection.
//
// One lookup in the cache's shardNameIndex finds the few that exist. A
// Get per name, as before, made a new object for every name and a
// NotFound error for every service not made yet (13 of 15 at N = 1,000
// in make bench-dns): 0.94 GB of the 6.8 GB the operator allocated in
// that run (docs/benchmarks.md, *The further services in one lookup;
// two refusals found and gone*).
func shardObjects(ctx context.Context, c client.Reader, mc *capz.AzureCluster, cfg Config) (map[string]*v1alpha1.AzurePrivateLinkService, error) {
	names := cfg.furtherServices(mc.Name)
	out := make(map[string]*v1alpha1.AzurePrivateLinkService, len(names))
	if len(names) == 0 {
		return out, nil
	}
	list := &v1alpha1.AzurePrivateLinkServiceList{}
	if err := c.List(ctx, list, client.InNamespace(mc.Namespace), client.MatchingFields{shardNameIndex: shardNameValue},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if p := &list.Items[i]; slices.Contains(names, p.Name) {
			out[p.Name] = p
		}
	}
	return out, nil
}

// shardNameIndex indexes the AzurePrivateLinkServices that bear the name
// of one of the MC's further services in the MC's namespace, all under
// shardNameValue.
const (
	shardNameIndex = "apeo.shardName"
	shardNameValue = "further-service"
)

// shardNames is shardNameIndex's function for the MC mc and cfg (both fixed
// for the process).
func shardNames(mc types.NamespacedName, cfg Config) client.IndexerFunc {
	names := cfg.furtherServices(mc.Name)
	return func(o client.Object) []string {
		if o.GetNamespace() == mc.Namespace && slices.Contains(names, o.GetName()) {
			return []string{shardNameValue}
		}
		return nil
	}
}

// furtherServices are the names of the MC's further services, every set's.
func (c Config) furtherServices(mcName string) []string {
	var out []string
	for _, set := range c.shardSets(mcName) {
		out = append(out, set.services()[1:]...)
	}
	return out
}

// admitFunc admits a cluster's endpoints to the MC under the services'
// connection limit: the endpoints it may have and the problem of the ones
// it may not.
type admitFunc func(toMC []Endpoint) ([]Endpoint, []Problem, error)

// OnIngressShards gives wc's ingress endpoint (the one to first, the MC's
// first ingress service) its service among shards and admits toMC there:
// the service an entry of wc already targets (never moved), else the
// first that serves the cluster and admits it. When none does: the
// problem of a full service, or ReasonIngressServiceWaiting when a further
// service is still to come.
func onIngressShards(toMC []Endpoint, wc *capz.AzureCluster, shards []ingressShard, first string, admit admitFunc) ([]Endpoint, []Problem, error) {
	i := slices.IndexFunc(toMC, func(ep Endpoint) bool { return ep.Link == first })
	if i < 0 || len(shards) < 2 {
		return admit(toMC)
	}
	held := targetsOf(wc)
	order := slices.Clone(shards)
	slices.SortStableFunc(order, func(a, b ingressShard) int {
		ah, bh := slices.Contains(held, a.id), slices.Contains(held, b.id)
		switch {
		case ah == bh:
			return 0
		case ah:
			return -1
		}
		return 1
	})
	var kept []Endpoint
	var problems []Problem
	var waiting []string
	for _, s := range order {
		if !slices.Contains(held, s.id) && !s.serves(wc.SubscriptionID) {
			why := s.why
			if s.ready {
				why = "does not list the cluster's subscription " + strings.ToLower(wc.SubscriptionID) +
					": add it to --mc-ingress-shard-subscriptions"
			}
			waiting = append(waiting, s.name+" ("+why+")")
			continue
		}
		var err error
		kept, problems, err = admit(onService(toMC, i, s))
		if err != nil || !withheldByLimit(problems) {
			return kept, problems, err
		}
	}
	if len(waiting) > waitingNamed {
		// Services fill in order: the next ones are what the cluster
		// waits for. All 31 would pass an Event's 1,024 bytes.
		waiting = append(waiting[:waitingNamed:waitingNamed], fmt.Sprintf("and %d more after them", len(waiting)-waitingNamed))
	}
	if len(waiting) > 0 {
		return kept, []Problem{{key(wc), ReasonIngressServiceWaiting, fmt.Sprintf(
			"no private endpoint %s is requested yet: the management cluster's ingress services that can take it are full "+
				"(--mc-service-connection-limit), and no further one can take it yet: %s; the cluster is wired once one can",
			toMC[i].Name, strings.Join(waiting, ", "))}}, nil
	}
	return kept, problems, nil
}

// waitingNamed is how many of the services a waiting cluster cannot use
// yet its message names.
const waitingNamed = 3

// onService is toMC with its endpoint i connected to s: the same names,
// auto-approved by s (a further service's spec lists the cluster's
// subscription; the first keeps the approval the MC declares).
func onService(toMC []Endpoint, i int, s ingressShard) []Endpoint {
	out := slices.Clone(toMC)
	ep := out[i]
	if !strings.EqualFold(serviceOf(ep), s.id) {
		conn := ep.Connections[0]
		conn.PrivateLinkServiceID, conn.RequestMessage = s.id, ""
		ep.Connections = []capz.PrivateLinkServiceConnection{conn}
		ep.ManualApproval = false
		ep.Link = s.name
	}
	out[i] = ep
	return out
}

// ensureShards applies the MC's further ingress services WantedShards
// names, and keeps their specs (the clusters' subscriptions) current. It
// never deletes one. use is the clusters connected to each MC service. Its
// Warnings are given once while they last (shardMemory).
func (r *MCReconciler) ensureShards(ctx context.Context, seen *mcSeen, use map[string]int) error {
	if !r.Opts.Sharded() || seen.specErr != nil || seen.mc.APIServerLBType != capz.LBTypeInternal {
		return nil
	}
	objs, err := shardObjects(ctx, r.Client, seen.mc, r.Opts.Config)
	if err != nil {
		return err
	}
	scope := key(seen.mc)
	var lasting []string
	// first says whether the pass is the first to see what memKey names
	// since it began; it is remembered while passes see it.
	first := func(memKey string) bool {
		lasting = append(lasting, memKey)
		return r.shardMemory.first(scope, memKey)
	}
	defer func() { r.shardMemory.keepOnly(scope, lasting) }()
	exists := map[string]bool{}
	for name := range objs {
		exists[name] = true
	}
	for _, set := range r.Opts.shardSets(seen.mc.Name) {
		if err := r.ensureShardSet(ctx, seen, set, use, objs, exists, first); err != nil {
			return err
		}
	}
	return nil
}

// ensureShardSet applies the further services of one set.
func (r *MCReconciler) ensureShardSet(ctx context.Context, seen *mcSeen, set shardSet, use map[string]int,
	objs map[string]*v1alpha1.AzurePrivateLinkService, exists map[string]bool, first func(memKey string) bool) error {
	services := set.services()
	for _, k := range WantedShards(services, use, exists, r.Opts.MCServiceConnectionLimit) {
		want := desiredShard(seen.mc, r.Opts.Config, set, k)
		existing := objs[services[k]]
		if existing != nil && existing.Labels[ShardOfLabel] != seen.mc.Name {
			if first(ReasonIngressServiceNameTaken + ":" + services[k]) {
				r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonIngressServiceNameTaken, "Wire",
					"AzurePrivateLinkService %s/%s exists and is not the operator's (no label %s=%s): it is neither used nor changed, "+
						"and no service comes after it; rename or remove it", seen.mc.Namespace, services[k], ShardOfLabel, seen.mc.Name)
			}
			return nil
		}
		if upToDateShard(existing, want) {
			continue
		}
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want), client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
			if first(ReasonIngressServiceNotApplied + ":" + want.GetName() + ":" + err.Error()) {
				r.Recorder.Eventf(seen.u, nil, corev1.EventTypeWarning, ReasonIngressServiceNotApplied, "Wire",
					"AzurePrivateLinkService %s/%s cannot be applied, so workload clusters that need it wait (WaitingForIngressService): %v; "+
						"tried again every --pending-recheck-interval", want.GetNamespace(), want.GetName(), err)
			}
			return fmt.Errorf("applying AzurePrivateLinkService %s/%s: %w", want.GetNamespace(), want.GetName(), err)
		}
		// Once, though the cache may not show the object at the next pass.
		if existing == nil && first(ReasonIngressServiceRequested+":"+want.GetName()) {
			lb, fe := set.frontend(k)
			r.Recorder.Eventf(seen.u, nil, corev1.EventTypeNormal, ReasonIngressServiceRequested, "Wire",
				"created AzurePrivateLinkService %s/%s on frontend %s of load balancer %s: every service before it has %d%% or more of the limit %d (--mc-service-connection-limit; %s has %d); new workload clusters connect to it once it is Ready",
				want.GetNamespace(), want.GetName(), fe, lb,
				ShardThresholdPercent, r.Opts.MCServiceConnectionLimit, services[k-1], use[services[k-1]])
		}
	}
	return nil
}

// upToDateShard: existing has every field of want's spec and its label.
func upToDateShard(existing *v1alpha1.AzurePrivateLinkService, want *unstructured.Unstructured) bool {
	return existing != nil && specHas(existing, want) && existing.Labels[ShardOfLabel] == want.GetLabels()[ShardOfLabel]
}

// warnsNear says whether the MC's service link gets the Warning of a
// connection limit near: in a set with further services, a service near
// its limit is what makes the next one, so only the set's last does.
func (c Config) warnsNear(mcName, link string) bool {
	for _, set := range c.shardSets(mcName) {
		if services := set.services(); slices.Contains(services, link) {
			return link == services[len(services)-1]
		}
	}
	return true
}

// warnable is use without the services that get no such Warning.
func (c Config) warnable(mcName string, use map[string]int) map[string]int {
	out := make(map[string]int, len(use))
	for link, n := range use {
		if c.warnsNear(mcName, link) {
			out[link] = n
		}
	}
	return out
}
