package clusterlink

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Upstream CAPZ creates no private link services, so a private WC on it has
// nothing for the MC to connect to. With the loop on, the operator creates
// an AzurePrivateLinkService for the WC's API server load balancer and
// treats it as the WC's private link: the MC -> WC flow then works
// unchanged.

// ManagedForLabel marks an AzurePrivateLinkService the operator created
// for a WC; its value is the WC's name (same namespace).
const ManagedForLabel = "privatelink.giantswarm.io/managed-for"

// Annotations on a WC's AzureCluster, under the annotation prefix.
const (
	// ManageAnnotation ("true"/"false") overrides --manage-private-link-services.
	ManageAnnotation = "manage-private-link-service"
	// NATSubnetAnnotation names the NAT subnet (default: the control-plane
	// subnet).
	NATSubnetAnnotation = "private-link-service-nat-subnet"
)

// ManagedLinkName is the name of a WC's managed private link service (the
// object and the Azure resource), the fork's convention for the API link.
func ManagedLinkName(wc *capz.AzureCluster) string { return wc.Name + "-api-privatelink" }

// ManagesLink reports whether the operator provides the WC's private link:
// a private API server, no privateLinks in spec, and the loop on for it.
func ManagesLink(wc *capz.AzureCluster, opts Options) bool {
	if !opts.PrivateLinkServices || wc.APIServerLBType != capz.LBTypeInternal || len(wc.PrivateLinks) > 0 {
		return false
	}
	switch strings.ToLower(wc.Annotations[opts.AnnotationPrefix+"/"+ManageAnnotation]) {
	case "true":
		return true
	case "false":
		return false
	}
	return opts.ManagePrivateLinkServices
}

// DesiredManagedLink is the AzurePrivateLinkService for a WC, as the
// unstructured object the operator applies: the API server load
// balancer's frontend, NAT IPs in the control-plane subnet (or the
// annotated one, whose network policies it may disable), visible to and
// auto-approving the MC's subscription, owned by the WC's AzureCluster.
func DesiredManagedLink(mc, wc *capz.AzureCluster, wcUID types.UID, prefix string) *unstructured.Unstructured {
	nat := wc.Annotations[prefix+"/"+NATSubnetAnnotation]
	if nat == "" {
		nat = controlPlaneSubnet(wc)
	}
	mcSub := strings.ToLower(mc.SubscriptionID)
	spec := map[string]any{
		"subscriptionID": wc.SubscriptionID,
		"resourceGroup":  wc.ResourceGroup,
		"location":       wc.Location,
		"frontend": map[string]any{"loadBalancer": map[string]any{
			"name": wc.APIServerLBName, "frontendIPConfigurationName": wc.APIServerFrontendName,
		}},
		"natSubnet":    map[string]any{"name": nat, "fixNetworkPolicies": true},
		"visibility":   []any{mcSub},
		"autoApproval": []any{mcSub},
	}
	u := linkServiceOf(wc, spec, ManagedLinkName(wc), ManagedForLabel)
	u.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: capz.AzureClusterGVK.GroupVersion().String(), Kind: capz.AzureClusterGVK.Kind, Name: wc.Name, UID: wcUID,
	}})
	return u
}

