package azure

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Identity types CAPZ supports in AzureClusterIdentity.spec.type.
const (
	ServicePrincipal               = "ServicePrincipal"
	ManualServicePrincipal         = "ManualServicePrincipal"
	ServicePrincipalCertificate    = "ServicePrincipalCertificate"
	UserAssignedMSI                = "UserAssignedMSI"
	WorkloadIdentity               = "WorkloadIdentity"
	UserAssignedIdentityCredential = "UserAssignedIdentityCredential"
)

// SecretKey is the key of the client secret (or certificate) in the Secret
// an identity references, as in CAPZ.
const SecretKey = "clientSecret"

// Identity is the part of an AzureClusterIdentity the operator uses.
type Identity struct {
	Name, Namespace string
	UID             string
	Spec            IdentitySpec
}

// IdentitySpec mirrors the fields of AzureClusterIdentity.spec it reads.
type IdentitySpec struct {
	Type                                     string             `json:"type"`
	TenantID                                 string             `json:"tenantID,omitempty"`
	ClientID                                 string             `json:"clientID,omitempty"`
	ClientSecret                             SecretReference    `json:"clientSecret,omitempty"`
	CertPath                                 string             `json:"certPath,omitempty"`
	UserAssignedIdentityCredentialsPath      string             `json:"userAssignedIdentityCredentialsPath,omitempty"`
	UserAssignedIdentityCredentialsCloudType string             `json:"userAssignedIdentityCredentialsCloudType,omitempty"`
	AllowedNamespaces                        *AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// SecretReference names a Secret.
type SecretReference struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// AllowedNamespaces says which namespaces' clusters may use an identity.
type AllowedNamespaces struct {
	NamespaceList []string              `json:"list,omitempty"`
	Selector      *metav1.LabelSelector `json:"selector,omitempty"`
}

// ParseIdentity reads an AzureClusterIdentity.
func ParseIdentity(u *unstructured.Unstructured) (*Identity, error) {
	id := &Identity{Name: u.GetName(), Namespace: u.GetNamespace(), UID: string(u.GetUID())}
	spec, _, err := unstructured.NestedMap(u.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("AzureClusterIdentity %s/%s: spec: %w", id.Namespace, id.Name, err)
	}
	if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(spec, &id.Spec); err != nil {
		return nil, fmt.Errorf("AzureClusterIdentity %s/%s: spec: %w", id.Namespace, id.Name, err)
	}
	switch id.Spec.Type {
	case ServicePrincipal, ManualServicePrincipal, ServicePrincipalCertificate, UserAssignedMSI, WorkloadIdentity, UserAssignedIdentityCredential:
	default:
		return nil, fmt.Errorf("AzureClusterIdentity %s/%s: spec.type %q is not an identity type CAPZ supports", id.Namespace, id.Name, id.Spec.Type)
	}
	return id, nil
}

// NeedsSecret reports whether the identity's credential is in a Secret.
func (id *Identity) NeedsSecret() bool {
	switch id.Spec.Type {
	case ServicePrincipal, ManualServicePrincipal:
		return true
	case ServicePrincipalCertificate:
		return id.Spec.CertPath == ""
	}
	return false
}

// SecretRef returns the Secret holding the credential; a reference without
// namespace means the identity's namespace.
func (id *Identity) SecretRef() SecretReference {
	ref := id.Spec.ClientSecret
	if ref.Namespace == "" {
		ref.Namespace = id.Namespace
	}
	return ref
}

// AllowedIn applies CAPZ's rule for spec.allowedNamespaces: unset allows no
// namespace, an empty object allows all, otherwise the namespace must be in
// the list or match a non-empty selector (nsLabels are its labels).
func (id *Identity) AllowedIn(namespace string, nsLabels map[string]string) (bool, error) {
	an := id.Spec.AllowedNamespaces
	if an == nil {
		return false, nil
	}
	if reflect.DeepEqual(*an, AllowedNamespaces{}) {
		return true, nil
	}
	if slices.Contains(an.NamespaceList, namespace) {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(an.Selector)
	if err != nil {
		return false, &AllowedNamespacesError{Err: fmt.Errorf("AzureClusterIdentity %s/%s: spec.allowedNamespaces.selector: %w", id.Namespace, id.Name, err)}
	}
	if sel.Empty() {
		return false, nil
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// AllowedNamespacesError is an identity's malformed allowedNamespaces (a
// person must fix it), as opposed to an error reading the namespace.
type AllowedNamespacesError struct{ Err error }

func (e *AllowedNamespacesError) Error() string { return e.Err.Error() }
func (e *AllowedNamespacesError) Unwrap() error { return e.Err }

// CachedKinds are the kinds credentials and identity checks read from a
// client's cache: AzureClusterIdentities and Namespaces (their labels, for
// allowedNamespaces selectors). A manager whose Reader is its cached client
// declares them (cacheconfig.Cached).
func CachedKinds() []client.Object {
	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	return []client.Object{id, &corev1.Namespace{}}
}

// Namespace reads a namespace's labels.
type Namespace func(ctx context.Context, name string) (map[string]string, error)

// NamespaceLabels reads a namespace's labels through r.
func NamespaceLabels(r client.Reader) Namespace {
	return func(ctx context.Context, name string) (map[string]string, error) {
		ns := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			return nil, err
		}
		return ns.Labels, nil
	}
}

// Allows is AllowedIn for a namespace whose labels are read (through
// labelsOf) only when the identity selects namespaces by label.
func (id *Identity) Allows(ctx context.Context, labelsOf Namespace, namespace string) (bool, error) {
	var nsLabels map[string]string
	if id.UsesSelector() {
		var err error
		if nsLabels, err = labelsOf(ctx, namespace); err != nil {
			return false, err
		}
	}
	return id.AllowedIn(namespace, nsLabels)
}

// UsesSelector reports whether AllowedIn needs the namespace's labels.
func (id *Identity) UsesSelector() bool {
	an := id.Spec.AllowedNamespaces
	return an != nil && an.Selector != nil && (len(an.Selector.MatchLabels) > 0 || len(an.Selector.MatchExpressions) > 0)
}
