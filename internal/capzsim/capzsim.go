// Package capzsim is a stand-in for Cluster API Provider Azure, for tests
// and the demo only: it is never linked into the operator. It watches
// AzureCluster objects and does in Azure (azuresim) what CAPZ would: the
// resource group, the VNet and its subnets (writing their IDs back into
// spec, as CAPZ does), the internal API server load balancer, the fork's
// private link services with the PrivateLinksReady condition, and private
// endpoints from spec.networkSpec.subnets[].privateEndpoints.
//
// In Upstream mode it behaves like upstream CAPZ v1.23: no private links;
// private endpoints are ASO objects (ASOSim makes them in Azure), and the
// ASO objects of endpoints removed from spec are left behind. In V127 mode
// it behaves like upstream CAPZ v1.27: private links and private endpoints
// are ASO objects, and those removed from spec are deleted. Fork mode
// writes to Azure directly and deletes what left spec.
//
// It also creates "<cluster>-ingress-privatelink" for the clusters it is
// told to (Options.Ingress): in real life a private management cluster's
// installation creates that service with its ingress.
package capzsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azruntime "github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Mode selects which CAPZ capzsim mimics.
type Mode string

const (
	// Fork creates the private link services of apiServerLB.privateLinks and
	// deletes private endpoints removed from spec.
	Fork Mode = "fork"
	// Upstream mimics upstream CAPZ v1.23: no private link services;
	// private endpoints through ASO, whose objects stay when removed from
	// spec.
	Upstream Mode = "upstream"
	// V127 mimics upstream CAPZ v1.27: private link services from
	// apiServerLB.privateLinks and private endpoints, both through ASO;
	// it deletes the ASO objects of what left spec.
	V127 Mode = "v1.27"
)

// UserAgent is CAPZ's: its main.go sets the REST config's user agent to
// "cluster-api-provider-azure-manager" (v1.23.0 and v1.27.0), and the API
// server takes the field manager of a write without one (CAPI's patch
// helper sets none) from the user agent. capzsim's client uses it, so its
// writes are held by the manager CAPZ's are.
const UserAgent = "cluster-api-provider-azure-manager"

// FieldManager is capzsim's field manager: CAPZ's.
const FieldManager = UserAgent

// Ingress configures a management cluster's ingress private link service.
type Ingress struct {
	AutoApprovedSubscriptions []string
	// Gateway adds the gateway private link service
	// <name>-gateway-privatelink, on a second frontend of the ingress load
	// balancer, as installations moving to the Gateway API have.
	Gateway bool
	// Frontends are further frontend IP configurations of the ingress
	// load balancer, as further internal Services of type LoadBalancer on
	// the ingress give it (the operator's further ingress services,
	// --mc-ingress-shard-frontends, go on them); <load-balancer>/<frontend>
	// is one of another load balancer in the cluster's group, on the node
	// subnet, which capzsim makes too.
	Frontends []string
}

// Options configures capzsim.
type Options struct {
	Mode Mode
	// Credential and ClientOptions reach azuresim as CAPZ's identity.
	Credential    azcore.TokenCredential
	ClientOptions azcore.ClientOptions
	// Resync is how soon to look again while Azure works. Default 1s.
	Resync time.Duration
	// Concurrency is the number of workers. Default 4.
	Concurrency int
	// Ingress lists clusters ("namespace/name") that get an ingress private
	// link service.
	Ingress map[string]Ingress
	// KeepRemovedEndpoints leaves private endpoints removed from spec in
	// Azure (their ASO objects in V127 mode) even in Fork and V127 mode
	// (Upstream mode always does).
	KeepRemovedEndpoints bool
	// SyncPeriod is how often a converged cluster is reconciled again, as
	// CAPZ's --sync-period (default 10m, CAPZ's): what was deleted in Azure
	// out of band comes back then.
	SyncPeriod time.Duration
}

// BrokenLinksAnnotation ("true") makes capzsim report the cluster's private
// links broken: PrivateLinksReady False, as CAPZ does for a transient error
// or an update in progress, while everything in Azure stays as it is.
const BrokenLinksAnnotation = "capzsim.giantswarm.io/private-links-broken"

