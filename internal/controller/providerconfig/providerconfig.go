// Package providerconfig writes, for each workload cluster, the Crossplane
// ProviderConfig the older azure-private-endpoint-operator's 0.6 and 0.7
// generate (--crossplane-provider-configs), so that Giant Swarm's
// Crossplane private DNS resources keep working when 0.7 is swapped for
// this binary. Crossplane is not imported: the ProviderConfig is
// unstructured.
//
// What 0.6/0.7 do, and so what this does (their
// controllers/providerconfig_controller.go at v0.7.0):
//   - for a Cluster whose infrastructure is an AzureCluster, the cluster's
//     identityRef and spec.subscriptionID; an AzureManagedCluster, its
//     AzureManagedControlPlane's; an AzureASOManagedCluster, the Secret
//     named by the serviceoperator.azure.com/credential-from annotation of
//     the first resource of its AzureASOManagedControlPlane
//     (AZURE_CLIENT_ID, AZURE_SUBSCRIPTION_ID, AZURE_TENANT_ID);
//   - an AzureClusterIdentity of type WorkloadIdentity gives tenantID and
//     clientID; other identity types get no ProviderConfig;
//   - the cluster-scoped azure.upbound.io/v1beta1 ProviderConfig named
//     after the Cluster gets spec.credentials.source
//     UserAssignedManagedIdentity, clientID, subscriptionID and tenantID;
//   - the Cluster carries the finalizer azure.giantswarm.io/providerconfig
//     until the ProviderConfig is deleted with it.
//
// Where this differs, it is safer and says so: the identity is looked up
// where identityRef.namespace says (0.7 looked only in the Cluster's
// namespace) and only when its allowedNamespaces let the Cluster's
// namespace use it, as CAPZ does — a ProviderConfig lets Crossplane act
// as that identity; only the four fields are written (0.7 replaced the
// whole spec); and a ProviderConfig of that name another Cluster (of
// another namespace) holds is never taken over (Event
// ProviderConfigNameTaken): 0.7 let the last writer win.
package providerconfig

