package clusterlink

import (
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestASOTrust(t *testing.T) {
	target := PrivateLinkServiceID(mcSub, "mc-rg", "mc-ingress-privatelink")
	w := wc("wc1", func(a *capz.AzureCluster) {
		a.ClusterName = "wc1"
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{{Name: "wc1-to-mc-privatelink-privateendpoint",
			Connections: []capz.PrivateLinkServiceConnection{{Name: "c", PrivateLinkServiceID: target}}}}
	})
	capzs := capz.ASOObject{Namespace: "org-a", Name: "wc1-to-mc-privatelink-privateendpoint", AzureName: "wc1-to-mc-privatelink-privateendpoint",
		Controller: "wc1", ClusterName: "wc1", PrivateLinkServiceIDs: []string{target}, Ready: true}
	with := func(f func(*capz.ASOObject)) capz.ASOObject { o := capzs; f(&o); return o }
	for _, tc := range []struct {
		reason string
		obj    capz.ASOObject
		want   bool
	}{
		{"CAPZ's object for the entry", capzs, true},
		{"no cluster-name label (a tenant's object with an owner reference)", with(func(o *capz.ASOObject) { o.ClusterName = "" }), false},
		{"another cluster's label", with(func(o *capz.ASOObject) { o.ClusterName = "wc2" }), false},
		{"a name no entry of the cluster has", with(func(o *capz.ASOObject) { o.AzureName = "wc1-to-mc-evil-privateendpoint" }), false},
		{"the entry's name but another target", with(func(o *capz.ASOObject) {
			o.PrivateLinkServiceIDs = []string{PrivateLinkServiceID(mcSub, "mc-rg", "evil")}
		}), false},
		{"controlled by another AzureCluster", with(func(o *capz.ASOObject) { o.Controller = "wc2" }), false},
	} {
		if got := ASOOfCluster(tc.obj, w); got != tc.want {
			t.Errorf("ASOOfCluster: %s: got %v", tc.reason, got)
		}
	}

	id := "/subscriptions/" + wcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
	good := privateendpoints.Observation{ID: id, Name: "wc1-to-mc-privatelink-privateendpoint", PrivateLinkServiceID: target, IP: "10.1.1.4", ProvisioningState: "Succeeded"}
	withOb := func(f func(*privateendpoints.Observation)) privateendpoints.Observation { o := good; f(&o); return o }
	for _, tc := range []struct {
		reason string
		ob     privateendpoints.Observation
		want   bool
	}{
		{"the entry's endpoint in the cluster's subscription and group", good, true},
		{"status.id in another subscription", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + mcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
		}), false},
		{"status.id in another resource group", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + wcSub + "/resourceGroups/other/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
		}), false},
		{"status.id of another endpoint", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + wcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/other"
		}), false},
		{"a connection to another service", withOb(func(o *privateendpoints.Observation) {
			o.PrivateLinkServiceID = PrivateLinkServiceID(mcSub, "mc-rg", "evil")
		}), false},
		{"no status yet", privateendpoints.Observation{}, false},
	} {
		if _, got := ASOObservationOf(capzs, tc.ob, w); got != tc.want {
			t.Errorf("ASOObservationOf: %s: got %v", tc.reason, got)
		}
	}
}
