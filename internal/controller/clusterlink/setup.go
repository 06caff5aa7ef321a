package clusterlink

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusters/status,verbs=get;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azureclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup registers the AzureCluster controllers with a manager.
func Setup(mgr ctrl.Manager, opts Options, clients *azure.Clients, observer *privateendpoints.Observer) error {
	opts.setDefaults()
	if opts.DNSEngine == nil {
		opts.DNSEngine = &dnsengine.Engine{Budget: opts.DNS.Budget(), Reader: mgr.GetAPIReader(), Check: opts.DNS.Check}
	}
	rec := mgr.GetEventRecorder("azure-private-endpoint-operator")
	detector := &Detector{Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper()}
	installed := detector.Get(ctrl.LoggerInto(context.Background(), mgr.GetLogger()))
	orphans := &OrphanCleaner{Client: mgr.GetClient(), Clients: clients, Observer: observer, Recorder: rec, Interval: opts.PendingRecheck, Detector: detector}
	mcr := &MCReconciler{Client: mgr.GetClient(), Opts: opts, Recorder: rec, Orphans: orphans}
	wcr := &WCReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts, Recorder: rec, Endpoints: AzureEndpoints{Clients: clients, Observer: observer}, Orphans: orphans}

	mcKey := reconcile.Request{NamespacedName: opts.ManagementCluster}
	selected := opts.selected
	// Every AzureCluster and Cluster event asks for one MC reconcile after
	// MCWriteDelay: events of that window collapse into it.
	mcb := ctrl.NewControllerManagedBy(mgr).Named("management-cluster").
		Watches(newAzureCluster(), delayed(mcKey, opts.MCWriteDelay, selected)).
		Watches(newCluster(), delayed(mcKey, opts.MCWriteDelay, selected))
	wcb := ctrl.NewControllerManagedBy(mgr).Named("workload-cluster").
		For(newAzureCluster()).
		Watches(newAzureCluster(), handler.EnqueueRequestsFromMapFunc(allWCsWhenMC(mgr.GetClient(), opts.ManagementCluster))).
		Watches(newCluster(), handler.EnqueueRequestsFromMapFunc(azureClusterOfCluster)).
		Watches(newIdentity(), handler.EnqueueRequestsFromMapFunc(clustersOfIdentity(mgr.GetClient())))
	if opts.PrivateLinkServices {
		// The WC's managed AzurePrivateLinkService becoming Ready is its
		// "private links ready".
		managed := func(o client.Object) bool { return o.GetLabels()[ManagedForLabel] != "" }
		mcb = mcb.Watches(&v1alpha1.AzurePrivateLinkService{}, delayed(mcKey, opts.MCWriteDelay, managed))
		wcb = wcb.Watches(&v1alpha1.AzurePrivateLinkService{}, handler.EnqueueRequestsFromMapFunc(wcOfManagedLink))
	}
	if opts.DNS.Enabled {
		wcr.dns = newDNSHandOff()
		// The DNS controller wakes the clusters the wiring holds back for
		// their records (dnshandoff.go).
		wcb = wcb.WatchesRawSource(source.Channel(wcr.dns.wake, &handler.EnqueueRequestForObject{}))
		if err := setupDNS(mgr, opts, clients, rec, wcr); err != nil {
			return err
		}
	}
	if installed.ASO {
		// CAPZ makes endpoints through ASO: an ASO PrivateEndpoint turning
		// Ready is the event Azure never sends.
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), newAzureCluster(), linkIDIndex, linkIDs); err != nil {
			return err
		}
		wcb = wcb.Watches(newASOEndpoint(), asoEvents(mgr.GetClient(), opts.ManagementCluster, &wcr.mc, observer, credentialScope(clients)))
	}
	if err := mcb.WithOptions(controller.Options{MaxConcurrentReconciles: 1}).Complete(mcr); err != nil {
		return err
	}
	return wcb.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).Complete(wcr)
}

// setupDNS registers the DNS mode's controller, which follows what the
// wiring (wcr) publishes on the workload clusters and reads the MC through
// its snapshot.
func setupDNS(mgr ctrl.Manager, opts Options, clients *azure.Clients, rec events.EventRecorder, wcr *WCReconciler) error {
	// Workload clusters of one resource group share their WC-side zone
	// (WCSideConflict).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), newAzureCluster(), groupIndex, resourceGroupOf); err != nil {
		return err
	}
	dr := &DNSReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts, Recorder: rec,
		DNS: AzureDNS{Clients: clients, Engine: opts.DNSEngine}, handOff: wcr.dns, mc: &wcr.mc}
	return ctrl.NewControllerManagedBy(mgr).Named("wiring-dns").
		For(newAzureCluster()).
		Watches(newAzureCluster(), handler.EnqueueRequestsFromMapFunc(allWCsWhenMC(mgr.GetClient(), opts.ManagementCluster))).
		Watches(newCluster(), handler.EnqueueRequestsFromMapFunc(azureClusterOfCluster)).
		Watches(newIdentity(), handler.EnqueueRequestsFromMapFunc(clustersOfIdentity(mgr.GetClient()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles}).
		Complete(dr)
}