// Reconciler is capzsim's controller.
type Reconciler struct {
	Client client.Client
	// Cache reads the ASO objects on the hot path (listASO); default the
	// manager's cache.
	Cache client.Reader
	Opts  Options

	mu      sync.Mutex
	clients map[string]*azureClients // by subscription
	holding sync.Map                 // cluster UID → identity "ns/name" it holds (holdIdentity)
}

// SetupWithManager registers capzsim with a manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Opts.Resync == 0 {
		r.Opts.Resync = time.Second
	}
	if r.Opts.Concurrency <= 0 {
		r.Opts.Concurrency = 4
	}
	if r.Opts.SyncPeriod <= 0 {
		r.Opts.SyncPeriod = 10 * time.Minute
	}
	if r.Cache == nil {
		r.Cache = mgr.GetCache()
	}
	if err := indexOwners(context.Background(), mgr); err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	// CAPZ watches Clusters and reconciles the infrastructure cluster of
	// one that is unpaused (ClusterToInfrastructureMapFunc with
	// predicates.ClusterUnpaused): that is how it resumes after
	// clusterctl move. capzsim maps every Cluster event.
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capz.ClusterGVK)
	toInfra := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		c, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		kind, _, _ := unstructured.NestedString(c.Object, "spec", "infrastructureRef", "kind")
		name, _, _ := unstructured.NestedString(c.Object, "spec", "infrastructureRef", "name")
		if kind != capz.AzureClusterGVK.Kind || name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: c.GetNamespace(), Name: name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("capzsim").For(u).Watches(cl, toInfra).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Opts.Concurrency}).Complete(r)
}

// isPaused: CAPZ's AzureCluster controller returns on pause before it
// looks at deletion (v1.27 controllers/azurecluster_controller.go: the
// annotations.IsPaused(cluster, azureCluster) check comes before
// reconcileDelete and runs reconcilePause there). Paused means the
// cluster.x-k8s.io/paused annotation on the AzureCluster or spec.paused on
// its owner Cluster (Cluster API util/annotations IsPaused) — the latter is
// what clusterctl move sets, before it deletes the source objects without
// their finalizers. Unlike CAPZ, which waits for the owner reference
// ("Cluster Controller has not yet set OwnerRef"), capzsim reconciles an
// AzureCluster without an owner Cluster: most test worlds make none.
func (r *Reconciler) isPaused(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	if _, paused := u.GetAnnotations()[capz.PausedAnnotation]; paused {
		return true, nil
	}
	for _, o := range u.GetOwnerReferences() {
		if o.Kind != capz.ClusterGVK.Kind || !strings.HasPrefix(o.APIVersion, capz.ClusterGVK.Group+"/") {
			continue
		}
		cl := &unstructured.Unstructured{}
		cl.SetGroupVersionKind(capz.ClusterGVK)
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: o.Name}, cl); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		paused, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
		return paused, nil
	}
	return false, nil
}

// errWait says Azure is still working; look again after Resync.
var errWait = errors.New("waiting for Azure")

