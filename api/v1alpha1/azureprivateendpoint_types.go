package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an AzurePrivateEndpoint (Ready is shared with
// AzurePrivateLinkService).
const (
	// ConditionPrivateEndpointReady: the private endpoint exists, is ours,
	// is provisioned and has an IP address.
	ConditionPrivateEndpointReady = "PrivateEndpointReady"
	// ConditionConnectionApproved: the provider approved the endpoint's
	// connection.
	ConditionConnectionApproved = "ConnectionApproved"
	// ConditionDNSReady: the zone, its virtual network links and the
	// records exist and point at the endpoint's IP (True with reason
	// NotRequested when spec.dns is not set).
	ConditionDNSReady = "DNSReady"
	// ConditionPublished: the objects spec.publish names hold the
	// endpoint's addresses and names (True with reason NotRequested when
	// spec.publish is not set).
	ConditionPublished = "Published"
)

// ZoneMode says whether a private DNS zone belongs to one object or is
// shared by many.
// +kubebuilder:validation:Enum=Owned;Shared
type ZoneMode string

const (
	// ZoneModeOwned makes the zone this object's: it is deleted with it.
	ZoneModeOwned ZoneMode = "Owned"
	// ZoneModeShared lets several objects write their records into one
	// zone; the zone and each virtual network link stay while an object needs
	// them.
	ZoneModeShared ZoneMode = "Shared"
)

// AzurePrivateEndpointSpec is the desired Azure private endpoint, and
// optionally the private DNS that makes a name resolve to it.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name)",message="spec.name is immutable: it cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="self.subscriptionID == oldSelf.subscriptionID && self.resourceGroup == oldSelf.resourceGroup && self.location == oldSelf.location && self.subnetID == oldSelf.subnetID",message="spec.subscriptionID, spec.resourceGroup, spec.location and spec.subnetID are immutable: create a new object to move the private endpoint"
// +kubebuilder:validation:XValidation:rule="[has(self.privateLinkServiceID), has(self.privateLinkServiceAlias), has(self.privateLinkServiceRef), has(self.cloudProviderService), has(self.privateLinkResourceID)].filter(x, x).size() == 1",message="spec needs exactly one target: privateLinkServiceID, privateLinkServiceAlias, privateLinkServiceRef, cloudProviderService or privateLinkResourceID"
// +kubebuilder:validation:XValidation:rule="has(self.privateLinkServiceID) == has(oldSelf.privateLinkServiceID) && (!has(self.privateLinkServiceID) || self.privateLinkServiceID == oldSelf.privateLinkServiceID) && has(self.privateLinkServiceAlias) == has(oldSelf.privateLinkServiceAlias) && (!has(self.privateLinkServiceAlias) || self.privateLinkServiceAlias == oldSelf.privateLinkServiceAlias) && has(self.privateLinkServiceRef) == has(oldSelf.privateLinkServiceRef) && (!has(self.privateLinkServiceRef) || self.privateLinkServiceRef.name == oldSelf.privateLinkServiceRef.name) && has(self.cloudProviderService) == has(oldSelf.cloudProviderService) && (!has(self.cloudProviderService) || self.cloudProviderService == oldSelf.cloudProviderService) && has(self.privateLinkResourceID) == has(oldSelf.privateLinkResourceID) && (!has(self.privateLinkResourceID) || self.privateLinkResourceID == oldSelf.privateLinkResourceID) && has(self.groupIDs) == has(oldSelf.groupIDs) && (!has(self.groupIDs) || self.groupIDs == oldSelf.groupIDs)",message="the target (privateLinkServiceID, privateLinkServiceAlias, privateLinkServiceRef, cloudProviderService, privateLinkResourceID and groupIDs) is immutable: Azure cannot move an endpoint to another service"
// +kubebuilder:validation:XValidation:rule="has(self.ipAddress) == has(oldSelf.ipAddress) && (!has(self.ipAddress) || self.ipAddress == oldSelf.ipAddress)",message="spec.ipAddress is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.ipConfigurations) == has(oldSelf.ipConfigurations) && (!has(self.ipConfigurations) || self.ipConfigurations == oldSelf.ipConfigurations)",message="spec.ipConfigurations is immutable: Azure gives an endpoint its addresses when it creates it"
// +kubebuilder:validation:XValidation:rule="has(self.groupIDs) == has(self.privateLinkResourceID)",message="spec.groupIDs names the sub-resource of spec.privateLinkResourceID, and goes with it only"
// +kubebuilder:validation:XValidation:rule="!has(self.ipConfigurations) || has(self.privateLinkResourceID)",message="spec.ipConfigurations are for an Azure service target (spec.privateLinkResourceID); an endpoint to a private link service has one address: use spec.ipAddress"
// +kubebuilder:validation:XValidation:rule="!has(self.ipAddress) || !has(self.privateLinkResourceID)",message="an endpoint to an Azure service takes static addresses per member: use spec.ipConfigurations"
// +kubebuilder:validation:XValidation:rule="!has(self.dns) || !has(self.privateLinkResourceID)",message="spec.dns is for private link services: an Azure service's names resolve privately only through Azure's privatelink.* zones, which belong to the network's private endpoint DNS and which the operator never writes; its names and addresses are in status.customDNSConfigs and, with spec.publish, in the hosts key"
// +kubebuilder:validation:XValidation:rule="has(self.networkInterfaceName) == has(oldSelf.networkInterfaceName) && (!has(self.networkInterfaceName) || self.networkInterfaceName == oldSelf.networkInterfaceName)",message="spec.networkInterfaceName is immutable: Azure names the network interface when it creates the endpoint"
// +kubebuilder:validation:XValidation:rule="!has(self.requestMessage) || self.manualApproval",message="spec.requestMessage is sent only with spec.manualApproval"
// +kubebuilder:validation:XValidation:rule="!has(self.requestRevision) || self.manualApproval",message="spec.requestRevision asks again for a manual connection: set spec.manualApproval"
type AzurePrivateEndpointSpec struct {
	// SubscriptionID is the Azure subscription of the private endpoint (and
	// of its private DNS zone).
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SubscriptionID string `json:"subscriptionID"`

	// ResourceGroup is the resource group of the private endpoint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ResourceGroup string `json:"resourceGroup"`

	// Location is the Azure region of the endpoint, which is the region of
	// its subnet's virtual network.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	Location string `json:"location"`

	// Name is the private endpoint's name in Azure. Default: the object's
	// name. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9_])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.name is immutable"
	Name string `json:"name,omitempty"`

	// IdentityRef names the AzureClusterIdentity whose credential the
	// operator uses, resolved like CAPZ does (allowedNamespaces enforced).
	// Without it the operator uses its own credential, if the object's
	// namespace may (--operator-credential-namespaces).
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// AzureEnvironment is the cloud, as for AzurePrivateLinkService.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AzureEnvironment string `json:"azureEnvironment,omitempty"`

	// SubnetID is the consumer subnet the endpoint's address comes from.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$`
	SubnetID string `json:"subnetID"`

	// PrivateLinkServiceID is the target private link service's resource ID.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/privateLinkServices/[^/]+$`
	PrivateLinkServiceID string `json:"privateLinkServiceID,omitempty"`

	// PrivateLinkServiceAlias is the target's alias
	// (<name>.<guid>.<region>.azure.privatelinkservice), for a service the
	// consumer cannot see by ID.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-a-zA-Z0-9._]*\.azure\.privatelinkservice$`
	PrivateLinkServiceAlias string `json:"privateLinkServiceAlias,omitempty"`

	// PrivateLinkServiceRef names an AzurePrivateLinkService in the same
	// namespace; its status.resourceID is the target.
	// +optional
	PrivateLinkServiceRef *LocalObjectReference `json:"privateLinkServiceRef,omitempty"`

	// CloudProviderService targets the private link service that
	// cloud-provider-azure made for a Kubernetes Service of type
	// LoadBalancer with the annotation
	// service.beta.kubernetes.io/azure-pls-create: "true", in whichever
	// cluster runs that Service. The operator finds it by the tags
	// cloud-provider-azure puts on it (k8s-azure-owner-service and
	// k8s-azure-cluster-name) and connects to it; status.target shows which
	// it found. When the Service is recreated, cloud-provider-azure makes a
	// new private link service (its default name follows the load
	// balancer frontend, which follows the Service's UID); the operator
	// then replaces the endpoint to connect to the new one.
	// +optional
	CloudProviderService *CloudProviderServiceReference `json:"cloudProviderService,omitempty"`

	// PrivateLinkResourceID targets an Azure service that offers private
	// endpoints itself (Azure calls it a private link resource): a storage
	// account, a key vault, a SQL server, a container registry, by
	// resource ID, e.g.
	// /subscriptions/<sub>/resourceGroups/<rg>/providers/Microsoft.Storage/storageAccounts/<name>.
	// spec.groupIDs names its sub-resource. Azure gives the endpoint one
	// address per member of that sub-resource (status.customDNSConfigs).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/[^/]+/[^/]+/[^/]+$`
	// +kubebuilder:validation:XValidation:rule="!self.lowerAscii().contains('/providers/microsoft.network/privatelinkservices/')",message="a private link service is spec.privateLinkServiceID"
	PrivateLinkResourceID string `json:"privateLinkResourceID,omitempty"`

	// GroupIDs names the sub-resource of spec.privateLinkResourceID the
	// endpoint connects to (Azure's group ID, spelled as the service spells
	// it: Storage refuses BLOB for blob; blob, file, vault, sqlServer,
	// registry, ...). Azure permits one group ID on an
	// endpoint to an Azure service (OnlyOneGroupIdPermitted): one
	// endpoint per sub-resource. Required with spec.privateLinkResourceID,
	// refused without it. Immutable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	GroupIDs []string `json:"groupIDs,omitempty"`

	// IPConfigurations give an endpoint to an Azure service a static
	// address per member of its sub-resource (a container registry's
	// registry sub-resource has two: registry and registry_data_<region>).
	// Azure requires one for every member when any is given. The
	// operator makes an endpoint it heals again with the same addresses,
	// so the names keep resolving to them. Immutable.
	// +optional
	// +listType=map
	// +listMapKey=memberName
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	IPConfigurations []PrivateEndpointIPConfiguration `json:"ipConfigurations,omitempty"`

	// ManualApproval asks the provider to approve the connection instead of
	// relying on its auto-approval list; the connection stays Pending until
	// it does.
	// +optional
	ManualApproval bool `json:"manualApproval,omitempty"`

	// RequestMessage is shown to the provider with a manual request.
	// +optional
	// +kubebuilder:validation:MaxLength=140
	RequestMessage string `json:"requestMessage,omitempty"`

	// RequestRevision asks the provider again after a rejection: when it
	// changes while the connection is Rejected, the operator sets the
	// connection back to Pending with spec.requestMessage (Azure lets the
	// consumer do that; the provider cannot approve a Rejected
	// connection). Any value, e.g. a date or a ticket number; the value
	// acted on is status.requestedRevision.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	RequestRevision string `json:"requestRevision,omitempty"`

	// IPAddress is a static address in the subnet for the endpoint.
	// Default: Azure picks one. Immutable.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Format=ipv4
	IPAddress string `json:"ipAddress,omitempty"`

	// Tags go on every Azure resource the operator creates for this
	// object, beside the operator's defaults (--azure-tags; these win) and
	// its owner tag, which they cannot replace. Azure's rules: at most 50
	// tags on a resource, names of at most 512 characters without
	// < > % & \ ? /, values of at most 256. A tag removed here stays in
	// Azure (the operator cannot tell it from one a person set).
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 512 && !k.matches(r'[<>%&\\\\?/]') && k.lowerAscii() != 'azure-private-endpoint-operator.giantswarm.io_owner')",message="tag names have at most 512 characters, none of < > % & \\ ? /, and the operator's owner tag is its own"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 256)",message="tag values have at most 256 characters"
	Tags map[string]string `json:"tags,omitempty"`

	// NetworkInterfaceName names the endpoint's network interface, for
	// naming policies (Azure's default is <name>.nic.<guid>). Immutable:
	// Azure names it when it creates the endpoint.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9_])?$`
	NetworkInterfaceName string `json:"networkInterfaceName,omitempty"`

	// ApplicationSecurityGroupIDs are application security groups (resource
	// IDs, in the endpoint's region) the endpoint's network interface
	// joins, so network security group rules can name it. Without it, the
	// endpoint's groups are left as they are.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/applicationSecurityGroups/[^/]+$`
	ApplicationSecurityGroupIDs []string `json:"applicationSecurityGroupIDs,omitempty"`

	// DNS makes names in a private DNS zone resolve to the endpoint from
	// the linked virtual networks.
	// +optional
	DNS *PrivateEndpointDNS `json:"dns,omitempty"`

	// Publish writes the endpoint's addresses and names into a ConfigMap, a
	// Secret or a Service in the object's namespace, for applications and
	// DNS tools that do not read this object's status.
	// +optional
	Publish *PrivateEndpointPublish `json:"publish,omitempty"`

	// DeletionPolicy: Delete (default) removes the records, the virtual
	// network links and zone the object no longer needs, and the endpoint;
	// Orphan leaves everything in Azure.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Adopt lets the operator take over an endpoint, zone, virtual network
	// link or record set of the same name that it did not create (it then
	// marks it as its own). Without it such a resource is left alone and
	// reported.
	// +optional
	Adopt bool `json:"adopt,omitempty"`
}

