package capzsim

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// ASOSim is a small stand-in for Azure Service Operator, for tests and the
// demo: it turns network.azure.com PrivateEndpoint and PrivateLinkService
// objects into Azure resources in azuresim and reports them in status, as
// ASO does. With the reconcile policy "skip" it only reads the resource
// (Ready, or AzureResourceNotFound); with "manage" it creates or updates
// it, and deletes it when the object is deleted. Like ASO, it looks at a
// converged object again every SyncPeriod and recreates what was deleted in
// Azure behind its back.
type ASOSim struct {
	Client client.Client
	// Azure gives the clients of a subscription (capzsim's).
	Azure *Reconciler
	// Resync is how soon to look again while Azure works. Default 1s.
	Resync time.Duration
	// SyncPeriod is ASO's azureSyncPeriod. Default 15m.
	SyncPeriod time.Duration
	// Concurrency is the number of workers per kind. Default 4.
	Concurrency int

	gvk schema.GroupVersionKind
	// applied is the generation of each object last PUT (by UID): like
	// ASO, a managed object's spec is PUT once per generation, plus when
	// Azure differs.
	applied *sync.Map
}

// asoFinalizer is ASO's finalizer.
const asoFinalizer = "serviceoperator.azure.com/finalizer"

// SetupASOSim registers the stand-in for both kinds.
func SetupASOSim(mgr ctrl.Manager, base ASOSim) error {
	if base.Resync == 0 {
		base.Resync = time.Second
	}
	if base.SyncPeriod == 0 {
		base.SyncPeriod = 15 * time.Minute
	}
	if base.Concurrency <= 0 {
		base.Concurrency = 4
	}
	base.applied = &sync.Map{}
	for _, gvk := range []schema.GroupVersionKind{capz.ASOPrivateEndpointGVK, capz.ASOPrivateLinkServiceGVK} {
		r := base
		r.gvk = gvk
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		// ASO retries a failed object after 1 s doubling up to 1 minute
		// (azure-service-operator v2.20.0, cmd/controller/app/setup.go:
		// generic.NewRateLimiter(1*time.Second, 1*time.Minute)), not
		// controller-runtime's default of up to 16 minutes: a deletion
		// Azure refused while the service still had connections is tried
		// again within a minute of the last one going.
		if err := ctrl.NewControllerManagedBy(mgr).Named("asosim-" + strings.ToLower(gvk.Kind)).For(u).
			WithOptions(controller.Options{MaxConcurrentReconciles: r.Concurrency,
				RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, time.Minute)}).Complete(&r); err != nil {
			return err
		}
	}
	return nil
}

// Reconcile makes one ASO object's Azure resource.
func (a *ASOSim) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(a.gvk)
	if err := a.Client.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	sub, rg, name := a.target(u)
	if sub == "" {
		return ctrl.Result{}, a.setStatus(ctx, u, nil, "False", "ReferenceNotFound", "Error", "no subscription in the object's references")
	}
	az, err := a.Azure.azure(sub)
	if err != nil {
		return ctrl.Result{}, err
	}
	res := a.resource(az, rg, name)
	manage := u.GetAnnotations()[capz.ASOReconcilePolicyAnnotation] != capz.ASOReconcilePolicySkip
	if u.GetDeletionTimestamp() != nil {
		return a.finalize(ctx, u, res, manage)
	}
	if controllerutil.AddFinalizer(u, asoFinalizer) {
		if err := a.Client.Update(ctx, u); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	got, err := res.get(ctx)
	if err != nil && !azure.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	if !manage {
		if got == nil {
			return ctrl.Result{RequeueAfter: a.SyncPeriod}, a.setStatus(ctx, u, nil, "False", "AzureResourceNotFound", "Warning",
				"the resource does not exist in Azure and the reconcile policy is skip")
		}
		return ctrl.Result{RequeueAfter: a.SyncPeriod}, a.setStatus(ctx, u, got, "True", "Succeeded", "", "")
	}
	last, _ := a.applied.Load(u.GetUID())
	if got == nil || !res.upToDate(got, u) || last != u.GetGeneration() {
		if err := res.put(ctx, u); err != nil && !busy(err) {
			c := azure.Classify(err)
			return ctrl.Result{RequeueAfter: a.Resync}, a.setStatus(ctx, u, got, "False", c.Reason, "Warning", c.Message)
		}
		a.applied.Store(u.GetUID(), u.GetGeneration())
		return ctrl.Result{RequeueAfter: a.Resync}, a.setStatus(ctx, u, got, "False", "Reconciling", "Info", "The resource is being reconciled")
	}
	if res.provisioningState(got) != string(armnetwork.ProvisioningStateSucceeded) {
		return ctrl.Result{RequeueAfter: a.Resync}, a.setStatus(ctx, u, got, "False", "Reconciling", "Info", "The resource is being reconciled")
	}
	return ctrl.Result{RequeueAfter: a.SyncPeriod}, a.setStatus(ctx, u, got, "True", "Succeeded", "", "")
}

