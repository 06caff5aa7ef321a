package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says what happens in Azure when the object is deleted.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete removes or rejects the connections, deletes the
	// private link service and a NAT subnet the operator created.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves everything in Azure as it is.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// Condition types of an AzurePrivateLinkService.
const (
	// ConditionLoadBalancerFound: the frontend IP configuration to front
	// was found on a Standard load balancer (True with reason
	// DirectConnect for a service without one).
	ConditionLoadBalancerFound = "LoadBalancerFound"
	// ConditionNATSubnetReady: the NAT subnet exists with private link
	// service network policies disabled.
	ConditionNATSubnetReady = "NATSubnetReady"
	// ConditionPrivateLinkServiceReady: the private link service exists, is
	// ours, matches the spec and is provisioned.
	ConditionPrivateLinkServiceReady = "PrivateLinkServiceReady"
	// ConditionReady is the summary: every other condition is True.
	ConditionReady = "Ready"
)

// AzurePrivateLinkServiceSpec is the desired Azure private link service.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) == has(oldSelf.name)",message="spec.name is immutable: it cannot be added or removed after creation"
// +kubebuilder:validation:XValidation:rule="self.subscriptionID == oldSelf.subscriptionID && self.resourceGroup == oldSelf.resourceGroup && self.location == oldSelf.location",message="spec.subscriptionID, spec.resourceGroup and spec.location are immutable: create a new object to move the private link service"
// +kubebuilder:validation:XValidation:rule="!has(self.autoApproval) || has(self.visibility) && ('*' in self.visibility || self.autoApproval.all(s, s in self.visibility))",message="every spec.autoApproval subscription must be in spec.visibility (unless visibility is '*')"
// +kubebuilder:validation:XValidation:rule="!has(self.frontend.destinationIPAddress) || has(self.natSubnet.id)",message="a Direct Connect service (spec.frontend.destinationIPAddress) has no load balancer whose virtual network would hold the NAT subnet: name it by spec.natSubnet.id"
// +kubebuilder:validation:XValidation:rule="!has(self.frontend.destinationIPAddress) || has(self.natIPConfigurations) && has(self.natIPConfigurations.count) && self.natIPConfigurations.count >= 3",message="a Direct Connect service (spec.frontend.destinationIPAddress) needs spec.natIPConfigurations.count of at least 3, which Azure requires"
// +kubebuilder:validation:XValidation:rule="!has(self.accessMode) || self.accessMode == 'Default' || has(self.visibility) && !('*' in self.visibility)",message="spec.accessMode Restricted admits only the subscriptions of spec.visibility: list them (not '*')"
type AzurePrivateLinkServiceSpec struct {
	// SubscriptionID is the Azure subscription of the private link service
	// (and of its load balancer).
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SubscriptionID string `json:"subscriptionID"`

	// ResourceGroup is the resource group of the private link service, and
	// of its load balancer unless spec.frontend.resourceGroup names
	// another.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ResourceGroup string `json:"resourceGroup"`

	// Location is the Azure region, e.g. westeurope.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+$`
	Location string `json:"location"`

	// Name is the private link service's name in Azure. Default: the
	// object's name. Immutable.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9_])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.name is immutable"
	Name string `json:"name,omitempty"`

	// IdentityRef names the AzureClusterIdentity whose credential the
	// operator uses, resolved like CAPZ does (allowedNamespaces enforced).
	// Without it the operator uses its own credential, if the object's
	// namespace may (--operator-credential-namespaces).
	// +optional
	IdentityRef *IdentityReference `json:"identityRef,omitempty"`

	// AzureEnvironment is the cloud, as CAPZ names it (AzurePublicCloud,
	// AzureChinaCloud, AzureUSGovernmentCloud) or a custom cloud the
	// operator is configured with. Default: the operator's default cloud.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AzureEnvironment string `json:"azureEnvironment,omitempty"`

	// Tags go on the private link service, beside the operator's
	// defaults (--azure-tags; these win) and its owner tag, which they
	// cannot replace. Azure's rules: at most 50 tags on a resource, names
	// of at most 512 characters without < > % & \ ? /, values of at
	// most 256. A tag removed here stays in Azure (the operator cannot
	// tell it from one a person set).
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 512 && !k.matches(r'[<>%&\\\\?/]') && k.lowerAscii() != 'azure-private-endpoint-operator.giantswarm.io_owner')",message="tag names have at most 512 characters, none of < > % & \\ ? /, and the operator's owner tag is its own"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 256)",message="tag values have at most 256 characters"
	Tags map[string]string `json:"tags,omitempty"`

	// Frontend is what the private link service fronts.
	Frontend Frontend `json:"frontend"`

	// NATSubnet is where the NAT IP configurations get their addresses.
	NATSubnet NATSubnet `json:"natSubnet"`

	// NATIPConfigurations are the NAT IP configurations' count and
	// addresses. Default: one dynamic address.
	// +optional
	NATIPConfigurations NATIPConfigurations `json:"natIPConfigurations,omitempty"`

	// Visibility lists the subscriptions (lower-case IDs) that may see and
	// connect to the private link service, or "*" for every subscription.
	// Its own subscription always may.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=36
	// +kubebuilder:validation:items:Pattern=`^(\*|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`
	// +kubebuilder:validation:XValidation:rule="!self.exists(s, s == '*') || size(self) == 1",message="spec.visibility is either '*' alone or a list of subscription IDs"
	Visibility []string `json:"visibility,omitempty"`

	// AutoApproval lists the subscriptions (lower-case IDs) whose
	// connections Azure approves at once. Each must be in Visibility unless Visibility is "*".
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=36
	// +kubebuilder:validation:items:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	AutoApproval []string `json:"autoApproval,omitempty"`

	// AccessMode is Default (any subscription that knows the service's
	// resource ID may ask to connect; visibility governs who finds it by
	// alias) or Restricted (only the subscriptions of spec.visibility may
	// connect at all). Unset is Default: a service Azure holds Restricted
	// is set back to Default.
	// +optional
	// +kubebuilder:validation:Enum=Default;Restricted
	AccessMode string `json:"accessMode,omitempty"`

	// EnableProxyProtocol makes the service prepend PROXY protocol v2
	// headers with the consumer's link identifier.
	// +optional
	EnableProxyProtocol bool `json:"enableProxyProtocol,omitempty"`

	// FQDNs are DNS names the service announces to its consumers.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$`
	FQDNs []string `json:"fqdns,omitempty"`

	// ConnectionApproval approves or rejects connections: by rules kept in
	// Git, and by the consumer's subscription.
	// +optional
	ConnectionApproval *ConnectionApproval `json:"connectionApproval,omitempty"`

	// DeletionPolicy: Delete (default) removes the connections, the private
	// link service and a NAT subnet the operator created; Orphan leaves
	// them in Azure.
	// +optional
	// +kubebuilder:default=Delete
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Adopt lets the operator take over an existing private link service of
	// the same name that it did not create (it then tags it as its own).
	// Without it such a service is left alone and reported.
	// +optional
	Adopt bool `json:"adopt,omitempty"`
}