// PrivateEndpointIPConfiguration is a static address of an endpoint to an
// Azure service, for one member of its sub-resource.
type PrivateEndpointIPConfiguration struct {
	// MemberName is the member of the sub-resource the address serves
	// (Azure's requiredMembers of the service's private link resource,
	// e.g. default for a key vault, blob for a storage account's blob).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9_.]*$`
	MemberName string `json:"memberName"`
	// PrivateIPAddress is the static address, in spec.subnetID.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Format=ipv4
	PrivateIPAddress string `json:"privateIPAddress"`
	// Name of the IP configuration in Azure. Default:
	// <endpoint name>-<memberName>.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9_])?$`
	Name string `json:"name,omitempty"`
}

// CustomDNSConfig is a name Azure says an endpoint serves, with its
// addresses.
type CustomDNSConfig struct {
	// FQDN is the service's name, e.g. <account>.blob.core.windows.net.
	FQDN string `json:"fqdn"`
	// IPAddresses are the endpoint's addresses for that name.
	// +optional
	// +listType=atomic
	IPAddresses []string `json:"ipAddresses,omitempty"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// CloudProviderServiceReference names a Kubernetes Service whose private
// link service cloud-provider-azure manages, and where to look for it.
type CloudProviderServiceReference struct {
	// Namespace of the Service, in the cluster that runs it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	// Name of the Service. Where several Services share one load balancer
	// frontend, cloud-provider-azure makes one private link service, owned
	// by the first of them: name that one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ClusterName is the cluster's name as cloud-provider-azure knows it
	// (its --cluster-name; with CAPZ, the Cluster's name). It tells apart
	// Services of the same namespace and name in clusters that share the
	// resource group. Without it, exactly one private link service in the
	// group may carry the Service's tag.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ClusterName string `json:"clusterName,omitempty"`

	// ResourceGroup holds the private link service: the Service's
	// service.beta.kubernetes.io/azure-pls-resource-group annotation, or
	// else cloud-provider-azure's privateLinkServiceResourceGroup setting,
	// which defaults to the cluster's resource group.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ResourceGroup string `json:"resourceGroup"`

	// SubscriptionID of the private link service. Default:
	// spec.subscriptionID. The object's identity must be allowed to list
	// private link services in the group.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SubscriptionID string `json:"subscriptionID,omitempty"`
}

// PrivateEndpointDNS is the private DNS of an endpoint.
//
// +kubebuilder:validation:XValidation:rule="self.zoneName == oldSelf.zoneName && has(self.zoneResourceGroup) == has(oldSelf.zoneResourceGroup) && (!has(self.zoneResourceGroup) || self.zoneResourceGroup == oldSelf.zoneResourceGroup) && (has(self.zoneMode) ? self.zoneMode : 'Owned') == (has(oldSelf.zoneMode) ? oldSelf.zoneMode : 'Owned') && has(self.zoneSubscriptionID) == has(oldSelf.zoneSubscriptionID) && (!has(self.zoneSubscriptionID) || self.zoneSubscriptionID == oldSelf.zoneSubscriptionID)",message="spec.dns.zoneName, zoneResourceGroup, zoneSubscriptionID and zoneMode are immutable: remove spec.dns and add it again to move the records"
// +kubebuilder:validation:XValidation:rule="!has(self.additionalZones) || self.additionalZones.all(z, z.zoneName != self.zoneName || (has(z.zoneResourceGroup) && (!has(self.zoneResourceGroup) || z.zoneResourceGroup != self.zoneResourceGroup)) || (has(z.zoneSubscriptionID) && (!has(self.zoneSubscriptionID) || z.zoneSubscriptionID != self.zoneSubscriptionID)))",message="an additional zone must not be the zone of spec.dns.zoneName"
type PrivateEndpointDNS struct {
	// ZoneName is the private DNS zone, e.g. wc1.hypershift.local.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	ZoneName string `json:"zoneName"`

	// ZoneResourceGroup is the zone's resource group, in
	// spec.subscriptionID. Default: spec.resourceGroup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ZoneResourceGroup string `json:"zoneResourceGroup,omitempty"`

	// ZoneMode: Owned (default) makes the zone this object's alone: it is
	// created and deleted with it. Shared lets many objects write records
	// into one zone; the zone and each virtual network link stay while an
	// object still needs them.
	// +optional
	// +kubebuilder:default=Owned
	ZoneMode ZoneMode `json:"zoneMode,omitempty"`

	// Records are A record names relative to the zone, each pointing at
	// the endpoint's IP. Default: api and *.apps.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(@|(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?|\*)$`
	Records []string `json:"records,omitempty"`

	// TTL of the records in seconds, 1 to 86400. Default 300.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=300
	TTL int64 `json:"ttl,omitempty"`

	// VirtualNetworkLinks are the virtual networks (resource IDs) the names
	// resolve from. Default: the virtual network of spec.subnetID.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:items:Pattern=`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+$`
	VirtualNetworkLinks []string `json:"virtualNetworkLinks,omitempty"`

	// ZoneSubscriptionID is the zone's subscription, for central DNS in
	// another subscription (an Azure landing zone's connectivity
	// subscription, say). Default: spec.subscriptionID.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	ZoneSubscriptionID string `json:"zoneSubscriptionID,omitempty"`

	// IdentityRef names the AzureClusterIdentity whose credential writes
	// the zone, when it is not spec.identityRef's (central DNS another
	// team's identity may write). The same namespace rules apply as to
	// spec.identityRef. Default: spec.identityRef.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// AdditionalZones are more zones whose records point at the endpoint,
	// each with its own names (HyperShift writes two: the cluster's zone
	// with api and *.apps, and the base domain with api-<name> and
	// oauth-<name>). They share ttl and virtualNetworkLinks. An entry
	// removed has its records, and what the operator made for it,
	// removed.
	// +optional
	// +listType=map
	// +listMapKey=zoneName
	// +kubebuilder:validation:MaxItems=8
	AdditionalZones []PrivateEndpointDNSZone `json:"additionalZones,omitempty"`
}

