package privatelinkservice_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestTagsUnderAPolicy: a policy denies services without a costCenter
// tag; the operator's default tags under the object's own satisfy it, a
// service without the tag is refused with the reason, and a tag changed in
// the spec reaches Azure while tags someone else put on the service stay.
func TestTagsUnderAPolicy(t *testing.T) {
	w := world(t, false)
	w.Sim.SetPolicies([]azuresim.TagPolicy{{Subscription: sub, Tag: "costCenter"}})
	w.StartPrivateLinkServices(t, privatelinkservice.Options{DriftInterval: 2e9, Tags: map[string]string{"managedBy": "apeo"}})
	tagged := apls("tagged")
	tagged.Spec.Tags = map[string]string{"costCenter": "4711"}
	create(t, w, tagged)
	create(t, w, apls("untagged"))

	ready(t, w, "tagged")
	if d := azure.TagsDiffer(getPLS(t, w, "tagged").Tags, map[string]string{"managedBy": "apeo", "costCenter": "4711"}); len(d) > 0 {
		t.Errorf("the service lacks tags %v", d)
	}
	waitCondition(t, w, "untagged", v1alpha1.ConditionPrivateLinkServiceReady, metav1.ConditionFalse, azure.ReasonDisallowedByPolicy)

	// Someone adds a tag in Azure; the spec changes costCenter.
	p := getPLS(t, w, "tagged")
	p.Tags["owner-team"] = new("network")
	startPut(t, w, "tagged", *p)
	patch(t, w, "tagged", `{"spec":{"tags":{"costCenter":"4712"}}}`)
	testworld.Eventually(t, testworld.Timeout, "costCenter 4712 in Azure, owner-team kept", func(context.Context) (bool, string) {
		tags := getPLS(t, w, "tagged").Tags
		return ptr.Deref(tags["costCenter"], "") == "4712" && ptr.Deref(tags["owner-team"], "") == "network", fmt.Sprint(tags)
	})
}
