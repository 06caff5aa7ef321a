package identityguard

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// wiringHolds is the index value of an AzureCluster the wiring holds (its
// finalizer is on it): while there is one, the identities every release
// needs (the management cluster's, the DNS zone identity) are in use. It
// has no "/", so it never equals an identity's key.
const wiringHolds = "wiring"

// key is an identity's or a Secret's index value.
func key(namespace, name string) string { return namespace + "/" + name }

func parseKey(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

// ref's key; an empty namespace is the object's (the API's rule).
func refKey(ref *v1alpha1.IdentityReference, namespace string) string {
	if ref.Namespace != "" {
		namespace = ref.Namespace
	}
	return key(namespace, ref.Name)
}

// endpointIdentities are the identities an AzurePrivateEndpoint's cleanup
// may need: the endpoint's, its DNS zone's and the additional zones',
// from the spec and from the status (a zone written with an identity the
// spec no longer names is released with that identity).
func endpointIdentities(o client.Object) []string {
	e, ok := o.(*v1alpha1.AzurePrivateEndpoint)
	if !ok {
		return nil
	}
	var refs []*v1alpha1.IdentityReference
	refs = append(refs, e.Spec.IdentityRef, e.Status.DNSIdentityRef)
	if e.Spec.DNS != nil {
		refs = append(refs, e.Spec.DNS.IdentityRef)
		for i := range e.Spec.DNS.AdditionalZones {
			refs = append(refs, e.Spec.DNS.AdditionalZones[i].IdentityRef)
		}
	}
	for i := range e.Status.DNSZones {
		refs = append(refs, e.Status.DNSZones[i].IdentityRef)
	}
	return keys(refs, e.Namespace)
}

// serviceIdentities are the identities an AzurePrivateLinkService's
// cleanup needs.
func serviceIdentities(o client.Object) []string {
	s, ok := o.(*v1alpha1.AzurePrivateLinkService)
	if !ok {
		return nil
	}
	return keys([]*v1alpha1.IdentityReference{s.Spec.IdentityRef}, s.Namespace)
}

// clusterIdentities are the index values of an AzureCluster: nothing while
// the wiring does not hold it; otherwise its own identity (CAPZ's
// identityRef: orphans and DNS in its subscription are released with it)
// and wiringHolds. CAPZ protects the identity too, but only until its own
// cleanup of the cluster ends, which is before the wiring's.
func clusterIdentities(o client.Object) []string {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || !slices.Contains(u.GetFinalizers(), clusterlink.Finalizer) {
		return nil
	}
	out := []string{wiringHolds}
	if id := identityOf(u); id != "" {
		out = append(out, id)
	}
	return out
}

// identityOf is the key of an AzureCluster's spec.identityRef, or "". Only
// those fields are read: the MC's object carries an entry per WC.
func identityOf(u *unstructured.Unstructured) string { return specRef(u, "identityRef") }

// secretOf is the key of the Secret an AzureClusterIdentity reads
// (spec.clientSecret), or "".
func secretOf(o client.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return specRef(u, "clientSecret")
	}
	return ""
}

// specRef is the key of the reference spec.<field> of an object, or ""
// without a name; its namespace defaults to the object's, as CAPZ reads
// both identityRef and clientSecret.
func specRef(u *unstructured.Unstructured, field string) string {
	name, _, _ := unstructured.NestedString(u.Object, "spec", field, "name")
	if name == "" {
		return ""
	}
	ns, _, _ := unstructured.NestedString(u.Object, "spec", field, "namespace")
	if ns == "" {
		ns = u.GetNamespace()
	}
	return key(ns, name)
}

func keys(refs []*v1alpha1.IdentityReference, namespace string) []string {
	var out []string
	for _, r := range refs {
		if r == nil || r.Name == "" {
			continue
		}
		if k := refKey(r, namespace); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
