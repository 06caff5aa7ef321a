package clusterlink

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestManagesLink(t *testing.T) {
	ann := DefaultAnnotationPrefix + "/" + ManageAnnotation
	on := Options{AnnotationPrefix: DefaultAnnotationPrefix, ManagedLinks: ManagedLinks{PrivateLinkServices: true, ManagePrivateLinkServices: true}}
	off := on
	off.ManagePrivateLinkServices = false
	noController := on
	noController.PrivateLinkServices = false
	private := func(mut func(*capz.AzureCluster)) *capz.AzureCluster {
		wc := &capz.AzureCluster{Name: "wc", APIServerLBType: capz.LBTypeInternal}
		if mut != nil {
			mut(wc)
		}
		return wc
	}
	cases := []struct {
		reason string
		wc     *capz.AzureCluster
		opts   Options
		want   bool
	}{
		{"a private upstream WC with the flag on", private(nil), on, true},
		{"the flag off", private(nil), off, false},
		{"the flag off, the WC opts in", private(func(w *capz.AzureCluster) { w.Annotations = map[string]string{ann: "true"} }), off, true},
		{"the flag on, the WC opts out", private(func(w *capz.AzureCluster) { w.Annotations = map[string]string{ann: "False"} }), on, false},
		{"a WC whose CAPZ declares private links (the fork)", private(func(w *capz.AzureCluster) { w.PrivateLinks = []capz.PrivateLink{{Name: "x"}} }), on, false},
		{"a public API server", private(func(w *capz.AzureCluster) { w.APIServerLBType = capz.LBTypePublic }), on, false},
		{"the controller is off", private(func(w *capz.AzureCluster) { w.Annotations = map[string]string{ann: "true"} }), noController, false},
	}
	for _, c := range cases {
		if got := ManagesLink(c.wc, c.opts); got != c.want {
			t.Errorf("%s: got %v, want %v", c.reason, got, c.want)
		}
	}
}

func TestDesiredManagedLink(t *testing.T) {
	mc := &capz.AzureCluster{SubscriptionID: "AAAAAAAA-1111-1111-1111-111111111111"}
	wc := &capz.AzureCluster{Name: "wc", Namespace: "org", SubscriptionID: "s", ResourceGroup: "rg", Location: "westeurope",
		IdentityRef: &capz.ObjectRef{Name: "id", Namespace: "ids"}, APIServerLBName: "wc-internal-lb", APIServerFrontendName: "wc-internal-lb-frontEnd",
		Subnets: []capz.Subnet{{Name: "nodes", Role: capz.SubnetRoleNode}, {Name: "cp", Role: capz.SubnetRoleControlPlane}}}
	u := DesiredManagedLink(mc, wc, "uid-1", DefaultAnnotationPrefix)
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	want := map[string]any{
		"subscriptionID": "s", "resourceGroup": "rg", "location": "westeurope",
		"identityRef":  map[string]any{"name": "id", "namespace": "ids"},
		"frontend":     map[string]any{"loadBalancer": map[string]any{"name": "wc-internal-lb", "frontendIPConfigurationName": "wc-internal-lb-frontEnd"}},
		"natSubnet":    map[string]any{"name": "cp", "fixNetworkPolicies": true},
		"visibility":   []any{"aaaaaaaa-1111-1111-1111-111111111111"},
		"autoApproval": []any{"aaaaaaaa-1111-1111-1111-111111111111"},
	}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if u.GetName() != "wc-api-privatelink" || u.GetLabels()[ManagedForLabel] != "wc" || u.GetOwnerReferences()[0].UID != "uid-1" {
		t.Errorf("metadata: %s %v %v", u.GetName(), u.GetLabels(), u.GetOwnerReferences())
	}
	wc.Annotations = map[string]string{DefaultAnnotationPrefix + "/" + NATSubnetAnnotation: "pls-nat"}
	if got, _, _ := unstructured.NestedString(DesiredManagedLink(mc, wc, "uid-1", DefaultAnnotationPrefix).Object, "spec", "natSubnet", "name"); got != "pls-nat" {
		t.Errorf("annotated NAT subnet: %s", got)
	}

	existing := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{ManagedForLabel: "wc"}, OwnerReferences: []metav1.OwnerReference{{UID: "uid-1"}},
	}}
	existing.Spec = v1alpha1.AzurePrivateLinkServiceSpec{SubscriptionID: "s", ResourceGroup: "rg", Location: "westeurope",
		IdentityRef: &v1alpha1.IdentityReference{Name: "id", Namespace: "ids"},
		Frontend:    v1alpha1.Frontend{LoadBalancer: &v1alpha1.LoadBalancerFrontend{Name: "wc-internal-lb", FrontendIPConfigurationName: "wc-internal-lb-frontEnd"}},
		NATSubnet:   v1alpha1.NATSubnet{Name: "cp", FixNetworkPolicies: true},
		Visibility:  []string{"aaaaaaaa-1111-1111-1111-111111111111"}, AutoApproval: []string{"aaaaaaaa-1111-1111-1111-111111111111"},
		DeletionPolicy: v1alpha1.DeletionPolicyDelete}
	if !upToDate(existing, u) {
		t.Error("an object with the applied fields (and API defaults) is up to date")
	}
	existing.Spec.Visibility = []string{"*"}
	if upToDate(existing, u) {
		t.Error("a changed visibility is not up to date")
	}
}

