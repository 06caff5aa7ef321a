package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// The simulated platform: the fleet's private MC (fork schema, DNS mode on)
// and three tenants, each an organisation namespace with its own
// subscription, whose workload clusters draw their names from one small
// pool so that names collide across tenants and with the MC.
const (
	baseDomain = "sim.example.com"
	// zoneLimit is how many Private DNS zones the MC's network takes, in
	// azuresim and for the operator: below the private clusters a history
	// can hold at once (up to three per tenant; seed 3, make test's, holds
	// three at once), so histories reach it.
	zoneLimit = 2
	// watchFilter is the operator's --watch-filter value; every cluster
	// carries it until a history takes it away.
	watchFilter      = "sim"
	watchFilterLabel = "cluster.x-k8s.io/watch-filter"
)

var (
	tenants = []string{"org-alpha", "org-beta", "org-gamma"}
	// clusterNames: "mc" is the MC's own name.
	clusterNames = []string{"wc1", "wc2", "wc3", sandbox.FleetMCName}
)

func tenantSubscription(t int) string { return fmt.Sprintf("00000000-0000-0000-0000-0000000000a%d", t) }

// scopeOf is a cluster's resource group scope, lower case.
func scopeOf(sub, rg string) string {
	return strings.ToLower("/subscriptions/" + sub + "/resourcegroups/" + rg + "/")
}

func vnetOf(sub, rg, name string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/" + name + "-vnet"
}

func names() worldNames {
	mc := sandbox.FleetMCName
	return worldNames{
		MCScope:         scopeOf(sandbox.FleetMCSubscription, mc),
		IngressPLS:      ingressService(mc, 1),
		IngressServices: ingressServices(mc),
		ServiceLimit:    serviceLimit,
		PlacedNetworks:  placedNetworks(),
		NetworkLimit:    networkLimit,
		MCNames:         []string{"api." + mc + "." + baseDomain, "ingress." + mc + "." + baseDomain},
		APIName:         func(c string) string { return "api." + c + "." + baseDomain },
		// The WC-side zone is <mc>.<base> with a wildcard record.
		IngressName: "ingress." + mc + "." + baseDomain,
	}
}

// The MC's ingress in the simulation: two clusters per service (the
// operator's --mc-service-connection-limit), so that histories fill
// services and the operator makes further ones on the ingress load
// balancer's further frontends, across restarts (InvServiceOverfilled,
// InvClusterMoved). Azure's own limit stays 1,000: the tenants'
// AzurePrivateEndpoints connect to the first service too, and the
// operator does not count them.
const serviceLimit = 2

// The MC's endpoints beyond its AzureCluster in the simulation: its
// entries take entryLimit (the operator's --mc-private-endpoint-limit),
// and two further networks of the MC's subscription take networkLimit each
// (--mc-endpoint-network-limit), so that histories place clusters beyond
// the MC object and fill networks across restarts (InvPlacedTwice,
// InvNetworkOverfilled). Azure's own limit stays 1,000 per network.
const (
	entryLimit   = 1
	networkLimit = 1
	placedGroup  = "mc-endpoints"
)

// placedSubnets are the subnets of --mc-endpoint-subnets, one per network.
func placedSubnets() []string {
	return []string{placedVNet(0) + "/subnets/endpoints", placedVNet(1) + "/subnets/endpoints"}
}

func placedVNet(i int) string {
	return "/subscriptions/" + sandbox.FleetMCSubscription + "/resourceGroups/" + placedGroup +
		"/providers/Microsoft.Network/virtualNetworks/endpoints-" + strconv.Itoa(i)
}

func placedNetworks() []string {
	return []string{strings.ToLower(placedVNet(0)), strings.ToLower(placedVNet(1))}
}

// seedPlaced makes the further networks of the MC's endpoints.
func (w *world) seedPlaced() error {
	seed := azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sandbox.FleetMCSubscription, Name: placedGroup, Location: sandbox.FleetLocation}}}
	for i := range 2 {
		r, err := endpointsVNet(placedVNet(i), 70+i)
		if err != nil {
			return err
		}
		seed.Resources = append(seed.Resources, r)
	}
	return w.sb.Sim.Seed(seed)
}

// endpointsVNet is a network 10.<b>.0.0/16 whose subnet "endpoints" is
// 10.<b>.1.0/24, to seed.
func endpointsVNet(id string, b int) (azuresim.SeedResource, error) {
	body, err := json.Marshal(armnetwork.VirtualNetwork{Location: new(sandbox.FleetLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new(fmt.Sprintf("10.%d.0.0/16", b))}},
		Subnets:      []*armnetwork.Subnet{{Name: new("endpoints"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new(fmt.Sprintf("10.%d.1.0/24", b))}}},
	}})
	return azuresim.SeedResource{ID: id, Body: body}, err
}