func (a *ASOSim) finalize(ctx context.Context, u *unstructured.Unstructured, res asoResource, manage bool) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(u, asoFinalizer) {
		return ctrl.Result{}, nil
	}
	if manage {
		got, err := res.get(ctx)
		if err != nil && !azure.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if got != nil {
			// As ASO: one DELETE, then it follows Azure's operation (its
			// delete poller, MonitorDelete) and sends no DELETE while
			// the resource is Deleting; a refused DELETE (a service
			// that still has connections, another operation in
			// progress) is an error, retried at the rate limiter's
			// backoff (azure-service-operator v2.20.0,
			// internal/reconcilers/arm/azure_generic_arm_reconciler_instance.go,
			// deleteResource, MonitorDelete, handleDeleteFailed). Sending
			// DELETE again at every resync while Azure deleted answered
			// 409 AnotherOperationInProgress 12,198 times in the N =
			// 1,000 benchmark's delete phase.
			if res.provisioningState(got) != string(armnetwork.ProvisioningStateDeleting) {
				if err := res.delete(ctx); err != nil && !azure.IsNotFound(err) {
					return ctrl.Result{}, err
				}
			}
			// As ASO: Ready False (Deleting) once the delete is under way;
			// when there was nothing to delete, the finalizer goes in the
			// same pass and the object leaves with its status as it was
			// (azure-service-operator v2.20.0, internal/reconcilers/generic/
			// generic_reconciler.go; the difference was found by the
			// differential suite, test/realcapz).
			return ctrl.Result{RequeueAfter: a.Resync}, a.setStatus(ctx, u, got, "False", "Deleting", "Info", "The resource is being deleted")
		}
	}
	controllerutil.RemoveFinalizer(u, asoFinalizer)
	return ctrl.Result{}, client.IgnoreNotFound(a.Client.Update(ctx, u))
}

// target is the subscription, resource group and name of the object's
// Azure resource: the subscription of the resource it references (ASO
// takes it from the credential), the resource group its owner names.
func (a *ASOSim) target(u *unstructured.Unstructured) (sub, rg, name string) {
	rg, _, _ = unstructured.NestedString(u.Object, "spec", "owner", "name")
	name, _, _ = unstructured.NestedString(u.Object, "spec", "azureName")
	if name == "" {
		name = u.GetName()
	}
	var ref string
	if a.gvk == capz.ASOPrivateEndpointGVK {
		ref, _, _ = unstructured.NestedString(u.Object, "spec", "subnet", "reference", "armId")
	} else if fes, _, _ := unstructured.NestedSlice(u.Object, "spec", "loadBalancerFrontendIpConfigurations"); len(fes) > 0 {
		if m, ok := fes[0].(map[string]any); ok {
			ref, _, _ = unstructured.NestedString(m, "reference", "armId")
		}
	}
	parts := strings.Split(ref, "/")
	if len(parts) > 2 && strings.EqualFold(parts[1], "subscriptions") {
		sub = parts[2]
	}
	return sub, rg, name
}

