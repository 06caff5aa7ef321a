package privatelinkservice_test

import (
	"context"
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"

	"github.com/google/go-cmp/cmp"
)

// TestValidation: the API server refuses invalid objects with the message
// a user sees; nothing reaches the controller.
func TestValidation(t *testing.T) {
	w := world(t, false)
	cases := []struct {
		reason string
		mutate func(*v1alpha1.AzurePrivateLinkService)
		want   string
	}{
		{"no frontend", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Frontend = v1alpha1.Frontend{} },
			"spec.frontend needs exactly one of loadBalancer, privateIPAddress, service or destinationIPAddress"},
		{"two frontends", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Frontend.PrivateIPAddress = "172.20.0.4" },
			"spec.frontend needs exactly one of loadBalancer, privateIPAddress, service or destinationIPAddress"},
		{"a frontend IP that is not IPv4", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{PrivateIPAddress: "not-an-ip"}
		}, "spec.frontend.privateIPAddress"},
		{"no NAT subnet", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.NATSubnet = v1alpha1.NATSubnet{} },
			"spec.natSubnet needs exactly one of id, name or create"},
		{"a NAT subnet by name and created", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATSubnet.Create = &v1alpha1.NATSubnetCreate{Name: "x", PrefixLength: 28}
		}, "spec.natSubnet needs exactly one of id, name or create"},
		{"fixing the policies of a subnet to create", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATSubnet = v1alpha1.NATSubnet{Create: &v1alpha1.NATSubnetCreate{Name: "x", PrefixLength: 28}, FixNetworkPolicies: true}
		}, "fixNetworkPolicies applies to an existing subnet"},
		{"a prefix too small for Azure", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATSubnet = v1alpha1.NATSubnet{Create: &v1alpha1.NATSubnetCreate{Name: "x", PrefixLength: 30}}
		}, "spec.natSubnet.create.prefixLength"},
		{"a subnet ID that is not one", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATSubnet = v1alpha1.NATSubnet{ID: "/subscriptions/x/nat"}
		},
			"spec.natSubnet.id"},
		{"nine NAT IP configurations", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.NATIPConfigurations.Count = 9 },
			"spec.natIPConfigurations.count"},
		{"more static IPs than configurations", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATIPConfigurations = v1alpha1.NATIPConfigurations{Count: 1, StaticIPs: []string{"172.20.1.10", "172.20.1.11"}}
		}, "staticIPs cannot list more addresses than count"},
		{"a repeated static IP", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.NATIPConfigurations = v1alpha1.NATIPConfigurations{Count: 2, StaticIPs: []string{"172.20.1.10", "172.20.1.10"}}
		}, "Duplicate value"},
		{"auto-approval outside visibility", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.AutoApproval = []string{stranger} },
			"every spec.autoApproval subscription must be in spec.visibility"},
		{"'*' beside subscriptions", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Visibility = []string{"*", consumer} },
			"spec.visibility is either '*' alone"},
		{"an upper-case subscription ID", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Visibility = []string{strings.ToUpper("abcdefab-1111-1111-1111-111111111111")}
			o.Spec.AutoApproval = nil
		}, "spec.visibility[0]"},
		{"a malformed subscription", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.SubscriptionID = "sub" }, "spec.subscriptionID"},
		{"a connection rule with both a name and a pattern", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{Rules: []v1alpha1.ConnectionRule{{Name: "c", PrivateEndpointID: "/subscriptions/*/resourceGroups/*/providers/Microsoft.Network/privateEndpoints/*", Action: v1alpha1.ConnectionActionApprove}}}
		}, "a connection rule needs exactly one of name or privateEndpointID"},
		{"a connection rule pattern with brackets", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{Rules: []v1alpha1.ConnectionRule{{PrivateEndpointID: "/subscriptions/[a-z]/resourceGroups/*/providers/Microsoft.Network/privateEndpoints/*", Action: v1alpha1.ConnectionActionApprove}}}
		}, "spec.connectionApproval.rules[0].privateEndpointID"},
		{"a connection rule without an action", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{Rules: []v1alpha1.ConnectionRule{{Name: "c", Action: "Maybe"}}}
		}, "spec.connectionApproval.rules[0].action"},
		{"a location with spaces", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Location = "West Europe" }, "spec.location"},
		{"an unknown deletion policy", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.DeletionPolicy = "Keep" }, "spec.deletionPolicy"},
		{"a description longer than Azure keeps", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.ConnectionApproval = &v1alpha1.ConnectionApproval{Description: strings.Repeat("x", 141)}
		}, "spec.connectionApproval.description"},
		{"an FQDN that is not one", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.FQDNs = []string{"not a name"} }, "spec.fqdns[0]"},
		{"a destination beside a load balancer", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend.DestinationIPAddress = "172.20.0.50"
		}, "spec.frontend needs exactly one of loadBalancer, privateIPAddress, service or destinationIPAddress"},
		{"Direct Connect with a NAT subnet by name", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "172.20.0.50"}
			o.Spec.NATIPConfigurations.Count = 3
		}, "name it by spec.natSubnet.id"},
		{"Direct Connect with two NAT IP configurations", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "172.20.0.50"}
			o.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
			o.Spec.NATIPConfigurations.Count = 2
		}, "needs spec.natIPConfigurations.count of at least 3"},
		{"Direct Connect without NAT IP configurations", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "172.20.0.50"}
			o.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
		}, "needs spec.natIPConfigurations.count of at least 3"},
		{"Direct Connect with a load balancer resource group", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "172.20.0.50", ResourceGroup: "lb-rg"}
			o.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
		}, "a Direct Connect service (destinationIPAddress) has none"},
		{"a destination that is not an address", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{DestinationIPAddress: "backend"}
			o.Spec.NATSubnet = v1alpha1.NATSubnet{ID: vnetID + "/subnets/nat"}
		}, "spec.frontend.destinationIPAddress"},
		{"a load balancer resource group Azure would refuse", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Frontend.ResourceGroup = "rg." },
			"spec.frontend.resourceGroup"},
		{"Restricted access for everyone", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.AccessMode, o.Spec.Visibility, o.Spec.AutoApproval = "Restricted", []string{"*"}, nil
		}, "spec.accessMode Restricted admits only the subscriptions of spec.visibility"},
		{"Restricted access without visibility", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.AccessMode, o.Spec.Visibility, o.Spec.AutoApproval = "Restricted", nil, nil
		}, "spec.accessMode Restricted admits only"},
		{"an unknown access mode", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.AccessMode = "Open" }, "spec.accessMode"},
	}
	for i, c := range cases {
		obj := apls("invalid")
		obj.Name = "invalid-" + string(rune('a'+i))
		c.mutate(obj)
		err := w.Client.Create(context.Background(), obj)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.reason, err, c.want)
		}
	}

	// Immutable fields, on update.
	obj := apls("valid")
	obj.Spec.Name = "azure-name"
	create(t, w, obj)
	updates := []struct {
		reason string
		mutate func(*v1alpha1.AzurePrivateLinkService)
		want   string
	}{
		{"renaming", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Name = "other" }, "spec.name is immutable"},
		{"removing the name", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.Name = "" }, "spec.name is immutable"},
		{"moving to another resource group", func(o *v1alpha1.AzurePrivateLinkService) { o.Spec.ResourceGroup = "other-rg" },
			"spec.subscriptionID, spec.resourceGroup and spec.location are immutable"},
		{"another frontend", func(o *v1alpha1.AzurePrivateLinkService) {
			o.Spec.Frontend = v1alpha1.Frontend{PrivateIPAddress: "172.20.0.4"}
		}, "spec.frontend is immutable"},
	}
	for _, u := range updates {
		cur := &v1alpha1.AzurePrivateLinkService{}
		if err := w.Client.Get(context.Background(), key("valid"), cur); err != nil {
			t.Fatal(err)
		}
		u.mutate(cur)
		err := w.Client.Update(context.Background(), cur)
		if err == nil || !strings.Contains(err.Error(), u.want) {
			t.Errorf("%s: got %v, want an error with %q", u.reason, err, u.want)
		}
	}
	// Defaults the user sees.
	cur := &v1alpha1.AzurePrivateLinkService{}
	if err := w.Client.Get(context.Background(), key("valid"), cur); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v1alpha1.DeletionPolicyDelete, cur.Spec.DeletionPolicy); diff != "" {
		t.Errorf("deletionPolicy default (-want +got):\n%s", diff)
	}
}
