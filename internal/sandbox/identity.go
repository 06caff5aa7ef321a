package sandbox

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Identity is a ServicePrincipal AzureClusterIdentity and its Secret.
type Identity struct {
	Namespace, Name, SecretName      string
	TenantID, ClientID, ClientSecret string
}

// CreateIdentity creates the identity's namespace (if missing), Secret and
// AzureClusterIdentity, allowed in every namespace.
func (sb *Sandbox) CreateIdentity(ctx context.Context, id Identity) error {
	if err := sb.EnsureNamespace(ctx, id.Namespace); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: id.Namespace, Name: id.SecretName},
		Data: map[string][]byte{"clientSecret": []byte(id.ClientSecret)}}
	if err := sb.Client.Create(ctx, secret); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"type": "ServicePrincipal", "tenantID": id.TenantID, "clientID": id.ClientID,
		"clientSecret":      map[string]any{"name": id.SecretName, "namespace": id.Namespace},
		"allowedNamespaces": map[string]any{},
	}}}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	u.SetNamespace(id.Namespace)
	u.SetName(id.Name)
	return sb.Client.Create(ctx, u)
}

// EnsureNamespace creates a namespace unless it exists.
func (sb *Sandbox) EnsureNamespace(ctx context.Context, name string) error {
	err := sb.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
