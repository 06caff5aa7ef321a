package clusterlink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// observation is what Azure says, turned into annotations and a result.
type observation struct {
	annotations map[string]string
	states      map[Direction]string
	ready       bool
	// sourceReady: the endpoint the ingress annotation takes its IP from
	// in the configured layout is ready (a layout switch may finish);
	// apiSourceReady: the first MC→WC endpoint is (a hand-over may finish).
	sourceReady, apiSourceReady bool
	result                      ctrl.Result
	err                         error
	// waitReason and waitMessage say what the first endpoint that is not
	// ready waits for (GSPrivateLinksReady Unknown).
	waitReason, waitMessage string
	// throttled: an endpoint could not be read because the identity's
	// request budget in the subscription is nearly spent (the operator's
	// own pacing, or Azure's 429). Nothing new is known of the cluster, so
	// its GSPrivateLinksReady stays as it was (whyWaiting): after a
	// restart at 1,000 clusters, the pacing of the first pass's reads
	// turned three quarters of them Unknown and True again, two status
	// writes each (make bench, restart phase). A cluster that has no
	// condition yet says why it waits (throttledMessage): at N = 3,000,
	// 772 clusters waiting for their first read had none.
	throttled        bool
	throttledMessage string
}

// waitFor records what the cluster waits for, unless something before it
// in the pass did.
func (o *observation) waitFor(reason, message string) {
	if o.waitReason == "" {
		o.waitReason, o.waitMessage = reason, message
	}
}

// observe reads both directions' endpoints and computes the annotations.
// An annotation takes the IP of its direction's first endpoint, and is set
// only when that endpoint is provisioned, approved and has an IP; it is
// removed when Azure says otherwise; it is left alone when Azure cannot be
// read. Every endpoint of a direction is observed: the cluster is ready only
// when all are, and a broken one is healed (see heal.Tracker). During a
// layout switch the ingress annotation never goes empty: while the first of
// toMC is not ready, it keeps its IP if that is the IP of another ready
// endpoint to the MC, of this layout or of the earlier one (retiring, see
// Retiring). It never moves to an endpoint that is not the first.
func (r *WCReconciler) observe(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster, toWC, toMC, retiring []Endpoint, current map[string]string) observation {
	o := observation{annotations: map[string]string{}, states: map[Direction]string{}, ready: true, result: ctrl.Result{RequeueAfter: r.Opts.DriftCheckInterval()}}
	for k, v := range current {
		o.annotations[k] = v
	}
	var results []ctrl.Result
	for _, d := range []struct {
		eps, fallback []Endpoint
		owner         *capz.AzureCluster // whose identity and resource group
		annName       string
	}{
		{toWC, tail(toWC), mc, r.Opts.Annotation(AnnotationAPIServerIP)},
		{toMC, slices.Concat(tail(toMC), retiring), wc, r.Opts.Annotation(AnnotationMCIngressIP)},
	} {
		if len(d.eps)+len(d.fallback) == 0 {
			o.unpublish(d.annName)
			continue
		}
		results = append(results, r.observeDirection(ctx, u, &o, d.eps, d.fallback, d.owner, d.annName)...)
	}
	if len(results) > 0 {
		// Something waits: the soonest of its rechecks, not the drift check.
		o.result = ctrl.Result{}
		for _, res := range results {
			o.result = LowestNonZeroResult(o.result, res)
		}
	}
	if o.err != nil {
		o.result = ctrl.Result{} // controller-runtime retries an error with its backoff
	}
	return o
}

