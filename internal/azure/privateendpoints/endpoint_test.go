package privateendpoints

import (
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/utils/ptr"
)

const (
	subnet = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/pe"
	svc    = "/subscriptions/p/resourceGroups/prg/providers/Microsoft.Network/privateLinkServices/svc"
)

func TestBody(t *testing.T) {
	d := Desired{Name: "hc1", Location: "westeurope", SubnetID: subnet, Target: svc, Owner: "ns/hc1"}
	b := Body(d, nil)
	if len(b.Properties.PrivateLinkServiceConnections) != 1 || len(b.Properties.ManualPrivateLinkServiceConnections) != 0 ||
		*b.Properties.PrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID != svc || Owner(&b) != "ns/hc1" || b.Properties.IPConfigurations != nil {
		t.Errorf("automatic body: %+v", b.Properties)
	}
	d.ManualApproval, d.RequestMessage, d.IPAddress = true, "please", "10.9.2.10"
	b = Body(d, nil)
	m := b.Properties.ManualPrivateLinkServiceConnections
	if len(m) != 1 || *m[0].Properties.RequestMessage != "please" || len(b.Properties.PrivateLinkServiceConnections) != 0 ||
		*b.Properties.IPConfigurations[0].Properties.PrivateIPAddress != "10.9.2.10" {
		t.Errorf("manual body: %+v", b.Properties)
	}
	// An update keeps foreign tags and the connection as Azure has it.
	observed := &armnetwork.PrivateEndpoint{Tags: map[string]*string{"team": new("x")}, Properties: &armnetwork.PrivateEndpointProperties{
		Subnet: &armnetwork.Subnet{ID: new(subnet)},
		ManualPrivateLinkServiceConnections: []*armnetwork.PrivateLinkServiceConnection{{Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(svc), RequestMessage: new("old"),
			PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{Status: new("Approved")},
		}}},
	}}
	b = Body(d, observed)
	c := b.Properties.ManualPrivateLinkServiceConnections[0].Properties
	if ptr.Deref(b.Tags["team"], "") != "x" || *c.PrivateLinkServiceConnectionState.Status != "Approved" || *c.RequestMessage != "please" {
		t.Errorf("update body: tags %v connection %+v", b.Tags, c)
	}
}

func TestDriftAndImmutable(t *testing.T) {
	d := Desired{Name: "hc1", SubnetID: subnet, Target: svc, Owner: "ns/hc1", ManualApproval: true, RequestMessage: "please"}
	pe := func(mut func(*armnetwork.PrivateEndpoint)) *armnetwork.PrivateEndpoint {
		p := Body(d, nil)
		mut(&p)
		return &p
	}
	cases := []struct {
		name      string
		mut       func(*armnetwork.PrivateEndpoint)
		drift     int
		immutable string
	}{
		{"as desired", func(*armnetwork.PrivateEndpoint) {}, 0, ""},
		{"owner tag lost", func(p *armnetwork.PrivateEndpoint) { delete(p.Tags, OwnerTag) }, 1, ""},
		{"request message", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.ManualPrivateLinkServiceConnections[0].Properties.RequestMessage = new("old")
		}, 1, ""},
		{"other subnet", func(p *armnetwork.PrivateEndpoint) { p.Properties.Subnet.ID = new(subnet + "2") }, 0, "subnet"},
		{"automatic instead", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.PrivateLinkServiceConnections, p.Properties.ManualPrivateLinkServiceConnections = p.Properties.ManualPrivateLinkServiceConnections, nil
		}, 0, "manualApproval"},
		{"other service", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID = new(svc + "2")
		}, 0, "privateLinkServiceID"},
		{"same service, other case", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceID = new("/SUBSCRIPTIONS/p/resourceGroups/PRG/providers/Microsoft.Network/privateLinkServices/svc")
		}, 0, ""},
	}
	for _, c := range cases {
		p := pe(c.mut)
		if got := Drift(d, p); len(got) != c.drift {
			t.Errorf("%s: drift %v", c.name, got)
		}
		if got := Immutable(d, p); got != c.immutable {
			t.Errorf("%s: immutable %q, want %q", c.name, got, c.immutable)
		}
	}
	// A target given by alias comes back as an ID: not a change.
	byAlias := d
	byAlias.Target = "svc.1234.westeurope.azure.privatelinkservice"
	if got := Immutable(byAlias, pe(func(*armnetwork.PrivateEndpoint) {})); got != "" {
		t.Errorf("alias target: %q", got)
	}
}