// wcOfManagedLink maps a managed AzurePrivateLinkService to its WC.
func wcOfManagedLink(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[ManagedForLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// delayed enqueues one fixed request, after a delay, for any event of a
// selected object. The queue keeps one entry per request, so the events of
// the window cost one reconcile.
func delayed(req reconcile.Request, after time.Duration, selected func(client.Object) bool) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o == nil || selected(o) {
			q.AddAfter(req, after)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// An object that lost the label still counts once: its
			// endpoints must leave the MC, or its deletion would wait.
			if e.ObjectOld != nil && selected(e.ObjectOld) {
				q.AddAfter(req, after)
				return
			}
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

func newAzureCluster() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	return u
}

func newCluster() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.ClusterGVK)
	return u
}

func newIdentity() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	return u
}

// allWCsWhenMC re-evaluates every WC when the MC changes.
func allWCsWhenMC(c client.Client, mc types.NamespacedName) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		if (types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}) != mc {
			return nil
		}
		return listAzureClusters(ctx, c, func(*unstructured.Unstructured) bool { return true })
	}
}

// azureClusterOfCluster maps a Cluster (pause changes) to its AzureCluster.
func azureClusterOfCluster(_ context.Context, o client.Object) []reconcile.Request {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "infrastructureRef", "name")
	if name == "" {
		name = u.GetName()
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: u.GetNamespace(), Name: name}}}
}

// clustersOfIdentity maps an identity to the clusters that use it.
func clustersOfIdentity(c client.Client) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		return listAzureClusters(ctx, c, func(u *unstructured.Unstructured) bool {
			view, _ := capz.FromUnstructured(u)
			return view.IdentityRef != nil && view.IdentityRef.Name == o.GetName() && view.IdentityRef.Namespace == o.GetNamespace()
		})
	}
}

func listAzureClusters(ctx context.Context, c client.Client, keep func(*unstructured.Unstructured) bool) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}})
		}
	}
	return out
}

func newASOEndpoint() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
	return u
}

// linkIDIndex indexes AzureClusters by the lower-case IDs of the private
// link services the MC's endpoints to them target: the declared links and
// the managed one.
const linkIDIndex = "apeo.privateLinkServiceIDs"

func linkIDs(o client.Object) []string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	wc, _ := capz.FromUnstructured(u)
	out := []string{strings.ToLower(PrivateLinkServiceID(wc.SubscriptionID, wc.ResourceGroup, ManagedLinkName(wc)))}
	for _, pl := range wc.PrivateLinks {
		out = append(out, strings.ToLower(PrivateLinkServiceID(wc.SubscriptionID, wc.ResourceGroup, pl.Name)))
	}
	return out
}

// asoEvents maps a change of an ASO PrivateEndpoint's Ready condition to
// the WC whose endpoint it is (the WC's own, or the MC's endpoint to one of
// the WC's links). When it turned Ready, the observer first learns what ASO
// read of the endpoint in Azure, so the reconcile needs no list. Creations
// carry no news (a new object is not Ready yet; the informer's first list
// is covered by the reconcile of every WC at start).
//
// ASO objects are input anyone allowed to create them in a cluster's
// namespace can write, status included: an object is followed only when
// it is provably CAPZ's for the AzureCluster that controls it (ASOOfCluster),
// and learned from only when its status describes that endpoint in that
// cluster's subscription and resource group (ASOObservationOf), into the
// lists of that cluster's credential only.
//
// The MC is read through the WC reconciler's snapshot (parsed once per
// resourceVersion): at 1,000 WCs it is about 450 KiB, and each of its
// endpoints' events needs its entries.
func asoEvents(c client.Client, mc types.NamespacedName, snap *mcSnapshot, observer *privateendpoints.Observer, scopeOf func(context.Context, *capz.AzureCluster) (string, error)) handler.EventHandler {
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return
		}
		obj := capz.ReadASO(u)
		if obj.Controller == "" {
			return
		}
		owner := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Controller}
		ac := controllingCluster(ctx, c, snap, mc, owner, obj.ControllerUID)
		if ac == nil || !ASOOfCluster(obj, ac) {
			asoEventsIgnored.Inc()
			return
		}
		if ob, ok := ASOObservationOf(obj, asoObservation(u), ac); ok && obj.Ready {
			if scope, err := scopeOf(ctx, ac); err == nil {
				observer.Learn(scope, ob)
			}
		}
		asoEventsTotal.Inc()
		if owner != mc {
			q.Add(reconcile.Request{NamespacedName: owner})
			return
		}
		for _, req := range clustersOfLinks(ctx, c, obj.PrivateLinkServiceIDs) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if readyOf(e.ObjectOld) != readyOf(e.ObjectNew) {
				add(ctx, e.ObjectNew, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// clustersOfLinks are the WCs whose private link services ids name (the
// MC's endpoints to them).
func clustersOfLinks(ctx context.Context, c client.Reader, ids []string) []reconcile.Request {
	var out []reconcile.Request
	for _, id := range ids {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
		if err := c.List(ctx, list, client.MatchingFields{linkIDIndex: strings.ToLower(id)}, client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}})
		}
	}
	return out
}