// Reconcile provisions one AzureCluster's network in Azure.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if paused, err := r.isPaused(ctx, u); err != nil {
		return ctrl.Result{}, err
	} else if paused {
		if r.Opts.Mode.usesASO() {
			return ctrl.Result{}, r.pauseASO(ctx, u)
		}
		return ctrl.Result{}, nil
	}
	spec, err := readSpec(u)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("capzsim: invalid AzureCluster", "error", err.Error())
		if u.GetDeletionTimestamp() != nil && controllerutil.RemoveFinalizer(u, capzFinalizer) {
			// Nothing was provisioned for an invalid cluster: let it go.
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, u))
		}
		return ctrl.Result{}, nil
	}
	az, err := r.azure(spec.view.SubscriptionID)
	if err != nil {
		return ctrl.Result{}, err
	}
	if u.GetDeletionTimestamp() != nil {
		return r.reconcileDelete(ctx, u, az, spec)
	}
	if controllerutil.AddFinalizer(u, capzFinalizer) {
		if err := r.Client.Update(ctx, u); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.holdIdentity(ctx, u, spec, true); err != nil {
		return ctrl.Result{}, err
	}
	for _, step := range []func(context.Context, *unstructured.Unstructured, *azureClients, *clusterSpec) error{
		r.ensureNetwork, r.writeIDs, r.ensureLoadBalancers, r.ensurePrivateLinks, r.ensurePrivateEndpoints,
	} {
		if err := step(ctx, u, az, spec); errors.Is(err, errWait) {
			return ctrl.Result{RequeueAfter: r.Opts.Resync}, nil
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: r.Opts.SyncPeriod}, nil
}

// azureClients are the clients capzsim uses in one subscription.
type azureClients struct {
	arm *arm.Client
	net *armnetwork.ClientFactory
	sub string
}

func (r *Reconciler) azure(sub string) (*azureClients, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.clients[sub]; c != nil {
		return c, nil
	}
	opts := &arm.ClientOptions{ClientOptions: r.Opts.ClientOptions}
	a, err := arm.NewClient("capzsim", "v0.1.0", r.Opts.Credential, opts)
	if err != nil {
		return nil, err
	}
	n, err := armnetwork.NewClientFactory(sub, r.Opts.Credential, opts)
	if err != nil {
		return nil, err
	}
	if r.clients == nil {
		r.clients = map[string]*azureClients{}
	}
	r.clients[sub] = &azureClients{arm: a, net: n, sub: sub}
	return r.clients[sub], nil
}

// ensureNetwork creates the resource group and the VNet with its subnets.
func (r *Reconciler) ensureNetwork(ctx context.Context, _ *unstructured.Unstructured, az *azureClients, s *clusterSpec) error {
	if err := az.putResourceGroup(ctx, s); err != nil {
		return err
	}
	vnets := az.net.NewVirtualNetworksClient()
	got, err := vnets.Get(ctx, s.view.ResourceGroup, s.vnetName, nil)
	if err == nil && vnetUpToDate(got.VirtualNetwork, s) {
		return waitFor(got.Properties.ProvisioningState)
	}
	if err != nil && !azure.IsNotFound(err) {
		return err
	}
	natSubnets := s.natSubnets()
	if _, ok := r.Opts.Ingress[s.view.Namespace+"/"+s.view.Name]; ok {
		// The ingress private link service puts its NAT IPs in the node subnet.
		if node, ok := s.subnetByRole(capz.SubnetRoleNode); ok {
			natSubnets[node.name] = true
		}
	}
	body := armnetwork.VirtualNetwork{
		Location: new(s.view.Location),
		Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: to.SliceOfPtrs(s.vnetCIDRs...)},
		},
	}
	for _, sn := range s.subnets {
		policies := armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesEnabled
		if natSubnets[sn.name] {
			policies = armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled
		}
		body.Properties.Subnets = append(body.Properties.Subnets, &armnetwork.Subnet{Name: new(sn.name), Properties: &armnetwork.SubnetPropertiesFormat{
			AddressPrefixes: to.SliceOfPtrs(sn.cidrs...), PrivateLinkServiceNetworkPolicies: new(policies),
		}})
	}
	if _, err := vnets.BeginCreateOrUpdate(ctx, s.view.ResourceGroup, s.vnetName, body, nil); err != nil && !busy(err) {
		return err
	}
	return errWait
}

func vnetUpToDate(v armnetwork.VirtualNetwork, s *clusterSpec) bool {
	if v.Properties == nil {
		return false
	}
	have := map[string]bool{}
	for _, sn := range v.Properties.Subnets {
		have[strings.ToLower(ptr.Deref(sn.Name, ""))] = true
	}
	for _, sn := range s.subnets {
		if !have[strings.ToLower(sn.name)] {
			return false
		}
	}
	return true
}