import (
	"context"
	"fmt"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/cacheconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=azure.upbound.io,resources=providerconfigs,verbs=get;create;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=azuremanagedcontrolplanes;azureasomanagedcontrolplanes,verbs=get

// Finalizer is the older operator's, kept: a swap of binaries in either
// direction finds the Cluster as the other left it.
const Finalizer = "azure.giantswarm.io/providerconfig"

// ForAnnotation marks a ProviderConfig with the Cluster it was written for
// (<namespace>/<name>); ProviderConfigs are cluster-scoped and named after
// the Cluster alone.
const ForAnnotation = "privatelink.giantswarm.io/provider-config-for"

// CredentialFromAnnotation is ASO's annotation naming the Secret an ASO
// resource's credential comes from.
const CredentialFromAnnotation = "serviceoperator.azure.com/credential-from"

// Event reasons.
const (
	EventWritten   = "ProviderConfigWritten"
	EventDeleted   = "ProviderConfigDeleted"
	EventNameTaken = "ProviderConfigNameTaken"
	// EventInvalidCredentials: the client, subscription or tenant ID read
	// from an ASO credential Secret is not a GUID; nothing is written.
	EventInvalidCredentials = "ProviderConfigInvalidCredentials"
)

var (
	// ProviderConfigGVK is Crossplane's Azure provider's ProviderConfig.
	ProviderConfigGVK = schema.GroupVersionKind{Group: "azure.upbound.io", Version: "v1beta1", Kind: "ProviderConfig"}
	infraGroup        = capz.AzureClusterGVK.Group
	managedCPGVK      = schema.GroupVersionKind{Group: infraGroup, Version: "v1beta1", Kind: "AzureManagedControlPlane"}
	asoCPGVK          = schema.GroupVersionKind{Group: infraGroup, Version: "v1beta1", Kind: "AzureASOManagedControlPlane"}
)

// Credentials is what a ProviderConfig says: Crossplane's Azure provider
// authenticates with workload identity as ClientID in TenantID.
type Credentials struct {
	ClientID, SubscriptionID, TenantID string
}

// invalid names the first field that is not a GUID, as every Azure client,
// subscription and tenant ID is; "" when all are.
func (c Credentials) invalid() string {
	for _, f := range []struct{ name, value string }{
		{"the client ID", c.ClientID}, {"the subscription ID", c.SubscriptionID}, {"the tenant ID", c.TenantID},
	} {
		if !guid.MatchString(f.value) {
			return f.name
		}
	}
	return ""
}

// guid is the form of Azure's IDs (8-4-4-4-12 hexadecimal digits).
var guid = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Spec is the ProviderConfig's spec the older operator writes (pure).
func Spec(c Credentials) map[string]any {
	return map[string]any{
		"credentials":    map[string]any{"source": "UserAssignedManagedIdentity"},
		"clientID":       c.ClientID,
		"subscriptionID": c.SubscriptionID,
		"tenantID":       c.TenantID,
	}
}

// Options configure the controller.
type Options struct {
	// Generate writes ProviderConfigs (--crossplane-provider-configs). Off,
	// the controller only lets deleted Clusters go that carry the
	// finalizer (0.6/0.7 put it there), deleting their ProviderConfig as
	// 0.7 would have: a swap without the flag never leaves a Cluster stuck.
	Generate bool
	// Recheck is how often a Cluster is looked at again (its identity may
	// have changed; nothing watches it).
	Recheck time.Duration
}

// Reconciler keeps one Cluster's ProviderConfig.
type Reconciler struct {
	Opts   Options
	Client client.Client
	// Reader reads uncached what is read once per reconcile and never
	// watched: ProviderConfigs, the managed control planes, ASO credential
	// Secrets. The chart grants only get on them; a cached read would start
	// an informer that needs list and watch, and wait for it forever.
	Reader   client.Reader
	Recorder events.EventRecorder
}

// Setup registers the controller.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Recheck <= 0 {
		opts.Recheck = 10 * time.Minute
	}
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	r := &Reconciler{Opts: opts, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: rec}
	// An ASO ProviderConfig's identity and its namespace's labels come
	// from the cache.
	if err := cacheconfig.Cached(mgr, azure.CachedKinds()...); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("crossplane-provider-config").
		For(capz.Object(capz.ClusterGVK)).
		Complete(r)
}

// Reconcile writes or deletes the Cluster's ProviderConfig.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := capz.Object(capz.ClusterGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cluster.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, r.release(ctx, cluster)
	}
	if !r.Opts.Generate {
		return ctrl.Result{}, nil
	}
	creds, skip, err := r.credentials(ctx, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	if skip != "" {
		ctrl.LoggerFrom(ctx).V(1).Info("no ProviderConfig", "why", skip)
		return ctrl.Result{}, nil
	}
	if bad := creds.invalid(); bad != "" {
		// A tenant's Secret is copied into a cluster-scoped object every
		// reader of ProviderConfigs sees: only values of the form Azure
		// gives them pass. Secrets are not watched: looked at again later.
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventInvalidCredentials, "Write",
			"no Crossplane ProviderConfig: %s is not a GUID; fix the ASO credential Secret", bad)
		return ctrl.Result{RequeueAfter: r.Opts.Recheck}, nil
	}
	if !controllerutil.ContainsFinalizer(cluster, Finalizer) {
		patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(cluster, Finalizer)
		if err := r.Client.Patch(ctx, cluster, patch); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}
	return ctrl.Result{RequeueAfter: r.Opts.Recheck}, r.write(ctx, cluster, creds)
}

