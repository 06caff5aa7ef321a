package privatelinkservice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// servicesPerSubscriptionExceeded is the code azuresim answers beyond its
// limit of private link services per subscription (the emulator's own
// code: internal/azuresim/limits.go).
const servicesPerSubscriptionExceeded = "PrivateLinkServicesPerSubscriptionLimitExceeded"

// TestSubscriptionLimit: the subscription takes two private link services
// (azuresim refuses a third, as Azure does beyond its 800) and the
// operator's limit is two. Three objects created at once, reconciled by
// parallel workers: two services are created, the third object says
// PrivateLinkServicesPerSubscriptionLimit, and Azure is never sent the
// creation it would refuse. When one object is deleted, the third is
// created.
func TestSubscriptionLimit(t *testing.T) {
	w := limitedWorld(t, false, azuresim.Limits{PrivateLinkServicesPerSubscription: 2})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{SubscriptionLimit: 2, TerminalRecheck: time.Second, MaxConcurrentReconciles: 3})
	names := []string{"a", "b", "c"}
	for _, n := range names {
		create(t, w, apls(n))
	}
	var waiting string
	testworld.Eventually(t, testworld.Timeout, "two services Ready, one waiting at the limit", func(ctx context.Context) (bool, string) {
		var ready, limited []string
		for _, n := range names {
			obj := &v1alpha1.AzurePrivateLinkService{}
			if err := w.Client.Get(ctx, key(n), obj); err != nil {
				return false, err.Error()
			}
			c := meta.FindStatusCondition(obj.Status.Conditions, v1alpha1.ConditionReady)
			switch {
			case c != nil && c.Status == metav1.ConditionTrue:
				ready = append(ready, n)
			case c != nil && c.Reason == privatelinkservice.ReasonSubscriptionLimit:
				limited = append(limited, n)
			}
		}
		if len(limited) == 1 {
			waiting = limited[0]
		}
		return len(ready) == 2 && len(limited) == 1, fmt.Sprintf("ready %v, limited %v", ready, limited)
	})
	if getPLS(t, w, waiting) != nil {
		t.Errorf("%s is in Azure although it waits at the limit", waiting)
	}
	if n := w.Sim.Counters().Errors[servicesPerSubscriptionExceeded]; n != 0 {
		t.Errorf("%d creations refused by Azure with %s: the limit let them through", n, servicesPerSubscriptionExceeded)
	}
	gone := names[0]
	if gone == waiting {
		gone = names[1]
	}
	obj := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(context.Background(), key(gone), obj); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	ready(t, w, waiting)
}
