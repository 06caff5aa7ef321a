package azuresim

import (
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/utils/ptr"
)

// Azure services as private link resources ("first-party" resources in
// Azure's errors): a storage account, a key vault, a container registry, a
// SQL server. An endpoint to one names a group ID (a sub-resource: blob,
// vault, registry, ...), and Azure gives it one address per required member
// of that group, with a customDnsConfigs entry per member FQDN.
//
// Facts, with their sources:
//   - An endpoint to a storage account with groupIds [blob] answers
//     groupIds as sent, the connection Approved "Auto-Approved", empty
//     ipConfigurations and customNetworkInterfaceName, and one
//     customDnsConfigs entry <account>.blob.core.windows.net with the
//     address (Azure Service Operator v2's recording
//     v2/internal/controllers/recordings/Test_Networking_PrivateEndpoint_CRUD.yaml
//     at 086711dcfd3b169dd83904b8de4d04ba76512a8e).
//   - Without a group ID: 400 MissingParameterOnPrivateLinkServiceConnection,
//     "Private link service connection <id> is missing required parameter
//     'group Id'." (azure-cli issue 15136).
//   - With two: 400 OnlyOneGroupIdPermitted, "Private link service
//     connection <id> has the following group Ids: blob, file. Only one group
//     Id is permitted when connecting to a first-party resource (<id>)."
//     (terraform-azurerm-container-apps-hosting issue 352;
//     terraform-provider-azurerm issue 5820).
//   - A group the service does not have: 400 InvalidValuesForRequestParameters,
//     "Call to Microsoft.Storage/storageAccounts failed. Error message: Values
//     for request parameters are invalid: GroupId: TABLE_SECONDARY." (azure-cli
//     issue 16750, which also shows Storage's group IDs are case-sensitive).
//   - Static ipConfigurations must name every required member:
//     400 PrivateEndpointIpConfigurationMissingMemberNamesRequiredByFps,
//     "Private Endpoint <id> contains static ipconfigurations: [PrivateIPAddress:
//     x, GroupId: g, MemberName: m] and its missing these membernames/groupids
//     requested by Private Link service [GroupId: vault, MemberName: default].
//     Private Endpoint needs to be reconfigured with missing memberNames."
//     (terraform-provider-azurerm issues 13061, 18443 and 21781; Azure/bicep
//     issue 7119).
//   - Members: Key Vault vault → default; Container Registry registry →
//     registry and registry_data_<region> (two addresses); SQL sqlServer →
//     sqlServer; Storage: the group itself (the same issues, and the Azure
//     SDKs' PrivateLinkResource models: groupId, requiredMembers,
//     requiredZoneNames).
//   - The endpoint's NIC has one IP configuration per member, each with
//     privateLinkConnectionProperties (groupId, requiredMemberName, fqdns):
//     the network SDKs' NetworkInterfaceIPConfigurationPrivateLinkConnectionProperties.
//
// Not on record, so chosen by the emulator: group IDs compare as spelled
// for every service (on record for Storage only; the same azure-cli issue
// says some other services accept other cases); a static configuration for a
// member the group does not require is refused with the emulator's own code
// PrivateEndpointIpConfigurationMemberNameNotRequired; every first-party
// resource is visible to every subscription (anyone may ask; approval is the
// owner's); approval rights are the principal's scope over the resource.
// The services' own APIs (Storage's 202 + Location PUT, their
// privateEndpointConnections, privateLinkResources) are not served: a test
// makes and deletes the resource with a synchronous PUT and DELETE, and acts
// on connections as the owner through ActOnConnection.

// serviceMember is one required member of a group: its name (followed by
// the service's region when perRegion, as registry_data_<region>) and FQDN.
type serviceMember struct {
	name      string
	perRegion bool
	fqdn      func(resource, location string) string
}

// serviceType is an Azure service the emulator serves as a private link
// resource: its groups and their required members.
type serviceType struct {
	typ    string // as in resource IDs, e.g. Microsoft.Storage/storageAccounts
	groups map[string][]serviceMember
}

