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

// TestServiceTarget: an endpoint to an Azure service sends its group ID
// and a static IP configuration per member (with the group), and Immutable
// names a changed group or static address.
func TestServiceTarget(t *testing.T) {
	const acr = "/subscriptions/p/resourceGroups/prg/providers/Microsoft.ContainerRegistry/registries/reg1"
	d := Desired{Name: "reg", SubnetID: subnet, Target: acr, Owner: "ns/reg", GroupIDs: []string{"registry"},
		IPConfigs: []IPConfig{{MemberName: "registry", Address: "10.9.2.40"}, {Name: "data", MemberName: "registry_data_westeurope", Address: "10.9.2.41"}}}
	b := Body(d, nil)
	conn := b.Properties.PrivateLinkServiceConnections[0].Properties
	if len(conn.GroupIDs) != 1 || *conn.GroupIDs[0] != "registry" {
		t.Errorf("groupIds %v", conn.GroupIDs)
	}
	got := map[string]string{}
	for _, c := range b.Properties.IPConfigurations {
		if ptr.Deref(c.Properties.GroupID, "") != "registry" {
			t.Errorf("configuration %s: group %v", *c.Name, c.Properties.GroupID)
		}
		got[*c.Name] = *c.Properties.MemberName + "=" + *c.Properties.PrivateIPAddress
	}
	want := map[string]string{"reg-registry": "registry=10.9.2.40", "data": "registry_data_westeurope=10.9.2.41"}
	if len(got) != len(want) || got["reg-registry"] != want["reg-registry"] || got["data"] != want["data"] {
		t.Errorf("ipConfigurations %v, want %v", got, want)
	}
	pe := func(mut func(*armnetwork.PrivateEndpoint)) *armnetwork.PrivateEndpoint {
		p := Body(d, nil)
		mut(&p)
		return &p
	}
	cases := []struct {
		reason string
		mut    func(*armnetwork.PrivateEndpoint)
		want   string
	}{
		{"as desired", func(*armnetwork.PrivateEndpoint) {}, ""},
		{"another group", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.PrivateLinkServiceConnections[0].Properties.GroupIDs = []*string{new("registry_data")}
		}, "groupIDs"},
		{"another address for a member", func(p *armnetwork.PrivateEndpoint) {
			p.Properties.IPConfigurations[1].Properties.PrivateIPAddress = new("10.9.2.42")
		}, "ipConfigurations"},
		{"no static addresses (made by someone else, adopted)", func(p *armnetwork.PrivateEndpoint) { p.Properties.IPConfigurations = nil }, "ipConfigurations"},
		{"the same addresses in another order", func(p *armnetwork.PrivateEndpoint) {
			c := p.Properties.IPConfigurations
			c[0], c[1] = c[1], c[0]
		}, ""},
	}
	for _, c := range cases {
		if got := Immutable(d, pe(c.mut)); got != c.want {
			t.Errorf("%s: immutable %q, want %q", c.reason, got, c.want)
		}
	}
}

// TestObserveMembers: every address of an endpoint to an Azure service is
// read from customDnsConfigs, once each, in Azure's order.
func TestObserveMembers(t *testing.T) {
	cfg := func(fqdn, ip string) *armnetwork.CustomDNSConfigPropertiesFormat {
		return &armnetwork.CustomDNSConfigPropertiesFormat{Fqdn: new(fqdn), IPAddresses: []*string{new(ip)}}
	}
	configs, ips := DNSConfigs(&armnetwork.PrivateEndpoint{Properties: &armnetwork.PrivateEndpointProperties{CustomDNSConfigs: []*armnetwork.CustomDNSConfigPropertiesFormat{
		cfg("reg1.azurecr.io", "10.9.2.40"), cfg("reg1.westeurope.data.azurecr.io", "10.9.2.41"), cfg("alias.reg1.example", "10.9.2.40"), nil,
	}}})
	if len(ips) != 2 || ips[0] != "10.9.2.40" || ips[1] != "10.9.2.41" || len(configs) != 3 || configs[1].FQDN != "reg1.westeurope.data.azurecr.io" || configs[1].IPs[0] != "10.9.2.41" {
		t.Errorf("configs %+v, addresses %v", configs, ips)
	}
	if configs, ips := DNSConfigs(&armnetwork.PrivateEndpoint{}); configs != nil || ips != nil {
		t.Errorf("no properties: %v %v", configs, ips)
	}
}
