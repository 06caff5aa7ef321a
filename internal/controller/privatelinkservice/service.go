package privatelinkservice

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/flowcontrol"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
)

// desired is the service the spec asks for, on the resolved frontend and
// NAT subnet.
func desired(obj *v1alpha1.AzurePrivateLinkService, fe frontend, subnetID string, defaultTags map[string]string) pls.Desired {
	s := obj.Spec
	return pls.Desired{
		Name: obj.AzurePrivateLinkServiceName(), Location: s.Location, FrontendID: fe.status.FrontendIPConfigurationID,
		DestinationIP: fe.status.DestinationIPAddress, AccessMode: s.AccessMode,
		NATSubnetID: subnetID, NATCount: int(s.NATIPConfigurations.Count), StaticIPs: s.NATIPConfigurations.StaticIPs,
		Visibility: s.Visibility, AutoApproval: s.AutoApproval, ProxyProtocol: s.EnableProxyProtocol, FQDNs: s.FQDNs,
		Owner: owner(obj), Tags: azure.Tags(defaultTags, s.Tags),
	}
}

// owner is the owner tag's value: the object's namespace and name.
func owner(obj *v1alpha1.AzurePrivateLinkService) string { return obj.Namespace + "/" + obj.Name }

// service observes the private link service and writes it only when it is
// missing or differs on the fields the operator sets; then it decides the
// Pending connections.
func (r *Reconciler) service(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI, fe frontend, subnetID string) (ctrl.Result, error) {
	rg, name := obj.Spec.ResourceGroup, obj.AzurePrivateLinkServiceName()
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	observed, err := api.Get(ctx, rg, name)
	if err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	want := desired(obj, fe, subnetID, r.Opts.Tags)
	if observed == nil {
		if err := fe.writable(""); err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		return r.create(ctx, obj, api, want)
	}
	if err := r.checkOwner(obj, observed); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	nat, err := natAddresses(ctx, api, observed)
	if err != nil {
		// The service itself is fine: keep the addresses last read and
		// say why they may be stale (typically a missing
		// networkInterfaces/read).
		nat = obj.Status.NATIPAddresses
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventNATAddressesUnread, "ReadNetworkInterface",
			"Azure gives the dynamic NAT addresses of private link service %s only on its network interface, which could not be read (status.natIPAddresses keeps the last addresses read): %s", name, azure.Classify(err).Message)
	}
	r.record(obj, observed, nat)
	switch st := ptr.Deref(observed.Properties.ProvisioningState, ""); st {
	case armnetwork.ProvisioningStateSucceeded:
		r.failures.reset(owner(obj))
	case armnetwork.ProvisioningStateFailed:
		return r.rewriteFailed(ctx, obj, api, fe, want, observed)
	default:
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "Azure reports provisioningState "+string(st))
		return r.requeueSoon(ctx), nil
	}
	diff := pls.Diff(want, observed)
	if len(diff) > 0 && diff[0] == "frontend" {
		return r.fail(ctx, obj, cond, terminal(ReasonFrontendChanged,
			"the private link service is bound to %s, not %s; Azure cannot move it: delete and recreate the object",
			pls.ObservedFrontend(observed), want.Frontend()))
	}
	if len(diff) > 0 {
		return r.update(ctx, obj, api, fe, want, observed, diff)
	}
	if err := r.decide(ctx, obj, api); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if pls.PrimaryLocked(want, observed) {
		setCondition(obj, cond, metav1.ConditionTrue, ReasonPrimaryNATLocked,
			"provisioned; the primary NAT IP configuration differs from the spec, which Azure does not allow to change: recreate the service to change it")
	} else {
		setCondition(obj, cond, metav1.ConditionTrue, ReasonReady, "provisioned, alias "+obj.Status.Alias)
	}
	next := r.Opts.drift()
	if obj.Spec.ConnectionApproval != nil && r.Opts.ConnectionCheck < next {
		// Azure does not tell the provider about new connections: a policy
		// decides them within ConnectionCheck.
		next = r.Opts.ConnectionCheck
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

// rewriteFailed writes a service Azure reports Failed again: the same PUT
// often passes once Azure recovers. A service that failed again waits
// TerminalRecheck, not to hammer Azure.
func (r *Reconciler) rewriteFailed(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI, fe frontend, want pls.Desired, observed *armnetwork.PrivateLinkService) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	if err := fe.writable(""); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	next := ctrl.Result{RequeueAfter: r.failures.next(owner(obj), r.Opts.Recheck, r.Opts.TerminalRecheck)}
	if err := api.Put(ctx, obj.Spec.ResourceGroup, want.Name, pls.Body(want, observed)); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioningFailed, "Azure reports provisioningState Failed; the operator wrote the service again")
	return next, nil
}

