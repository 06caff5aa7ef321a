package privateendpoint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const someService = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.Network/privateLinkServices/svc"

// TestValidation: the API server refuses invalid objects with the message
// a user sees, and fills the defaults; no controller runs.
func TestValidation(t *testing.T) {
	w := testworld.Start(t, testworld.Options{Schema: testenv.SchemaUpstream, CAPZMode: capzsim.Upstream})
	w.Namespace(t, ns)
	ctx := context.Background()
	cases := []struct {
		reason string
		mutate func(*v1alpha1.AzurePrivateEndpoint)
		want   string
	}{
		{"no target", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.PrivateLinkServiceID = "" }, "spec needs exactly one target"},
		{"two targets", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceRef = &v1alpha1.LocalObjectReference{Name: "svc"}
		}, "spec needs exactly one target"},
		{"a target ID that is not a service", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID = "/subscriptions/x/resourceGroups/y/providers/Microsoft.Network/loadBalancers/z"
		}, "spec.privateLinkServiceID"},
		{"an alias that is not one", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID, o.Spec.PrivateLinkServiceAlias = "", "svc.example.com"
		}, "spec.privateLinkServiceAlias"},
		{"a request message without manual approval", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.RequestMessage = "hi" },
			"spec.requestMessage is sent only with spec.manualApproval"},
		{"a request message longer than Azure keeps", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.ManualApproval, o.Spec.RequestMessage = true, strings.Repeat("x", 141)
		}, "spec.requestMessage"},
		{"a request revision without manual approval", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.RequestRevision = "1" },
			"spec.requestRevision asks again for a manual connection"},
		{"publishing nowhere", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Publish = &v1alpha1.PrivateEndpointPublish{} },
			"spec.publish needs at least one of configMapName, secretName or service"},
		{"a Service for external-dns without hostnames", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.Publish = &v1alpha1.PrivateEndpointPublish{Service: &v1alpha1.PublishService{Name: "dns"}}
		}, "spec.publish.service.hostnames"},
		{"a ConfigMap name Kubernetes refuses", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.Publish = &v1alpha1.PrivateEndpointPublish{ConfigMapName: "Not_A_Name"}
		}, "spec.publish.configMapName"},
		{"a name Azure refuses", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Name = "-bad" }, "spec.name"},
		{"an object name too short for Azure, without spec.name", func(o *v1alpha1.AzurePrivateEndpoint) { o.Name = "x" }, "must have 2 to 64 characters"},
		{"a subnet ID that is not one", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.SubnetID = "/subscriptions/x/pe" }, "spec.subnetID"},
		{"a static address that is not IPv4", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.IPAddress = "10.9.2.300" }, "spec.ipAddress"},
		{"a negative TTL", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.TTL = -1 }, "spec.dns.ttl"},
		{"a TTL above a day", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.TTL = 86401 }, "spec.dns.ttl"},
		{"a record name with a space", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.Records = []string{"api server"} }, "spec.dns.records[0]"},
		{"a wildcard in the middle", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.Records = []string{"apps.*.x"} }, "spec.dns.records[0]"},
		{"an upper-case zone", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.ZoneName = "WC1.Example" }, "spec.dns.zoneName"},
		{"a link that is not a network", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.DNS.VirtualNetworkLinks = []string{cSubnet}
		}, "spec.dns.virtualNetworkLinks[0]"},
		{"an unknown zone mode", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.ZoneMode = "Mine" }, "spec.dns.zoneMode"},
		{"an additional zone that is the zone itself", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.DNS.AdditionalZones = []v1alpha1.PrivateEndpointDNSZone{{ZoneName: o.Spec.DNS.ZoneName, Records: []string{"x"}}}
		}, "an additional zone must not be the zone of spec.dns.zoneName"},
		{"an additional zone without records", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.DNS.AdditionalZones = []v1alpha1.PrivateEndpointDNSZone{{ZoneName: "base.example.com"}}
		}, "spec.dns.additionalZones[0].records"},
		{"a zone subscription that is not one", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.ZoneSubscriptionID = "hub" }, "spec.dns.zoneSubscriptionID"},
		{"a tag name with a backslash", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Tags = map[string]string{`cost\center`: "1"} }, "tag names have at most 512 characters"},
		{"a tag name with a slash", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Tags = map[string]string{"cost/center": "1"} }, "tag names have at most 512 characters"},
		{"the operator's owner tag", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.Tags = map[string]string{"Azure-Private-Endpoint-Operator.giantswarm.io_owner": "someone/else"}
		}, "the operator's owner tag is its own"},
		{"a tag value too long for Azure", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Tags = map[string]string{"a": strings.Repeat("v", 257)} }, "tag values have at most 256 characters"},
		{"a group that is not one", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.ApplicationSecurityGroupIDs = []string{cSubnet} }, "spec.applicationSecurityGroupIDs[0]"},
		{"a network interface name Azure refuses", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.NetworkInterfaceName = "nic-" }, "spec.networkInterfaceName"},
		{"a Service beside a service ID", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "nginx", ResourceGroup: prg}
		}, "spec needs exactly one target"},
		{"a Service name Kubernetes refuses", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID = ""
			o.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "1nginx", ResourceGroup: prg}
		}, "spec.cloudProviderService.name"},
		{"a Service without the group to look in", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID = ""
			o.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "nginx"}
		}, "spec.cloudProviderService.resourceGroup"},
		{"a Service's subscription that is not one", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID = ""
			o.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "nginx", ResourceGroup: prg, SubscriptionID: "wc1"}
		}, "spec.cloudProviderService.subscriptionID"},
		{"a group ID without an Azure service", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.GroupIDs = []string{"blob"} },
			"spec.groupIDs names the sub-resource of spec.privateLinkResourceID"},
		{"an Azure service without a group ID", func(o *v1alpha1.AzurePrivateEndpoint) { azureService(o); o.Spec.GroupIDs = nil },
			"spec.groupIDs names the sub-resource of spec.privateLinkResourceID"},
		{"two group IDs (Azure permits one)", func(o *v1alpha1.AzurePrivateEndpoint) { azureService(o); o.Spec.GroupIDs = []string{"blob", "file"} },
			"spec.groupIDs"},
		{"a private link service named as an Azure service", func(o *v1alpha1.AzurePrivateEndpoint) {
			azureService(o)
			o.Spec.PrivateLinkResourceID = someService
		}, "a private link service is spec.privateLinkServiceID"},
		{"an Azure service beside a private link service", func(o *v1alpha1.AzurePrivateEndpoint) {
			azureService(o)
			o.Spec.PrivateLinkServiceID = someService
		}, "spec needs exactly one target"},
		{"static configurations to a private link service", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.IPConfigurations = []v1alpha1.PrivateEndpointIPConfiguration{{MemberName: "x", PrivateIPAddress: "10.9.2.40"}}
		}, "spec.ipConfigurations are for an Azure service target"},
		{"one static address to an Azure service", func(o *v1alpha1.AzurePrivateEndpoint) { azureService(o); o.Spec.IPAddress = "10.9.2.40" },
			"use spec.ipConfigurations"},
		{"two addresses for one member", func(o *v1alpha1.AzurePrivateEndpoint) {
			azureService(o)
			o.Spec.IPConfigurations = []v1alpha1.PrivateEndpointIPConfiguration{{MemberName: "registry", PrivateIPAddress: "10.9.2.40"}, {MemberName: "registry", PrivateIPAddress: "10.9.2.41"}}
		}, "Duplicate value"},
		{"a static address that is not IPv4, per member", func(o *v1alpha1.AzurePrivateEndpoint) {
			azureService(o)
			o.Spec.IPConfigurations = []v1alpha1.PrivateEndpointIPConfiguration{{MemberName: "registry", PrivateIPAddress: "10.9.2.300"}}
		}, "spec.ipConfigurations[0].privateIPAddress"},
		{"DNS for an Azure service (privatelink zones are the network's)", func(o *v1alpha1.AzurePrivateEndpoint) {
			azureService(o)
			o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "privatelink.azurecr.io", Records: []string{"reg1"}}
		}, "spec.dns is for private link services"},
	}
	for i, c := range cases {
		obj := ape("invalid-"+string(rune('a'+i)), someService)
		c.mutate(obj)
		err := w.Client.Create(ctx, obj)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.reason, err, c.want)
		}
	}

	obj := ape("valid", someService)
	obj.Spec.Name = "azure-name"
	create(t, w, obj)
	updates := []struct {
		reason string
		mutate func(*v1alpha1.AzurePrivateEndpoint)
		want   string
	}{
		{"renaming", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Name = "other" }, "spec.name is immutable"},
		{"moving to another subnet", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.SubnetID = pVNet + "/subnets/pe" },
			"spec.subscriptionID, spec.resourceGroup, spec.location and spec.subnetID are immutable"},
		{"another target", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.PrivateLinkServiceID = someService + "2" }, "the target"},
		{"a target by reference instead", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID, o.Spec.PrivateLinkServiceRef = "", &v1alpha1.LocalObjectReference{Name: "svc"}
		}, "the target"},
		{"a Service target instead", func(o *v1alpha1.AzurePrivateEndpoint) {
			o.Spec.PrivateLinkServiceID = ""
			o.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "nginx", ResourceGroup: prg}
		}, "the target"},
		{"a static address later", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.IPAddress = "10.9.2.10" }, "spec.ipAddress is immutable"},
		{"another zone", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.ZoneName = "other.internal" }, "spec.dns.zoneName, zoneResourceGroup, zoneSubscriptionID and zoneMode are immutable"},
		{"sharing the zone later", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.DNS.ZoneMode = v1alpha1.ZoneModeShared }, "immutable"},
		{"naming the network interface later", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.NetworkInterfaceName = "nic" }, "spec.networkInterfaceName is immutable"},
	}
	for _, u := range updates {
		refused(t, w, "valid", u.reason, u.mutate, u.want)
	}
	cur := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(ctx, key("valid"), cur); err != nil {
		t.Fatal(err)
	}
	if cur.Spec.DeletionPolicy != v1alpha1.DeletionPolicyDelete || cur.Spec.DNS.ZoneMode != v1alpha1.ZoneModeOwned || cur.Spec.DNS.TTL != 300 {
		t.Errorf("defaults: deletionPolicy %q, zoneMode %q, ttl %d", cur.Spec.DeletionPolicy, cur.Spec.DNS.ZoneMode, cur.Spec.DNS.TTL)
	}
	// What may change: records, TTL, links, the request message, the policy.
	cur.Spec.DNS.Records, cur.Spec.DNS.TTL, cur.Spec.DeletionPolicy = []string{"api", "*.apps", "@"}, 60, v1alpha1.DeletionPolicyOrphan
	cur.Spec.DNS.VirtualNetworkLinks = []string{cVNet, pVNet}
	if err := w.Client.Update(ctx, cur); err != nil {
		t.Errorf("a valid change was refused: %v", err)
	}
	// Removing DNS and adding it back with another zone is the way to move.
	cur.Spec.DNS = nil
	if err := w.Client.Update(ctx, cur); err != nil {
		t.Errorf("removing spec.dns: %v", err)
	}

	// An Azure service target, its group and its static addresses are
	// immutable.
	bySvcID := ape("valid-azure-service", someService)
	azureService(bySvcID)
	bySvcID.Spec.IPConfigurations = []v1alpha1.PrivateEndpointIPConfiguration{{MemberName: "registry", PrivateIPAddress: "10.9.2.40"}}
	create(t, w, bySvcID)
	refused(t, w, "valid-azure-service", "another group", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.GroupIDs = []string{"registry_data"} }, "the target")
	refused(t, w, "valid-azure-service", "another address", func(o *v1alpha1.AzurePrivateEndpoint) {
		o.Spec.IPConfigurations[0].PrivateIPAddress = "10.9.2.41"
	}, "spec.ipConfigurations is immutable")
	refused(t, w, "valid-azure-service", "no static addresses any more", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.IPConfigurations = nil },
		"spec.ipConfigurations is immutable")

	// A Service target is immutable in each of its fields.
	bySvc := ape("valid-service", "")
	bySvc.Spec.CloudProviderService = &v1alpha1.CloudProviderServiceReference{Namespace: "ingress", Name: "nginx", ResourceGroup: prg}
	create(t, w, bySvc)
	refused(t, w, "valid-service", "naming the cluster later", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.CloudProviderService.ClusterName = "wc1" }, "the target")
	refused(t, w, "valid-service", "another Service", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.CloudProviderService.Name = "other" }, "the target")
	refused(t, w, "valid-service", "another group", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.CloudProviderService.ResourceGroup = "elsewhere" }, "the target")
}

// refused checks that the API server refuses a change to an object with
// an error that contains want.
func refused(t *testing.T, w *testworld.World, name, reason string, mutate func(*v1alpha1.AzurePrivateEndpoint), want string) {
	t.Helper()
	cur := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(context.Background(), key(name), cur); err != nil {
		t.Fatal(err)
	}
	mutate(cur)
	if err := w.Client.Update(context.Background(), cur); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: got %v, want an error with %q", reason, err, want)
	}
}

// azureService makes an object target a container registry's registry
// sub-resource, without DNS.
func azureService(o *v1alpha1.AzurePrivateEndpoint) {
	o.Spec.PrivateLinkServiceID, o.Spec.DNS = "", nil
	o.Spec.PrivateLinkResourceID = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.ContainerRegistry/registries/reg1"
	o.Spec.GroupIDs = []string{"registry"}
}