func storageGroup(sub string) []serviceMember {
	return []serviceMember{{name: sub, fqdn: func(n, _ string) string { return n + "." + sub + ".core.windows.net" }}}
}

var serviceTypes = []serviceType{
	{typ: "Microsoft.Storage/storageAccounts", groups: map[string][]serviceMember{
		"blob": storageGroup("blob"), "file": storageGroup("file"), "queue": storageGroup("queue"),
		"table": storageGroup("table"), "dfs": storageGroup("dfs"),
	}},
	{typ: "Microsoft.KeyVault/vaults", groups: map[string][]serviceMember{
		"vault": {{name: "default", fqdn: func(n, _ string) string { return n + ".vault.azure.net" }}},
	}},
	{typ: "Microsoft.ContainerRegistry/registries", groups: map[string][]serviceMember{
		"registry": {
			{name: "registry", fqdn: func(n, _ string) string { return n + ".azurecr.io" }},
			{name: "registry_data_", perRegion: true, fqdn: func(n, loc string) string { return n + "." + loc + ".data.azurecr.io" }},
		},
	}},
	{typ: "Microsoft.Sql/servers", groups: map[string][]serviceMember{
		"sqlServer": {{name: "sqlServer", fqdn: func(n, _ string) string { return n + ".database.windows.net" }}},
	}},
}

// serviceResource is what the emulator keeps of an Azure service: ARM's
// common fields and its properties as sent.
type serviceResource struct {
	ID         *string            `json:"id,omitempty"`
	Name       *string            `json:"name,omitempty"`
	Type       *string            `json:"type,omitempty"`
	Location   *string            `json:"location,omitempty"`
	Tags       map[string]*string `json:"tags,omitempty"`
	Properties map[string]any     `json:"properties,omitempty"`
}

func init() {
	for _, st := range serviceTypes {
		kinds[strings.ToLower(st.typ)] = &kind{
			newObj:   func() any { return &serviceResource{} },
			location: true,
			put: func(_ *state, req *putRequest) *armError {
				req.res.obj = bodyOf[serviceResource](req)
				return nil
			},
			// The service's connections go with it; their endpoints see
			// Disconnected (renderPE), as after a private link service is
			// gone.
			onDelete: func(s *state, r *resource) {
				for _, c := range s.list(typePLSConn, r.id) {
					s.drop(key(c.id))
				}
			},
			render: func(_ *state, r *resource) {
				o := objOf[serviceResource](r)
				var etag *string
				setCommon(&o.ID, &o.Name, &o.Type, &etag, r)
			},
		}
	}
}

// serviceTypeOf returns the service type of a stored resource, or nil when
// it is not an Azure service.
func serviceTypeOf(r *resource) *serviceType {
	if r == nil {
		return nil
	}
	for i := range serviceTypes {
		if strings.EqualFold(serviceTypes[i].typ, r.typeKey) {
			return &serviceTypes[i]
		}
	}
	return nil
}

// peMember is one address of an endpoint to an Azure service.
type peMember struct {
	group, name, fqdn, address string
}

// serviceMembers checks the connection's group ID and the static IP
// configurations of an endpoint to an Azure service, and returns the
// members it gets addresses for (address set where static).
func serviceMembers(req *putRequest, pe *armnetwork.PrivateEndpoint, conn *armnetwork.PrivateLinkServiceConnection, svc *resource, st *serviceType) ([]peMember, *armError) {
	connID := req.id + "/privateLinkServiceConnections/" + ptr.Deref(conn.Name, "")
	if len(pe.Properties.ManualPrivateLinkServiceConnections) > 0 {
		connID = req.id + "/manualPrivateLinkServiceConnections/" + ptr.Deref(conn.Name, "")
	}
	groups := derefAll(conn.Properties.GroupIDs)
	switch {
	case len(groups) == 0:
		return nil, errBadRequest("MissingParameterOnPrivateLinkServiceConnection",
			"Private link service connection %s is missing required parameter 'group Id'.", connID)
	case len(groups) > 1:
		return nil, errBadRequest("OnlyOneGroupIdPermitted",
			"Private link service connection %s has the following group Ids: %s. Only one group Id is permitted when connecting to a first-party resource (%s).",
			connID, strings.Join(groups, ", "), svc.id)
	}
	required, ok := st.groups[groups[0]]
	if !ok {
		return nil, errBadRequest("InvalidValuesForRequestParameters",
			"Call to %s failed. Error message: Values for request parameters are invalid: GroupId: %s.", st.typ, groups[0])
	}
	members := make([]peMember, 0, len(required))
	for _, m := range required {
		name := m.name
		if m.perRegion {
			name += svc.location
		}
		members = append(members, peMember{group: groups[0], name: name, fqdn: m.fqdn(svc.name, svc.location)})
	}
	return members, staticAddresses(req, pe.Properties.IPConfigurations, members)
}