// update writes the fields of the service that differ from the spec's
// (diff), once its load balancer lets it.
func (r *Reconciler) update(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI, fe frontend, want pls.Desired, observed *armnetwork.PrivateLinkService, diff []string) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	if err := fe.writable("to update " + strings.Join(diff, ", ")); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if err := api.Put(ctx, obj.Spec.ResourceGroup, want.Name, pls.Body(want, observed)); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventUpdated, "Update", "updating private link service %s: %s differ", want.Name, strings.Join(diff, ", "))
	setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "updating "+strings.Join(diff, ", "))
	return r.requeueSoon(ctx), nil
}

// create starts creating the service; a service that was there before (its
// alias is in status) was deleted behind the operator's back.
func (r *Reconciler) create(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI, want pls.Desired) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateLinkServiceReady
	// Count and create under one lock per subscription: two workers never
	// both take the last service (a service is listed once its PUT is
	// answered).
	unlock := r.lockSubscription(obj.Spec.SubscriptionID)
	defer unlock()
	if err := r.withinSubscriptionLimit(ctx, obj, api); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if err := api.Put(ctx, obj.Spec.ResourceGroup, want.Name, pls.Body(want, nil)); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if obj.Status.ResourceID != "" {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventRecreated, "Recreate",
			"private link service %s was deleted outside the operator and is being recreated; its alias %s will change", want.Name, obj.Status.Alias)
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning,
			fmt.Sprintf("recreating: the service was deleted outside the operator; the alias %s changes and consumers must use the new one", obj.Status.Alias))
	} else {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventCreated, "Create", "creating private link service %s", want.Name)
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "creating")
	}
	obj.Status.ProvisioningState, obj.Status.Connections = "", nil
	obj.Status.ApprovedConnections, obj.Status.PendingConnections = 0, 0
	return r.requeueSoon(ctx), nil
}

// checkOwner refuses a service the operator did not create, unless the
// spec adopts it; one owned by another object is never taken.
func (r *Reconciler) checkOwner(obj *v1alpha1.AzurePrivateLinkService, observed *armnetwork.PrivateLinkService) error {
	o, by := pls.OwnerOf(observed, owner(obj))
	switch {
	case o == pls.OtherOwner:
		return terminal(ReasonNotOwned, "private link service %s belongs to AzurePrivateLinkService %s (tag %s); the operator leaves it alone", ptr.Deref(observed.Name, ""), by, pls.OwnerTag)
	case o == pls.Untagged && !obj.Spec.Adopt:
		return terminal(ReasonNotOwned, "private link service %s exists and was not created by the operator (no %s tag); set spec.adopt to manage it", ptr.Deref(observed.Name, ""), pls.OwnerTag)
	}
	return nil
}

// natAddresses are the service's NAT addresses, read from its network
// interfaces when Azure does not give them on the configurations (dynamic
// allocation: pls.NATAddresses).
func natAddresses(ctx context.Context, api plsAPI, observed *armnetwork.PrivateLinkService) ([]string, error) {
	var nics []*armnetwork.Interface
	if pls.NeedsInterfaces(observed) {
		for _, id := range pls.InterfaceIDs(observed) {
			nic, err := api.Interface(ctx, id)
			if err != nil {
				return nil, err
			}
			if nic != nil {
				nics = append(nics, nic)
			}
		}
	}
	return pls.NATAddresses(observed, nics), nil
}