// linkServiceOf is the AzurePrivateLinkService the operator applies for
// cluster ac (a WC's managed service, one of the MC's further services):
// spec with ac's cloud and identity, named name in ac's namespace, with
// label set to ac's name.
func linkServiceOf(ac *capz.AzureCluster, spec map[string]any, name, label string) *unstructured.Unstructured {
	if ac.AzureEnvironment != "" {
		spec["azureEnvironment"] = ac.AzureEnvironment
	}
	if ac.IdentityRef != nil {
		spec["identityRef"] = map[string]any{"name": ac.IdentityRef.Name, "namespace": ac.IdentityRef.Namespace}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AzurePrivateLinkService"))
	u.SetNamespace(ac.Namespace)
	u.SetName(name)
	u.SetLabels(map[string]string{label: ac.Name})
	return u
}

func controlPlaneSubnet(wc *capz.AzureCluster) string {
	for _, s := range wc.Subnets {
		if s.Role == capz.SubnetRoleControlPlane {
			return s.Name
		}
	}
	if len(wc.Subnets) > 0 {
		return wc.Subnets[0].Name
	}
	return ""
}

// WithManagedLink is the WC as the wiring sees it when the operator
// provides its private link: the link declared, and ready when the
// AzurePrivateLinkService is Ready for its current spec.
func WithManagedLink(wc *capz.AzureCluster, pls *v1alpha1.AzurePrivateLinkService) *capz.AzureCluster {
	out := *wc
	if pls == nil {
		return &out
	}
	out.PrivateLinks = []capz.PrivateLink{{
		Name: pls.AzurePrivateLinkServiceName(), AllowedSubscriptions: pls.Spec.Visibility, AutoApprovedSubscriptions: pls.Spec.AutoApproval,
	}}
	c := meta.FindStatusCondition(pls.Status.Conditions, v1alpha1.ConditionReady)
	out.PrivateLinksReady = c != nil && c.Status == metav1.ConditionTrue && pls.Status.ObservedGeneration == pls.Generation
	return &out
}

// managedLinks reads the operator's managed AzurePrivateLinkServices from
// the cache, by WC.
func managedLinks(ctx context.Context, c client.Reader) (map[types.NamespacedName]*v1alpha1.AzurePrivateLinkService, error) {
	list := &v1alpha1.AzurePrivateLinkServiceList{}
	// Read only, like the WC list beside it: no deep copy per MC reconcile.
	if err := c.List(ctx, list, client.HasLabels{ManagedForLabel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make(map[types.NamespacedName]*v1alpha1.AzurePrivateLinkService, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		out[types.NamespacedName{Namespace: p.Namespace, Name: p.Labels[ManagedForLabel]}] = p
	}
	return out, nil
}

// managedLink reads the AzurePrivateLinkService named for the WC; nil if
// none. foreign says it is someone else's (no managed-for label for this
// WC): the operator neither changes, uses nor deletes it.
func managedLink(ctx context.Context, c client.Reader, wc *capz.AzureCluster) (p *v1alpha1.AzurePrivateLinkService, foreign bool, err error) {
	p = &v1alpha1.AzurePrivateLinkService{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: wc.Namespace, Name: ManagedLinkName(wc)}, p); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return p, p.Labels[ManagedForLabel] != wc.Name, nil
}

// upToDate reports whether the existing object already has every field of
// the desired one that the operator applies.
func upToDate(existing *v1alpha1.AzurePrivateLinkService, want *unstructured.Unstructured) bool {
	if existing == nil || !specHas(existing, want) {
		return false
	}
	return existing.Labels[ManagedForLabel] == want.GetLabels()[ManagedForLabel] && len(existing.OwnerReferences) > 0 &&
		existing.OwnerReferences[0].UID == want.GetOwnerReferences()[0].UID
}

// specHas says whether existing's spec has every field of want's with
// want's value.
func specHas(existing *v1alpha1.AzurePrivateLinkService, want *unstructured.Unstructured) bool {
	got, err := toUnstructuredSpec(existing)
	if err != nil {
		return false
	}
	wantSpec, _, _ := unstructured.NestedMap(want.Object, "spec")
	for k, v := range wantSpec {
		if !equality.Semantic.DeepEqual(got[k], v) {
			return false
		}
	}
	return true
}

func toUnstructuredSpec(p *v1alpha1.AzurePrivateLinkService) (map[string]any, error) {
	return k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&p.Spec)
}

// linksAsWired is the WC as the wiring sees it (asWired), with the managed
// private link service the managed-link controller keeps, read from the
// cache: for the wiring and for the DNS controller, which follows it.
func linksAsWired(ctx context.Context, c client.Reader, wc *capz.AzureCluster, opts Options) (*capz.AzureCluster, error) {
	if !opts.PrivateLinkServices {
		return wc, nil
	}
	existing, foreign, err := managedLink(ctx, c, wc)
	if err != nil {
		return nil, err
	}
	return asWired(wc, existing, foreign, opts), nil
}

// asWired is the WC as the wiring sees it, given its managed
// AzurePrivateLinkService (existing, nil if none; foreign: someone
// else's): the managed link when the operator provides it, the managed
// link after the declared ones while handing over, else as declared.
func asWired(wc *capz.AzureCluster, existing *v1alpha1.AzurePrivateLinkService, foreign bool, opts Options) *capz.AzureCluster {
	switch {
	case foreign:
		return wc
	case ManagesLink(wc, opts):
		return WithManagedLink(wc, existing)
	case HandingOver(wc, existing):
		return WithHandOver(wc, existing)
	}
	return wc
}

// A WC wired through its managed service whose owner then declares
// privateLinks under another name (CAPZ upgraded to v1.27) hands over: the
// MC keeps its endpoint to the managed service, and the API server
// annotation its address, until the first declared link's endpoint is
// Approved and annotated (and, in DNS mode, the MC-side records hold its
// address); only then does the managed service go, and with it that
// endpoint. With manual approval that may take days: the MC is never cut
// off meanwhile.

// HandingOver says whether a WC hands its managed service over to links it
// declares under other names.
func HandingOver(wc *capz.AzureCluster, pls *v1alpha1.AzurePrivateLinkService) bool {
	if pls == nil || pls.DeletionTimestamp != nil || pls.Labels[ManagedForLabel] != wc.Name || len(wc.PrivateLinks) == 0 {
		return false
	}
	_, declared := findLink(wc, pls.AzurePrivateLinkServiceName())
	return !declared
}

// WithHandOver is a handing-over WC as the wiring sees it: its declared
// links first (the annotation takes the first one's endpoint once it is
// ready), then the managed service, whose endpoint the MC keeps meanwhile.
// Readiness stays CAPZ's: the managed endpoint exists and is kept anyway.
func WithHandOver(wc *capz.AzureCluster, pls *v1alpha1.AzurePrivateLinkService) *capz.AzureCluster {
	out := *wc
	out.PrivateLinks = append(slices.Clone(wc.PrivateLinks), capz.PrivateLink{
		Name: pls.AzurePrivateLinkServiceName(), AllowedSubscriptions: pls.Spec.Visibility, AutoApprovedSubscriptions: pls.Spec.AutoApproval,
	})
	return &out
}
