package privateendpoint

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
)

// desired is the endpoint the spec asks for.
func (r *Reconciler) desired(obj *v1alpha1.AzurePrivateEndpoint, target string) pe.Desired {
	s := obj.Spec
	return pe.Desired{
		Name: obj.AzurePrivateEndpointName(), Location: s.Location, SubnetID: s.SubnetID, Target: target,
		ManualApproval: s.ManualApproval, RequestMessage: s.RequestMessage, IPAddress: s.IPAddress, Owner: owner(obj),
		Tags: azure.Tags(r.Opts.Tags, s.Tags), NICName: s.NetworkInterfaceName, ASGs: s.ApplicationSecurityGroupIDs,
		GroupIDs: s.GroupIDs, IPConfigs: ipConfigs(s.IPConfigurations),
	}
}

func ipConfigs(in []v1alpha1.PrivateEndpointIPConfiguration) []pe.IPConfig {
	out := make([]pe.IPConfig, 0, len(in))
	for _, c := range in {
		out = append(out, pe.IPConfig{Name: c.Name, MemberName: c.MemberName, Address: c.PrivateIPAddress})
	}
	return out
}

// endpoint observes the private endpoint with one GET and writes it only
// when it is missing or differs on what the operator sets. It reports
// whether the endpoint is provisioned with an address.
func (r *Reconciler) endpoint(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, apis azureAPI, target string) (ctrl.Result, bool, error) {
	api := apis.endpoints
	cond := v1alpha1.ConditionPrivateEndpointReady
	rg, want := obj.Spec.ResourceGroup, r.desired(obj, target)
	if r.recentlyApproved(obj) {
		// A pass that resumes soon after one that saw the endpoint
		// Approved (held back by the pacer, say) does not read it again:
		// those reads would spend the budget the next steps need. The drift
		// pass always reads.
		return ctrl.Result{}, true, nil
	}
	if r.listedUnchanged(obj, apis, rg, want.Name) {
		// A list made since the last read shows the endpoint as that
		// read found it (listed.go).
		return ctrl.Result{}, true, nil
	}
	readAt := r.clock().Now()
	observed, err := observe(ctx, obj, api, rg, want.Name)
	if err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return res, false, err
	}
	if observed == nil {
		res, err := r.create(ctx, obj, apis, want)
		return res, false, err
	}
	if o := pe.Owner(observed); o != want.Owner && (o != "" || !obj.Spec.Adopt) {
		msg := fmt.Sprintf("private endpoint %s exists and was not created by the operator (no %s tag); set spec.adopt to manage it", want.Name, pe.OwnerTag)
		if o != "" {
			msg = fmt.Sprintf("private endpoint %s belongs to AzurePrivateEndpoint %s (tag %s); the operator leaves it alone", want.Name, o, pe.OwnerTag)
		}
		res, err := r.fail(ctx, obj, cond, terminal(ReasonNotOwned, "%s", msg))
		return res, false, err
	}
	if field := pe.Immutable(want, observed); field != "" {
		if field == pe.FieldTarget && obj.Spec.CloudProviderService != nil {
			res, err := r.retarget(ctx, obj, apis, observed, want)
			return res, false, err
		}
		res, err := r.fail(ctx, obj, cond, terminal(ReasonImmutableChanged,
			"private endpoint %s differs from the spec in %s, which Azure cannot change: delete the endpoint in Azure (the operator creates it again) or change the spec back", want.Name, field))
		return res, false, err
	}
	obj.Status.PrivateEndpointID = ptr.Deref(observed.ID, "")
	st := ptr.Deref(observed.Properties.ProvisioningState, "")
	obj.Status.ProvisioningState = string(st)
	switch st {
	case armnetwork.ProvisioningStateSucceeded:
	case armnetwork.ProvisioningStateFailed:
		// Written again: the same PUT often passes once Azure recovers; the
		// next look waits TerminalRecheck, not to hammer Azure.
		if err := api.Put(ctx, rg, want.Name, pe.Body(want, observed)); err != nil {
			res, err := r.fail(ctx, obj, cond, err)
			return res, false, err
		}
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioningFailed, "Azure reports provisioningState Failed; the operator wrote the endpoint again")
		return ctrl.Result{RequeueAfter: r.Opts.TerminalRecheck}, false, nil
	default:
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "Azure reports provisioningState "+string(st))
		return r.requeueSoon(ctx), false, nil
	}
	if diff := pe.Drift(want, observed); len(diff) > 0 {
		if err := api.Put(ctx, rg, want.Name, pe.Body(want, observed)); err != nil {
			res, err := r.fail(ctx, obj, cond, err)
			return res, false, err
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventUpdated, "Update", "updating private endpoint %s: %s differ", want.Name, strings.Join(diff, ", "))
		setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "updating "+strings.Join(diff, ", "))
		return r.requeueSoon(ctx), false, nil
	}
	if err := r.address(ctx, obj, api, observed); err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return res, false, err
	}
	setCondition(obj, cond, metav1.ConditionTrue, ReasonReady, "provisioned, address "+strings.Join(obj.Status.IPAddresses, ", "))
	r.sawRead(obj, observed, readAt)
	return ctrl.Result{}, true, nil
}

