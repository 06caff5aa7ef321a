package privatelinkservice

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
)

// Condition reasons beside azure's (NotFound, AuthorizationFailed, ...).
// They are constant: alerts and scripts may match them.
const (
	ReasonFound                  = "Found"
	ReasonReady                  = "Ready"
	ReasonPaused                 = "Paused"
	ReasonProvisioning           = "Provisioning"
	ReasonProvisioningFailed     = "ProvisioningFailed"
	ReasonPrimaryNATLocked       = "PrimaryNATIPConfigurationLocked"
	ReasonNotOwned               = "NotOwned"
	ReasonFrontendNotInternal    = "FrontendNotInternal"
	ReasonFrontendChanged        = "FrontendChanged"
	ReasonFloatingIPEnabled      = "FloatingIPEnabled"
	ReasonDirectConnect          = "DirectConnect"
	ReasonNATSubnetNeedsID       = "NATSubnetNeedsID"
	ReasonServiceNotLoadBalancer = "ServiceNotLoadBalancer"
	ReasonServiceHasNoIP         = "ServiceHasNoIP"
	ReasonNetworkPoliciesEnabled = "NetworkPoliciesEnabled"
	ReasonSubnetNotInVNet        = "SubnetNotInLoadBalancerVNet"
	ReasonNoFreeRange            = "NoFreeAddressRange"
	ReasonWaitingForSubnet       = "WaitingForSubnet"
	// ReasonLoadBalancerNotProvisioned: the frontend's load balancer has an
	// operation running, and Azure refuses a write of the service until it
	// ends; the controller waits for it instead of sending one.
	ReasonLoadBalancerNotProvisioned = "LoadBalancerNotProvisioned"
)

// Event reasons.
const (
	EventCreated            = "PrivateLinkServiceCreated"
	EventUpdated            = "PrivateLinkServiceUpdated"
	EventRecreated          = "PrivateLinkServiceRecreated"
	EventDeleted            = "PrivateLinkServiceDeleted"
	EventOrphaned           = "PrivateLinkServiceOrphaned"
	EventMovedAway          = "PrivateLinkServiceMovedAway"
	EventConnectionApproved = "ConnectionApproved"
	EventConnectionRejected = "ConnectionRejected"
	// EventCannotApprove: a rule approves a connection Azure already
	// rejected; the consumer must ask again.
	EventCannotApprove     = "ConnectionCannotBeApproved"
	EventConnectionRemoved = "ConnectionRemoved"
	EventNATSubnetCreated  = "NATSubnetCreated"
	EventNATSubnetFixed    = "NATSubnetNetworkPoliciesDisabled"
	EventNATSubnetDeleted  = "NATSubnetDeleted"
	// EventNATAddressesUnread: the service's network interface, where
	// Azure gives dynamic NAT addresses, could not be read.
	EventNATAddressesUnread = "NATAddressesUnread"
)

var (
	waitFor  = azureobject.WaitFor
	terminal = azureobject.Terminal
)

func setCondition(obj *v1alpha1.AzurePrivateLinkService, typ string, status metav1.ConditionStatus, reason, message string) {
	azureobject.SetCondition(&obj.Status.Conditions, obj.Generation, typ, status, reason, message)
}

// summarize sets Ready from the other three conditions.
func summarize(obj *v1alpha1.AzurePrivateLinkService) {
	azureobject.Summarize(&obj.Status.Conditions, obj.Generation, "the private link service is provisioned and matches the spec",
		v1alpha1.ConditionLoadBalancerFound, v1alpha1.ConditionNATSubnetReady, v1alpha1.ConditionPrivateLinkServiceReady)
}
