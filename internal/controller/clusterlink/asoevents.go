package clusterlink

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// ASO PrivateEndpoint events for the wiring (CAPZ v1.27 and upstream with
// ASO): an object turning Ready is the news Azure never sends, and its
// status an observation the wiring need not list again.

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
	// learn is false for a deletion: the last state of a deleted object
	// (or one being deleted) describes an endpoint that is gone or going.
	// ASO marks an object Ready False (Deleting) only after its first
	// delete call, and removes the finalizer in that same pass when Azure
	// answers at once (the endpoint was gone already): the object then
	// leaves still saying Ready, with the old endpoint's address
	// (azure-service-operator v2.20.0, internal/reconcilers/generic/
	// generic_reconciler.go). Learning that would publish an address no
	// endpoint holds, until the next read of Azure.
	add := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], learn bool) {
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
		if ob, ok := ASOObservationOf(obj, asoObservation(u), ac); ok && obj.Ready && learn && !obj.Deleting {
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
				add(ctx, e.ObjectNew, q, true)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q, false)
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
		return privateendpoints.Scope(cred, ac.SubscriptionID), nil
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
// provisioned. Of an object of the cache it reads the text the transform
// made (trimASO, cachedObservationKey), of any other the status.
func asoObservation(u *unstructured.Unstructured) privateendpoints.Observation {
	if text, ok := cachedObservationText(u); ok {
		var c cachedObservation
		if json.Unmarshal([]byte(text), &c) == nil {
			return privateendpoints.Observation(c)
		}
	}
	st, _ := u.Object["status"].(map[string]any)
	return statusObservation(st)
}

// statusObservation is what asoObservation reads of an ASO status: the
// strings, the network interfaces' IDs, the first address of the first
// DNS configuration that has one, and of the connection list its first
// connection's target and state. ASO copies the whole endpoint into
// status (PrivateEndpoint_STATUS in ASO v2.20.0's network
// v1api20220701: ipConfigurations, subnet, etag, every connection's
// fields); capzsim's stand-in writes fewer of them.
// TestTrimASOKeepsObservation checks that asoObservation reads the same
// of an object and of the cache's copy. It reads st in place: only
// strings are kept (and the tags, copied).
func statusObservation(st map[string]any) privateendpoints.Observation {
	str := func(m map[string]any, path ...string) string {
		v, _, _ := unstructured.NestedString(m, path...)
		return v
	}
	list := func(key string) []any {
		l, _ := st[key].([]any)
		return l
	}
	ob := privateendpoints.Observation{Name: str(st, "name"), ID: str(st, "id"), ProvisioningState: str(st, "provisioningState")}
	if tags, _, _ := unstructured.NestedStringMap(st, "tags"); len(tags) > 0 {
		ob.Tags = tags
	}
	for _, n := range list("networkInterfaces") {
		if m, ok := n.(map[string]any); ok && str(m, "id") != "" {
			ob.NICIDs = append(ob.NICIDs, str(m, "id"))
		}
	}
	for _, d := range list("customDnsConfigs") {
		m, _ := d.(map[string]any)
		if ips, _, _ := unstructured.NestedStringSlice(m, "ipAddresses"); len(ips) > 0 && ob.IP == "" {
			ob.IP = ips[0]
		}
	}
	conns := list("privateLinkServiceConnections")
	if manual := list("manualPrivateLinkServiceConnections"); len(manual) > 0 {
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