// controllingCluster reads, from the cache and without a copy, the
// AzureCluster that controls an ASO object, if it is the one with that UID;
// the MC through its snapshot.
func controllingCluster(ctx context.Context, c client.Reader, snap *mcSnapshot, mc, key types.NamespacedName, uid string) *capz.AzureCluster {
	if key == mc {
		st, err := snap.read(ctx, c, mc)
		if err != nil || st.u == nil || string(st.u.GetUID()) != uid {
			return nil
		}
		return st.view
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(ctx, key, u, &client.GetOptions{UnsafeDisableDeepCopy: new(true)}); err != nil || string(u.GetUID()) != uid {
		return nil
	}
	ac, _ := capz.FromUnstructured(u) // reads only; the cached object is not changed
	return ac
}

// credentialScope returns the observer scope ("<credential>|<subscription>")
// a cluster's endpoints are read in.
func credentialScope(clients *azure.Clients) func(context.Context, *capz.AzureCluster) (string, error) {
	return func(ctx context.Context, ac *capz.AzureCluster) (string, error) {
		cred, err := clients.Credentials.For(ctx, ac)
		if err != nil {
			return "", err
		}
		return cred.Key + "|" + ac.SubscriptionID, nil
	}
}

// readyOf is an ASO object's Ready condition, status and reason.
func readyOf(o client.Object) string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	obj := capz.ReadASO(u)
	return fmt.Sprint(obj.Ready, "/", obj.Reason)
}

// asoObservation is what ASO's status says of an endpoint, as the observer
// records Azure's answer: ASO fills it from Azure when the endpoint is
// provisioned.
func asoObservation(u *unstructured.Unstructured) privateendpoints.Observation {
	st, _, _ := unstructured.NestedMap(u.Object, "status")
	str := func(m map[string]any, path ...string) string {
		v, _, _ := unstructured.NestedString(m, path...)
		return v
	}
	ob := privateendpoints.Observation{Name: str(st, "name"), ID: str(st, "id"), ProvisioningState: str(st, "provisioningState")}
	ob.Tags, _, _ = unstructured.NestedStringMap(st, "tags")
	nics, _, _ := unstructured.NestedSlice(st, "networkInterfaces")
	for _, n := range nics {
		if m, ok := n.(map[string]any); ok && str(m, "id") != "" {
			ob.NICIDs = append(ob.NICIDs, str(m, "id"))
		}
	}
	dns, _, _ := unstructured.NestedSlice(st, "customDnsConfigs")
	for _, d := range dns {
		m, _ := d.(map[string]any)
		if ips, _, _ := unstructured.NestedStringSlice(m, "ipAddresses"); len(ips) > 0 && ob.IP == "" {
			ob.IP = ips[0]
		}
	}
	conns, _, _ := unstructured.NestedSlice(st, "privateLinkServiceConnections")
	if manual, _, _ := unstructured.NestedSlice(st, "manualPrivateLinkServiceConnections"); len(manual) > 0 {
		conns, ob.ManualApproval = manual, true
	}
	if len(conns) > 0 {
		m, _ := conns[0].(map[string]any)
		ob.PrivateLinkServiceID = str(m, "privateLinkServiceId")
		ob.ConnectionState = str(m, "privateLinkServiceConnectionState", "status")
		ob.ConnectionDescription = str(m, "privateLinkServiceConnectionState", "description")
	}
	return ob
}
