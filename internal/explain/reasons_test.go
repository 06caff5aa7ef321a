package explain

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// ownReasons are the reasons explain gives from what it reads itself;
// every other reason of the table is one of the operator's conditions.
var ownReasons = []string{ReasonNotFound, ReasonIsManagement, ReasonPaused, ReasonNotSelected, ReasonNoPrivateLinks,
	ReasonPrivateLinksWait, ReasonNotYetWired, ReasonConditionsMissing, ReasonEndpointNotInAzure, ReasonAnnotationOutdated,
	ReasonDNSRecordMissing, ReasonDNSRecordDiffers}

// TestEveryConditionReason: for every reason of the troubleshooting table
// the operator writes in a workload cluster's condition, explain stops
// where the table says, waiting or needing a person as the table says,
// with the table's fix and the condition's message; for every one of the
// management cluster's, likewise at its own step. The test world
// (TestExplain, clusterlink's tests) shows the operator writing them;
// this shows what explain makes of each.
func TestEveryConditionReason(t *testing.T) {
	ctx := context.Background()
	mcKey := types.NamespacedName{Namespace: "org-giantswarm", Name: "mc"}
	for reason := range fixes {
		if slices.Contains(ownReasons, reason) {
			continue
		}
		t.Run(reason, func(t *testing.T) {
			typ := clusterlink.ConditionGSPrivateLinksReady
			if strings.Contains(where(reason), atDNSReady) {
				typ = clusterlink.ConditionGSDNSZoneReady
			}
			wc := cluster("org-a", "wc1", 11, true)
			conds := []map[string]any{{"type": capz.ConditionPrivateLinksReady, "status": "True"},
				{"type": typ, "status": "Unknown", "reason": reason, "message": "the operator's words on " + reason}}
			if typ == clusterlink.ConditionGSDNSZoneReady {
				conds = append(conds, map[string]any{"type": clusterlink.ConditionGSPrivateLinksReady, "status": "True", "message": "ready"})
			}
			setConditions(wc, conds...)
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(wc, cluster(mcKey.Namespace, mcKey.Name, 10, false)).Build()
			r, err := Explain(ctx, c, types.NamespacedName{Namespace: "org-a", Name: "wc1"}, Options{ManagementCluster: mcKey})
			checkStop(t, r, err, reason)

			at, ok := stopsAt[reason]
			if !ok || !slices.Contains(at, atMCEntries) {
				return
			}
			// A reason of the management cluster's own condition too.
			mc := cluster(mcKey.Namespace, mcKey.Name, 10, false)
			setConditions(mc, map[string]any{"type": clusterlink.ConditionGSWorkloadClusterEndpointsReady, "status": "Unknown", "reason": reason, "message": "the operator's words on " + reason})
			c = fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(mc).Build()
			r, err = Explain(ctx, c, mcKey, Options{ManagementCluster: mcKey})
			checkStop(t, r, err, reason)
			if r.StoppedAt != atMCEntries {
				t.Errorf("the MC stopped at %q, want %q", r.StoppedAt, atMCEntries)
			}
		})
	}
}

// TestManagedPrivateLink: a cluster that declares no private link but has
// the one the operator manages for it goes on past "private links".
func TestManagedPrivateLink(t *testing.T) {
	mcKey := types.NamespacedName{Namespace: "org-giantswarm", Name: "mc"}
	wc := cluster("org-a", "wc1", 11, false)
	pls := &v1alpha1.AzurePrivateLinkService{ObjectMeta: metav1.ObjectMeta{Namespace: "org-a", Name: "wc1-api-privatelink",
		Labels: map[string]string{clusterlink.ManagedForLabel: "wc1"}}}
	pls.Status.ResourceID = "/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/wc1-rg/providers/Microsoft.Network/privateLinkServices/wc1-api-privatelink"
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(wc, cluster(mcKey.Namespace, mcKey.Name, 10, false), pls).Build()
	r, err := Explain(context.Background(), c, types.NamespacedName{Namespace: "org-a", Name: "wc1"}, Options{ManagementCluster: mcKey})
	if err != nil || r.Reason != ReasonConditionsMissing || !slices.ContainsFunc(r.Steps, func(s Step) bool {
		return s.Name == "private links" && s.State == StateOK && strings.Contains(s.Detail, "AzurePrivateLinkService org-a/wc1-api-privatelink")
	}) {
		t.Errorf("%+v, %v; want the managed link found, then the operator's verdict missing", r, err)
	}
}

// checkStop: the report stops with reason, where the table says, in the
// state it says, with its fix and the condition's message.
func checkStop(t *testing.T, r Report, err error, reason string) {
	t.Helper()
	state := StateStop
	if waits(reason) {
		state = StateWaiting
	}
	i := slices.IndexFunc(r.Steps, func(s Step) bool { return s.Name == r.StoppedAt })
	if err != nil || r.Wired || r.Reason != reason || !StopsHere(reason, r.StoppedAt) || i < 0 || r.Steps[i].State != state ||
		r.Fix != fixes[reason] || r.Message != "the operator's words on "+reason {
		t.Errorf("%+v, %v; want a stop with %s where the table says, state %s", r, err, reason, state)
	}
}

// cluster is a private AzureCluster with no Cluster API owner (nothing to
// read for a pause); withLink declares its API server's private link.
func cluster(namespace, name string, cidr int, withLink bool) *unstructured.Unstructured {
	c := testworld.Cluster{Namespace: namespace, Name: name, Subscription: "22222222-2222-2222-2222-222222222222", Private: true, CIDR16: cidr}
	if withLink {
		c.PrivateLinks = []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{"11111111-1111-1111-1111-111111111111"}}}
	}
	u := c.Object(testenv.SchemaFork)
	u.SetOwnerReferences(nil)
	u.SetLabels(nil)
	return u
}

func setConditions(u *unstructured.Unstructured, conds ...map[string]any) {
	list := make([]any, 0, len(conds))
	for _, c := range conds {
		list = append(list, c)
	}
	_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
}

func scheme(t *testing.T) *k8sruntime.Scheme {
	t.Helper()
	s := k8sruntime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
