// Package v1alpha1 holds the operator's own API: the
// privatelink.giantswarm.io/v1alpha1 group.
//
// +kubebuilder:object:generate=true
// +groupName=privatelink.giantswarm.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API's group and version.
	GroupVersion = schema.GroupVersion{Group: "privatelink.giantswarm.io", Version: "v1alpha1"}

	// SchemeBuilder registers the API's types.
	SchemeBuilder = k8sruntime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *k8sruntime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AzurePrivateLinkService{}, &AzurePrivateLinkServiceList{}, &AzurePrivateEndpoint{}, &AzurePrivateEndpointList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
