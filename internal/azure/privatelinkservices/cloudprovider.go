package privatelinkservices

import (
	"context"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/utils/ptr"
)

// The tags cloud-provider-azure writes on every private link service it
// makes for a Service with service.beta.kubernetes.io/azure-pls-create
// (kubernetes-sigs/cloud-provider-azure, pkg/consts/consts.go
// OwnerServiceTagKey and ClusterNameTagKey; written by reconcilePLSTags in
// pkg/provider/azure_privatelinkservice.go).
const (
	// CloudProviderOwnerTag holds the owning Service as <namespace>/<name>
	// (getServiceName in pkg/provider/azure_standard.go). A Service that
	// shares another's load balancer frontend shares its private link
	// service without becoming its owner.
	CloudProviderOwnerTag = "k8s-azure-owner-service"
	// CloudProviderClusterTag holds the cluster's name (cloud-provider's
	// --cluster-name). cloud-provider-azure itself manages a private link
	// service only when this tag names its cluster, compared
	// case-insensitively after trimming spaces (isManagedPrivateLinkSerivce).
	CloudProviderClusterTag = "k8s-azure-cluster-name"
)

// ServiceOwner picks, from a resource group's private link services, those
// cloud-provider-azure made for the Service namespace/name: both of its
// tags are present, the owner tag names the Service and, when cluster is
// not empty, the cluster tag names that cluster; none is being deleted. Tag values are compared
// the way cloud-provider-azure compares them (case-insensitive; the
// cluster name trimmed).
func ServiceOwner(services []*armnetwork.PrivateLinkService, namespace, name, cluster string) []*armnetwork.PrivateLinkService {
	var out []*armnetwork.PrivateLinkService
	owner := namespace + "/" + name
	for _, s := range services {
		if s == nil || s.Properties != nil && ptr.Deref(s.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateDeleting {
			// One being deleted is gone for a consumer: cloud-provider-azure
			// deletes the old service before it makes the new one.
			continue
		}
		o, c := tag(s.Tags, CloudProviderOwnerTag), tag(s.Tags, CloudProviderClusterTag)
		if o == nil || c == nil || !strings.EqualFold(*o, owner) {
			continue
		}
		if cluster != "" && !strings.EqualFold(strings.TrimSpace(*c), strings.TrimSpace(cluster)) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// tag reads a tag by name. Azure keeps a tag name's case as written and
// matches names case-insensitively.
func tag(tags map[string]*string, name string) *string {
	if v, ok := tags[name]; ok {
		return v
	}
	for k, v := range tags {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// ClusterOf is the cluster tag of a private link service cloud-provider-azure
// made ("" without one).
func ClusterOf(s *armnetwork.PrivateLinkService) string {
	return strings.TrimSpace(ptr.Deref(tag(s.Tags, CloudProviderClusterTag), ""))
}

// List lists a resource group's private link services in a subscription.
func (s SDK) List(ctx context.Context, subscription, rg string) ([]*armnetwork.PrivateLinkService, error) {
	f, err := s.factory(ctx, subscription)
	if err != nil {
		return nil, err
	}
	return all(ctx, f.NewPrivateLinkServicesClient().NewListPager(rg, nil), func(p armnetwork.PrivateLinkServicesClientListResponse) []*armnetwork.PrivateLinkService {
		return p.Value
	})
}