// address records the endpoint's connection and addresses: every address
// Azure names in customDnsConfigs (one per member of an Azure service's
// sub-resource), else the NIC's. The NIC is read only when it is new to the
// operator: a NIC keeps its address, and a recreated endpoint gets a new
// NIC.
func (r *Reconciler) address(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api endpointAPI, observed *armnetwork.PrivateEndpoint) error {
	st := &obj.Status
	o := pe.Observe(observed, nil)
	st.ConnectionState, st.ConnectionDescription = o.ConnectionState, o.ConnectionDescription
	nic := ""
	if len(o.NICIDs) > 0 {
		nic = o.NICIDs[0]
	}
	configs, ips := pe.DNSConfigs(observed)
	switch {
	case len(ips) > 0:
	case nic != "" && strings.EqualFold(nic, st.NetworkInterfaceID) && len(st.IPAddresses) > 0:
		ips = st.IPAddresses[:1]
	case nic != "":
		ip, err := api.InterfaceIP(ctx, nic)
		if err != nil {
			return err
		}
		if ip != "" {
			ips = []string{ip}
			if r.Opts.AddressRead != nil {
				r.Opts.AddressRead(obj, nic, ip)
			}
		}
	}
	if len(ips) == 0 {
		return waitFor(ReasonNoAddress, "private endpoint %s has no address yet", o.Name)
	}
	st.NetworkInterfaceID, st.IPAddresses, st.CustomDNSConfigs = nic, ips, nil
	for _, c := range configs {
		st.CustomDNSConfigs = append(st.CustomDNSConfigs, v1alpha1.CustomDNSConfig{FQDN: c.FQDN, IPAddresses: c.IPs})
	}
	return nil
}

// create starts creating the endpoint; one that was there before (its ID is
// in status) was deleted behind the operator's back, or healed.
func (r *Reconciler) create(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, want pe.Desired) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateEndpointReady
	if len(allFQDNs(obj)) > 0 {
		// The endpoint the records pointed at is gone and its address back
		// in the subnet, for whoever asks next: the records go before a new
		// endpoint is made, and come back with its address once Approved.
		if res, err := r.removeRecords(ctx, obj, api); err != nil {
			return res, err
		}
	}
	if err := api.endpoints.Put(ctx, obj.Spec.ResourceGroup, want.Name, pe.Body(want, nil)); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if obj.Status.PrivateEndpointID != "" {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventRecreated, "Create", "creating private endpoint %s again; its address may change and the records follow it", want.Name)
	} else {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventCreated, "Create", "creating private endpoint %s to %s", want.Name, want.Target)
	}
	setCondition(obj, cond, metav1.ConditionFalse, ReasonProvisioning, "creating")
	st := &obj.Status
	st.ProvisioningState, st.ConnectionState, st.ConnectionDescription = "", "", ""
	return r.requeueSoon(ctx), nil
}

// observe reads the endpoint. An object that has never seen it nor asked
// for it will create it next, a write the budget may hold back: then the
// read is not spent either (writeHeld).
func observe(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api endpointAPI, rg, name string) (*armnetwork.PrivateEndpoint, error) {
	if obj.Status.PrivateEndpointID == "" && !createSent(obj) {
		if err := writeHeld(api); err != nil {
			return nil, err
		}
	}
	return api.Get(ctx, rg, name)
}

// createSent: the object's create reached Azure and the endpoint has not
// been seen since (create's condition).
func createSent(obj *v1alpha1.AzurePrivateEndpoint) bool {
	c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.ConditionPrivateEndpointReady)
	return c != nil && c.Reason == ReasonProvisioning
}