// IdentityReference names an AzureClusterIdentity.
type IdentityReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace defaults to the object's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// Frontend is exactly one of: a load balancer frontend IP configuration,
// named by its load balancer and name, by its private IP address, or by a
// Service of type LoadBalancer; or a destination IP address without a load
// balancer (Private Link Service Direct Connect).
//
// +kubebuilder:validation:XValidation:rule="[has(self.loadBalancer), has(self.privateIPAddress), has(self.service), has(self.destinationIPAddress)].filter(x, x).size() == 1",message="spec.frontend needs exactly one of loadBalancer, privateIPAddress, service or destinationIPAddress"
// +kubebuilder:validation:XValidation:rule="!has(self.destinationIPAddress) || !has(self.resourceGroup)",message="spec.frontend.resourceGroup is where the load balancer is; a Direct Connect service (destinationIPAddress) has none"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.frontend is immutable: Azure cannot move a private link service to another frontend"
type Frontend struct {
	// ResourceGroup is where the load balancer is, when it is not in
	// spec.resourceGroup (cloud-provider-azure's
	// azure-pls-resource-group puts the service apart from the cluster's
	// load balancer the same way). Same subscription.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-\w\._\(\)]*[-\w_\(\)]$`
	ResourceGroup string `json:"resourceGroup,omitempty"`
	// LoadBalancer names the load balancer and its frontend IP
	// configuration.
	// +optional
	LoadBalancer *LoadBalancerFrontend `json:"loadBalancer,omitempty"`
	// PrivateIPAddress is looked up among the frontends of the load
	// balancers of the resource group.
	// +optional
	// +kubebuilder:validation:Format=ipv4
	PrivateIPAddress string `json:"privateIPAddress,omitempty"`
	// Service is a Service of type LoadBalancer in the object's namespace;
	// its ingress IP is looked up like privateIPAddress.
	// +optional
	Service *ServiceReference `json:"service,omitempty"`
	// DestinationIPAddress makes a Direct Connect service: no load
	// balancer, consumers' traffic goes to this private address in the NAT
	// subnet's virtual network. The NAT subnet must then be named by
	// spec.natSubnet.id, spec.natIPConfigurations.count be at least 3
	// (Azure's minimum for Direct Connect), and the subscription
	// registered for the feature Microsoft.Network/AllowPrivateLinkserviceUDR
	// (Azure refuses the service otherwise: reason
	// SubscriptionNotRegisteredForFeature).
	// +optional
	// +kubebuilder:validation:Format=ipv4
	DestinationIPAddress string `json:"destinationIPAddress,omitempty"`
}