// setStatus writes the resource and the Ready condition into status, if
// they changed.
func (a *ASOSim) setStatus(ctx context.Context, u *unstructured.Unstructured, got any, status, reason, severity, msg string) error {
	before := u.DeepCopy()
	st := map[string]any{}
	if got != nil {
		st = statusOf(got)
	}
	cond := map[string]any{"type": "Ready", "status": status, "reason": reason, "observedGeneration": u.GetGeneration()}
	if severity != "" {
		cond["severity"] = severity
	}
	if msg != "" {
		cond["message"] = msg
	}
	old, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	cond["lastTransitionTime"] = metav1.Now().UTC().Format(time.RFC3339)
	for _, c := range old {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == status {
			cond["lastTransitionTime"] = m["lastTransitionTime"]
		}
	}
	st["conditions"] = []any{cond}
	u.Object["status"] = st
	if equality.Semantic.DeepEqual(before.Object["status"], u.Object["status"]) {
		return nil
	}
	return client.IgnoreNotFound(a.Client.Status().Update(ctx, u))
}

// asoResource is the Azure side of one ASO object.
type asoResource interface {
	get(ctx context.Context) (any, error)
	put(ctx context.Context, u *unstructured.Unstructured) error
	delete(ctx context.Context) error
	upToDate(got any, u *unstructured.Unstructured) bool
	provisioningState(got any) string
}

func (a *ASOSim) resource(az *azureClients, rg, name string) asoResource {
	if a.gvk == capz.ASOPrivateEndpointGVK {
		return &asoEndpoint{c: az.net.NewPrivateEndpointsClient(), rg: rg, name: name}
	}
	return &asoLink{c: az.net.NewPrivateLinkServicesClient(), rg: rg, name: name}
}

type asoEndpoint struct {
	c        *armnetwork.PrivateEndpointsClient
	rg, name string
}

func (e *asoEndpoint) get(ctx context.Context) (any, error) {
	r, err := e.c.Get(ctx, e.rg, e.name, nil)
	if err != nil {
		return nil, err
	}
	return &r.PrivateEndpoint, nil
}

func (e *asoEndpoint) body(u *unstructured.Unstructured) armnetwork.PrivateEndpoint {
	loc, _, _ := unstructured.NestedString(u.Object, "spec", "location")
	subnet, _, _ := unstructured.NestedString(u.Object, "spec", "subnet", "reference", "armId")
	tags, _, _ := unstructured.NestedStringMap(u.Object, "spec", "tags")
	p := &armnetwork.PrivateEndpointProperties{Subnet: &armnetwork.Subnet{ID: new(subnet)}}
	p.PrivateLinkServiceConnections = connsOf(u, "privateLinkServiceConnections")
	p.ManualPrivateLinkServiceConnections = connsOf(u, "manualPrivateLinkServiceConnections")
	return armnetwork.PrivateEndpoint{Location: new(loc), Properties: p, Tags: stringMapPtr(tags)}
}

func connsOf(u *unstructured.Unstructured, field string) []*armnetwork.PrivateLinkServiceConnection {
	list, _, _ := unstructured.NestedSlice(u.Object, "spec", field)
	var out []*armnetwork.PrivateLinkServiceConnection //nolint:prealloc // nil is omitted from the PUT body, an empty list is not
	for _, raw := range list {
		m, _ := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		id, _, _ := unstructured.NestedString(m, "privateLinkServiceReference", "armId")
		msg, _, _ := unstructured.NestedString(m, "requestMessage")
		c := &armnetwork.PrivateLinkServiceConnection{Name: new(name), Properties: &armnetwork.PrivateLinkServiceConnectionProperties{PrivateLinkServiceID: new(id)}}
		if msg != "" {
			c.Properties.RequestMessage = new(msg)
		}
		out = append(out, c)
	}
	return out
}

func (e *asoEndpoint) put(ctx context.Context, u *unstructured.Unstructured) error {
	_, err := e.c.BeginCreateOrUpdate(ctx, e.rg, e.name, e.body(u), nil)
	return err
}

