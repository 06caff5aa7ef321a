package clusterlink

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// ManagedLinks are the settings of the managed-private-link-service
// controller.
type ManagedLinks struct {
	// PrivateLinkServices enables the upstream-CAPZ loop: the controller
	// runs, so private WCs without privateLinks may get an
	// AzurePrivateLinkService (see ManagePrivateLinkServices).
	PrivateLinkServices bool
	// ManagePrivateLinkServices is the loop's default for every WC; the
	// annotation <prefix>/manage-private-link-service overrides it per WC.
	ManagePrivateLinkServices bool
}

// ManagedLinkReconciler keeps the AzurePrivateLinkService the operator
// makes for a workload cluster whose CAPZ makes none (ManagesLink):
// created and kept as DesiredManagedLink says, deleted when the cluster
// opts out or is deleted. It is the only writer of those objects but one:
// the end of a hand-over, which the wiring decides from what it observes
// of the endpoints (finishHandOver, handover.go) and which deletes through
// the same deleteManagedLink. The wiring reads the objects (linksAsWired)
// and wires to them once they are Ready.
type ManagedLinkReconciler struct {
	Client   client.Client
	Opts     Options
	Recorder events.EventRecorder

	// mc is the wiring's snapshot of the management cluster.
	mc     *mcSnapshot
	memory EventMemory
}

// Reconcile keeps one workload cluster's managed private link service, in
// phases: read, pause, deletion (at once, before the wiring's finalizer
// goes), what the cluster asks for, apply or delete.
func (r *ManagedLinkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u, wc, errs, err := ReadActiveWC(ctx, r.Client, req, r.Opts.ManagementCluster)
	if err != nil || u == nil {
		return ctrl.Result{}, err
	}
	if wc.Deleting {
		return ctrl.Result{}, r.releaseManagedLink(ctx, u, wc)
	}
	// The wiring reports an invalid spec or a missing MC; nothing is made
	// for such a cluster, and nothing it has is taken away.
	if !r.Opts.Selected(u) || len(errs) > 0 {
		return ctrl.Result{}, nil
	}
	mcs, err := r.mc.read(ctx, r.Client, r.Opts.ManagementCluster)
	if err != nil || mcs.u == nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.ensureManagedLink(ctx, u, wc, mcs.view)
}

func (r *ManagedLinkReconciler) warnOnce(u *unstructured.Unstructured, reason, msg string) {
	WarnOnce(r.Recorder, &r.memory, u, reason, msg)
}

// ensureManagedLink applies the WC's managed AzurePrivateLinkService when
// it is missing or differs, and deletes it when the WC opted out (a
// hand-over keeps it until the wiring is done with it).
func (r *ManagedLinkReconciler) ensureManagedLink(ctx context.Context, u *unstructured.Unstructured, wc, mc *capz.AzureCluster) error {
	existing, foreign, err := managedLink(ctx, r.Client, wc)
	if err != nil {
		return err
	}
	if foreign {
		if ManagesLink(wc, r.Opts) {
			r.warnOnce(u, ReasonPrivateLinkServiceNameTaken, fmt.Sprintf(
				"AzurePrivateLinkService %s/%s exists and was not created by the operator for this cluster (no label %s=%s); the operator leaves it alone and creates none",
				wc.Namespace, existing.Name, ManagedForLabel, wc.Name))
		}
		return nil
	}
	if !ManagesLink(wc, r.Opts) {
		if HandingOver(wc, existing) {
			return nil // deleted once the declared link serves (finishHandOver)
		}
		return r.leaveManagedLink(ctx, u, wc, existing)
	}
	want := DesiredManagedLink(mc, wc, u.GetUID(), r.Opts.AnnotationPrefix)
	if !upToDate(existing, want) {
		if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(want), client.FieldOwner(capz.FieldManager), client.ForceOwnership); err != nil {
			return err
		}
		if existing == nil {
			r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonPrivateLinkServiceRequested, "ManagePrivateLink",
				"created AzurePrivateLinkService %s/%s for the API server load balancer %s (upstream CAPZ has no private link services)", wc.Namespace, want.GetName(), wc.APIServerLBName)
		}
	}
	return nil
}

// releaseManagedLink deletes a deleted WC's managed AzurePrivateLinkService
// at once: waiting for garbage collection would deadlock, since CAPZ cannot
// delete the load balancer while a private link service uses it.
func (r *ManagedLinkReconciler) releaseManagedLink(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster) error {
	p, foreign, err := managedLink(ctx, r.Client, wc)
	if err != nil || p == nil || foreign {
		return err
	}
	return deleteManagedLink(ctx, r.Client, r.Recorder, u, p)
}

// deleteManagedLink deletes a WC's (u) managed AzurePrivateLinkService,
// the one it read (UID precondition), and records it on u.
func deleteManagedLink(ctx context.Context, c client.Client, rec events.EventRecorder, u *unstructured.Unstructured, p *v1alpha1.AzurePrivateLinkService) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	if err := c.Delete(ctx, p, client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
		return err
	}
	rec.Eventf(u, nil, corev1.EventTypeNormal, ReasonPrivateLinkServiceReleased, "ManagePrivateLink",
		"deleting AzurePrivateLinkService %s/%s, which the operator created for this cluster", p.Namespace, p.Name)
	return nil
}

// leaveManagedLink decides what becomes of the managed service of a WC the
// loop no longer serves: none, nothing; a link the WC declares (CAPZ v1.27
// and later) under the same name, kept, as CAPZ cannot take it over; under
// another name, handed over (HandingOver); otherwise (an opt-out) deleted
// at once.
func (r *ManagedLinkReconciler) leaveManagedLink(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, existing *v1alpha1.AzurePrivateLinkService) error {
	if existing == nil {
		return nil
	}
	if len(wc.PrivateLinks) > 0 {
		if _, same := findLink(wc, existing.AzurePrivateLinkServiceName()); same {
			// Azure refuses to change a private link service's primary NAT
			// IP configuration, which CAPZ names differently.
			r.warnOnce(u, ReasonPrivateLinkServiceNotHandedOver, fmt.Sprintf(
				"spec.networkSpec.apiServerLB.privateLinks declares %s, the private link service the operator made for this cluster (AzurePrivateLinkService %s/%s); CAPZ cannot take it over, because Azure refuses to change its primary NAT IP configuration, which CAPZ names <subnet>-natipconfig-1. The operator keeps serving it: remove the link from privateLinks, or declare one under another name",
				existing.AzurePrivateLinkServiceName(), existing.Namespace, existing.Name))
			return nil
		}
	}
	return deleteManagedLink(ctx, r.Client, r.Recorder, u, existing)
}