// PrivateEndpointPublish names the objects the operator writes the
// endpoint's addresses and names into, in the object's namespace. The
// operator creates each one, owned by this object (deleted with it, or when
// its name leaves the spec); an object of that name that this one does not
// own is never written: Published is False with reason NotOwned.
//
// +kubebuilder:validation:XValidation:rule="has(self.configMapName) || has(self.secretName) || has(self.service)",message="spec.publish needs at least one of configMapName, secretName or service"
type PrivateEndpointPublish struct {
	// ConfigMapName is a ConfigMap that gets the keys ipAddress (the first
	// address), ipAddresses and fqdns (comma-separated),
	// privateEndpointID, and, when Azure names any
	// (status.customDNSConfigs), hosts ("<address> <fqdn>" per line).
	// Other keys in it are left alone.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ConfigMapName string `json:"configMapName,omitempty"`
	// SecretName is an Opaque Secret that gets the same keys as the
	// ConfigMap. The operator writes Secrets only when it runs with
	// --publish-secrets (chart value privateEndpoints.publishSecrets), which grants it the
	// right to; otherwise Published is False with reason SecretsDisabled.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`
	// Service is a headless Service without selector or ports whose
	// external-dns annotations (external-dns.alpha.kubernetes.io/hostname
	// and /target) make external-dns publish the hostnames with the
	// endpoint's addresses.
	// +optional
	Service *PublishService `json:"service,omitempty"`
}