func TestWithManagedLink(t *testing.T) {
	wc := &capz.AzureCluster{Name: "wc"}
	p := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Name: "wc-api-privatelink", Generation: 2}}
	p.Spec.Visibility, p.Spec.AutoApproval = []string{"m"}, []string{"m"}
	p.Status.ObservedGeneration = 2
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	got := WithManagedLink(wc, p)
	if !got.PrivateLinksReady || len(got.PrivateLinks) != 1 || got.PrivateLinks[0].Name != "wc-api-privatelink" || len(wc.PrivateLinks) != 0 {
		t.Errorf("ready: %+v (input changed: %v)", got, wc.PrivateLinks)
	}
	p.Generation = 3
	if WithManagedLink(wc, p).PrivateLinksReady {
		t.Error("Ready for an older generation is not ready")
	}
	if g := WithManagedLink(wc, nil); g.PrivateLinksReady || len(g.PrivateLinks) != 0 {
		t.Errorf("no object yet: %+v", g)
	}
}

// TestManagedLinkUpdateKeepsEndpoint: the managed AzurePrivateLinkService
// of a wired WC is updated (a new generation not yet Ready) or not Ready
// for a moment: the MC keeps the endpoint it holds.
func TestManagedLinkUpdateKeepsEndpoint(t *testing.T) {
	view := wc("wc1", func(a *capz.AzureCluster) { a.PrivateLinks = nil; a.PrivateLinksReady = false })
	p := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Name: ManagedLinkName(view), Generation: 3}}
	p.Spec.Visibility, p.Spec.AutoApproval = []string{mcSub}, []string{mcSub}
	p.Status.ObservedGeneration = 2 // the spec just changed
	p.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
	managed := WithManagedLink(view, p)
	if managed.PrivateLinksReady {
		t.Fatal("an older generation's Ready counts as ready")
	}
	name := ManagedLinkName(view) + "-privateendpoint"
	got, _ := DesiredMC(mc(), []*capz.AzureCluster{managed}, Config{}, heldFor(managed, ManagedLinkName(view)))
	if len(got) != 1 || got[0].Name != name {
		t.Errorf("while the managed service updates, the MC's endpoint %s must stay: %+v", name, got)
	}
	if got, _ := DesiredMC(mc(), []*capz.AzureCluster{managed}, Config{}, nil); len(got) != 0 {
		t.Errorf("an endpoint the MC does not hold yet waits for the service: %+v", got)
	}
}