// shardFrontends are the ingress load balancer's further frontends.
var shardFrontends = []string{"shard-2", "shard-3", "shard-4", "shard-5", "shard-6", "shard-7", "shard-8"}

// ingressService is the ID, lower case, of the MC's ingress service k
// (1 the first).
func ingressService(mc string, k int) string {
	name := mc + "-ingress-privatelink"
	if k > 1 {
		name += "-" + strconv.Itoa(k)
	}
	return strings.ToLower(scopeOf(sandbox.FleetMCSubscription, mc) + "providers/microsoft.network/privatelinkservices/" + name)
}

func ingressServices(mc string) []string {
	out := make([]string, 0, 1+len(shardFrontends))
	for k := range 1 + len(shardFrontends) {
		out = append(out, ingressService(mc, k+1))
	}
	return out
}

// wcSpec is one workload cluster a history creates.
type wcSpec struct {
	Tenant int
	Name   string
	// Link is its private link's name (others' names collide on purpose).
	Link string
	// Manual: the link does not auto-approve the MC; the tenant approves.
	Manual bool
	// Public: a public cluster (a public API server load balancer, no
	// private link), named from the same pool as the private ones.
	Public bool
}

func (w wcSpec) Namespace() string { return tenants[w.Tenant] }
func (w wcSpec) Key() string       { return w.Namespace() + "/" + w.Name }
func (w wcSpec) Sub() string       { return tenantSubscription(w.Tenant) }

// PLSID is the ID of its private link service (CAPZ puts it in the
// cluster's resource group, which is named like the cluster).
func (w wcSpec) PLSID() string {
	return "/subscriptions/" + w.Sub() + "/resourceGroups/" + w.Name + "/providers/Microsoft.Network/privateLinkServices/" + w.Link
}

func (w wcSpec) links() []any {
	link := map[string]any{
		"name":                    w.Link,
		"allowedSubscriptions":    []any{sandbox.FleetMCSubscription},
		"lbFrontendIPConfigNames": []any{w.Name + "-api-lb-frontend"},
		testenv.SchemaFork.NATConfigurationsField(): []any{map[string]any{"allocationMethod": "Dynamic", "subnet": w.Name + "-cp"}},
	}
	if !w.Manual {
		link["autoApprovedSubscriptions"] = []any{sandbox.FleetMCSubscription}
	}
	return []any{link}
}

// object is the cluster's AzureCluster as the tenant writes it.
func (w wcSpec) object(withLinks bool) *unstructured.Unstructured {
	var links []any
	if withLinks {
		links = w.links()
	}
	u := sandbox.PrivateCluster(w.Namespace(), w.Name, w.Sub(), w.Name, "172.16", links)
	if w.Public {
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"name": w.Name + "-api-lb", "type": capz.LBTypePublic}, "spec", "networkSpec", "apiServerLB")
	}
	// The tenant's manifest carries a person's annotation and label
	// beside the watch filter; the operator must leave both alone.
	u.SetLabels(map[string]string{watchFilterLabel: watchFilter, personLabel: personLabelValue})
	u.SetAnnotations(map[string]string{personNote: w.Key()})
	return u
}

