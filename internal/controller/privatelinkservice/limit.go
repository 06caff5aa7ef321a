package privatelinkservice

import (
	"context"
	"net/http"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// Azure allows 800 private link services per subscription ("Azure
// subscription and service limits", Private Link limits;
// internal/azuresim/limits.go enforces the same figure), counting every
// service in it, whoever made it. Before creating one the operator counts
// them (a list of the subscription's services, only when it creates: a
// service that exists is never counted against itself) and creates none at
// --private-link-service-limit: the object says
// PrivateLinkServicesPerSubscriptionLimit instead of Azure refusing the
// request; from 90 % a Warning says the subscription nears it.
const (
	// AzureServicesPerSubscription is Azure's limit of private link
	// services in one subscription.
	AzureServicesPerSubscription = 800

	// ReasonSubscriptionLimit: the service is not created, the
	// subscription holds as many as the limit allows.
	ReasonSubscriptionLimit = "PrivateLinkServicesPerSubscriptionLimit"
	// EventSubscriptionLimitNear: creating the service brings the
	// subscription to 90 % of the limit or more.
	EventSubscriptionLimitNear = "PrivateLinkServicesPerSubscriptionLimitNear"
)

// lockSubscription takes the lock of a subscription's creations; with the
// limit off there is nothing to serialize.
func (r *Reconciler) lockSubscription(sub string) (unlock func()) {
	if r.Opts.SubscriptionLimit <= 0 {
		return func() {}
	}
	m, _ := r.creating.LoadOrStore(strings.ToLower(sub), &sync.Mutex{})
	mu, _ := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// withinSubscriptionLimit is nil when the service may be created: the
// subscription holds fewer services than the limit (with the limit off,
// always). It publishes the count and warns from 90 %.
func (r *Reconciler) withinSubscriptionLimit(ctx context.Context, obj *v1alpha1.AzurePrivateLinkService, api plsAPI) error {
	limit := r.Opts.SubscriptionLimit
	if limit <= 0 {
		return nil
	}
	n, err := api.Count(ctx)
	if azure.Classify(err).StatusCode == http.StatusForbidden {
		// An identity that may read services only in resource groups
		// cannot count them: the creation goes ahead as before the limit
		// existed, and Azure's own refusal is what it gets at 800.
		ctrl.LoggerFrom(ctx).Info("Cannot count the subscription's private link services (no subscription-wide read): creating without the limit's check",
			"subscription", obj.Spec.SubscriptionID, "message", azure.Classify(err).Message)
		return nil
	}
	if err != nil {
		return err
	}
	limitmetrics.Set(limitmetrics.PrivateLinkServices, obj.Spec.SubscriptionID, n, limit)
	if n >= limit {
		return terminal(ReasonSubscriptionLimit,
			"subscription %s holds %d private link services, the limit is %d (--private-link-service-limit; Azure allows %d per subscription): "+
				"the service is created once another is deleted; services that exist stay",
			obj.Spec.SubscriptionID, n, limit, AzureServicesPerSubscription)
	}
	if (n+1)*10 >= limit*9 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventSubscriptionLimitNear, "Create",
			"creating private link service %s brings subscription %s to %d private link services of %d (--private-link-service-limit; Azure allows %d per subscription)",
			obj.AzurePrivateLinkServiceName(), obj.Spec.SubscriptionID, n+1, limit, AzureServicesPerSubscription)
	}
	return nil
}
