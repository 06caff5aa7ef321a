package clusterlink

// Event reasons beyond those of the desired state. Constant, so users can
// filter on them.
const (
	ReasonManagementClusterNotFound = "ManagementClusterNotFound"
	ReasonEndpointReady             = "PrivateEndpointReady"
	ReasonEndpointPending           = "PrivateEndpointPendingApproval"
	ReasonEndpointRejected          = "PrivateEndpointRejected"
	ReasonEndpointDisconnected      = "PrivateEndpointDisconnected"
	ReasonEndpointProvisioning      = "WaitingForPrivateEndpoint"
	ReasonEndpointNotReady          = "PrivateEndpointNotReady"
	// ReasonEndpointTargetMismatch: the endpoint of the cluster's name in
	// Azure connects to another service (someone else's endpoint).
	ReasonEndpointTargetMismatch = "PrivateEndpointTargetMismatch"
	ReasonAzureError             = "AzureError"
	// ReasonAzureReadsPaced: the cluster's first pass could not read its
	// endpoints because the identity's read budget in the subscription is
	// nearly spent (the operator's pacing, or Azure's 429); said only by
	// a cluster that has no condition yet (whyWaiting).
	ReasonAzureReadsPaced   = "WaitingForAzureReadBudget"
	ReasonFinalizerReleased = "FinalizerReleased"
	ReasonOrphanDeleted     = "OrphanedPrivateEndpointDeleted"
	// ReasonNothingToWire: GSPrivateLinksReady is Unknown because the
	// cluster has no endpoint to wire any more.
	ReasonNothingToWire = "NoPrivateEndpoints"
	// ConditionGSPrivateLinksReady is the compatibility condition existing
	// installations read: True once every endpoint is approved and
	// annotated; Unknown, with the reason and message of what it waits
	// for, otherwise (never False, see SetWaitingCondition).
	ConditionGSPrivateLinksReady = "GSPrivateLinksReady"
)

// Endpoint states for the metrics.
const (
	stateReady        = "ready"
	statePending      = "pending_approval"
	stateRejected     = "rejected"
	stateDisconnected = "disconnected"
	stateProvisioning = "provisioning"
	stateUnknown      = "unknown"
	// stateForeign: an endpoint of the name exists but connects to another
	// service; it is never published, healed or deleted.
	stateForeign = "foreign"
)

// ReasonEndpointHealed is the Event reason for a Disconnected (or, when
// allowed, Rejected) endpoint the operator asked for that it deleted in
// Azure, so that CAPZ recreates it against the private link service as it
// is now.
const ReasonEndpointHealed = "PrivateEndpointHealed"

// ReasonHealWaitsForDNS is the Event reason for a heal held back in DNS
// mode until the records no longer hold the broken endpoint's address
// (deleting the endpoint frees that address for whoever asks next).
const ReasonHealWaitsForDNS = "PrivateEndpointHealWaitsForDNS"

// ReasonHealWaitsForPause is the Event reason for a heal held back while
// CAPZ has paused the ASO object of the broken endpoint (a paused cluster,
// clusterctl move): nothing in Azure is deleted until CAPZ resumes it.
const ReasonHealWaitsForPause = "PrivateEndpointHealWaitsForPause"

// ReasonLayoutSwitched is the Event reason for the end of a layout switch
// (--wc-to-mc-layout): the new endpoint serves the ingress annotation and
// the earlier layout's endpoints are removed.
const ReasonLayoutSwitched = "PrivateEndpointLayoutSwitched"