func (e *asoEndpoint) delete(ctx context.Context) error {
	_, err := e.c.BeginDelete(ctx, e.rg, e.name, nil)
	return err
}

func (e *asoEndpoint) upToDate(got any, u *unstructured.Unstructured) bool {
	pe, ok := got.(*armnetwork.PrivateEndpoint)
	return ok && samePE(pe, e.body(u))
}

func (e *asoEndpoint) provisioningState(got any) string {
	pe, ok := got.(*armnetwork.PrivateEndpoint)
	if !ok || pe.Properties == nil {
		return ""
	}
	return string(ptr.Deref(pe.Properties.ProvisioningState, ""))
}

type asoLink struct {
	c        *armnetwork.PrivateLinkServicesClient
	rg, name string
}

func (l *asoLink) get(ctx context.Context) (any, error) {
	r, err := l.c.Get(ctx, l.rg, l.name, nil)
	if err != nil {
		return nil, err
	}
	return &r.PrivateLinkService, nil
}

func (l *asoLink) body(u *unstructured.Unstructured) armnetwork.PrivateLinkService {
	loc, _, _ := unstructured.NestedString(u.Object, "spec", "location")
	tags, _, _ := unstructured.NestedStringMap(u.Object, "spec", "tags")
	proxy, _, _ := unstructured.NestedBool(u.Object, "spec", "enableProxyProtocol")
	vis, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "visibility", "subscriptions")
	auto, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "autoApproval", "subscriptions")
	p := &armnetwork.PrivateLinkServiceProperties{
		EnableProxyProtocol: new(proxy),
		Visibility:          &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: to.SliceOfPtrs(vis...)},
		AutoApproval:        &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: to.SliceOfPtrs(auto...)},
	}
	fes, _, _ := unstructured.NestedSlice(u.Object, "spec", "loadBalancerFrontendIpConfigurations")
	for _, raw := range fes {
		m, _ := raw.(map[string]any)
		id, _, _ := unstructured.NestedString(m, "reference", "armId")
		p.LoadBalancerFrontendIPConfigurations = append(p.LoadBalancerFrontendIPConfigurations, &armnetwork.FrontendIPConfiguration{ID: new(id)})
	}
	ipcs, _, _ := unstructured.NestedSlice(u.Object, "spec", "ipConfigurations")
	for _, raw := range ipcs {
		m, _ := raw.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "name")
		subnet, _, _ := unstructured.NestedString(m, "subnet", "reference", "armId")
		primary, _, _ := unstructured.NestedBool(m, "primary")
		method, _, _ := unstructured.NestedString(m, "privateIPAllocationMethod")
		ip, _, _ := unstructured.NestedString(m, "privateIPAddress")
		props := &armnetwork.PrivateLinkServiceIPConfigurationProperties{Primary: new(primary), Subnet: &armnetwork.Subnet{ID: new(subnet)}}
		if method != "" {
			props.PrivateIPAllocationMethod = new(armnetwork.IPAllocationMethod(method))
		}
		if ip != "" {
			props.PrivateIPAddress = new(ip)
		}
		p.IPConfigurations = append(p.IPConfigurations, &armnetwork.PrivateLinkServiceIPConfiguration{Name: new(name), Properties: props})
	}
	return armnetwork.PrivateLinkService{Location: new(loc), Properties: p, Tags: stringMapPtr(tags)}
}

func (l *asoLink) put(ctx context.Context, u *unstructured.Unstructured) error {
	_, err := l.c.BeginCreateOrUpdate(ctx, l.rg, l.name, l.body(u), nil)
	return err
}

func (l *asoLink) delete(ctx context.Context) error {
	_, err := l.c.BeginDelete(ctx, l.rg, l.name, nil)
	return err
}