// observeDirection observes the endpoints of one direction, held by owner,
// into o, and returns the rechecks they ask for. fallback endpoints may
// keep the annotation (see observe); those not in eps are neither healed
// nor reported.
func (r *WCReconciler) observeDirection(ctx context.Context, u *unstructured.Unstructured, o *observation, eps, fallback []Endpoint, owner *capz.AzureCluster, annName string) []ctrl.Result {
	dir := slices.Concat(eps, fallback)[0].Direction
	obs, err := r.Endpoints.ResourceGroupEndpoints(ctx, owner, r.seen.first(u, r.Endpoints.Now), uniqueNames(slices.Concat(eps, fallback))...)
	if err != nil {
		o.ready = false
		o.states[dir] = stateUnknown
		switch c := azure.Classify(err); {
		case c.Reason == azure.ReasonThrottled:
			if !o.throttled {
				o.throttledMessage = fmt.Sprintf("the private endpoints of %s/%s are not read yet: the operator's identity has nearly spent "+
					"its Azure read budget in that subscription (Azure refills 25 reads a second); the operator reads them as it refills", owner.Namespace, owner.Name)
			}
			o.throttled = true
		case c.Class == azure.ClassTransient || c.Class == azure.ClassWait:
			// No Event: ClassifyAndReport only logs these.
			o.waitFor(ReasonAzureError, fmt.Sprintf("the private endpoints of %s/%s cannot be read from Azure for now: %s", owner.Namespace, owner.Name, c.Message))
		default:
			o.waitFor(ReasonAzureError, fmt.Sprintf("the private endpoints of %s/%s cannot be read from Azure; the cluster's Events say why", owner.Namespace, owner.Name))
		}
		res, err := ClassifyAndReport(ctx, r.Recorder, u, r.Opts, fmt.Sprintf("reading private endpoints of %s/%s", owner.Namespace, owner.Name), err)
		if err != nil {
			o.err = err
		}
		return []ctrl.Result{res}
	}
	var results []ctrl.Result
	for i, ep := range eps {
		results = append(results, r.observeEndpoint(ctx, u, o, ep, i == 0, obs, owner, annName)...)
	}
	if len(fallback) > 0 && (len(eps) == 0 || o.annotations[annName] == "") {
		o.fallBack(obs, fallback, annName, u.GetAnnotations()[annName], len(eps) == 0)
	}
	return results
}

// fallbackIP is was, the IP the annotation holds now, and the endpoint
// that has it, when a ready endpoint among eps has it; otherwise "".
func fallbackIP(obs map[string]privateendpoints.Observation, eps []Endpoint, was string) (string, string) {
	for _, ep := range eps {
		ob, exists := obs[strings.ToLower(ep.Name)]
		if state, _ := endpointState(ob, exists, ep); state == stateReady && was != "" && ob.IP == was {
			return was, ep.Name
		}
	}
	return "", ""
}

// endpointAnnotation is the annotation that names the endpoint whose
// address an IP annotation holds (AnnotationAPIServerEndpoint,
// AnnotationMCIngressEndpoint).
func endpointAnnotation(ipAnnotation string) string {
	return strings.TrimSuffix(ipAnnotation, "-ip") + "-endpoint"
}

// publish sets an IP annotation to ip, the address of endpoint, and names
// the endpoint beside it (safety.go: the MC keeps that entry while it is
// published).
func (o *observation) publish(annName, ip, endpoint string) {
	o.annotations[annName] = ip
	o.annotations[endpointAnnotation(annName)] = endpoint
}

// unpublish removes an IP annotation and the endpoint's name beside it.
func (o *observation) unpublish(annName string) {
	delete(o.annotations, annName)
	delete(o.annotations, endpointAnnotation(annName))
}

// tail is eps without its first.
func tail(eps []Endpoint) []Endpoint {
	if len(eps) == 0 {
		return nil
	}
	return eps[1:]
}

// endpointState says where an endpoint is and who must act.
func endpointState(ob privateendpoints.Observation, exists bool, ep Endpoint) (string, string) {
	pls := ep.Connections[0].PrivateLinkServiceID
	switch {
	case !exists && ep.placed():
		return stateProvisioning, fmt.Sprintf("private endpoint %s is not in Azure yet; the management cluster's AzurePrivateEndpoint %s creates it in subnet %s "+
			"(beyond the management cluster's AzureCluster, --mc-endpoint-subnets)", ep.Name, placedObjectName(ep.Name), ep.Subnet)
	case !exists:
		return stateProvisioning, fmt.Sprintf("private endpoint %s is not in Azure yet; CAPZ creates it from the AzureCluster spec", ep.Name)
	case !strings.EqualFold(ob.PrivateLinkServiceID, pls):
		// The name is shared (an entry name carries no namespace); an
		// endpoint of that name connected elsewhere is someone else's, and
		// its address must never be published for this cluster. The other
		// service is not named: it may be another tenant's.
		return stateForeign, fmt.Sprintf(
			"private endpoint %s in Azure is connected to another private link service than %s: its address is not published for this cluster, and the operator does not touch it; rename private link %s",
			ep.Name, pls, ep.Link)
	case ob.ProvisioningState != "Succeeded":
		return stateProvisioning, fmt.Sprintf("private endpoint %s is being provisioned (%s)", ep.Name, ob.ProvisioningState)
	case ob.ConnectionState == privateendpoints.StatePending:
		return statePending, fmt.Sprintf("the connection of private endpoint %s waits for approval: the owner of private link service %s must approve it", ep.Name, pls)
	case ob.ConnectionState == privateendpoints.StateRejected:
		return stateRejected, fmt.Sprintf("the owner of private link service %s rejected private endpoint %s (%s); approve it there or remove the link", pls, ep.Name, ob.ConnectionDescription)
	case ob.ConnectionState == privateendpoints.StateDisconnected:
		return stateDisconnected, fmt.Sprintf("private endpoint %s was disconnected from private link service %s (removed or deleted by its owner)", ep.Name, pls)
	case ob.IP == "":
		return stateProvisioning, fmt.Sprintf("private endpoint %s has no IP yet", ep.Name)
	case ob.Ready():
		return stateReady, ""
	}
	return stateUnknown, fmt.Sprintf("private endpoint %s is in state %q", ep.Name, ob.ConnectionState)
}

