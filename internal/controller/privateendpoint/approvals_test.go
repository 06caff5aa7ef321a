package privateendpoint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	pls "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatelinkservices"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestApprovalsFromGit: the provider's spec approves connections by
// endpoint pattern and rejects one by name, with the reasons in both
// objects' status; a rule cannot approve what Azure rejected, and says so;
// the consumer asks again by changing spec.requestRevision and is then
// approved; a Reject rule revokes an Approved connection.
func TestApprovalsFromGit(t *testing.T) {
	w, _, manual := world(t, privateendpoint.Options{})
	setRules(t, w, "manual-svc", []v1alpha1.ConnectionRule{
		{PrivateEndpointID: peResource + "bad", Action: v1alpha1.ConnectionActionReject, Reason: "not in the service catalogue"},
		{PrivateEndpointID: strings.ToUpper(peResource) + "GIT-*", Action: v1alpha1.ConnectionActionApprove, Reason: "CHG-1 approved in Git"},
	})
	for _, name := range []string{"git-a", "bad"} {
		obj := ape(name, manual.Status.ResourceID)
		obj.Spec.ManualApproval, obj.Spec.RequestMessage = true, "team a asks for "+name
		create(t, w, obj)
	}

	got := ready(t, w, "git-a").Status
	if got.ConnectionDescription != "CHG-1 approved in Git" {
		t.Errorf("git-a: the provider's reason %q", got.ConnectionDescription)
	}
	decided(t, w, "git-a", "Approved", "rules[1]", "Approve", "CHG-1 approved in Git")

	bad := waitCondition(t, w, "bad", v1alpha1.ConditionConnectionApproved, metav1.ConditionFalse, privateendpoint.ReasonRejected)
	if bad.Status.ConnectionDescription != "not in the service catalogue" || !strings.Contains(message(bad, v1alpha1.ConditionConnectionApproved), "not in the service catalogue") {
		t.Errorf("bad: the rejection's reason is not in status: %+v", bad.Status)
	}
	decided(t, w, "bad", "Rejected", "rules[0]", "Reject", "not in the service catalogue")

	// Git now approves "bad": Azure cannot, and the provider's status and
	// Events say why; the consumer stays Rejected.
	setRules(t, w, "manual-svc", []v1alpha1.ConnectionRule{
		{PrivateEndpointID: peResource + "bad", Action: v1alpha1.ConnectionActionApprove, Reason: "CHG-2: bad is fine after all"},
		{PrivateEndpointID: peResource + "git-*", Action: v1alpha1.ConnectionActionApprove, Reason: "CHG-1 approved in Git"},
	})
	decided(t, w, "bad", "Rejected", "rules[0]", "Approve", pls.CannotApproveRejected)
	testworld.Eventually(t, testworld.Timeout, "manual-svc has Event "+privatelinkservice.EventCannotApprove, func(ctx context.Context) (bool, string) {
		ok, seen := w.HasEvent(ctx, key("manual-svc"), privatelinkservice.EventCannotApprove)
		return ok, strings.Join(seen, "; ")
	})

	// The consumer asks again: Pending, then approved by the rule.
	update(t, w, "bad", func(o *v1alpha1.AzurePrivateEndpoint) {
		o.Spec.RequestRevision, o.Spec.RequestMessage = "CHG-2", "asking again after CHG-2"
	})
	hasEvent(t, w, "bad", privateendpoint.EventAskedAgain)
	if st := ready(t, w, "bad").Status; st.RequestedRevision != "CHG-2" || st.ConnectionDescription != "CHG-2: bad is fine after all" {
		t.Errorf("bad after asking again: %+v", st)
	}

	// Git revokes git-a: its Approved connection is rejected, and its
	// names stop resolving.
	setRules(t, w, "manual-svc", []v1alpha1.ConnectionRule{
		{PrivateEndpointID: peResource + "git-*", Action: v1alpha1.ConnectionActionReject, Reason: "CHG-3: offboarded"},
	})
	waitCondition(t, w, "git-a", v1alpha1.ConditionConnectionApproved, metav1.ConditionFalse, privateendpoint.ReasonRejected)
	decided(t, w, "git-a", "Rejected", "rules[0]", "Reject", "CHG-3: offboarded")
	waitCondition(t, w, "git-a", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonRejected)
}

func setRules(t *testing.T, w *testworld.World, name string, rules []v1alpha1.ConnectionRule) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "setting the rules of "+name, func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(ctx, key(name), obj); err != nil {
			return false, err.Error()
		}
		obj.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{Rules: rules}
		err := w.Client.Update(ctx, obj)
		return err == nil, fmt.Sprint(err)
	})
}

// decided waits until manual-svc's status shows the connection of the
// endpoint in state, decided by the rule with the decision and reason.
func decided(t *testing.T, w *testworld.World, endpointName, state, by, decision, reason string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("manual-svc: %s %s by %s", endpointName, state, by), func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(ctx, key("manual-svc"), obj); err != nil {
			return false, err.Error()
		}
		for _, c := range obj.Status.Connections {
			if strings.EqualFold(c.PrivateEndpointID, peResource+endpointName) {
				return c.State == state && c.DecidedBy == by && c.Decision == decision && c.DecisionReason == reason, fmt.Sprintf("%+v", c)
			}
		}
		return false, fmt.Sprintf("no connection of %s: %+v", endpointName, obj.Status.Connections)
	})
}