// writeIDs writes subnet and VNet IDs back into spec the way CAPZ does:
// CAPI's patch helper, a JSON merge patch without optimistic locking.
func (r *Reconciler) writeIDs(ctx context.Context, u *unstructured.Unstructured, _ *azureClients, s *clusterSpec) error {
	before := u.DeepCopy()
	changed := false
	if id, _, _ := unstructured.NestedString(u.Object, "spec", "networkSpec", "vnet", "id"); id == "" {
		_ = unstructured.SetNestedField(u.Object, s.vnetID(), "spec", "networkSpec", "vnet", "id")
		changed = true
	}
	subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
	for _, raw := range subnets {
		m, ok := raw.(map[string]any)
		if !ok {
			continue // the CRD's schema makes every subnet an object
		}
		name, _ := m["name"].(string)
		if id, _ := m["id"].(string); id == "" && name != "" {
			m["id"] = s.subnetID(name)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	_ = unstructured.SetNestedSlice(u.Object, subnets, "spec", "networkSpec", "subnets")
	return r.Client.Patch(ctx, u, client.MergeFrom(before), client.FieldOwner(FieldManager))
}

// ensureLoadBalancers creates the internal API server load balancer and,
// when asked, the ingress load balancer.
func (r *Reconciler) ensureLoadBalancers(ctx context.Context, _ *unstructured.Unstructured, az *azureClients, s *clusterSpec) error {
	if s.lbInternal {
		cp, ok := s.subnetByRole(capz.SubnetRoleControlPlane)
		if !ok {
			return nil
		}
		if err := az.ensureLB(ctx, s, s.lbName, cp.name, s.frontends); err != nil {
			return err
		}
	}
	if _, ok := r.Opts.Ingress[s.view.Namespace+"/"+s.view.Name]; ok {
		node, ok := s.subnetByRole(capz.SubnetRoleNode)
		if !ok {
			return nil
		}
		lbs, fes := ingressLoadBalancers(s.view.Name, r.Opts.Ingress[s.view.Namespace+"/"+s.view.Name])
		for _, lb := range lbs {
			if err := az.ensureLB(ctx, s, lb, node.name, fes[lb]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ingressLoadBalancers are the load balancers of a cluster's ingress, in
// order, and their frontends: <cluster>-ingress-lb with the ingress's
// (and the gateway's) frontend and the further plain ones, then each
// load balancer a further <load-balancer>/<frontend> names.
func ingressLoadBalancers(cluster string, ing Ingress) ([]string, map[string][]frontendSpec) {
	name := cluster + ingressLoadBalancerName
	fes := map[string][]frontendSpec{name: {{name: name + "-frontEnd"}}}
	lbs := []string{name}
	if ing.Gateway {
		fes[name] = append(fes[name], frontendSpec{name: name + "-gateway-frontEnd"})
	}
	for _, fe := range ing.Frontends {
		lb, feName := name, fe
		if l, f, ok := strings.Cut(fe, "/"); ok {
			lb, feName = l, f
		}
		if _, ok := fes[lb]; !ok {
			lbs = append(lbs, lb)
		}
		fes[lb] = append(fes[lb], frontendSpec{name: feName})
	}
	return lbs, fes
}

func (az *azureClients) ensureLB(ctx context.Context, s *clusterSpec, name, subnet string, fes []frontendSpec) error {
	lbs := az.net.NewLoadBalancersClient()
	got, err := lbs.Get(ctx, s.view.ResourceGroup, name, nil)
	if err == nil {
		return waitFor(got.Properties.ProvisioningState)
	}
	if !azure.IsNotFound(err) {
		return err
	}
	body := armnetwork.LoadBalancer{
		Location:   new(s.view.Location),
		SKU:        &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{},
	}
	for _, fe := range fes {
		p := &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: new(s.subnetID(subnet))}}
		if fe.privateIP != "" && ipInAny(fe.privateIP, s, subnet) {
			p.PrivateIPAllocationMethod, p.PrivateIPAddress = new(armnetwork.IPAllocationMethodStatic), new(fe.privateIP)
		}
		body.Properties.FrontendIPConfigurations = append(body.Properties.FrontendIPConfigurations,
			&armnetwork.FrontendIPConfiguration{Name: new(fe.name), Properties: p})
	}
	if _, err := lbs.BeginCreateOrUpdate(ctx, s.view.ResourceGroup, name, body, nil); err != nil && !busy(err) {
		return err
	}
	return errWait
}

// ensurePrivateLinks creates the fork's private link services and the
// ingress one, then sets PrivateLinksReady.
func (r *Reconciler) ensurePrivateLinks(ctx context.Context, u *unstructured.Unstructured, az *azureClients, s *clusterSpec) error {
	if ing, ok := r.Opts.Ingress[s.view.Namespace+"/"+s.view.Name]; ok {
		node, _ := s.subnetByRole(capz.SubnetRoleNode)
		lb := s.view.Name + ingressLoadBalancerName
		if err := az.ensurePLS(ctx, s, s.view.Name+ingressLinkSuffix, s.frontendID(lb, lb+"-frontEnd"),
			[]string{node.name}, []string{"*"}, ing.AutoApprovedSubscriptions, false); err != nil {
			return err
		}
		if ing.Gateway {
			if err := az.ensurePLS(ctx, s, s.view.Name+gatewayLinkSuffix, s.frontendID(lb, lb+"-gateway-frontEnd"),
				[]string{node.name}, []string{"*"}, ing.AutoApprovedSubscriptions, false); err != nil {
				return err
			}
		}
	}
	switch {
	case r.Opts.Mode == V127:
		return r.ensureASOLinks(ctx, u, s)
	case r.Opts.Mode == Upstream || !s.lbInternal || len(s.view.PrivateLinks) == 0:
		return nil
	}
	for _, pl := range s.view.PrivateLinks {
		fe := s.frontends[0].name
		if len(pl.LBFrontendIPConfigNames) > 0 {
			fe = pl.LBFrontendIPConfigNames[0]
		}
		var nat []string
		for _, n := range pl.NATIPConfigurations {
			nat = append(nat, n.Subnet)
		}
		if len(nat) == 0 {
			cp, _ := s.subnetByRole(capz.SubnetRoleControlPlane)
			nat = []string{cp.name}
		}
		if err := az.ensurePLS(ctx, s, pl.Name, s.frontendID(s.lbName, fe), nat, pl.AllowedSubscriptions, pl.AutoApprovedSubscriptions, pl.EnableProxyProtocol); err != nil {
			return err
		}
	}
	broken := u.GetAnnotations()[BrokenLinksAnnotation] == "true"
	if s.view.PrivateLinksReady != broken {
		return nil
	}
	return r.setPrivateLinksReady(ctx, u, !broken)
}

func (az *azureClients) ensurePLS(ctx context.Context, s *clusterSpec, name, frontendID string, natSubnets, visibility, autoApproval []string, proxy bool) error {
	plss := az.net.NewPrivateLinkServicesClient()
	got, err := plss.Get(ctx, s.view.ResourceGroup, name, nil)
	if err == nil {
		return waitFor(got.Properties.ProvisioningState)
	}
	if !azure.IsNotFound(err) {
		return err
	}
	body := armnetwork.PrivateLinkService{
		Location: new(s.view.Location),
		Properties: &armnetwork.PrivateLinkServiceProperties{
			LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: new(frontendID)}},
			Visibility:                           &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: to.SliceOfPtrs(visibility...)},
			AutoApproval:                         &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: to.SliceOfPtrs(autoApproval...)},
			EnableProxyProtocol:                  new(proxy),
		},
	}
	for i, sn := range natSubnets {
		body.Properties.IPConfigurations = append(body.Properties.IPConfigurations, &armnetwork.PrivateLinkServiceIPConfiguration{
			Name:       new(fmt.Sprintf("%s-nat-%d", name, i)),
			Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Primary: new(i == 0), Subnet: &armnetwork.Subnet{ID: new(s.subnetID(sn))}},
		})
	}
	if _, err := plss.BeginCreateOrUpdate(ctx, s.view.ResourceGroup, name, body, nil); err != nil && !busy(err) {
		return err
	}
	return errWait
}