// endpointClient reads, from Azure, the private endpoints in a cluster's
// resource group, keyed by lower-case name, and deletes one (healing).
type endpointClient interface {
	// ResourceGroupEndpoints reads the group's endpoints; of a list asked
	// of Azure before notBefore, what it holds under names is read again.
	// The IPs of names are resolved, the others' may be empty.
	ResourceGroupEndpoints(ctx context.Context, ac *capz.AzureCluster, notBefore time.Time, names ...string) (map[string]privateendpoints.Observation, error)
	Delete(ctx context.Context, ac *capz.AzureCluster, name string) error
	// Now is the time on the clock of ResourceGroupEndpoints' notBefore.
	Now() time.Time
}

// AzureEndpoints reads a cluster's endpoints with that cluster's identity,
// through the shared observer (one list per subscription or group).
type AzureEndpoints struct {
	Clients  *azure.Clients
	Observer *privateendpoints.Observer
}

// ResourceGroupEndpoints implements endpointClient.
func (a AzureEndpoints) ResourceGroupEndpoints(ctx context.Context, ac *capz.AzureCluster, notBefore time.Time, names ...string) (map[string]privateendpoints.Observation, error) {
	f, cred, err := a.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return nil, err
	}
	obs, err := a.Observer.ResourceGroup(ctx, privateendpoints.NewSDK(f).WithLister(privateendpoints.ListerFor(a.Clients, f)), privateendpoints.Scope(cred, ac.SubscriptionID), ac.ResourceGroup, notBefore, names...)
	if azure.Classify(err).Reason == azure.ReasonAuthenticationFailed {
		a.Clients.Credentials.Forget(cred.Key) // a rotated secret is read again at once
	}
	return obs, err
}

// NamesInAzure implements mcEndpoints: of the group's list, the names
// asked for are read again one by one (a notBefore of now), so an endpoint
// Azure has deleted since the list is not taken for one it still has.
func (a AzureEndpoints) NamesInAzure(ctx context.Context, ac *capz.AzureCluster, names []string) (map[string]string, error) {
	obs, err := a.ResourceGroupEndpoints(ctx, ac, a.Now(), names...)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		if ob, ok := obs[strings.ToLower(n)]; ok {
			out[strings.ToLower(n)] = strings.ToLower(ob.PrivateLinkServiceID)
		}
	}
	return out, nil
}

// Invalidate implements mcEndpoints.
func (a AzureEndpoints) Invalidate(ctx context.Context, ac *capz.AzureCluster) {
	if _, cred, err := a.Clients.Network(ctx, ac, ac.SubscriptionID); err == nil {
		a.Observer.Invalidate(privateendpoints.Scope(cred, ac.SubscriptionID), ac.ResourceGroup)
	}
}

// Now implements endpointClient: the observer's clock.
func (a AzureEndpoints) Now() time.Time {
	return a.Observer.Now()
}

// Delete implements endpointClient: it starts the deletion of an endpoint
// in the cluster's resource group and does not wait for it (the next
// observation shows it gone). Not found is success.
func (a AzureEndpoints) Delete(ctx context.Context, ac *capz.AzureCluster, name string) error {
	f, cred, err := a.Clients.Network(ctx, ac, ac.SubscriptionID)
	if err != nil {
		return err
	}
	if _, err := f.NewPrivateEndpointsClient().BeginDelete(ctx, ac.ResourceGroup, name, nil); err != nil && !azure.IsNotFound(err) {
		return err
	}
	a.Observer.Invalidate(privateendpoints.Scope(cred, ac.SubscriptionID), ac.ResourceGroup)
	return nil
}

