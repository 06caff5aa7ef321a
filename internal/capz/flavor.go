package capz

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Flavor is which CAPZ an installed AzureCluster CRD belongs to. The
// operator reads it from the CRD's schema, never from a flag.
type Flavor string

const (
	// FlavorFork is the CAPZ fork: apiServerLB.privateLinks with the NAT
	// list spelled natIpConfigurations. It makes the private link services
	// and deletes the private endpoints removed from spec.
	FlavorFork Flavor = "fork"
	// FlavorUpstream is upstream CAPZ before v1.27: no privateLinks. It
	// leaves private endpoints removed from spec (their ASO objects) behind.
	FlavorUpstream Flavor = "upstream"
	// FlavorUpstreamPrivateLinks is upstream CAPZ v1.27 and later: native
	// privateLinks spelled natIPConfigurations, made through ASO; it deletes
	// the ASO objects of private endpoints removed from spec itself.
	FlavorUpstreamPrivateLinks Flavor = "upstream-private-links"
	// FlavorUnknown is reported when the CRD could not be read or understood.
	FlavorUnknown Flavor = "unknown"
)

// Flavors are the flavors the operator reports, for metrics.
var Flavors = []Flavor{FlavorFork, FlavorUpstream, FlavorUpstreamPrivateLinks, FlavorUnknown}

// DetectFlavor reads the flavor from the AzureCluster CRD: the schema of
// the version the operator reads (v1beta1), else of the storage version.
func DetectFlavor(crd *apiextensionsv1.CustomResourceDefinition) Flavor {
	if crd == nil {
		return FlavorUnknown
	}
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		cand := &crd.Spec.Versions[i]
		if cand.Name == AzureClusterGVK.Version || (v == nil && cand.Storage) {
			v = cand
		}
	}
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return FlavorUnknown
	}
	s := v.Schema.OpenAPIV3Schema
	for _, step := range []string{"spec", "networkSpec", "apiServerLB", "privateLinks"} {
		next, ok := s.Properties[step]
		if !ok {
			if step == "privateLinks" {
				return FlavorUpstream
			}
			return FlavorUnknown
		}
		s = &next
	}
	if s.Items == nil || s.Items.Schema == nil {
		return FlavorUnknown
	}
	link := s.Items.Schema.Properties
	switch {
	case has(link, "natIpConfigurations"):
		return FlavorFork
	case has(link, "natIPConfigurations"):
		return FlavorUpstreamPrivateLinks
	}
	return FlavorUnknown
}

func has(m map[string]apiextensionsv1.JSONSchemaProps, k string) bool {
	_, ok := m[k]
	return ok
}

// OrphanCleanup is how the operator cleans up the private endpoints CAPZ
// leaves behind when the operator removes them from spec.
type OrphanCleanup string

const (
	// OrphansInAzure deletes, in Azure, an endpoint with CAPZ's owned tag
	// that stayed out of spec for two sweeps, unless an ASO object stands
	// behind it.
	OrphansInAzure OrphanCleanup = "azure"
	// OrphansThroughASO deletes the ASO PrivateEndpoint object CAPZ left
	// (ASO then deletes the Azure resource), and in Azure only endpoints no
	// ASO object stands behind.
	OrphansThroughASO OrphanCleanup = "aso"
	// OrphansByCAPZ leaves the cleanup to CAPZ, which does it.
	OrphansByCAPZ OrphanCleanup = "capz"
)

// OrphanCleanupFor says how to clean up after a flavor; aso says whether
// ASO's PrivateEndpoint CRD is installed.
func OrphanCleanupFor(f Flavor, aso bool) OrphanCleanup {
	switch {
	case f == FlavorUpstreamPrivateLinks:
		return OrphansByCAPZ
	case f == FlavorUpstream && aso:
		return OrphansThroughASO
	default:
		return OrphansInAzure
	}
}