// setPrivateLinksReady sets the fork's condition in status, True or (a
// broken link, on demand) False.
func (r *Reconciler) setPrivateLinksReady(ctx context.Context, u *unstructured.Unstructured, ready bool) error {
	before := u.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var kept []any
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] != capz.ConditionPrivateLinksReady {
			kept = append(kept, c)
		}
	}
	cond := map[string]any{
		"type": capz.ConditionPrivateLinksReady, "status": "True",
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}
	if !ready {
		cond["status"], cond["severity"], cond["reason"] = "False", "Warning", "PrivateLinkServiceReconcileFailed"
		cond["message"] = "capzsim reports the private links broken (" + BrokenLinksAnnotation + ")"
	}
	kept = append(kept, cond)
	_ = unstructured.SetNestedSlice(u.Object, kept, "status", "conditions")
	return r.Client.Status().Patch(ctx, u, client.MergeFrom(before), client.FieldOwner(FieldManager))
}

// ensurePrivateEndpoints makes Azure's private endpoints match spec: one
// list of the resource group, a PUT for each missing or changed endpoint,
// and (in Fork mode) a DELETE for each endpoint capzsim made that left spec.
func (r *Reconciler) ensurePrivateEndpoints(ctx context.Context, u *unstructured.Unstructured, az *azureClients, s *clusterSpec) error {
	if r.Opts.Mode.usesASO() {
		return r.ensureASOEndpoints(ctx, u, s)
	}
	pes := az.net.NewPrivateEndpointsClient()
	existing, err := listEndpoints(ctx, pes, s.view.ResourceGroup)
	if err != nil {
		return err
	}
	wait := false
	wanted := map[string]bool{}
	for _, sn := range s.view.Subnets {
		for _, spec := range sn.PrivateEndpoints {
			wanted[strings.ToLower(spec.Name)] = true
			busyNow, err := ensureEndpoint(ctx, pes, s, sn.Name, spec, existing[strings.ToLower(spec.Name)])
			if err != nil {
				return err
			}
			wait = wait || busyNow
		}
	}
	if r.Opts.Mode != Upstream && !r.Opts.KeepRemovedEndpoints {
		deleting, err := deleteUnwanted(ctx, pes, s, existing, wanted)
		if err != nil {
			return err
		}
		wait = wait || deleting
	}
	if wait {
		return errWait
	}
	return nil
}