// PublishService is a Service for external-dns.
type PublishService struct {
	// Name of the Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Hostnames external-dns publishes with the endpoint's addresses.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$`
	Hostnames []string `json:"hostnames"`
}

// PublishedStatus names the objects the operator wrote for spec.publish.
type PublishedStatus struct {
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
}

// PrivateEndpointDNSZone is one more zone of an endpoint's names.
type PrivateEndpointDNSZone struct {
	// ZoneName is the private DNS zone.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	ZoneName string `json:"zoneName"`
	// ZoneResourceGroup is the zone's resource group. Default:
	// spec.dns.zoneResourceGroup, else spec.resourceGroup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ZoneResourceGroup string `json:"zoneResourceGroup,omitempty"`
	// ZoneSubscriptionID is the zone's subscription. Default:
	// spec.dns.zoneSubscriptionID, else spec.subscriptionID.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	ZoneSubscriptionID string `json:"zoneSubscriptionID,omitempty"`
	// ZoneMode as spec.dns.zoneMode. Default: Owned.
	// +optional
	// +kubebuilder:default=Owned
	ZoneMode ZoneMode `json:"zoneMode,omitempty"`
	// Records are A record names relative to the zone.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(@|(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?|\*)$`
	Records []string `json:"records"`
	// IdentityRef as spec.dns.identityRef. Default: spec.dns.identityRef,
	// else spec.identityRef.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`
}

