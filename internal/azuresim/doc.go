// Package azuresim is an Azure Resource Manager emulator for networking and
// Private DNS: the Azure that the operator's tests, the scale benchmark and
// `make demo` run against, over real HTTP(S) on loopback, so that the real
// Azure SDK for Go clients (armnetwork/v11, armprivatedns, azidentity) work
// against it unchanged: their pipelines, retry policy and pollers included.
//
// # Using it
//
//	srv := azuresim.New(azuresim.Options{TLS: true})
//	_ = srv.Start("127.0.0.1:0")
//	defer srv.Close()
//
// Point a client at it with a custom cloud: ActiveDirectoryAuthorityHost
// srv.URL()+"/", resource manager endpoint and audience srv.URL(), a
// transport that trusts srv.CertPool() (or the CA file WriteCAFile writes),
// and azidentity's DisableInstanceDiscovery (MSAL would otherwise ask
// login.microsoftonline.com about the unknown host). The identity library
// requires HTTPS for its authority; with TLS off, clients need a static token
// and InsecureAllowCredentialWithHTTP. cmd/azuresim runs it as a program.
//
// # What is modelled
//
//   - Resource groups: PUT, GET, HEAD, DELETE (deletes what they hold). Other
//     resources need their group: ResourceGroupNotFound otherwise.
//   - Virtual networks and subnets: address spaces and prefixes (inside the
//     VNet, not overlapping), privateLinkServiceNetworkPolicies (default
//     Enabled) and privateEndpointNetworkPolicies (default Disabled), IP
//     allocation from the prefix with Azure's five reserved addresses, static
//     addresses (not in subnet, reserved, in use), SubnetIsFull, subnets in use
//     cannot be deleted, a VNet PUT replaces its subnets.
//   - Load balancers, Basic and Standard SKU, with internal frontends (dynamic
//     or static address in a subnet). A load balancer that a private link
//     service uses cannot be deleted.
//   - Network interfaces of private endpoints and private link services: GET
//     and list, with the endpoint or service reference and IP
//     configurations. They are created and deleted with their owner only.
//   - Private link services: one internal frontend of a Standard load
//     balancer, 1 to 8 NAT IP configurations with exactly one primary (which
//     cannot change) in subnets of the load balancer's VNet whose
//     private-link-service network policies are disabled, visibility
//     (subscriptions or "*"), accessMode (Restricted: the listed
//     subscriptions only, "*" counts for none; a PUT without accessMode
//     keeps the stored mode), auto-approval, proxy protocol, FQDNs, the alias
//     <name>.<guid>.<location>.azure.privatelinkservice (kept on update), the
//     service's network interface <name>.nic.<guid> that holds the NAT
//     addresses (a dynamic configuration shows none, as in Azure), and
//     private endpoint connections: get, list, update (approve, reject), delete.
//     A Rejected connection cannot be approved (400); only its consumer
//     takes it back to Pending, by writing its manual connection as
//     Pending. A service that still has connections cannot be deleted.
//   - Private endpoints: to a service by resource ID or alias; the caller's
//     subscription must be the service's or in its visibility. Automatic
//     connections are approved ("Auto Approved") when the subscription is
//     auto-approved, or when the service is in the same subscription and the
//     caller may act on it; otherwise Azure's LinkedAuthorizationFailed. Manual
//     connections start Pending, with the request message on the service's
//     side and "Awaiting approval" on the endpoint's. As in Azure, the NIC
//     (custom name or <endpoint>.nic.<guid>), its address and the
//     connection exist from the PUT on, while the endpoint is still
//     Updating: an address is usable only once provisioningState is
//     Succeeded. GET with $expand=networkInterfaces embeds the NIC. The
//     endpoint's view of its connection mirrors the service's side:
//     approved, rejected, and Disconnected once the owner removes it or the
//     service is gone. The subnet and the NIC's custom name of an endpoint
//     cannot change, nor the service it connects to (400
//     CannotChangePrivateLinkConnectionOnPrivateEndpoint). Application security groups an endpoint names must
//     exist (they are stored, with PUT and GET, and nothing else).
//   - Azure services as private link resources (firstparty.go): storage
//     accounts (blob, file, queue, table, dfs), key vaults (vault), SQL
//     servers (sqlServer), container registries (registry: two members),
//     made and deleted with synchronous PUT and DELETE (or Seed and
//     Delete). An endpoint to one names one group ID; it gets an address
//     per required member (static when its ipConfigurations name every
//     member), a customDnsConfigs entry per member FQDN and a NIC IP
//     configuration per member; its automatic connection is approved
//     ("Auto-Approved") when the caller may act on the service, otherwise
//     LinkedAuthorizationFailed; the service's owner acts on connections
//     through ActOnConnection; a deleted service leaves its endpoints
//     Disconnected.
//   - Azure Policy, as deny assignments that require a tag (and its value)
//     on every resource type with tags and a location (SetPolicies): 403
//     RequestDisallowedByPolicy naming the assignment.
//   - Private DNS: zones (location global; one with VNet links, also while
//     one is being deleted, cannot be deleted: 409 CannotDeleteResource;
//     the SOA record set is counted, not served), A record sets
//     (synchronous), virtual network links (a second link of a zone to the
//     same VNet fails inside its operation with Conflict and stays Failed).
//     Zone names follow Azure's rules (two to 34 labels, no reserved
//     name such as core.windows.net). Zone and link writes are long-running the
//     Private DNS way: 202 with {} (PUT) or no body (DELETE), status URLs
//     under the resource group (privateDnsOperationStatuses, polled with
//     202 until done). Zone and record set ETags are bare, a link's
//     quoted. And resolution from a virtual
//     network (Resolve, GET /_sim/dns/resolve) through the zones linked to
//     it: the most specific zone answers, an exact name before the closest
//     wildcard, NXDOMAIN without fallback when that zone lacks the name.
//   - An AAD token endpoint: client credentials with a secret or a federated
//     assertion, tenant discovery (openid-configuration) and instance
//     discovery documents. ARM requests without a valid, unexpired token get
//     401 (AuthenticationFailed, InvalidAuthenticationToken,
//     ExpiredAuthenticationToken). Principals may be limited to scopes
//     (resource ID prefixes): outside them, AuthorizationFailed; referencing a
//     subnet, frontend or service outside them, LinkedAuthorizationFailed.
//   - Long-running operations: PUT answers 201 (200 on update) with an
//     Azure-AsyncOperation header, DELETE 202 with Azure-AsyncOperation and
//     Location, and a non-terminal provisioningState (Updating, Deleting);
//     the operation's status is {"status":…} (with the error once Failed);
//     a resource group DELETE is 202 with a Location under the
//     subscription, polled until 200. The operation completes after
//     Options.Latency, lazily against the clock (no goroutine per operation),
//     and its retry hints are capped by Options.MaxPollInterval. Resume tokens
//     work. A second PUT of a Microsoft.Network resource whose PUT runs
//     supersedes it (the first operation ends Canceled, detail
//     CanceledAndSupersededDueToAnotherOperation); any other write to a
//     resource busy with an operation is 409
//     AnotherOperationInProgress; a write to a child of a resource being
//     deleted is 400 ReferencedResourceNotProvisioned. An operation fault
//     makes the operation end Failed and the resource's provisioningState
//     Failed. A networking resource gets a new etag with every write and
//     again when its operation ends (ASO's recording of a private
//     endpoint, conformance/testdata/private-endpoint-storage.json).
//   - Conditional requests: If-Match and If-None-Match: * (412). A GET
//     carries the Etag header.
//
// The conformance package (./conformance, make fidelity) replays Azure's
// recorded traffic against the emulator and lists what still differs.
//   - Paging with nextLink and $skiptoken; Options.PageSize items per page.
//   - Throttling: token buckets per subscription, principal and class (reads,
//     writes, deletes), ARM's defaults in DefaultThrottling; 429
//     SubscriptionRequestsThrottled with Retry-After, and
//     x-ms-ratelimit-remaining-subscription-<class> headers. Then the
//     resource providers' windows per subscription (Private DNS reads 500,
//     Network writes 1,000, Network reads 10,000 per 5 minutes): 429 with
//     Retry-After (10 s for Private DNS).
//   - Azure's resource-count limits (Limits, AzureLimits), enforced on
//     create: zones per subscription, record sets per zone, records per
//     set, links per zone, zones per VNet, endpoints per VNet, services
//     per subscription, endpoints per service.
//   - Fault injection by method and path pattern: a status and error code,
//     a count or a probability, added latency, dropped connections, failed
//     operations (see Fault).
//   - Request counters by method, resource type and status, and by principal,
//     and token requests (see Counters), for benchmarks.
//   - The admin API under /_sim/ (see admin.go): reset, seed, resources,
//     counters, faults, principals, settings, and acting as a private link
//     service owner on a connection.
//
// # What is not modelled
//
// Kept but not modelled, for the real CAPZ of test/realcapz (generic.go,
// skus.go, tags.go): network security groups, route tables, public IP
// addresses, NAT gateways and bastion hosts are stored as sent (location
// required, long-running PUT and DELETE, provisioningState Succeeded; no
// rule checked, no address allocated, nothing held in use); Compute's SKU
// list is a fixed catalogue of three virtual machine sizes in zones 1-3 of
// the location asked; the Tags API at a resource's scope (GET, PUT, PATCH
// with Merge, Replace or Delete) reads and writes that resource's tags.
// Server.Unserved lists every request answered InvalidResourceType because
// the emulator serves neither its path nor its type, and every path of the
// token endpoint it answers 404.
//
// Anything not listed above is not served: a public frontend is accepted
// but not checked, PATCH of a resource's own tags, record types other than A, public
// DNS and DNS forwarding, regions (locations are stored, not validated,
// except that private DNS zones must be global; request windows are per
// subscription, Azure's per subscription and region), quotas beyond
// Limits, resource locks, Azure Policy beyond required tags, moves, the
// checkPrivateLinkServiceVisibility and autoApprovedPrivateLinkServices
// operations, and managed identity endpoints (IMDS). An emulator gap is not
// Azure behaviour: when in doubt, check Azure.
//
// # Error codes
//
// Codes are Azure's own where they were verified against Azure's documents
// or reports of real responses: ResourceNotFound, ResourceGroupNotFound,
// NotFound, ParentResourceNotFound, LocationRequired, InvalidResourceReference,
// AnotherOperationInProgress, SubnetIsFull, PrivateIPAddressInUse,
// PrivateIPAddressNotInSubnet, PrivateIPAddressInReservedRange,
// InUseSubnetCannotBeDeleted, NetcfgSubnetRangesOverlap,
// NetcfgSubnetRangeOutsideVnet, FrontendIPConfigHasBothSubnetAndPublicIP,
// PropertyChangeNotAllowed, InvalidResourceLocation,
// PrivateLinkServiceNetworkPoliciesCannotBeEnabledOnPrivateLinkServiceSubnet,
// PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted,
// CannotDeleteLoadBalancerWithPrivateLinkService,
// InvalidNumberOfPrivateLinkServiceLoadBalancerFrontendIpConfigurationsSpecified,
// ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible,
// MissingParameterOnPrivateLinkServiceConnection, OnlyOneGroupIdPermitted,
// InvalidValuesForRequestParameters,
// PrivateEndpointIpConfigurationMissingMemberNamesRequiredByFps,
// AuthorizationFailed, LinkedAuthorizationFailed, AuthenticationFailed,
// InvalidAuthenticationToken, ExpiredAuthenticationToken,
// SubscriptionRequestsThrottled, MissingApiVersionParameter, Conflict (private
// DNS), RequestDisallowedByPolicy, SubscriptionNotRegisteredForFeature (its
// status for Microsoft.Network is not on record), and InvalidRequestFormat for malformed
// bodies. BadRequest, "Approving rejected private endpoint connections is
// not supported.", is Azure's answer as recorded for another resource
// provider (Cosmos DB); the network provider's own code is not on record.
//
// These codes are the emulator's own, for rules Azure enforces with codes
// that could not be verified: PrivateLinkServiceNotSupportedOnBasicLoadBalancer,
// PrivateLinkServiceWithDestinationIPAddressNeedsMoreIpConfigurations,
// PrivateLinkServiceIpConfigurationCountOutOfRange,
// PrivateLinkServiceMustHaveOnePrimaryIpConfiguration,
// PrivateLinkServicePrimaryIpConfigurationCannotBeChanged,
// PrivateLinkServiceIpConfigurationSubnetMustBeInLoadBalancerVnet,
// InUseSubnetCannotBeUpdated, InUseNetworkInterfaceCannotBeDeleted,
// InvalidPrivateEndpointConnectionStatus,
// PrivateEndpointIpConfigurationMemberNameNotRequired, the <limit>LimitExceeded codes of
// Limits, and TooManyRequests for a resource provider's window. Classify
// errors by status first.
//
// # Performance
//
// Measured with `go test -run '^$' -bench . -benchtime 3s ./internal/azuresim/`
// on the project's 2-core machine, client and server sharing both cores:
// 3,900 GETs per second through the real SDK client (HTTPS, bearer token,
// $expand=networkInterfaces), 11,000 per second over plain HTTP, and 110
// list pages of 100 private endpoints per second. State is guarded by one
// mutex; requests are answered from memory, and a list or a limit's count
// reads only the resources of its type. Among a consumer fleet of 1,000
// (`-bench Fleet -benchtime 1000x`: 1,000 endpoints in one network, 1,000
// zones linked to it), a private endpoint's PUT takes 0.5 ms and resolving
// a name 0.18 ms (24.0 and 12.9 ms when every list sorted all resources of
// its type, lower-casing IDs in each comparison).
package azuresim
