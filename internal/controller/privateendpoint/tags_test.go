package privateendpoint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	asgA = "/subscriptions/" + consumer + "/resourceGroups/" + crg + "/providers/Microsoft.Network/applicationSecurityGroups/pe-clients"
	asgB = "/subscriptions/" + consumer + "/resourceGroups/" + crg + "/providers/Microsoft.Network/applicationSecurityGroups/pe-audit"
)

// TestEnterprisePolicies: where an Azure Policy denies resources without a
// costCenter tag, an endpoint that carries it (the operator's default
// under its own spec.tags) gets its endpoint, zone and link; one without
// is refused with the policy named. The endpoint's network interface gets
// the name the spec asks for and joins the application security groups
// the spec lists, which can change later; a tag changed in the spec
// reaches the endpoint and its own zone.
func TestEnterprisePolicies(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{Tags: map[string]string{"managedBy": "apeo", "costCenter": "0000"}})
	if err := w.Sim.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{
		{ID: asgA, Body: body(t, armnetwork.ApplicationSecurityGroup{Location: new(location)})},
		{ID: asgB, Body: body(t, armnetwork.ApplicationSecurityGroup{Location: new(location)})},
	}}); err != nil {
		t.Fatal(err)
	}
	w.Sim.SetPolicies([]azuresim.TagPolicy{{Subscription: consumer, Tag: "costCenter", Value: "4711"}})

	obj := ape("tagged", svc.Status.ResourceID)
	obj.Spec.Tags = map[string]string{"costCenter": "4711", "team": "a"}
	obj.Spec.NetworkInterfaceName = "tagged-nic"
	obj.Spec.ApplicationSecurityGroupIDs = []string{asgA}
	create(t, w, obj)
	refused := ape("untagged", svc.Status.ResourceID)
	create(t, w, refused)

	st := ready(t, w, "tagged").Status
	want := map[string]string{"managedBy": "apeo", "costCenter": "4711", "team": "a"}
	pe, err := w.Network(t, consumer).NewPrivateEndpointsClient().Get(context.Background(), crg, "tagged", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := azure.TagsDiffer(pe.Tags, want); len(d) > 0 {
		t.Errorf("endpoint tags %v lack %v", pe.Tags, d)
	}
	if !strings.HasSuffix(st.NetworkInterfaceID, "/networkInterfaces/tagged-nic") {
		t.Errorf("network interface %s, want tagged-nic", st.NetworkInterfaceID)
	}
	if g := pe.Properties.ApplicationSecurityGroups; len(g) != 1 || !strings.EqualFold(ptr.Deref(g[0].ID, ""), asgA) {
		t.Errorf("application security groups %v", g)
	}
	zone := zoneTags(t, w, "tagged.hcp.internal")
	if d := azure.TagsDiffer(zone, want); len(d) > 0 {
		t.Errorf("zone tags %v lack %v", zone, d)
	}
	link := linkTags(t, w, "tagged.hcp.internal")
	if d := azure.TagsDiffer(link, want); len(d) > 0 {
		t.Errorf("link tags %v lack %v", link, d)
	}

	c := waitCondition(t, w, "untagged", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, azure.ReasonDisallowedByPolicy)
	if m := message(c, v1alpha1.ConditionPrivateEndpointReady); !strings.Contains(m, "disallowed by policy") {
		t.Errorf("the refusal does not say why: %s", m)
	}

	// A tag and the groups change in the spec: the endpoint follows; the
	// object's own zone gets the new tag too.
	update(t, w, "tagged", func(o *v1alpha1.AzurePrivateEndpoint) {
		o.Spec.Tags["team"] = "b"
		o.Spec.ApplicationSecurityGroupIDs = []string{asgA, asgB}
	})
	hasEvent(t, w, "tagged", privateendpoint.EventUpdated)
	testworld.Eventually(t, testworld.Timeout, "the endpoint has team=b and both groups", func(ctx context.Context) (bool, string) {
		pe, err := w.Network(t, consumer).NewPrivateEndpointsClient().Get(ctx, crg, "tagged", nil)
		if err != nil {
			return false, err.Error()
		}
		return ptr.Deref(pe.Tags["team"], "") == "b" && len(pe.Properties.ApplicationSecurityGroups) == 2, fmt.Sprintf("%v %v", pe.Tags, pe.Properties.ApplicationSecurityGroups)
	})
	testworld.Eventually(t, testworld.Timeout, "the zone has team=b", func(context.Context) (bool, string) {
		tags := zoneTags(t, w, "tagged.hcp.internal")
		return ptr.Deref(tags["team"], "") == "b", fmt.Sprint(tags)
	})
	ready(t, w, "tagged")
}

func zoneTags(t *testing.T, w *testworld.World, zone string) map[string]*string {
	t.Helper()
	z, err := w.DNS(t, consumer).NewPrivateZonesClient().Get(context.Background(), crg, zone, nil)
	if err != nil {
		t.Fatal(err)
	}
	return z.Tags
}

func linkTags(t *testing.T, w *testworld.World, zone string) map[string]*string {
	t.Helper()
	pager := w.DNS(t, consumer).NewVirtualNetworkLinksClient().NewListPager(crg, zone, nil)
	var links []*armprivatedns.VirtualNetworkLink
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, page.Value...)
	}
	if len(links) != 1 {
		t.Fatalf("zone %s has %d links", zone, len(links))
	}
	return links[0].Tags
}