func listEndpoints(ctx context.Context, pes *armnetwork.PrivateEndpointsClient, rg string) (map[string]*armnetwork.PrivateEndpoint, error) {
	existing := map[string]*armnetwork.PrivateEndpoint{}
	pager := pes.NewListPager(rg, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, pe := range page.Value {
			existing[strings.ToLower(ptr.Deref(pe.Name, ""))] = pe
		}
	}
	return existing, nil
}

// ensureEndpoint starts a PUT when the endpoint is missing or differs and
// reports whether Azure is still working on it.
func ensureEndpoint(ctx context.Context, pes *armnetwork.PrivateEndpointsClient, s *clusterSpec, subnet string, spec capz.PrivateEndpoint, got *armnetwork.PrivateEndpoint) (bool, error) {
	body := peBody(s, subnet, spec)
	if got != nil && samePE(got, body) {
		return ptr.Deref(got.Properties.ProvisioningState, "") != armnetwork.ProvisioningStateSucceeded, nil
	}
	if _, err := pes.BeginCreateOrUpdate(ctx, s.view.ResourceGroup, spec.Name, body, nil); err != nil && !busy(err) {
		return false, err
	}
	return true, nil
}

// deleteUnwanted deletes the endpoints capzsim made that left spec and
// reports whether Azure is still deleting any.
//
// As the fork's CAPZ: one DELETE, then it follows Azure's operation (the
// future it keeps in the object's status, resumed at each reconcile) and
// sends no DELETE while the endpoint is Deleting; a refused DELETE (the
// endpoint's creation still running: 409 AnotherOperationInProgress) is an
// error, retried at the controller's backoff. The fork's
// azure/services/privateendpoints/privateendpoints.go (Reconcile) deletes
// each owned endpoint not in spec with the async service's
// DeleteResource, which resumes the stored operation instead of sending
// DELETE again and returns an operation-not-done error, a requeue, until
// it ends (azure/services/async/async.go, as in cluster-api-provider-azure
// v1.23.0). The stand-in sees the operation in the list's
// provisioningState instead of polling it.
func deleteUnwanted(ctx context.Context, pes *armnetwork.PrivateEndpointsClient, s *clusterSpec, existing map[string]*armnetwork.PrivateEndpoint, wanted map[string]bool) (bool, error) {
	deleting := false
	for name, pe := range existing {
		if wanted[name] || pe.Tags[ownedTag(s.clusterName())] == nil {
			continue
		}
		deleting = true
		if pe.Properties != nil && ptr.Deref(pe.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateDeleting {
			continue
		}
		if _, err := pes.BeginDelete(ctx, s.view.ResourceGroup, ptr.Deref(pe.Name, ""), nil); err != nil && !azure.IsNotFound(err) {
			return false, err
		}
	}
	return deleting, nil
}

func peBody(s *clusterSpec, subnet string, spec capz.PrivateEndpoint) armnetwork.PrivateEndpoint {
	loc := spec.Location
	if loc == "" {
		loc = s.view.Location
	}
	var conns []*armnetwork.PrivateLinkServiceConnection //nolint:prealloc // nil is omitted from the PUT body, an empty list is not
	for _, c := range spec.Connections {
		conns = append(conns, &armnetwork.PrivateLinkServiceConnection{Name: new(c.Name), Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(c.PrivateLinkServiceID), RequestMessage: new(c.RequestMessage),
		}})
	}
	p := &armnetwork.PrivateEndpointProperties{Subnet: &armnetwork.Subnet{ID: new(s.subnetID(subnet))}}
	if spec.ManualApproval {
		p.ManualPrivateLinkServiceConnections = conns
	} else {
		p.PrivateLinkServiceConnections = conns
	}
	return armnetwork.PrivateEndpoint{Location: new(loc), Properties: p, Tags: map[string]*string{ownedTag(s.clusterName()): new("owned")}}
}

