// Package explain walks one workload cluster's wiring as the operator
// publishes it — the cluster, the management cluster, the private links it
// declares, CAPZ's report, the endpoint entries on both sides, the IP
// annotations, the operator's conditions and DNS — and says where it stops
// and what to change. It reads Kubernetes with whatever the caller's
// kubeconfig may read, and, with Options.Azure, what Azure holds: each
// entry's endpoint (connection state, address) and the records DNS mode
// wrote, with the clusters' identities or the caller's own credential.
// What it cannot read it leaves out and says so; the operator's verdicts
// stay on the cluster (GSPrivateLinksReady, GSDNSZoneReady, each with a
// constant reason). kubectl-apeo explain prints it.
package explain

import (
	"context"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// Options are the operator's settings explain needs to judge as it does.
type Options struct {
	// ManagementCluster is --management-cluster-namespace/-name.
	ManagementCluster types.NamespacedName
	// AnnotationPrefix is --annotation-prefix (default the operator's).
	AnnotationPrefix string
	// WatchFilter is --watch-filter ("" when the operator handles every
	// cluster).
	WatchFilter string
	// Azure, when set, is read too: each entry's endpoint with its
	// connection state and address, and the records DNS mode wrote. Nil:
	// Kubernetes only.
	Azure Azure
}

// Step states.
const (
	// StateOK: this step holds.
	StateOK = "ok"
	// StateWaiting: the step is not there yet, and nothing says a person
	// must act; it may come by itself.
	StateWaiting = "waiting"
	// StateStop: a person must act (the fix says what).
	StateStop = "stop"
	// StateSkipped: the step does not apply to this cluster.
	StateSkipped = "skipped"
)

// Step is one link of the chain.
type Step struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail"`
}