// LoadBalancerFrontend names a frontend IP configuration.
type LoadBalancerFrontend struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	FrontendIPConfigurationName string `json:"frontendIPConfigurationName"`
}

// ServiceReference names a Service in the object's namespace.
type ServiceReference struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
}

// NATSubnet is exactly one of an existing subnet (by resource ID or by name
// in the load balancer's virtual network) or a subnet to create.
//
// +kubebuilder:validation:XValidation:rule="[has(self.id), has(self.name), has(self.create)].filter(x, x).size() == 1",message="spec.natSubnet needs exactly one of id, name or create"
// +kubebuilder:validation:XValidation:rule="!has(self.create) || !has(self.fixNetworkPolicies) || !self.fixNetworkPolicies",message="spec.natSubnet.fixNetworkPolicies applies to an existing subnet; a created subnet always has them disabled"
type NATSubnet struct {
	// ID is a subnet's resource ID; it must be in the load balancer's
	// virtual network.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$`
	ID string `json:"id,omitempty"`
	// Name is a subnet in the load balancer's virtual network.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	Name string `json:"name,omitempty"`
	// Create makes the operator create a subnet in a free range of the load
	// balancer's virtual network, with private link service network
	// policies disabled. It is deleted with the private link service when
	// nothing else uses it.
	// +optional
	Create *NATSubnetCreate `json:"create,omitempty"`
	// FixNetworkPolicies disables private link service network policies on
	// an existing subnet that has them enabled (Azure refuses NAT IPs in
	// it otherwise). Without it such a subnet is reported.
	// +optional
	FixNetworkPolicies bool `json:"fixNetworkPolicies,omitempty"`
}

// NATSubnetCreate is a subnet the operator creates.
type NATSubnetCreate struct {
	// Name of the subnet in the load balancer's virtual network.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9._]*[a-zA-Z0-9_])?$`
	Name string `json:"name"`
	// PrefixLength of the subnet, e.g. 28 for 16 addresses (Azure keeps 5).
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=29
	PrefixLength int32 `json:"prefixLength"`
}

