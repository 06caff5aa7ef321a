package privateendpoint

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
)

// serviceTarget finds the private link service cloud-provider-azure made
// for spec.cloudProviderService, by its tags, with one list of the
// resource group. A pass soon after one that saw the endpoint Approved
// keeps status.target without listing; the drift pass lists again, and so
// notices a Service that was recreated.
func (r *Reconciler) serviceTarget(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI) (string, error) {
	ref := obj.Spec.CloudProviderService
	if obj.Status.Target != "" && r.recentlyApproved(obj) {
		return obj.Status.Target, nil
	}
	sub := ref.SubscriptionID
	if sub == "" {
		sub = obj.Spec.SubscriptionID
	}
	all, err := api.services.List(ctx, sub, ref.ResourceGroup)
	if azure.IsNotFound(err) {
		return "", waitLong(r.Opts.ConnectionCheck, ReasonTargetNotReady,
			"resource group %s of spec.cloudProviderService is not in subscription %s (spec.cloudProviderService.subscriptionID, default spec.subscriptionID): %v",
			ref.ResourceGroup, sub, azureobject.Classify(err).Message)
	}
	if err != nil {
		return "", err
	}
	found := pls.ServiceOwner(all, ref.Namespace, ref.Name, ref.ClusterName)
	owner := ref.Namespace + "/" + ref.Name
	switch len(found) {
	case 0:
		in := ""
		if ref.ClusterName != "" {
			in = fmt.Sprintf(" and %s=%s", pls.CloudProviderClusterTag, ref.ClusterName)
		}
		// Nothing to react to: the Service lives in another cluster, and
		// each look lists the group, so it is looked at again only as
		// often as a Pending connection.
		return "", waitLong(r.Opts.ConnectionCheck, ReasonTargetNotReady,
			"no private link service in resource group %s (subscription %s) has the tags %s=%s%s: cloud-provider-azure makes it when the Service has the annotation service.beta.kubernetes.io/azure-pls-create: \"true\" (a Service sharing another's load balancer frontend uses that Service's private link service: name that Service)",
			ref.ResourceGroup, sub, pls.CloudProviderOwnerTag, owner, in)
	case 1:
		return ptr.Deref(found[0].ID, ""), nil
	}
	return "", terminal(ReasonTargetAmbiguous,
		"%d private link services in resource group %s belong to Service %s (%s): set spec.cloudProviderService.clusterName to the one to connect to",
		len(found), ref.ResourceGroup, owner, describeServices(found))
}

// describeServices names private link services and their clusters, sorted.
func describeServices(services []*armnetwork.PrivateLinkService) string {
	out := make([]string, 0, len(services))
	for _, s := range services {
		out = append(out, fmt.Sprintf("%s of cluster %q", ptr.Deref(s.Name, ""), pls.ClusterOf(s)))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// retarget replaces an endpoint whose Service's private link service is
// now another one: cloud-provider-azure made a new one (the Service was
// recreated, and the default name follows its load balancer frontend), and
// Azure cannot point an endpoint at another service. The records go
// first, as before a heal (the endpoint's address is freed), then the
// endpoint; the next pass creates it against the new service.
func (r *Reconciler) retarget(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, observed *armnetwork.PrivateEndpoint, want pe.Desired) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPrivateEndpointReady
	was := pe.Observe(observed, nil).PrivateLinkServiceID
	if observed.Properties != nil && ptr.Deref(observed.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateDeleting {
		setCondition(obj, cond, metav1.ConditionFalse, ReasonTargetMoved, "waiting for Azure to delete the endpoint that connects to "+was)
		return r.requeueSoon(ctx), nil
	}
	ctx = azure.WithDeletionReason(ctx, "the target service moved from "+was+": the endpoint is made again against the new one")
	if res, err := r.removeRecords(ctx, obj, api); err != nil {
		return res, err
	}
	forgetObject(&r.dnsSeen, owner(obj))
	if err := api.endpoints.Delete(ctx, obj.Spec.ResourceGroup, want.Name); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	ref := obj.Spec.CloudProviderService
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, EventRetargeted, "Retarget",
		"the private link service of Service %s/%s is now %s (the endpoint %s connects to %s): deleted the endpoint to create it against the new one",
		ref.Namespace, ref.Name, want.Target, want.Name, was)
	setCondition(obj, cond, metav1.ConditionFalse, ReasonTargetMoved, "the Service's private link service is now "+want.Target+"; replacing the endpoint that connects to "+was)
	setCondition(obj, v1alpha1.ConditionConnectionApproved, metav1.ConditionFalse, ReasonTargetMoved, "the endpoint is being replaced to connect to "+want.Target)
	st := &obj.Status
	st.ProvisioningState, st.ConnectionState, st.ConnectionDescription = "", "", ""
	return r.requeueSoon(ctx), nil
}