// DNSZoneStatus is what the operator holds in one additional zone.
type DNSZoneStatus struct {
	// ID is the zone's resource ID.
	ID string `json:"id"`
	// FQDNs are the names the operator wrote there.
	// +optional
	// +listType=atomic
	FQDNs []string `json:"fqdns,omitempty"`
	// VirtualNetworkLinks are the zone's virtual network links the object
	// uses.
	// +optional
	// +listType=atomic
	VirtualNetworkLinks []string `json:"virtualNetworkLinks,omitempty"`
	// IdentityRef is the identity the zone was written with, when it is
	// not the object's.
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`
}

// AzurePrivateEndpointStatus is what the operator observed.
type AzurePrivateEndpointStatus struct {
	// Target is the private link service the endpoint connects to (its
	// resource ID, or the alias).
	// +optional
	Target string `json:"target,omitempty"`
	// PrivateEndpointID is the endpoint's resource ID in Azure.
	// +optional
	PrivateEndpointID string `json:"privateEndpointID,omitempty"`
	// NetworkInterfaceID is the endpoint's network interface (Azure makes a
	// new one when the endpoint is recreated).
	// +optional
	NetworkInterfaceID string `json:"networkInterfaceID,omitempty"`
	// IPAddresses are the endpoint's private addresses.
	// +optional
	// +listType=atomic
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// CustomDNSConfigs are the names Azure says the endpoint serves, each
	// with its address: for an Azure service, one per member (the records
	// its privatelink.* zone needs); for a private link service, its FQDNs.
	// +optional
	// +listType=atomic
	CustomDNSConfigs []CustomDNSConfig `json:"customDNSConfigs,omitempty"`
	// ProvisioningState as Azure reports it.
	// +optional
	ProvisioningState string `json:"provisioningState,omitempty"`
	// ConnectionState is Pending, Approved, Rejected or Disconnected.
	// +optional
	ConnectionState string `json:"connectionState,omitempty"`
	// ConnectionDescription is the provider's message with the state
	// (its reason for a rejection).
	// +optional
	ConnectionDescription string `json:"connectionDescription,omitempty"`
	// RequestedRevision is the spec.requestRevision the operator acted on
	// (or saw while there was nothing to ask again).
	// +optional
	RequestedRevision string `json:"requestedRevision,omitempty"`
	// DNSZoneID is the private DNS zone's resource ID.
	// +optional
	DNSZoneID string `json:"dnsZoneID,omitempty"`
	// FQDNs are the names the operator wrote, each resolving to
	// IPAddresses from the linked virtual networks.
	// +optional
	// +listType=atomic
	FQDNs []string `json:"fqdns,omitempty"`
	// VirtualNetworkLinks are the virtual network links the object uses.
	// +optional
	// +listType=atomic
	VirtualNetworkLinks []string `json:"virtualNetworkLinks,omitempty"`
	// DNSIdentityRef is the identity dnsZoneID's zone was written with,
	// when it is not the object's (spec.dns.identityRef): its release uses
	// it even after the spec changed.
	// +optional
	DNSIdentityRef *IdentityReference `json:"dnsIdentityRef,omitempty"`
	// DNSZones are the additional zones (spec.dns.additionalZones) the
	// operator holds records or links in.
	// +optional
	// +listType=map
	// +listMapKey=id
	DNSZones []DNSZoneStatus `json:"dnsZones,omitempty"`
	// Published names the objects the operator created for spec.publish
	// (it deletes them when they leave the spec).
	// +optional
	Published *PublishedStatus `json:"published,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: PrivateEndpointReady, ConnectionApproved, DNSReady,
	// Published and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AzurePrivateEndpoint is an Azure private endpoint to a private link
// service, with the private DNS that makes names resolve to it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ape,categories=privatelink
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move-hierarchy="
// +kubebuilder:validation:XValidation:rule="has(self.spec.name) || (size(self.metadata.name) >= 2 && size(self.metadata.name) <= 64)",message="the private endpoint's name in Azure (spec.name, default metadata.name) must have 2 to 64 characters: set spec.name"
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.target`,priority=1
// +kubebuilder:printcolumn:name="IP",type=string,JSONPath=`.status.ipAddresses[0]`
// +kubebuilder:printcolumn:name="Connection",type=string,JSONPath=`.status.connectionState`
// +kubebuilder:printcolumn:name="DNS",type=string,JSONPath=`.status.conditions[?(@.type=="DNSReady")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AzurePrivateEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AzurePrivateEndpointSpec   `json:"spec"`
	Status AzurePrivateEndpointStatus `json:"status,omitempty"`
}

// AzurePrivateEndpointName is the private endpoint's name in Azure.
func (p *AzurePrivateEndpoint) AzurePrivateEndpointName() string {
	if p.Spec.Name != "" {
		return p.Spec.Name
	}
	return p.Name
}

// AzurePrivateEndpointList is a list of AzurePrivateEndpoint.
//
// +kubebuilder:object:root=true
type AzurePrivateEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AzurePrivateEndpoint `json:"items"`
}