// NATIPConfigurations are the private link service's NAT IP configurations.
//
// +kubebuilder:validation:XValidation:rule="!has(self.staticIPs) || size(self.staticIPs) <= (has(self.count) ? self.count : 1)",message="spec.natIPConfigurations.staticIPs cannot list more addresses than count"
type NATIPConfigurations struct {
	// Count of NAT IP configurations, 1 to 8. Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=8
	// +kubebuilder:default=1
	Count int32 `json:"count,omitempty"`
	// StaticIPs are addresses in the NAT subnet for the first
	// configurations, in order; the first configuration is the primary,
	// which Azure does not let change. The others are dynamic.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=15
	// +kubebuilder:validation:items:Format=ipv4
	StaticIPs []string `json:"staticIPs,omitempty"`
}

// ConnectionApproval is what the operator does with private endpoint
// connections: rules first (the first that matches decides), then the
// subscription lists, which decide only Pending connections.
type ConnectionApproval struct {
	// Rules approve or reject one named connection, or every connection
	// whose private endpoint's resource ID matches a pattern. An Approve
	// rule approves a Pending connection; Azure cannot approve a Rejected
	// one (the consumer must ask again: status says so). A Reject rule
	// rejects a Pending or an Approved connection (it revokes access).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Rules []ConnectionRule `json:"rules,omitempty"`
	// ApproveSubscriptions: Pending connections from these subscriptions
	// are approved.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=36
	// +kubebuilder:validation:items:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	ApproveSubscriptions []string `json:"approveSubscriptions,omitempty"`
	// RejectOthers rejects Pending connections from every other
	// subscription. Without it they stay Pending for a person to decide.
	// +optional
	RejectOthers bool `json:"rejectOthers,omitempty"`
	// Description is written on the connections the operator approves or
	// rejects. Default: says the operator decided, and by which rule.
	// +optional
	// +kubebuilder:validation:MaxLength=140
	Description string `json:"description,omitempty"`
}

// ConnectionAction is what a rule does.
// +kubebuilder:validation:Enum=Approve;Reject
type ConnectionAction string

const (
	// ConnectionActionApprove approves a Pending connection.
	ConnectionActionApprove ConnectionAction = "Approve"
	// ConnectionActionReject rejects a Pending or an Approved connection.
	ConnectionActionReject ConnectionAction = "Reject"
)

// ConnectionRule decides connections by name or by their endpoint's
// resource ID.
//
// +kubebuilder:validation:XValidation:rule="has(self.name) != has(self.privateEndpointID)",message="a connection rule needs exactly one of name or privateEndpointID"
type ConnectionRule struct {
	// Name is one connection's name, as in status.connections[].name
	// (compared case-insensitively, like Azure names).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`
	// PrivateEndpointID is a private endpoint's resource ID, compared
	// case-insensitively, in which * stands for any characters within one
	// segment and ? for one, e.g.
	// /subscriptions/<id>/resourceGroups/team-*/providers/Microsoft.Network/privateEndpoints/*
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`(?i)^/subscriptions/[-\w.()*?]+/resourceGroups/[-\w.()*?]+/providers/Microsoft\.Network/privateEndpoints/[-\w.()*?]+$`
	PrivateEndpointID string `json:"privateEndpointID,omitempty"`
	// Action is Approve or Reject.
	Action ConnectionAction `json:"action"`
	// Reason is written on the connection as its description (the
	// consumer sees it) and in status. Default: names the rule.
	// +optional
	// +kubebuilder:validation:MaxLength=140
	Reason string `json:"reason,omitempty"`
}