// untargeted runs while the target cannot be resolved (the Service's
// private link service is gone, the AzurePrivateLinkService lost its
// service): the endpoint made for the last target may have lost its
// connection with it, and the connection phase, which removes the records
// of such an endpoint, does not run without a target. So the endpoint is
// read, only while the object has records: if its connection is not
// Approved (or it is gone), the records go, as in the connection phase. A
// working endpoint keeps them, and is read again only as often as the
// endpoint phase reads an Approved one (a target that stays unresolved,
// say an AzurePrivateLinkService deleted with deletionPolicy Orphan, would
// otherwise cost a read at every recheck).
func (r *Reconciler) untargeted(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (ctrl.Result, error) {
	if len(allFQDNs(obj)) == 0 || r.recentlyApproved(obj) {
		return ctrl.Result{}, nil
	}
	observed, err := api.endpoints.Get(ctx, obj.Spec.ResourceGroup, obj.AzurePrivateEndpointName())
	if err != nil {
		return r.fail(ctx, obj, v1alpha1.ConditionDNSReady, err)
	}
	state := pe.StateDisconnected
	if observed != nil {
		o := pe.Observe(observed, nil)
		if o.ConnectionState == pe.StateApproved {
			r.sawApproved(obj)
			return ctrl.Result{}, nil
		}
		state = o.ConnectionState
		obj.Status.ConnectionState, obj.Status.ConnectionDescription = o.ConnectionState, o.ConnectionDescription
	}
	reason := ReasonDisconnected
	switch state {
	case pe.StatePending:
		reason = ReasonPending
	case pe.StateRejected:
		reason = ReasonRejected
	}
	setCondition(obj, v1alpha1.ConditionConnectionApproved, metav1.ConditionFalse, reason,
		"the endpoint's connection is "+state+" and its target cannot be resolved")
	r.dnsWaits(obj, state)
	return r.removeRecords(ctx, obj, api)
}

// connection follows the endpoint's connection state. Approved lets the DNS
// phase run; Pending waits for the provider; Rejected and Disconnected
// remove the records (the names must not lead to an endpoint that carries
// nothing, nor to an address a heal frees); a Disconnected endpoint is
// healed after the grace period by deleting it, so that the next pass
// creates it again and the records follow its new address.
func (r *Reconciler) connection(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, dnsOK bool) (ctrl.Result, bool, error) {
	cond := v1alpha1.ConditionConnectionApproved
	st := obj.Status.ConnectionState
	msg := "the provider set the connection " + st
	if d := obj.Status.ConnectionDescription; d != "" {
		msg += ": " + d
	}
	key := owner(obj)
	if st != pe.StateApproved && dnsOK {
		r.dnsWaits(obj, st)
	}
	if st != pe.StateRejected {
		// Nothing to ask again: the value in the spec now is the one a
		// later rejection is compared with.
		obj.Status.RequestedRevision = obj.Spec.RequestRevision
	}
	switch st {
	case pe.StateApproved:
		r.heal.Ready(key)
		r.sawApproved(obj)
		setCondition(obj, cond, metav1.ConditionTrue, ReasonApproved, msg)
		return ctrl.Result{RequeueAfter: r.Opts.drift()}, true, nil
	case pe.StatePending:
		reason, m := ReasonPending, "waiting for the provider to approve the connection"
		if obj.Spec.ManualApproval {
			reason, m = ReasonWaitingForApproval, "manual approval requested: waiting for the private link service's owner to approve it"
		}
		setCondition(obj, cond, metav1.ConditionFalse, reason, m)
		return ctrl.Result{RequeueAfter: r.Opts.ConnectionCheck}, false, nil
	}
	reason := ReasonDisconnected
	if st == pe.StateRejected {
		reason = ReasonRejected
	}
	setCondition(obj, cond, metav1.ConditionFalse, reason, msg)
	// Records exist only while an Approved endpoint of the object holds
	// their address: they go while Rejected or Disconnected, and before a
	// heal deletes the endpoint (its address is freed then).
	if res, err := r.removeRecords(ctx, obj, api); err != nil {
		return res, false, err
	}
	if st == pe.StateRejected && obj.Spec.ManualApproval && obj.Spec.RequestRevision != obj.Status.RequestedRevision {
		res, err := r.askAgain(ctx, obj, api)
		return res, false, err
	}
	if !r.Opts.Heal.Breaks(st) {
		return ctrl.Result{RequeueAfter: r.Opts.ConnectionCheck}, false, nil
	}
	due, wait := r.heal.Observe(key, true)
	if !due {
		if wait <= 0 {
			wait = r.Opts.ConnectionCheck // healing is off: keep watching
		}
		return ctrl.Result{RequeueAfter: min(wait, r.Opts.ConnectionCheck)}, false, nil
	}
	name := obj.AzurePrivateEndpointName()
	forgetObject(&r.dnsSeen, key)
	ctx = azure.WithDeletionReason(ctx, "healing: the connection is "+st+" past --heal-disconnected-after; the endpoint is made again")
	if err := api.endpoints.Delete(ctx, obj.Spec.ResourceGroup, name); err != nil {
		res, err := r.fail(ctx, obj, cond, err)
		return res, false, err
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventHealed, "Heal",
		"private endpoint %s was %s for longer than %s: deleted to create it again against the private link service as it is now", name, st, r.Opts.Heal.DisconnectedAfter)
	setCondition(obj, cond, metav1.ConditionFalse, reason, msg+"; the operator deleted the endpoint to create it again")
	return r.requeueSoon(ctx), false, nil
}

// askAgain answers a new spec.requestRevision while the connection is
// Rejected: the endpoint's manual connection is written back Pending, with
// the request message, so that the provider decides again.
func (r *Reconciler) askAgain(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (ctrl.Result, error) {
	cond := v1alpha1.ConditionConnectionApproved
	name, rejected := obj.AzurePrivateEndpointName(), obj.Status.ConnectionDescription
	observed, err := api.endpoints.Get(ctx, obj.Spec.ResourceGroup, name)
	if err != nil || observed == nil {
		if err == nil {
			err = waitFor(ReasonProvisioning, "private endpoint %s is gone", name)
		}
		return r.fail(ctx, obj, cond, err)
	}
	body := pe.Body(r.desired(obj, obj.Status.Target), observed)
	if !pe.AskAgain(&body, obj.Spec.RequestMessage) {
		return r.fail(ctx, obj, cond, terminal(ReasonImmutableChanged, "private endpoint %s has no manual connection to ask again with", name))
	}
	if err := api.endpoints.Put(ctx, obj.Spec.ResourceGroup, name, body); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	obj.Status.RequestedRevision = obj.Spec.RequestRevision
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventAskedAgain, "RequestAgain",
		"spec.requestRevision %q: asked the provider again (it had rejected the connection: %q)", obj.Spec.RequestRevision, rejected)
	setCondition(obj, cond, metav1.ConditionFalse, ReasonWaitingForApproval, fmt.Sprintf("asked the provider again (spec.requestRevision %q); it had rejected the connection: %s", obj.Spec.RequestRevision, rejected))
	return r.requeueSoon(ctx), nil
}

// dnsWaits says on DNSReady why no record is written while the connection
// is not Approved (unless the zone or its links reported a problem, which
// stays visible).
func (r *Reconciler) dnsWaits(obj *v1alpha1.AzurePrivateEndpoint, state string) {
	cond := v1alpha1.ConditionDNSReady
	switch {
	case obj.Spec.DNS == nil:
		setCondition(obj, cond, metav1.ConditionTrue, ReasonNotRequested, "spec.dns is not set")
	case state == pe.StateRejected:
		setCondition(obj, cond, metav1.ConditionFalse, ReasonRejected, "the connection was rejected: no record points at the endpoint")
	case state == pe.StateDisconnected:
		setCondition(obj, cond, metav1.ConditionFalse, ReasonDisconnected, "the connection is Disconnected: the records follow the endpoint once it is healed and Approved again")
	default:
		setCondition(obj, cond, metav1.ConditionFalse, ReasonWaitingForApproval, "records are written once the connection is Approved")
	}
}

// sawApproved records that the endpoint was just observed Approved, for
// recentlyApproved.
func (r *Reconciler) sawApproved(obj *v1alpha1.AzurePrivateEndpoint) {
	r.dnsSeen.Set(approvedKey(obj), fmt.Sprint(obj.Generation), r.clock().Now())
}

// recentlyApproved says the endpoint was observed provisioned and Approved,
// for this generation, within half the drift interval.
func (r *Reconciler) recentlyApproved(obj *v1alpha1.AzurePrivateEndpoint) bool {
	st := obj.Status
	return st.ProvisioningState == string(armnetwork.ProvisioningStateSucceeded) && st.ConnectionState == pe.StateApproved && len(st.IPAddresses) > 0 &&
		r.dnsSeen.Fresh(approvedKey(obj), fmt.Sprint(obj.Generation), r.clock().Now(), r.Opts.DriftInterval/2)
}