// record copies what Azure says into status; an alias that changed since
// the last observation is announced.
func (r *Reconciler) record(obj *v1alpha1.AzurePrivateLinkService, observed *armnetwork.PrivateLinkService, nat []string) {
	st := &obj.Status
	alias := ptr.Deref(observed.Properties.Alias, "")
	if st.Alias != "" && alias != "" && st.Alias != alias {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventRecreated, "AliasChanged", "the alias changed from %s to %s: consumers that connect by alias must use the new one", st.Alias, alias)
	}
	st.ResourceID, st.Alias = ptr.Deref(observed.ID, ""), alias
	st.ProvisioningState = string(ptr.Deref(observed.Properties.ProvisioningState, ""))
	st.NATIPAddresses = nat
	before := map[string]string{}
	for _, c := range st.Connections {
		before[c.Name] = c.DecisionReason
	}
	conns := pls.Connections(observed)
	verdicts := map[string]pls.Verdict{}
	if p, ok := policyOf(obj); ok {
		for _, v := range pls.Judge(conns, p) {
			verdicts[v.Name] = v
		}
	}
	st.Connections, st.ApprovedConnections, st.PendingConnections = nil, 0, 0
	for _, c := range conns {
		v := verdicts[c.Name]
		st.Connections = append(st.Connections, v1alpha1.PrivateEndpointConnection{
			Name: c.Name, PrivateEndpointID: c.PrivateEndpointID, SubscriptionID: c.SubscriptionID,
			State: c.State, Description: c.Description, LinkIdentifier: c.LinkIdentifier,
			DecidedBy: v.By, Decision: v.Decision, DecisionReason: v.Reason,
		})
		if v.Reason == pls.CannotApproveRejected && before[c.Name] != v.Reason {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventCannotApprove, "Decide",
				"spec.connectionApproval.%s approves connection %s (%s), which is Rejected: %s", v.By, c.Name, c.PrivateEndpointID, pls.CannotApproveRejected)
		}
	}
	countConnections(st)
}

// policyOf is the spec's connection approval as a policy.
func policyOf(obj *v1alpha1.AzurePrivateLinkService) (pls.Policy, bool) {
	ca := obj.Spec.ConnectionApproval
	if ca == nil {
		return pls.Policy{}, false
	}
	p := pls.Policy{Approve: ca.ApproveSubscriptions, RejectOthers: ca.RejectOthers, Description: ca.Description}
	for _, rule := range ca.Rules {
		p.Rules = append(p.Rules, pls.Rule{Name: rule.Name, EndpointPattern: rule.PrivateEndpointID,
			Reject: rule.Action == v1alpha1.ConnectionActionReject, Reason: rule.Reason})
	}
	return p, true
}

func countConnections(st *v1alpha1.AzurePrivateLinkServiceStatus) {
	st.ApprovedConnections, st.PendingConnections = 0, 0
	for _, c := range st.Connections {
		switch c.State {
		case pls.StateApproved:
			st.ApprovedConnections++
		case pls.StatePending:
			st.PendingConnections++
		}
	}
}

// decide approves or rejects connections by the spec's policy (pls.Judge:
// rules, then the subscription lists).
func (r *Reconciler) decide(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI) error {
	p, ok := policyOf(obj)
	if !ok {
		return nil
	}
	var conns []pls.Connection
	for _, c := range obj.Status.Connections {
		conns = append(conns, pls.Connection{Name: c.Name, PrivateEndpointID: c.PrivateEndpointID, SubscriptionID: c.SubscriptionID, State: c.State})
	}
	for _, d := range pls.Decide(conns, p) {
		if err := api.SetConnection(ctx, obj.Spec.ResourceGroup, obj.AzurePrivateLinkServiceName(), d); err != nil {
			return err
		}
		reason := EventConnectionApproved
		if d.State == pls.StateRejected {
			reason = EventConnectionRejected
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Decide", "%s connection %s: %s", strings.ToLower(d.State), d.Name, d.Description)
		for i := range obj.Status.Connections {
			if obj.Status.Connections[i].Name == d.Name {
				obj.Status.Connections[i].State, obj.Status.Connections[i].Description = d.State, d.Description
			}
		}
	}
	countConnections(&obj.Status)
	return nil
}

// failureBackoff doubles the wait after each provisioning failure of an
// object, from Recheck up to TerminalRecheck, so a service Azure keeps
// failing is not written every few seconds. client-go's flowcontrol.Backoff
// keeps the per-object state (and forgets objects idle for twice the
// limit); base and limit are the reconciler's, fixed at its first failure.
type failureBackoff struct {
	mu sync.Mutex
	b  *flowcontrol.Backoff
}

func (f *failureBackoff) next(key string, base, limit time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.b == nil {
		f.b = flowcontrol.NewBackOff(base, limit)
	}
	f.b.GC()
	f.b.Next(key, f.b.Clock.Now())
	return f.b.Get(key)
}

func (f *failureBackoff) reset(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.b != nil {
		f.b.Reset(key)
	}
}
