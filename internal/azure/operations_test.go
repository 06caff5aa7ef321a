package azure_test

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestOperationHintsFromAzure: through the operator's clients (the real
// SDK against azuresim, whose operations take 3 s and whose hints are the
// time left, up to 30 s as Azure's Private DNS asks), a reconcile's
// context learns when to look again at the operations it starts — a
// network PUT and a Private DNS PUT — and another reconcile reading the
// zone while it is being created learns the time left; nothing from
// other reads.
func TestOperationHintsFromAzure(t *testing.T) {
	const latency, recheck = 3 * time.Second, 10 * time.Second
	ce := newCredEnvWith(t, azuresim.Options{Latency: latency, MaxPollInterval: 30 * time.Second})
	ce.servicePrincipal(t)
	clients := &azure.Clients{Credentials: ce.creds}
	bg := context.Background()
	network, _, err := clients.Network(bg, cluster("sp"), simSubscribed)
	if err != nil {
		t.Fatal(err)
	}
	privateDNS, err := clients.PrivateDNSFor(bg, azure.SubjectOf(cluster("sp")), simSubscribed)
	if err != nil {
		t.Fatal(err)
	}

	ctx, _ := azure.WithOperationHints(bg)
	if _, err := network.NewVirtualNetworksClient().NewListPager("rg", nil).NextPage(ctx); err != nil {
		t.Fatal(err)
	}
	if got := azure.RecheckAfter(ctx, recheck); got != recheck {
		t.Errorf("after a read: %s, want the recheck interval %s", got, recheck)
	}

	start := time.Now()
	vnet := armnetwork.VirtualNetwork{Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
		AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.0.0.0/16")}}}}
	if _, err := network.NewVirtualNetworksClient().BeginCreateOrUpdate(ctx, "rg", "vnet", vnet, nil); err != nil {
		t.Fatal(err)
	}
	got := azure.RecheckAfter(ctx, recheck)
	if got <= 0 || got > latency || got < latency-time.Since(start)-time.Second {
		t.Errorf("after a network PUT of a %s operation: %s", latency, got)
	}

	ctx, _ = azure.WithOperationHints(bg)
	zone := armprivatedns.PrivateZone{Location: new("global")}
	if _, err := privateDNS.NewPrivateZonesClient().BeginCreateOrUpdate(ctx, "rg", "example.internal", zone, nil); err != nil {
		t.Fatal(err)
	}
	if got := azure.RecheckAfter(ctx, recheck); got <= 0 || got > latency {
		t.Errorf("after a Private DNS PUT of a %s operation: %s", latency, got)
	}

	// Another reconcile that reads the zone while its creation runs (an
	// object sharing it) learns the time left, not the recheck interval.
	other, _ := azure.WithOperationHints(bg)
	if _, err := privateDNS.NewPrivateZonesClient().Get(other, "rg", "example.internal", nil); err != nil {
		t.Fatal(err)
	}
	if got := azure.RecheckAfter(other, recheck); got <= 0 || got > latency {
		t.Errorf("a read of the zone being created: %s, want at most %s", got, latency)
	}
	// ... and nothing from a collection without an operation (the
	// network's subnets; the list of networks would learn the network's).
	third, _ := azure.WithOperationHints(bg)
	if _, err := network.NewSubnetsClient().NewListPager("rg", "vnet", nil).NextPage(third); err != nil {
		t.Fatal(err)
	}
	if got := azure.RecheckAfter(third, recheck); got != recheck {
		t.Errorf("a list of the network's subnets: %s, want the recheck interval", got)
	}
}