// credentials resolves the Cluster's identity as 0.7 does; skip says why a
// Cluster gets no ProviderConfig (an unsupported kind or identity type).
func (r *Reconciler) credentials(ctx context.Context, cluster *unstructured.Unstructured) (Credentials, string, error) {
	ns := cluster.GetNamespace()
	infraKind, _, _ := unstructured.NestedString(cluster.Object, "spec", "infrastructureRef", "kind")
	infraName, _, _ := unstructured.NestedString(cluster.Object, "spec", "infrastructureRef", "name")
	cpName, _, _ := unstructured.NestedString(cluster.Object, "spec", "controlPlaneRef", "name")
	var holder *unstructured.Unstructured
	switch infraKind {
	case capz.AzureClusterGVK.Kind:
		holder = capz.Object(capz.AzureClusterGVK)
		holder.SetName(infraName)
	case "AzureManagedCluster":
		holder = capz.Object(managedCPGVK)
		holder.SetName(cpName)
	case "AzureASOManagedCluster":
		return r.asoCredentials(ctx, ns, cpName)
	default:
		return Credentials{}, "infrastructure kind " + infraKind + " is not supported", nil
	}
	holder.SetNamespace(ns)
	var reader client.Reader = r.Client // AzureClusters are watched (the wiring)
	if holder.GetKind() != capz.AzureClusterGVK.Kind {
		reader = r.Reader
	}
	if err := reader.Get(ctx, client.ObjectKeyFromObject(holder), holder); err != nil {
		return Credentials{}, "", fmt.Errorf("reading %s %s/%s: %w", holder.GetKind(), ns, holder.GetName(), err)
	}
	sub, _, _ := unstructured.NestedString(holder.Object, "spec", "subscriptionID")
	ref, _, _ := unstructured.NestedStringMap(holder.Object, "spec", "identityRef")
	if ref["name"] == "" {
		return Credentials{}, fmt.Sprintf("%s %s/%s has no identityRef", holder.GetKind(), ns, holder.GetName()), nil
	}
	if ref["kind"] != "" && ref["kind"] != capz.AzureClusterIdentityGVK.Kind {
		return Credentials{}, "identityRef kind " + ref["kind"] + " is not supported", nil
	}
	idNS := ref["namespace"]
	if idNS == "" {
		idNS = ns
	}
	u := capz.Object(capz.AzureClusterIdentityGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: idNS, Name: ref["name"]}, u); err != nil {
		return Credentials{}, "", fmt.Errorf("reading AzureClusterIdentity %s/%s: %w", idNS, ref["name"], err)
	}
	id, err := azure.ParseIdentity(u)
	if err != nil {
		return Credentials{}, "", err
	}
	if id.Spec.Type != "WorkloadIdentity" {
		return Credentials{}, "identity type " + id.Spec.Type + " is not supported (only WorkloadIdentity)", nil
	}
	if ok, err := id.Allows(ctx, azure.NamespaceLabels(r.Client), ns); err != nil || !ok {
		return Credentials{}, fmt.Sprintf("AzureClusterIdentity %s/%s does not allow namespace %s", idNS, id.Name, ns), err
	}
	return Credentials{ClientID: id.Spec.ClientID, SubscriptionID: sub, TenantID: id.Spec.TenantID}, "", nil
}

// asoCredentials reads the Secret the ASO control plane's first resource
// takes its credential from.
func (r *Reconciler) asoCredentials(ctx context.Context, ns, cpName string) (Credentials, string, error) {
	cp := capz.Object(asoCPGVK)
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: cpName}, cp); err != nil {
		return Credentials{}, "", fmt.Errorf("reading AzureASOManagedControlPlane %s/%s: %w", ns, cpName, err)
	}
	resources, _, _ := unstructured.NestedSlice(cp.Object, "spec", "resources")
	var secret string
	if len(resources) > 0 {
		if m, ok := resources[0].(map[string]any); ok {
			secret, _, _ = unstructured.NestedString(m, "metadata", "annotations", CredentialFromAnnotation)
		}
	}
	if secret == "" {
		return Credentials{}, fmt.Sprintf("AzureASOManagedControlPlane %s/%s: its first resource has no %s annotation", ns, cpName, CredentialFromAnnotation), nil
	}
	s := &corev1.Secret{}
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: secret}, s); err != nil {
		return Credentials{}, "", fmt.Errorf("reading ASO credential Secret %s/%s: %w", ns, secret, err)
	}
	return Credentials{
		ClientID: string(s.Data["AZURE_CLIENT_ID"]), SubscriptionID: string(s.Data["AZURE_SUBSCRIPTION_ID"]), TenantID: string(s.Data["AZURE_TENANT_ID"]),
	}, "", nil
}