// operatorFlags: DNS mode with its default layout (a zone per workload
// cluster in the MC's network, <mc>.<base> in each WC's), the watch filter,
// and short intervals, the wiring's and the AzurePrivateEndpoint
// controller's, so that a history of minutes sees rechecks, drift checks
// and heals.
func operatorFlags() []string {
	return []string{
		"--management-cluster-name=" + sandbox.FleetMCName, "--management-cluster-namespace=" + sandbox.FleetIdentityNS,
		"--wiring-dns", "--wiring-dns-base-domain=" + baseDomain, "--watch-filter=" + watchFilter,
		"--pending-recheck-interval=3s", "--drift-check-interval=15s", "--terminal-recheck-interval=15s",
		"--mc-write-delay=1s", "--heal-disconnected-after=10s", "--identity-secret-recheck-interval=15s",
		"--azure-observe-ttl=2s", "--wiring-dns-check-interval=30s",
		// The MC network takes zoneLimit zones (azuresim refuses more):
		// histories reach the per-cluster layout's zone limit, across
		// restarts (InvLimitRefused).
		"--wiring-dns-zone-limit=" + strconv.Itoa(zoneLimit),
		// The tenants' AzurePrivateEndpoints on the same footing: a change
		// by the service's owner is seen within the checker's grace.
		"--private-endpoint-recheck-interval=3s", "--private-endpoint-drift-interval=15s",
		"--private-endpoint-connection-check-interval=15s", "--private-endpoint-dns-check-interval=30s",
		"--leader-elect=false",
		"--mc-service-connection-limit=" + strconv.Itoa(serviceLimit),
		"--mc-ingress-shard-frontends=" + strings.Join(shardFrontends, ","),
		"--mc-ingress-load-balancer=" + sandbox.FleetMCName + "-ingress-lb",
		"--mc-ingress-shard-subscriptions=" + strings.Join(tenantSubscriptions(), ","),
		"--mc-private-endpoint-limit=" + strconv.Itoa(entryLimit),
		"--mc-endpoint-subnets=" + strings.Join(placedSubnets(), ","),
		"--mc-endpoint-network-limit=" + strconv.Itoa(networkLimit),
	}
}

// tenantSubscriptions are every tenant's subscription.
func tenantSubscriptions() []string {
	subs := make([]string, len(tenants))
	for t := range tenants {
		subs[t] = tenantSubscription(t)
	}
	return subs
}

// world is one history's running sandbox and operator.
type world struct {
	cfg *Config
	sb  *sandbox.Sandbox
	dir string

	mu     sync.Mutex
	op     *sandbox.Operator
	starts int
	logs   []string
}

func startWorld(ctx context.Context, cfg *Config, dir string) (*world, error) {
	subs := tenantSubscriptions()
	throttling := azuresim.DefaultThrottling()
	throttling.Exempt = []string{sandbox.CAPZClientID}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Limits: azuresim.Limits{ZonesPerVirtualNetwork: zoneLimit},
		Dir:    dir, Throttling: throttling, CAPZResync: time.Second, CAPZConcurrency: 4, CAPZSyncPeriod: 10 * time.Second,
		Ingress: map[string]capzsim.Ingress{sandbox.FleetIdentityNS + "/" + sandbox.FleetMCName: {AutoApprovedSubscriptions: subs,
			Frontends: shardFrontends}},
		Principals: []azuresim.Principal{{TenantID: sandbox.FleetTenantID, ClientID: sandbox.FleetOperatorClient, ClientSecret: sandbox.FleetOperatorSecret}},
		Logf:       cfg.Logf,
	})
	if err != nil {
		return nil, err
	}
	w := &world{cfg: cfg, sb: sb, dir: dir}
	if err := w.setup(ctx); err != nil {
		_ = sb.Stop()
		return nil, err
	}
	sb.Sim.SetLatency(300 * time.Millisecond)
	if err := w.startOperator(); err != nil {
		_ = sb.Stop()
		return nil, err
	}
	return w, nil
}

