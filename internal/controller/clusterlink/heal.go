package clusterlink

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// maybeHeal heals a broken endpoint when its time has come, and otherwise
// says how long until it may be healed (0: not broken, or healed now). In
// DNS mode the grace period starts only once the records no longer hold
// the endpoint's address ip: deleting it frees that address for the next
// endpoint made in the subnet, anybody's.
func (r *WCReconciler) maybeHeal(ctx context.Context, u *unstructured.Unstructured, owner *capz.AzureCluster, ep Endpoint, state, ip, key string) time.Duration {
	if ep.placed() {
		// The AzurePrivateEndpoint controller heals its own endpoints
		// (the same heal.Policy); a second healer would race it.
		return 0
	}
	broken := r.Opts.Heal.Breaks(state)
	if err := r.followASOHeal(ctx, owner, ep); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "asking CAPZ to make a healed endpoint's ASO object again", "endpoint", ep.Name)
	}
	if healWaitsForDNS(broken, r.heal.Grace > 0, func() bool { return r.dnsAllowsHeal(u, ep.Direction, ip) }) {
		r.warnOnce(u, ReasonHealWaitsForDNS, fmt.Sprintf(
			"private endpoint %s is %s: its records are removed before it may be healed (deleting it frees address %s for the next endpoint in the subnet)", ep.Name, state, ip))
		return r.Opts.PendingRecheckInterval() // the DNS controller removes the records, then wakes this cluster
	}
	if broken && r.asoPaused(ctx, owner, ep) {
		r.warnOnce(u, ReasonHealWaitsForPause, fmt.Sprintf(
			"private endpoint %s is %s, but CAPZ has paused its ASO PrivateEndpoint (a paused cluster, clusterctl move): it is healed once CAPZ resumes it, never behind the pause", ep.Name, state))
		return r.Opts.PendingRecheckInterval() // CAPZ's resume is an event of the ASO object
	}
	heal, wait := r.heal.Observe(key, broken)
	if heal {
		r.healEndpoint(ctx, u, owner, ep, state)
	}
	return wait
}

// healEndpoint deletes a broken endpoint — through its ASO object where
// CAPZ makes endpoints through ASO (healaso.go), else in Azure; CAPZ, which
// made it from the AzureCluster's spec, makes it again, connected to the
// private link service as it is now, and the new IP is published when it
// is approved.
func (r *WCReconciler) healEndpoint(ctx context.Context, u *unstructured.Unstructured, owner *capz.AzureCluster, ep Endpoint, state string) {
	if done, err := r.healThroughASO(ctx, u, owner, ep, state); done || err != nil {
		if err != nil {
			c := azure.Classify(err)
			r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, c.Reason, "Heal",
				"cannot delete the ASO PrivateEndpoint of %s private endpoint %s to heal it: %s", state, ep.Name, c.Message)
		}
		return
	}
	if err := r.Endpoints.Delete(azure.WithDeletionReason(ctx, "healing: the endpoint is "+state+"; CAPZ makes it again from the entry"), owner, ep.Name); err != nil {
		c := azure.Classify(err)
		r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, c.Reason, "Heal",
			"cannot delete %s private endpoint %s to heal it: %s", state, ep.Name, c.Message)
		return
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeWarning, ReasonEndpointHealed, "Heal",
		"private endpoint %s in %s/%s was %s for longer than %s: deleted in Azure so that CAPZ recreates it against private link service %s",
		ep.Name, owner.Namespace, owner.Name, state, r.Opts.Heal.DisconnectedAfter, ep.Connections[0].PrivateLinkServiceID)
}
