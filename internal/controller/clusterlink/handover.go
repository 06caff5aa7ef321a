package clusterlink

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// finishHandOver deletes a handing-over WC's managed service (wc as its
// spec declares its links) once the
// first declared link's endpoint serves the API server annotation: it is
// ready, the WC already carries its address, and the MC-side records
// (DNS mode) hold it. The MC's endpoint to the managed service goes with
// the service (the next MC reconcile no longer keeps it).
func (r *WCReconciler) finishHandOver(ctx context.Context, u *unstructured.Unstructured, wc *capz.AzureCluster, toWC []Endpoint, o observation) error {
	if !r.Opts.PrivateLinkServices || len(toWC) == 0 {
		return nil
	}
	pls, _, err := managedLink(ctx, r.Client, wc)
	if err != nil || !HandingOver(wc, pls) {
		return err
	}
	api := r.Opts.Annotation(AnnotationAPIServerIP)
	ip := o.annotations[api]
	if !handOverDone(toWC[0], pls.AzurePrivateLinkServiceName(), o.apiSourceReady, u.GetAnnotations()[api], ip, func() bool {
		return r.dnsHolds(u, DirectionMCToWC, ip)
	}) {
		return nil
	}
	if err := deleteManagedLink(ctx, r.Client, r.Recorder, u, pls); err != nil {
		return err
	}
	r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, ReasonPrivateLinkServiceHandedOver, "ManagePrivateLink",
		"private link %s serves the API server (endpoint %s, %s): the private link service the operator made for this cluster goes, and the management cluster's endpoint to it", toWC[0].Link, toWC[0].Name, ip)
	return nil
}