// upToDate compares what CAPZ sets and Azure may change: visibility and
// auto-approval.
func (l *asoLink) upToDate(got any, u *unstructured.Unstructured) bool {
	pls, ok := got.(*armnetwork.PrivateLinkService)
	if !ok || pls.Properties == nil {
		return false
	}
	g, w := pls.Properties, l.body(u).Properties
	if g == nil {
		return false
	}
	var gv, ga []*string
	if g.Visibility != nil {
		gv = g.Visibility.Subscriptions
	}
	if g.AutoApproval != nil {
		ga = g.AutoApproval.Subscriptions
	}
	return sameStrings(gv, w.Visibility.Subscriptions) && sameStrings(ga, w.AutoApproval.Subscriptions)
}

func (l *asoLink) provisioningState(got any) string {
	pls, ok := got.(*armnetwork.PrivateLinkService)
	if !ok || pls.Properties == nil {
		return ""
	}
	return string(ptr.Deref(pls.Properties.ProvisioningState, ""))
}

func sameStrings(a, b []*string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(ptr.Deref(a[i], ""), ptr.Deref(b[i], "")) {
			return false
		}
	}
	return true
}

// statusOf is ASO's status of a resource: its ARM representation.
func statusOf(got any) map[string]any {
	switch r := got.(type) {
	case *armnetwork.PrivateEndpoint:
		return endpointStatus(r)
	case *armnetwork.PrivateLinkService:
		st := map[string]any{"id": ptr.Deref(r.ID, ""), "name": ptr.Deref(r.Name, "")}
		if r.Properties != nil {
			st["provisioningState"] = string(ptr.Deref(r.Properties.ProvisioningState, ""))
			st["alias"] = ptr.Deref(r.Properties.Alias, "")
		}
		return st
	}
	return map[string]any{}
}

func endpointStatus(pe *armnetwork.PrivateEndpoint) map[string]any {
	st := map[string]any{"id": ptr.Deref(pe.ID, ""), "name": ptr.Deref(pe.Name, "")}
	if len(pe.Tags) > 0 {
		tags := map[string]any{}
		for k, v := range pe.Tags {
			tags[k] = ptr.Deref(v, "")
		}
		st["tags"] = tags
	}
	p := pe.Properties
	if p == nil {
		return st
	}
	st["provisioningState"] = string(ptr.Deref(p.ProvisioningState, ""))
	var nics []any
	for _, n := range p.NetworkInterfaces {
		nics = append(nics, map[string]any{"id": ptr.Deref(n.ID, "")})
	}
	if nics != nil {
		st["networkInterfaces"] = nics
	}
	var dns []any
	for _, d := range p.CustomDNSConfigs {
		ips := []any{}
		for _, ip := range d.IPAddresses {
			ips = append(ips, ptr.Deref(ip, ""))
		}
		dns = append(dns, map[string]any{"fqdn": ptr.Deref(d.Fqdn, ""), "ipAddresses": ips})
	}
	if dns != nil {
		st["customDnsConfigs"] = dns
	}
	for field, conns := range map[string][]*armnetwork.PrivateLinkServiceConnection{
		"privateLinkServiceConnections": p.PrivateLinkServiceConnections, "manualPrivateLinkServiceConnections": p.ManualPrivateLinkServiceConnections,
	} {
		if out := connectionsStatus(conns); len(out) > 0 {
			st[field] = out
		}
	}
	return st
}

func connectionsStatus(conns []*armnetwork.PrivateLinkServiceConnection) []any {
	out := make([]any, 0, len(conns))
	for _, c := range conns {
		m := map[string]any{"name": ptr.Deref(c.Name, "")}
		if c.Properties != nil {
			m["privateLinkServiceId"] = ptr.Deref(c.Properties.PrivateLinkServiceID, "")
			if s := c.Properties.PrivateLinkServiceConnectionState; s != nil {
				m["privateLinkServiceConnectionState"] = map[string]any{"status": ptr.Deref(s.Status, ""), "description": ptr.Deref(s.Description, "")}
			}
		}
		out = append(out, m)
	}
	return out
}

func stringMapPtr(m map[string]string) map[string]*string {
	if m == nil {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = new(v)
	}
	return out
}
