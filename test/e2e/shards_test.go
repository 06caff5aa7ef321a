package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestIngressShards: the binary with the flags a user sets (docs/
// operations.md, "Ingress services beyond the first"). Azure takes one
// endpoint per private link service: wc1 fills the hand-made ingress
// service, the operator makes mc-ingress-privatelink-2 on the named
// frontend, and wc2 connects to it under its usual endpoint name and gets
// its ingress annotation, the endpoint's address; wc3 gets
// mc-ingress-privatelink-3, on a frontend of another load balancer
// (second-lb/shard-3).
func TestIngressShards(t *testing.T) {
	bin := operatorBinary(t)
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaFork,
		Ingress: map[string]capzsim.Ingress{mcNS + "/mc": {AutoApprovedSubscriptions: []string{wcSub}, Frontends: []string{"shard-2", "second-lb/shard-3"}}},
		Limits:  azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 1}})
	w.Namespace(t, wcNS)
	ctx := context.Background()
	cluster := func(name string, cidr int) testworld.Cluster {
		return testworld.Cluster{Namespace: wcNS, Name: name, Subscription: wcSub, Private: true, CIDR16: cidr,
			PrivateLinks: []testworld.PrivateLink{{Name: name + "-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
	}
	for _, c := range []testworld.Cluster{{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}, cluster("wc1", 20)} {
		if err := w.Client.Create(ctx, c.Object(testenv.SchemaFork)); err != nil {
			t.Fatal(err)
		}
	}
	op := startOperator(t, w, bin, nil, "--mc-service-connection-limit=1", "--mc-ingress-shard-frontends=shard-2,second-lb/shard-3",
		"--mc-ingress-load-balancer=mc-ingress-lb", "--mc-ingress-shard-subscriptions="+wcSub)
	wc1, wc2 := types.NamespacedName{Namespace: wcNS, Name: "wc1"}, types.NamespacedName{Namespace: wcNS, Name: "wc2"}
	annotated(t, w, wc1, ingAnn, true)

	if err := w.Client.Create(ctx, cluster("wc2", 21).Object(testenv.SchemaFork)); err != nil {
		t.Fatal(err)
	}
	annotated(t, w, wc2, ingAnn, true)
	if got, want := annotations(t, w, wc2)[ingAnn], w.EndpointIP(t, wcSub, "wc2-rg", "wc2-to-mc-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want %s", ingAnn, got, want)
	}
	if err := w.Client.Create(ctx, cluster("wc3", 22).Object(testenv.SchemaFork)); err != nil {
		t.Fatal(err)
	}
	annotated(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc3"}, ingAnn, true)
	for name, service := range map[string]string{"wc1": "mc-ingress-privatelink", "wc2": "mc-ingress-privatelink-2", "wc3": "mc-ingress-privatelink-3"} {
		pe, err := w.Network(t, wcSub).NewPrivateEndpointsClient().Get(ctx, name+"-rg", name+"-to-mc-privatelink-privateendpoint", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ToLower(clusterlink.PrivateLinkServiceID(mcSub, "mc-rg", service))
		if got := strings.ToLower(*pe.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID); got != want {
			t.Errorf("%s's endpoint connects to %s, want %s", name, got, want)
		}
	}
	second := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "mc-ingress-privatelink-2"}, second); err != nil ||
		second.Labels[clusterlink.ShardOfLabel] != "mc" {
		t.Errorf("the further service's object: %v %v", err, second.Labels)
	}
	third := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: "mc-ingress-privatelink-3"}, third); err != nil ||
		third.Spec.Frontend.LoadBalancer == nil || third.Spec.Frontend.LoadBalancer.Name != "second-lb" || third.Spec.Frontend.LoadBalancer.FrontendIPConfigurationName != "shard-3" {
		t.Errorf("the third service's object: %v %+v", err, third.Spec.Frontend)
	}
	if exited, err := op.Exited(); exited {
		t.Errorf("the operator exited: %v", err)
	}
}