func (w *world) setup(ctx context.Context) error {
	if err := w.sb.CreateIdentity(ctx, sandbox.FleetIdentity()); err != nil {
		return err
	}
	for _, ns := range tenants {
		if err := w.sb.EnsureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	if err := w.setupTenants(ctx); err != nil {
		return err
	}
	if err := w.seedPlaced(); err != nil {
		return err
	}
	mc := sandbox.FleetMC()
	mc.SetLabels(map[string]string{watchFilterLabel: watchFilter})
	if err := w.sb.Client.Create(ctx, mc); err != nil {
		return err
	}
	return w.personsEdit(ctx, mc, "the management cluster")
}

// personsEdit puts a person's annotation and label on an AzureCluster, as
// kubectl does, under kubectl's field manager.
func (w *world) personsEdit(ctx context.Context, u *unstructured.Unstructured, note string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q},"labels":{%q:%q}}}`, personNote, note, personLabel, personLabelValue)
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(u.GroupVersionKind())
	target.SetNamespace(u.GetNamespace())
	target.SetName(u.GetName())
	return w.sb.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("kubectl-annotate"))
}

// operatorPrincipals are the principals the operator acts as in Azure:
// the fleet's (the wiring) and each tenant's (its endpoint objects).
func operatorPrincipals() []string {
	out := make([]string, 0, 1+len(tenants))
	out = append(out, sandbox.FleetOperatorClient)
	for t := range tenants {
		out = append(out, tenantClient(t))
	}
	return out
}

func (w *world) startOperator() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.starts++
	log := filepath.Join(w.dir, fmt.Sprintf("operator-%d.log", w.starts))
	op, err := w.sb.StartOperator(w.cfg.OperatorBinary, log, operatorFlags()...)
	if err != nil {
		return err
	}
	w.op, w.logs = op, append(w.logs, log)
	return nil
}

// kill SIGKILLs the operator and starts a new one after a moment, as the
// kubelet restarts a pod.
func (w *world) kill(ctx context.Context, pause time.Duration) error {
	w.mu.Lock()
	op := w.op
	w.mu.Unlock()
	if err := op.Kill(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(pause):
	}
	return w.startOperator()
}

// logFiles are the logs of every operator process of the world.
func (w *world) logFiles() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.logs)
}

func (w *world) stop() {
	w.mu.Lock()
	op := w.op
	w.mu.Unlock()
	if op != nil {
		_ = op.Stop(30 * time.Second)
	}
	_ = w.sb.Stop()
}

// look takes one snapshot (the order is snapshot's).
func (w *world) look(ctx context.Context, n worldNames, vnets map[string]string) (snapshot, error) {
	s := snapshot{At: time.Now(), MCResolve: map[string]azuresim.Resolution{}, WCResolve: map[string]azuresim.Resolution{}, MCEntries: map[string]string{},
		MCPlaced:   map[string]string{},
		AppResolve: map[string]azuresim.Resolution{}}
	mcVNet := vnetOf(sandbox.FleetMCSubscription, sandbox.FleetMCName, sandbox.FleetMCName)
	for _, c := range clusterNames {
		name := n.APIName(c)
		s.MCResolve[name] = w.sb.Sim.Resolve(mcVNet, name)
	}
	for _, name := range n.MCNames {
		s.MCResolve[name] = w.sb.Sim.Resolve(mcVNet, name)
	}
	for key, vnet := range vnets {
		s.WCResolve[key] = w.sb.Sim.Resolve(vnet, n.IngressName)
	}
	w.lookEndpointNames(&s)
	s.Endpoints = w.sb.Sim.Endpoints()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := w.sb.Client.List(ctx, list); err != nil {
		return s, err
	}
	prefix := clusterlink.DefaultAnnotationPrefix + "/"
	for i := range list.Items {
		u := &list.Items[i]
		view, errs := capz.FromUnstructured(u)
		if view == nil {
			return s, errs.ToAggregate()
		}
		a := u.GetAnnotations()
		if u.GetNamespace() == sandbox.FleetIdentityNS && u.GetName() == sandbox.FleetMCName {
			s.MCEntries = entriesOf(view)
			s.MCPersonNote, s.MCPersonLabel = a[personNote], u.GetLabels()[personLabel]
			continue
		}
		s.Clusters = append(s.Clusters, cluster{
			Key: u.GetNamespace() + "/" + u.GetName(), Name: u.GetName(),
			Scope: scopeOf(view.SubscriptionID, view.ResourceGroup), VNetID: vnetOf(view.SubscriptionID, view.ResourceGroup, u.GetName()),
			Deleting: u.GetDeletionTimestamp() != nil,
			Public:   view.APIServerLBType != capz.LBTypeInternal, Created: u.GetCreationTimestamp().Time,
			APIIP: a[prefix+clusterlink.AnnotationAPIServerIP], IngressIP: a[prefix+clusterlink.AnnotationMCIngressIP],
			IngressService: entriesOf(view)[u.GetName()+"-to-"+sandbox.FleetMCName+"-privatelink-privateendpoint"],
			PersonNote:     a[personNote], PersonLabel: u.GetLabels()[personLabel],
		})
	}
	return s, w.lookEndpointObjects(ctx, &s)
}

// entriesOf are a cluster's private endpoint entries: name → the service
// of their first connection, lower case.
func entriesOf(view *capz.AzureCluster) map[string]string {
	out := map[string]string{}
	for _, sn := range view.Subnets {
		for _, pe := range sn.PrivateEndpoints {
			if len(pe.Connections) > 0 {
				out[pe.Name] = strings.ToLower(pe.Connections[0].PrivateLinkServiceID)
			}
		}
	}
	return out
}

// exists reports whether the cluster's AzureCluster exists (deleting or not).
func (w *world) exists(ctx context.Context, spec wcSpec) (bool, error) {
	u := spec.object(false)
	err := w.sb.Client.Get(ctx, client.ObjectKeyFromObject(u), u)
	if err == nil {
		return true, nil
	}
	return false, client.IgnoreNotFound(err)
}