// staticAddresses puts the static addresses of the endpoint's IP
// configurations on their members: all or none of the members must have
// one.
func staticAddresses(req *putRequest, cfgs []*armnetwork.PrivateEndpointIPConfiguration, members []peMember) *armError {
	if len(cfgs) == 0 {
		return nil
	}
	var sent []string
	for _, c := range cfgs {
		if c == nil || c.Properties == nil {
			continue
		}
		p := c.Properties
		sent = append(sent, "PrivateIPAddress: "+ptr.Deref(p.PrivateIPAddress, "")+", GroupId: "+ptr.Deref(p.GroupID, "")+", MemberName: "+ptr.Deref(p.MemberName, ""))
		found := false
		for i := range members {
			if members[i].name == ptr.Deref(p.MemberName, "") && members[i].group == ptr.Deref(p.GroupID, "") {
				members[i].address, found = ptr.Deref(p.PrivateIPAddress, ""), true
			}
		}
		if !found {
			return errBadRequest("PrivateEndpointIpConfigurationMemberNameNotRequired",
				"Private Endpoint %s has a static ipconfiguration for GroupId: %s, MemberName: %s, which the Private Link service does not request.",
				req.id, ptr.Deref(p.GroupID, ""), ptr.Deref(p.MemberName, ""))
		}
	}
	var missing []string
	for _, m := range members {
		if m.address == "" {
			missing = append(missing, "GroupId: "+m.group+", MemberName: "+m.name)
		}
	}
	if len(missing) > 0 {
		return errBadRequest("PrivateEndpointIpConfigurationMissingMemberNamesRequiredByFps",
			"Private Endpoint %s contains static ipconfigurations: [%s] and its missing these membernames/groupids requested by Private Link service [%s]. Private Endpoint needs to be reconfigured with missing memberNames.",
			req.id, strings.Join(sent, "; "), strings.Join(missing, "; "))
	}
	return nil
}

// claimMembers gives each member its address on the endpoint's NIC: the
// static one, or the lowest free. On failure nothing stays held.
func claimMembers(pool *ipPool, nicID string, members []peMember) *armError {
	for i := range members {
		holder := nicID + "/ipConfigurations/" + members[i].name
		var e *armError
		if members[i].address != "" {
			e = pool.claim(members[i].address, holder)
		} else {
			members[i].address, e = pool.allocate(holder)
		}
		if e != nil {
			pool.release(nicID)
			return e
		}
	}
	return nil
}

// approvalAction is the action that lets a caller approve connections on a
// target: Microsoft.Network/privateLinkServices/... or the Azure service's
// own (Microsoft.Storage/storageAccounts/privateEndpointConnectionsApproval/action).
func approvalAction(target *resource) string {
	typ := "Microsoft.Network/privateLinkServices"
	if st := serviceTypeOf(target); st != nil {
		typ = st.typ
	}
	return typ + "/privateEndpointConnectionsApproval/action"
}

// memberAddresses are an endpoint's addresses by member, or nil.
func memberAddresses(l *peLink) map[string]string {
	if len(l.members) == 0 {
		return nil
	}
	out := make(map[string]string, len(l.members))
	for _, m := range l.members {
		out[m.name] = m.address
	}
	return out
}