// samePE compares what capzsim sets: subnet, target and approval mode.
func samePE(got *armnetwork.PrivateEndpoint, want armnetwork.PrivateEndpoint) bool {
	g, w := got.Properties, want.Properties
	if g == nil || g.Subnet == nil || !strings.EqualFold(ptr.Deref(g.Subnet.ID, ""), ptr.Deref(w.Subnet.ID, "")) {
		return false
	}
	if (len(g.ManualPrivateLinkServiceConnections) > 0) != (len(w.ManualPrivateLinkServiceConnections) > 0) {
		return false
	}
	// Concat, not append: append could write into g's or w's backing array.
	gc := slices.Concat(g.PrivateLinkServiceConnections, g.ManualPrivateLinkServiceConnections)
	wc := slices.Concat(w.PrivateLinkServiceConnections, w.ManualPrivateLinkServiceConnections)
	if len(gc) != len(wc) {
		return false
	}
	for i := range gc {
		if !strings.EqualFold(ptr.Deref(gc[i].Properties.PrivateLinkServiceID, ""), ptr.Deref(wc[i].Properties.PrivateLinkServiceID, "")) {
			return false
		}
	}
	return true
}

// reconcileDelete deletes the cluster's ASO objects first (where CAPZ makes
// them), then its resource group.
func (r *Reconciler) reconcileDelete(ctx context.Context, u *unstructured.Unstructured, az *azureClients, spec *clusterSpec) (ctrl.Result, error) {
	if r.Opts.Mode.usesASO() {
		if left, err := r.deleteASO(ctx, u, spec); err != nil || left {
			return ctrl.Result{RequeueAfter: r.Opts.Resync}, err
		}
	}
	return r.delete(ctx, u, az, spec)
}

// delete removes the cluster's resource group, as CAPZ does, then releases
// the object.
func (r *Reconciler) delete(ctx context.Context, u *unstructured.Unstructured, az *azureClients, s *clusterSpec) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(u, capzFinalizer) {
		return ctrl.Result{}, nil
	}
	req, err := azruntime.NewRequest(ctx, http.MethodDelete, az.endpoint()+s.rgID()+"?api-version=2021-04-01")
	if err != nil {
		return ctrl.Result{}, err
	}
	resp, err := az.arm.Pipeline().Do(req)
	if err != nil {
		return ctrl.Result{}, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusNotFound {
		return ctrl.Result{}, fmt.Errorf("deleting resource group %s: HTTP %d", s.rgID(), resp.StatusCode)
	}
	controllerutil.RemoveFinalizer(u, capzFinalizer)
	if err := r.Client.Update(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.holdIdentity(ctx, u, s, false)
}

func (az *azureClients) putResourceGroup(ctx context.Context, s *clusterSpec) error {
	req, err := azruntime.NewRequest(ctx, http.MethodPut, az.endpoint()+s.rgID()+"?api-version=2021-04-01")
	if err != nil {
		return err
	}
	if err := azruntime.MarshalAsJSON(req, map[string]string{"location": s.view.Location}); err != nil {
		return err
	}
	resp, err := az.arm.Pipeline().Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("creating resource group %s: HTTP %d", s.rgID(), resp.StatusCode)
	}
	return nil
}

func (az *azureClients) endpoint() string { return az.arm.Endpoint() }

func waitFor(state *armnetwork.ProvisioningState) error {
	if state != nil && *state == armnetwork.ProvisioningStateSucceeded {
		return nil
	}
	return errWait
}

// busy is Azure saying an operation on the resource is in progress.
func busy(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.ErrorCode == "AnotherOperationInProgress"
}

func ipInAny(ip string, s *clusterSpec, subnet string) bool {
	for _, sn := range s.subnets {
		if sn.name != subnet {
			continue
		}
		for _, c := range sn.cidrs {
			if prefixContains(c, ip) {
				return true
			}
		}
	}
	return false
}