// AzurePrivateLinkServiceStatus is what the operator observed.
type AzurePrivateLinkServiceStatus struct {
	// ResourceID of the private link service in Azure.
	// +optional
	ResourceID string `json:"resourceID,omitempty"`
	// Alias consumers use to connect without knowing the resource ID. It
	// changes when the service is recreated.
	// +optional
	Alias string `json:"alias,omitempty"`
	// ProvisioningState as Azure reports it.
	// +optional
	ProvisioningState string `json:"provisioningState,omitempty"`
	// Frontend is the frontend IP configuration the service is bound to.
	// +optional
	Frontend *FrontendStatus `json:"frontend,omitempty"`
	// NATSubnetID is the NAT subnet in use.
	// +optional
	NATSubnetID string `json:"natSubnetID,omitempty"`
	// NATSubnetCreated says the operator created the NAT subnet, so it
	// deletes it with the service.
	// +optional
	NATSubnetCreated bool `json:"natSubnetCreated,omitempty"`
	// NATIPAddresses are the NAT IP configurations' addresses, primary
	// first.
	// +optional
	// +listType=atomic
	NATIPAddresses []string `json:"natIPAddresses,omitempty"`
	// Connections are the private endpoint connections.
	// +optional
	// +listType=atomic
	Connections []PrivateEndpointConnection `json:"connections,omitempty"`
	// ApprovedConnections and PendingConnections count Connections by
	// state.
	// +optional
	ApprovedConnections int32 `json:"approvedConnections,omitempty"`
	// +optional
	PendingConnections int32 `json:"pendingConnections,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: LoadBalancerFound, NATSubnetReady,
	// PrivateLinkServiceReady and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FrontendStatus is a resolved frontend.
type FrontendStatus struct {
	LoadBalancerID            string `json:"loadBalancerID,omitempty"`
	FrontendIPConfigurationID string `json:"frontendIPConfigurationID,omitempty"`
	PrivateIPAddress          string `json:"privateIPAddress,omitempty"`
	// Public says the frontend has a public IP address (no private one).
	// +optional
	Public bool `json:"public,omitempty"`
	// DestinationIPAddress is a Direct Connect service's destination.
	// +optional
	DestinationIPAddress string `json:"destinationIPAddress,omitempty"`
}

// PrivateEndpointConnection is one consumer's connection.
type PrivateEndpointConnection struct {
	Name              string `json:"name"`
	PrivateEndpointID string `json:"privateEndpointID,omitempty"`
	SubscriptionID    string `json:"subscriptionID,omitempty"`
	// State is Pending, Approved, Rejected or Disconnected.
	State          string `json:"state,omitempty"`
	Description    string `json:"description,omitempty"`
	LinkIdentifier string `json:"linkIdentifier,omitempty"`
	// DecidedBy is the entry of spec.connectionApproval that decides the
	// connection: rules[<i>], approveSubscriptions or rejectOthers (empty:
	// none does; a person decides).
	// +optional
	DecidedBy string `json:"decidedBy,omitempty"`
	// Decision is Approve or Reject, what DecidedBy says.
	// +optional
	Decision string `json:"decision,omitempty"`
	// DecisionReason is why, and whether Azure can carry it out.
	// +optional
	DecisionReason string `json:"decisionReason,omitempty"`
}

// AzurePrivateLinkService is an Azure private link service that fronts an
// internal load balancer, managed by the operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=apls,categories=privatelink
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move-hierarchy="
// +kubebuilder:printcolumn:name="Alias",type=string,JSONPath=`.status.alias`
// +kubebuilder:printcolumn:name="Approved",type=integer,JSONPath=`.status.approvedConnections`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingConnections`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AzurePrivateLinkService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AzurePrivateLinkServiceSpec   `json:"spec"`
	Status AzurePrivateLinkServiceStatus `json:"status,omitempty"`
}

// AzurePrivateLinkServiceName is the private link service's name in Azure.
func (p *AzurePrivateLinkService) AzurePrivateLinkServiceName() string {
	if p.Spec.Name != "" {
		return p.Spec.Name
	}
	return p.Name
}

// AzurePrivateLinkServiceList is a list of AzurePrivateLinkService.
//
// +kubebuilder:object:root=true
type AzurePrivateLinkServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AzurePrivateLinkService `json:"items"`
}
