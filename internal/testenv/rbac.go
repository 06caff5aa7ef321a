package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// OperatorUser is the user the operator's controllers act as in tests that
// run them under the chart's RBAC (AsOperator): the chart's ServiceAccount.
const OperatorUser = "system:serviceaccount:giantswarm:azure-private-endpoint-operator"

// operatorRole is the ClusterRole AsOperator binds OperatorUser to.
const operatorRole = "test-azure-private-endpoint-operator"

// PublishSecretsRule is the rule the chart adds with
// privateEndpoints.publishSecrets (templates/clusterrole-publish-secrets.yaml),
// which --publish-secrets needs.
var PublishSecretsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "patch", "delete"}}

// AsOperator returns a config for the API server that acts as the chart's
// ServiceAccount, bound to exactly the rules the chart grants it:
// config/rbac/role.yaml, which `make generate` writes from the
// controllers' +kubebuilder:rbac markers and copies into the chart (the
// chart's test checks the copy). A controller that reads or writes what
// the chart does not allow is refused here as in a cluster, rather than
// passing as an administrator. The leader-election rules are not granted:
// tests run without leader election. extra rules are granted beside them,
// in a role of their own, as the chart's optional roles are (RBAC is
// additive: they stay granted for the rest of the environment's life).
func (e *Env) AsOperator(ctx context.Context, extra ...rbacv1.PolicyRule) (*rest.Config, error) {
	root := repoRoot()
	if root == "" {
		return nil, fmt.Errorf("the operator's module root was not found above the working directory")
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		return nil, fmt.Errorf("config/rbac/role.yaml: %w", err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Name: operatorRole}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: operatorRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operatorRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: OperatorUser}},
	}
	if err := e.bind(ctx, role, binding); err != nil {
		return nil, err
	}
	for i, r := range extra {
		name := fmt.Sprintf("%s-extra-%d-%s", operatorRole, i, strings.Join(r.Resources, "-"))
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{r}}
		b := binding.DeepCopy()
		b.ObjectMeta, b.RoleRef.Name = metav1.ObjectMeta{Name: name}, name
		if err := e.bind(ctx, role, b); err != nil {
			return nil, err
		}
	}
	user, err := e.env.ControlPlane.AddUser(envtest.User{Name: OperatorUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.Config(), nil
}

// GrantManagementClusterRole grants OperatorUser, in namespace (the
// management cluster's), the Role the chart grants there
// (config/rbac/mc_namespace_role.yaml: the MC's endpoint objects beyond
// its AzureCluster), as the chart's templates/mc-namespace-rbac.yaml does.
func (e *Env) GrantManagementClusterRole(ctx context.Context, namespace string) error {
	root := repoRoot()
	if root == "" {
		return fmt.Errorf("the operator's module root was not found above the working directory")
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "mc_namespace_role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.Role{}
	if err := yaml.UnmarshalStrict(raw, role); err != nil {
		return fmt.Errorf("config/rbac/mc_namespace_role.yaml: %w", err)
	}
	role.ObjectMeta = metav1.ObjectMeta{Namespace: namespace, Name: operatorRole + "-management-cluster"}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: role.ObjectMeta,
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: OperatorUser}},
	}
	if err := e.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Role %s/%s: %w", namespace, role.Name, err)
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding Role %s/%s: %w", namespace, role.Name, err)
	}
	return nil
}

// bind creates a ClusterRole and its binding unless they exist.
func (e *Env) bind(ctx context.Context, role *rbacv1.ClusterRole, binding *rbacv1.ClusterRoleBinding) error {
	if err := e.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ClusterRole %s: %w", role.Name, err)
	}
	if err := e.Client.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("binding ClusterRole %s: %w", role.Name, err)
	}
	return nil
}
