package azure

import (
	"context"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	ctrl "sigs.k8s.io/controller-runtime"
)

type deletionReasonKey struct{}

// WithDeletionReason attaches why the Azure deletes made with ctx are made
// ("the AzurePrivateEndpoint is deleted", "healing: Disconnected for 2m",
// …); deleteLog logs it with each one.
func WithDeletionReason(ctx context.Context, reason string) context.Context {
	return context.WithValue(ctx, deletionReasonKey{}, reason)
}

// DeletionReason is the reason WithDeletionReason attached, or "".
func DeletionReason(ctx context.Context) string {
	s, _ := ctx.Value(deletionReasonKey{}).(string)
	return s
}

// deleteLog logs every DELETE the operator sends to Azure — a resource, a
// record set, a link, a connection — at the default level, once per
// request (not per try), with Azure's answer, the resource's ID and the
// reason the caller gave. The owner is in the logger the reconcile put in
// the request's context (controller, namespace, name, reconcileID).
type deleteLog struct{}

func (deleteLog) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	if raw.Method != http.MethodDelete {
		return req.Next()
	}
	resp, err := req.Next()
	ctx := raw.Context()
	reason := DeletionReason(ctx)
	if reason == "" {
		reason = "unstated"
	}
	log := ctrl.LoggerFrom(ctx).WithValues("azureResource", raw.URL.Path, "reason", reason)
	switch {
	case err != nil:
		log.Info("delete in Azure not answered", "error", err.Error())
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusNoContent:
		log.Info("deleted in Azure: it was gone already", "status", resp.StatusCode)
	case resp.StatusCode < 300:
		log.Info("deleted in Azure", "status", resp.StatusCode)
	default:
		log.Info("delete in Azure refused", "status", resp.StatusCode)
	}
	return resp, err
}