// owner says whose the ProviderConfig is: ours for this Cluster, ours for
// another, or the older operator's (no mark; it wrote the same name).
func owner(pc *unstructured.Unstructured) string { return pc.GetAnnotations()[ForAnnotation] }

// write creates the ProviderConfig or brings its four fields up to date,
// never touching one another Cluster holds.
func (r *Reconciler) write(ctx context.Context, cluster *unstructured.Unstructured, creds Credentials) error {
	key := cluster.GetNamespace() + "/" + cluster.GetName()
	pc := capz.Object(ProviderConfigGVK)
	err := r.Reader.Get(ctx, types.NamespacedName{Name: cluster.GetName()}, pc)
	switch {
	case apierrors.IsNotFound(err):
		pc = capz.Object(ProviderConfigGVK)
		pc.SetName(cluster.GetName())
		pc.SetAnnotations(map[string]string{ForAnnotation: key})
		pc.Object["spec"] = Spec(creds)
		if err := r.Client.Create(ctx, pc); err != nil {
			return err
		}
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, EventWritten, "Create", "created Crossplane ProviderConfig %s (client %s, subscription %s)", pc.GetName(), creds.ClientID, creds.SubscriptionID)
		return nil
	case meta.IsNoMatchError(err):
		return fmt.Errorf("the ProviderConfig CRD (azure.upbound.io/v1beta1) is not installed: install Crossplane's Azure provider or turn off --crossplane-provider-configs: %w", err)
	case err != nil:
		return err
	}
	if o := owner(pc); o != "" && o != key {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, EventNameTaken, "Write",
			"Crossplane ProviderConfig %s belongs to Cluster %s (ProviderConfigs are named after the Cluster alone): left as it is; this Cluster gets none", pc.GetName(), o)
		return nil
	}
	before := pc.DeepCopy()
	spec, _, _ := unstructured.NestedMap(pc.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	for k, v := range Spec(creds) {
		spec[k] = v
	}
	pc.Object["spec"] = spec
	a := pc.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[ForAnnotation] = key
	pc.SetAnnotations(a)
	if equalSpecs(before, pc) && owner(before) == key {
		return nil
	}
	if err := r.Client.Patch(ctx, pc, client.MergeFrom(before)); err != nil {
		return err
	}
	r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, EventWritten, "Update", "updated Crossplane ProviderConfig %s (client %s, subscription %s)", pc.GetName(), creds.ClientID, creds.SubscriptionID)
	return nil
}

func equalSpecs(a, b *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(a.Object["spec"], b.Object["spec"])
}

// release deletes the Cluster's ProviderConfig (when it is this Cluster's,
// or unmarked: the older operator's) and removes the finalizer.
func (r *Reconciler) release(ctx context.Context, cluster *unstructured.Unstructured) error {
	if !controllerutil.ContainsFinalizer(cluster, Finalizer) {
		return nil
	}
	key := cluster.GetNamespace() + "/" + cluster.GetName()
	pc := capz.Object(ProviderConfigGVK)
	err := r.Reader.Get(ctx, types.NamespacedName{Name: cluster.GetName()}, pc)
	switch {
	case err == nil && (owner(pc) == "" || owner(pc) == key):
		uid := pc.GetUID()
		if err := r.Client.Delete(ctx, pc, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, EventDeleted, "Delete", "deleted Crossplane ProviderConfig %s with its Cluster", pc.GetName())
	case err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return err
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(cluster, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, cluster, patch))
}
