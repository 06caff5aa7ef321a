package privatelinkservices

import (
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

// TestServiceOwner: only services with both of cloud-provider-azure's tags
// are candidates; the owner and cluster are compared as cloud-provider-azure
// compares them.
func TestServiceOwner(t *testing.T) {
	svc := func(name string, tags map[string]string) *armnetwork.PrivateLinkService {
		s := &armnetwork.PrivateLinkService{Name: new(name), Tags: map[string]*string{}}
		for k, v := range tags {
			s.Tags[k] = new(v)
		}
		return s
	}
	all := []*armnetwork.PrivateLinkService{
		nil,
		svc("pls-a1", map[string]string{CloudProviderOwnerTag: "ingress/nginx", CloudProviderClusterTag: "wc1"}),
		svc("pls-a2", map[string]string{CloudProviderOwnerTag: "Ingress/NGINX", CloudProviderClusterTag: " WC2 "}),
		svc("no-cluster-tag", map[string]string{CloudProviderOwnerTag: "ingress/nginx"}),
		svc("other-service", map[string]string{CloudProviderOwnerTag: "ingress/nginx-internal", CloudProviderClusterTag: "wc1"}),
		svc("tag-name-case", map[string]string{"K8S-Azure-Owner-Service": "kube-system/dns", "k8s-azure-cluster-name": "wc1"}),
		svc("untagged", nil),
		deleting(svc("pls-old", map[string]string{CloudProviderOwnerTag: "ingress/nginx", CloudProviderClusterTag: "wc1"})),
	}
	for _, tc := range []struct {
		name, namespace, service, cluster string
		want                              []string
	}{
		{name: "any cluster", namespace: "ingress", service: "nginx", want: []string{"pls-a1", "pls-a2"}},
		{name: "one cluster", namespace: "ingress", service: "nginx", cluster: "wc1", want: []string{"pls-a1"}},
		{name: "cluster name trimmed, any case", namespace: "ingress", service: "nginx", cluster: "wc2", want: []string{"pls-a2"}},
		{name: "unknown cluster", namespace: "ingress", service: "nginx", cluster: "wc3"},
		{name: "no prefix match", namespace: "ingress", service: "ngin"},
		{name: "tag names in any case", namespace: "kube-system", service: "dns", want: []string{"tag-name-case"}},
		{name: "no such service", namespace: "default", service: "web"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range ServiceOwner(all, tc.namespace, tc.service, tc.cluster) {
				got = append(got, *s.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if got := ClusterOf(all[2]); got != "WC2" {
		t.Errorf("ClusterOf: %q", got)
	}
}

func deleting(s *armnetwork.PrivateLinkService) *armnetwork.PrivateLinkService {
	s.Properties = &armnetwork.PrivateLinkServiceProperties{ProvisioningState: new(armnetwork.ProvisioningStateDeleting)}
	return s
}
