package privateendpoint_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	hubSub    = "33333333-3333-3333-3333-333333333333"
	hubRG     = "dns-hub-rg"
	hubClient = "hub-dns-writer"
)

// TestSeveralZonesAndCentralDNS: one endpoint's names in two zones, as
// HyperShift writes them — its own zone with api and *.apps, and a shared
// base-domain zone with api-<name> and oauth-<name> that lives in a hub
// subscription and is written with the hub's own identity (an Azure
// landing zone's central DNS). Both resolve from the consumer's network;
// the hub zone is written by the hub's principal only. Removing the
// additional zone removes its records, and the shared zone nobody uses
// any more.
func TestSeveralZonesAndCentralDNS(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	if err := w.Sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: hubSub, Name: hubRG, Location: location}}}); err != nil {
		t.Fatal(err)
	}
	// The hub's principal may touch the hub subscription only.
	w.Sim.AddPrincipal(azuresim.Principal{TenantID: testworld.TenantID, ClientID: hubClient, ClientSecret: "hub-secret", Scopes: []string{"/subscriptions/" + hubSub}})
	if err := w.CreateIdentity(ctx, sandbox.Identity{Namespace: testworld.IdentityNS, Name: "hub-dns", SecretName: "hub-dns-secret", //nolint:gosec // G101: azuresim's test principal
		TenantID: testworld.TenantID, ClientID: hubClient, ClientSecret: "hub-secret"}); err != nil {
		t.Fatal(err)
	}
	obj := ape("hs1", svc.Status.ResourceID)
	obj.Spec.DNS.ZoneName = "hs1.hypershift.local"
	obj.Spec.DNS.AdditionalZones = []v1alpha1.PrivateEndpointDNSZone{{
		ZoneName: "hcp.example.com", ZoneSubscriptionID: hubSub, ZoneResourceGroup: hubRG, ZoneMode: v1alpha1.ZoneModeShared,
		Records:     []string{"api-hs1", "oauth-hs1"},
		IdentityRef: &v1alpha1.IdentityReference{Name: "hub-dns", Namespace: testworld.IdentityNS},
	}}
	create(t, w, obj)
	got := ready(t, w, "hs1")
	ip := got.Status.IPAddresses[0]
	for _, name := range []string{"api.hs1.hypershift.local", "x.apps.hs1.hypershift.local", "api-hs1.hcp.example.com", "oauth-hs1.hcp.example.com"} {
		resolves(t, w, cVNet, name, azuresim.ResolveOK, ip)
	}
	if len(got.Status.DNSZones) != 1 || len(got.Status.DNSZones[0].FQDNs) != 2 || got.Status.DNSZones[0].IdentityRef == nil {
		t.Errorf("status of the additional zone: %+v", got.Status.DNSZones)
	}
	c := w.Sim.Counters()
	for _, x := range []struct {
		who, typ string
		want     int
	}{
		{hubClient, "Microsoft.Network/privateDnsZones", 1},
		{hubClient, "Microsoft.Network/privateDnsZones/A", 2},
		{testworld.OperatorClient, "Microsoft.Network/privateDnsZones", 1},
		{testworld.OperatorClient, "Microsoft.Network/privateDnsZones/A", 2},
	} {
		if n := c.SumFor(x.who, "PUT", x.typ, 200, 299); n != x.want {
			t.Errorf("%s: %d successful PUTs of %s, want %d", x.who, n, x.typ, x.want)
		}
	}

	// The additional zone goes from the spec: its records, link and the
	// unused shared zone go; the own zone stays.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.DNS.AdditionalZones = nil
	if err := w.Client.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "the hub zone is gone", func(context.Context) (bool, string) {
		left := resources(w, "Microsoft.Network/privateDnsZones", "hcp.example.com")
		return len(left) == 0, fmt.Sprint(left)
	})
	got = waitCondition(t, w, "hs1", v1alpha1.ConditionDNSReady, metav1.ConditionTrue, privateendpoint.ReasonReady)
	if len(got.Status.DNSZones) != 0 {
		t.Errorf("status still holds the removed zone: %+v", got.Status.DNSZones)
	}
	resolves(t, w, cVNet, "api.hs1.hypershift.local", azuresim.ResolveOK, ip)

	// An additional zone passes the same guard as spec.dns.zoneName: one
	// that would shadow Azure's own names is never created.
	evil := ape("hs2", svc.Status.ResourceID)
	evil.Spec.DNS.AdditionalZones = []v1alpha1.PrivateEndpointDNSZone{{ZoneName: "privatelink.vaultcore.azure.net", Records: []string{"@"}}}
	create(t, w, evil)
	waitCondition(t, w, "hs2", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonZoneNameRefused)
	if zones := resources(w, "Microsoft.Network/privateDnsZones", "privatelink.vaultcore"); len(zones) != 0 {
		t.Errorf("an additional zone shadowing Azure's names was created: %v", zones)
	}
}