// Report is one cluster's chain and where it stops.
type Report struct {
	Cluster string `json:"cluster"`
	Steps   []Step `json:"steps"`
	// Wired: every step that applies holds.
	Wired bool `json:"wired"`
	// StoppedAt is the first step that does not hold; Reason its constant
	// reason (the operator's, or explain's own for what it sees before the
	// operator acts), Fix what to change.
	StoppedAt string `json:"stoppedAt,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Fix       string `json:"fix,omitempty"`
}

// Reasons explain gives for what it sees before the operator acts. The
// others are the operator's own (its conditions' and Events' reasons).
const (
	ReasonNotFound          = "AzureClusterNotFound"
	ReasonIsManagement      = "IsManagementCluster"
	ReasonPaused            = "Paused"
	ReasonNotSelected       = "NotSelectedByWatchFilter"
	ReasonNoPrivateLinks    = "NoPrivateLinks"
	ReasonPrivateLinksWait  = "WaitingForCAPZPrivateLinks"
	ReasonNotYetWired       = "NotYetWired"
	ReasonConditionsMissing = "NoConditionYet"
	// What explain finds in Azure (--azure).
	ReasonEndpointNotInAzure = "PrivateEndpointNotInAzure"
	ReasonAnnotationOutdated = "AnnotationOutdated"
	ReasonDNSRecordMissing   = "DNSRecordMissing"
	ReasonDNSRecordDiffers   = "DNSRecordDiffers"
)

// chain is one walk in progress.
type chain struct {
	r       Report
	stopped bool
}

func (c *chain) add(name, state, detail string) {
	c.r.Steps = append(c.r.Steps, Step{Name: name, State: state, Detail: detail})
}

// stop records the first step that does not hold.
func (c *chain) stop(name, state, reason, message string) {
	c.add(name, state, message)
	if !c.stopped {
		c.stopped = true
		c.r.StoppedAt, c.r.Reason, c.r.Message, c.r.Fix = name, reason, message, Fix(reason)
	}
}

// Explain walks the wiring of the workload cluster key.
func Explain(ctx context.Context, c client.Reader, key types.NamespacedName, o Options) (Report, error) {
	if o.AnnotationPrefix == "" {
		o.AnnotationPrefix = clusterlink.DefaultAnnotationPrefix
	}
	ch := &chain{r: Report{Cluster: key.String()}}
	u, view, err := read(ctx, c, key)
	if err != nil {
		return ch.r, err
	}
	if u == nil {
		ch.stop("cluster", StateStop, ReasonNotFound, "no AzureCluster "+key.String())
		return ch.r, nil
	}
	detail := "AzureCluster " + key.String() + " in subscription " + view.SubscriptionID + ", resource group " + view.ResourceGroup
	if view.Deleting {
		detail += " (being deleted: the operator releases its endpoints and DNS, then its finalizer)"
	}
	ch.add("cluster", StateOK, detail)
	if key == o.ManagementCluster {
		management(ch, u)
		return ch.r, nil
	}
	if !gate(ctx, c, ch, u, view, o) {
		return ch.r, nil
	}
	mcU, mc, err := read(ctx, c, o.ManagementCluster)
	switch {
	case apierrors.IsForbidden(err):
		// A tenant may read its own clusters only: what the MC holds is
		// left out, the operator's verdicts on the cluster are not.
		ch.add("management cluster", StateSkipped, "your kubeconfig may not read AzureCluster "+o.ManagementCluster.String()+": its endpoint entries are left out")
	case err != nil:
		return ch.r, err
	case mcU == nil:
		ch.stop("management cluster", StateStop, clusterlink.ReasonManagementClusterNotFound, "no AzureCluster "+o.ManagementCluster.String()+" (--management-cluster-namespace/-name)")
		return ch.r, nil
	default:
		ch.add("management cluster", StateOK, "AzureCluster "+o.ManagementCluster.String()+" in subscription "+mc.SubscriptionID)
	}
	services, err := links(ctx, c, ch, view)
	if err != nil {
		return ch.r, err
	}
	var inAzure map[string]string
	if mc != nil {
		toWC, toMC := entries(ch, view, mc, services, placedTo(ctx, c, mc, services))
		if o.Azure != nil {
			inAzure = endpointsInAzure(ctx, ch, o.Azure, mc, toWC)
			maps.Copy(inAzure, endpointsInAzure(ctx, ch, o.Azure, view, toMC))
		}
	}
	annotations(ch, u, o, inAzure)
	if o.Azure != nil {
		recordsInAzure(ctx, ch, o.Azure, u, view, mc)
	}
	conditions(ch, u)
	ch.r.Wired = !ch.stopped
	return ch.r, nil
}

// gate: what keeps the operator from acting on the cluster at all.
func gate(ctx context.Context, c client.Reader, ch *chain, u *unstructured.Unstructured, view *capz.AzureCluster, o Options) bool {
	isPaused, err := clusterlink.Paused(ctx, c, u, view)
	switch {
	case err != nil:
		ch.stop("not paused", StateStop, ReasonPaused, "reading the Cluster "+view.ClusterName+": "+err.Error())
		return false
	case isPaused:
		ch.stop("not paused", StateStop, ReasonPaused, "the cluster is paused (annotation "+capz.PausedAnnotation+" or the Cluster's spec.paused): the operator does not act on it")
		return false
	}
	ch.add("not paused", StateOK, "")
	if o.WatchFilter != "" && u.GetLabels()[clusterlink.WatchFilterLabel] != o.WatchFilter {
		ch.stop("selected", StateStop, ReasonNotSelected, fmt.Sprintf("the label %s=%s is missing (the operator runs with --watch-filter=%s): what it wrote stays as it was", clusterlink.WatchFilterLabel, o.WatchFilter, o.WatchFilter))
		return false
	}
	ch.add("selected", StateOK, "")
	return true
}

// links: the private links the cluster's API server is reached through.
// It returns their services' IDs, lower case (a managed one's once the
// operator has made it).
func links(ctx context.Context, c client.Reader, ch *chain, view *capz.AzureCluster) (map[string]bool, error) {
	services := map[string]bool{}
	if view.APIServerLBType != capz.LBTypeInternal {
		ch.add("private links", StateSkipped, "public API server: the management cluster reaches it without a private link")
		return services, nil
	}
	var names []string
	for _, l := range view.PrivateLinks {
		names = append(names, l.Name)
	}
	services = declaredServices(view)
	if len(names) == 0 {
		managed := &v1alpha1.AzurePrivateLinkServiceList{}
		err := c.List(ctx, managed, client.InNamespace(view.Namespace), client.MatchingLabels{clusterlink.ManagedForLabel: view.Name})
		if err != nil && !meta.IsNoMatchError(err) {
			return nil, err
		}
		if len(managed.Items) == 0 {
			ch.stop("private links", StateStop, ReasonNoPrivateLinks, "the cluster's API server is private and it declares no private link, and the operator manages none for it")
			return services, nil
		}
		m := managed.Items[0]
		if m.Status.ResourceID != "" {
			services[strings.ToLower(m.Status.ResourceID)] = true
		}
		// The managed service's own conditions say why it is not ready.
		ch.add("private links", StateOK, "managed by the operator: AzurePrivateLinkService "+m.Namespace+"/"+m.Name)
		return services, nil
	}
	ch.add("private links", StateOK, "declared in spec: "+strings.Join(names, ", "))
	if !view.PrivateLinksReady {
		ch.stop("CAPZ's private links", StateWaiting, ReasonPrivateLinksWait, "CAPZ has not reported its private link services ready (condition PrivateLinksReady)")
		return services, nil
	}
	ch.add("CAPZ's private links", StateOK, "PrivateLinksReady")
	return services, nil
}

// entries: the management cluster's endpoint entries that connect to the
// cluster's services, and the cluster's own entries to the MC. It returns
// them.
func entries(ch *chain, view, mc *capz.AzureCluster, own map[string]bool, placed []entry) (toWC, toMC []entry) {
	toWC = append(entriesTo(mc, func(pls string) bool { return own[pls] }), placed...)
	mcScope := strings.ToLower("/subscriptions/" + mc.SubscriptionID + "/resourceGroups/" + mc.ResourceGroup + "/")
	toMC = entriesTo(view, func(pls string) bool { return strings.HasPrefix(pls, mcScope) })
	switch {
	case view.APIServerLBType != capz.LBTypeInternal:
		ch.add("MC endpoints to the cluster", StateSkipped, "")
	case len(own) == 0:
		ch.add("MC endpoints to the cluster", StateWaiting, "no private link service of the cluster's to connect to yet")
	case len(toWC) == 0:
		ch.add("MC endpoints to the cluster", StateWaiting, "the management cluster has no endpoint entry to the cluster's private link services yet")
	default:
		ch.add("MC endpoints to the cluster", StateOK, describe(toWC))
	}
	if len(toMC) == 0 {
		ch.add("cluster endpoints to the MC", StateWaiting, "the cluster has no endpoint entry to the management cluster's services yet")
	} else {
		ch.add("cluster endpoints to the MC", StateOK, describe(toMC))
	}
	return toWC, toMC
}

// placedTo are the MC's endpoints beyond its AzureCluster (the
// operator's AzurePrivateEndpoints in the MC's namespace) that connect to
// the cluster's services; none when they cannot be read (a tenant's
// kubeconfig may not read the MC's namespace).
func placedTo(ctx context.Context, c client.Reader, mc *capz.AzureCluster, own map[string]bool) []entry {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := c.List(ctx, list, client.InNamespace(mc.Namespace), client.MatchingLabels{clusterlink.MCEndpointOfLabel: mc.Name}); err != nil {
		return nil
	}
	var out []entry
	for _, o := range list.Items {
		if own[strings.ToLower(o.Spec.PrivateLinkServiceID)] {
			out = append(out, entry{name: o.AzurePrivateEndpointName(), subnet: o.Spec.SubnetID + ", AzurePrivateEndpoint " + o.Namespace + "/" + o.Name, service: o.Spec.PrivateLinkServiceID})
		}
	}
	return out
}

// entry is one endpoint entry of an AzureCluster.
type entry struct{ name, subnet, service string }

func describe(es []entry) string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.name+" (subnet "+e.subnet+")")
	}
	return strings.Join(out, ", ")
}

// entriesTo are a cluster's endpoint entries whose connection want accepts.
func entriesTo(ac *capz.AzureCluster, want func(pls string) bool) []entry {
	var out []entry
	for _, sn := range ac.Subnets {
		for _, pe := range sn.PrivateEndpoints {
			for _, conn := range pe.Connections {
				if want(strings.ToLower(conn.PrivateLinkServiceID)) {
					out = append(out, entry{name: pe.Name, subnet: sn.Name, service: conn.PrivateLinkServiceID})
					break
				}
			}
		}
	}
	return out
}

// annotations: the addresses the operator published on the cluster, and
// whether Azure gives the endpoint they name that address (inAzure: by
// entry name, when Azure was read).
func annotations(ch *chain, u *unstructured.Unstructured, o Options, inAzure map[string]string) {
	ann := u.GetAnnotations()
	for _, a := range []struct{ ip, endpoint string }{
		{clusterlink.AnnotationAPIServerIP, clusterlink.AnnotationAPIServerEndpoint},
		{clusterlink.AnnotationMCIngressIP, clusterlink.AnnotationMCIngressEndpoint},
	} {
		name := o.AnnotationPrefix + "/" + a.ip
		ip, ok := ann[name]
		if !ok || ip == "" {
			ch.add("annotation "+a.ip, StateWaiting, "not published yet")
			continue
		}
		detail := ip
		e := ann[o.AnnotationPrefix+"/"+a.endpoint]
		if e != "" {
			detail += " (endpoint " + e + ")"
		}
		if have, read := inAzure[e]; read && have != "" && have != ip {
			ch.stop("annotation "+a.ip, StateWaiting, ReasonAnnotationOutdated,
				fmt.Sprintf("%s holds %s, but Azure gives endpoint %s the address %s", name, ip, e, have))
			continue
		}
		ch.add("annotation "+a.ip, StateOK, detail)
	}
}

// conditions: the operator's verdicts, with their reasons. An Unknown one
// is where the chain stops; a missing one means the operator has not
// judged the cluster yet (or does not run).
func conditions(ch *chain, u *unstructured.Unstructured) {
	verdict := func(step, typ string, optional bool) {
		c := clusterlink.ConditionOf(u, typ)
		switch {
		case c == nil && optional:
			ch.add(step, StateSkipped, typ+" not written: DNS mode (--wiring-dns) is off, or has not judged the cluster")
		case c == nil:
			ch.stop(step, StateWaiting, ReasonConditionsMissing, typ+" not written yet: the operator has not judged the cluster (is it running, for this management cluster?)")
		case c["status"] == "True":
			msg, _ := c["message"].(string)
			ch.add(step, StateOK, msg)
		default:
			reason, _ := c["reason"].(string)
			msg, _ := c["message"].(string)
			state := StateStop
			if waits(reason) {
				state = StateWaiting
			}
			ch.stop(step, state, reason, msg)
		}
	}
	verdict("private links ready", clusterlink.ConditionGSPrivateLinksReady, false)
	verdict("private DNS ready", clusterlink.ConditionGSDNSZoneReady, true)
	if !ch.stopped {
		for _, s := range ch.r.Steps {
			if s.State == StateWaiting {
				ch.stopped = true
				ch.r.StoppedAt, ch.r.Reason, ch.r.Message, ch.r.Fix = s.Name, ReasonNotYetWired, s.Detail, Fix(ReasonNotYetWired)
				break
			}
		}
	}
}

func read(ctx context.Context, c client.Reader, key types.NamespacedName) (*unstructured.Unstructured, *capz.AzureCluster, error) {
	u := capz.Object(capz.AzureClusterGVK)
	if err := c.Get(ctx, key, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	view, _ := capz.FromUnstructured(u)
	if view == nil {
		return nil, nil, fmt.Errorf("AzureCluster %s cannot be read", key)
	}
	return u, view, nil
}

// FindManagementCluster is the AzureCluster (other than key's) whose
// endpoint entries, or endpoints beyond it, connect to key's private link
// services: the management cluster that wires it. found is false while
// there is none.
func FindManagementCluster(ctx context.Context, c client.Reader, key types.NamespacedName) (types.NamespacedName, bool, error) {
	_, view, err := read(ctx, c, key)
	if err != nil || view == nil {
		return types.NamespacedName{}, false, err
	}
	own := declaredServices(view)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.List(ctx, list); err != nil {
		if apierrors.IsForbidden(err) {
			return types.NamespacedName{}, false, nil // the caller is asked to name it
		}
		return types.NamespacedName{}, false, err
	}
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetNamespace() == key.Namespace && u.GetName() == key.Name {
			continue
		}
		if other, _ := capz.FromUnstructured(u); other != nil && len(entriesTo(other, func(pls string) bool { return own[pls] })) > 0 {
			return types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, true, nil
		}
	}
	// Or whose endpoint beyond its AzureCluster (an AzurePrivateEndpoint
	// of the operator's, labelled with the MC's name) connects to them.
	placed := &v1alpha1.AzurePrivateEndpointList{}
	if err := c.List(ctx, placed, client.HasLabels{clusterlink.MCEndpointOfLabel}); err != nil {
		if apierrors.IsForbidden(err) {
			return types.NamespacedName{}, false, nil
		}
		return types.NamespacedName{}, false, err
	}
	for _, o := range placed.Items {
		if own[strings.ToLower(o.Spec.PrivateLinkServiceID)] {
			return types.NamespacedName{Namespace: o.Namespace, Name: o.Labels[clusterlink.MCEndpointOfLabel]}, true, nil
		}
	}
	return types.NamespacedName{}, false, nil
}

// declaredServices are the IDs, lower case, of the private link services
// a cluster's spec declares.
func declaredServices(view *capz.AzureCluster) map[string]bool {
	out := map[string]bool{}
	for _, l := range view.PrivateLinks {
		out[strings.ToLower(clusterlink.PrivateLinkServiceID(view.SubscriptionID, view.ResourceGroup, l.Name))] = true
	}
	return out
}

// management explains the management cluster itself: what its own
// condition, GSWorkloadClusterEndpointsReady, says of its workload
// clusters' entries (where it waits, the chain stops there); then that
// the rest of the chain is a workload cluster's.
func management(ch *chain, u *unstructured.Unstructured) {
	c := clusterlink.ConditionOf(u, clusterlink.ConditionGSWorkloadClusterEndpointsReady)
	reason, _ := c["reason"].(string)
	message, _ := c["message"].(string)
	switch {
	case c == nil:
		ch.add(atMCEntries, StateSkipped, "no "+clusterlink.ConditionGSWorkloadClusterEndpointsReady+" yet (the operator writes it at its first pass of the management cluster)")
	case c["status"] == "True":
		ch.add(atMCEntries, StateOK, reason+": "+message)
	default:
		state := StateStop
		if waits(reason) {
			state = StateWaiting
		}
		ch.stop(atMCEntries, state, reason, message)
	}
	ch.stop("management cluster", StateStop, ReasonIsManagement, "this is the management cluster: explain one of its workload clusters")
}