// observeEndpoint records one endpoint of a direction in o (first: the
// one whose IP the direction's annotation takes), heals it when broken long
// enough, and returns the rechecks it asks for.
func (r *WCReconciler) observeEndpoint(ctx context.Context, u *unstructured.Unstructured, o *observation, ep Endpoint, first bool,
	obs map[string]privateendpoints.Observation, owner *capz.AzureCluster, annName string) []ctrl.Result {
	dir := ep.Direction
	ob, exists := obs[strings.ToLower(ep.Name)]
	state, note := endpointState(ob, exists, ep)
	if first || (o.states[dir] == stateReady && state != stateReady) {
		o.states[dir] = state // the first endpoint's, or the first trouble
	}
	healKey := owner.Namespace + "/" + owner.Name + "/" + ep.Name
	if state == stateReady {
		r.heal.Ready(healKey)
		if first {
			o.publish(annName, ob.IP, ep.Name)
			o.sourceReady = o.sourceReady || dir == DirectionWCToMC
			o.apiSourceReady = o.apiSourceReady || dir == DirectionMCToWC
		}
		return nil
	}
	if first {
		o.unpublish(annName)
	}
	o.ready = false
	o.waitFor(stateReason(state), note)
	r.noteState(u, ep, state, note)
	results := []ctrl.Result{{RequeueAfter: r.Opts.PendingRecheckInterval()}}
	if wait := r.maybeHeal(ctx, u, owner, ep, state, ob.IP, healKey); wait > 0 {
		results = append(results, ctrl.Result{RequeueAfter: wait})
	}
	return results
}

// fallBack keeps the annotation on was, the IP it holds, while a ready
// endpoint among eps has it (a layout switch); none is not ready.
func (o *observation) fallBack(obs map[string]privateendpoints.Observation, eps []Endpoint, annName, was string, none bool) {
	if ip, ep := fallbackIP(obs, eps, was); ip != "" {
		o.publish(annName, ip, ep)
	} else {
		o.unpublish(annName)
	}
	if none {
		o.ready = false // nothing of the configured layout is wired
	}
}

// firstSeen remembers when this process first observed each workload
// cluster object (by namespace/name and UID). A list of Azure's endpoints
// asked before that moment is not trusted for the cluster: the endpoints
// it holds under the cluster's names are read again one by one
// (privateendpoints.Observer.ResourceGroup). A cluster deleted and
// created again under its name, while a list taken before is still
// young, would otherwise be told of its predecessor's endpoints, which
// bear the names its own will bear, and be annotated with addresses no
// endpoint holds any more (make simulate, seed 3 at d68ddcc;
// TestClusterCreatedAgainIsNotToldOfItsPredecessor). The predecessor's
// endpoints in its own resource group are gone from Azure before its
// object is (CAPZ deletes them before it drops its finalizer), so before
// the new object exists and before this process sees it: the bound needs
// no clock but this process's (no skew with the API server's), and a
// restart, when every list is new anyway, loses nothing. (Its endpoint on
// the MC's side goes when CAPZ next reconciles the MC, which may be
// later; while it is there, Azure shows it with the state Azure gives it.)
// A new cluster whose endpoints do not exist yet costs no request.
//
// A cluster created well before it is first observed (every cluster when
// the operator starts) takes its creation instead, plus clockSkew: every
// list this process asks is younger, and nothing is read again (a restart
// with 1,000 clusters would otherwise read two endpoints of each one by
// one, as each cluster's first pass comes after the lists the earlier
// ones asked).
type firstSeen struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]seenAt
}

type seenAt struct {
	uid types.UID
	at  time.Time
}

// clockSkew bounds how far the API server's clock (creation timestamps)
// and this process's may differ.
const clockSkew = time.Minute

// first returns the moment from which lists are trusted for u: when u
// (this UID under its name) was first seen, recording now when it is new,
// or its creation plus clockSkew when that is earlier.
func (f *firstSeen) first(u *unstructured.Unstructured, now func() time.Time) time.Time {
	k := types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.seen[k]
	if !ok || s.uid != u.GetUID() {
		if f.seen == nil {
			f.seen = map[types.NamespacedName]seenAt{}
		}
		s = seenAt{uid: u.GetUID(), at: now()}
		f.seen[k] = s
	}
	if created := u.GetCreationTimestamp().Add(clockSkew); created.Before(s.at) {
		return created
	}
	return s.at
}

// forget drops a cluster that is gone.
func (f *firstSeen) forget(k types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.seen, k)
}
