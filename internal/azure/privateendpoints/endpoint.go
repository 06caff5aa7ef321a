package privateendpoints

import (
	"context"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// OwnerTag marks the private endpoints an AzurePrivateEndpoint created; its
// value is the object's namespace/name. (Endpoints CAPZ creates for the
// cluster wiring carry CAPZ's tags, not this one.)
const OwnerTag = "azure-private-endpoint-operator.giantswarm.io_owner"

// Desired is one consumer endpoint as an AzurePrivateEndpoint asks for it.
type Desired struct {
	Name     string
	Location string
	SubnetID string
	// Target is the private link service's resource ID or alias.
	Target         string
	ManualApproval bool
	RequestMessage string
	// IPAddress is a static address; empty lets Azure pick.
	IPAddress string
	Owner     string
	// Tags are put on the endpoint beside the owner tag (azure.Tags).
	Tags map[string]string
	// NICName names the endpoint's network interface at creation; empty
	// lets Azure name it.
	NICName string
	// ASGs are application security groups the endpoint joins (none: the
	// endpoint's groups are left as they are).
	ASGs []string
	// GroupIDs name the sub-resource of an Azure service target (none for
	// a private link service).
	GroupIDs []string
	// IPConfigs are static addresses per member of an Azure service
	// target's sub-resource.
	IPConfigs []IPConfig
}

// IPConfig is a static address for one member of an Azure service's
// sub-resource.
type IPConfig struct {
	Name, MemberName, Address string
}

// ConnectionName is the name of the endpoint's one connection.
func (d Desired) ConnectionName() string { return d.Name + "-connection" }

// Body is the PUT body for d. Tags the endpoint has beside ours are kept,
// and so is what Azure filled in on an observed endpoint (its NIC, its
// connection's state) by sending back only fields the operator sets.
func Body(d Desired, observed *armnetwork.PrivateEndpoint) armnetwork.PrivateEndpoint {
	var had map[string]*string
	if observed != nil {
		had = observed.Tags
	}
	tags := azure.MergeTags(had, d.Tags, OwnerTag, d.Owner)
	conn := &armnetwork.PrivateLinkServiceConnection{
		Name: new(d.ConnectionName()),
		Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(d.Target),
		},
	}
	props := &armnetwork.PrivateEndpointProperties{Subnet: &armnetwork.Subnet{ID: new(d.SubnetID)}}
	if d.NICName != "" {
		props.CustomNetworkInterfaceName = new(d.NICName)
	} else if observed != nil && observed.Properties != nil {
		// Azure keeps the name it was created with; sending another (or
		// none, for one created with a name) is refused.
		props.CustomNetworkInterfaceName = observed.Properties.CustomNetworkInterfaceName
	}
	for _, id := range d.ASGs {
		props.ApplicationSecurityGroups = append(props.ApplicationSecurityGroups, &armnetwork.ApplicationSecurityGroup{ID: new(id)})
	}
	if len(d.ASGs) == 0 && observed != nil && observed.Properties != nil {
		// Without groups in the spec, the endpoint's are not the
		// operator's: a PUT sends them back as they are.
		props.ApplicationSecurityGroups = observed.Properties.ApplicationSecurityGroups
	}
	if d.ManualApproval {
		if d.RequestMessage != "" {
			conn.Properties.RequestMessage = new(d.RequestMessage)
		}
		props.ManualPrivateLinkServiceConnections = []*armnetwork.PrivateLinkServiceConnection{conn}
	} else {
		props.PrivateLinkServiceConnections = []*armnetwork.PrivateLinkServiceConnection{conn}
	}
	for _, g := range d.GroupIDs {
		conn.Properties.GroupIDs = append(conn.Properties.GroupIDs, new(g))
	}
	if observed != nil && observed.Properties != nil {
		// Azure keeps the connection's state through a PUT only when the
		// connection is sent back as it is.
		if c := firstConnection(observed.Properties); c != nil && c.Properties != nil {
			conn.Properties.PrivateLinkServiceID = c.Properties.PrivateLinkServiceID
			conn.Properties.PrivateLinkServiceConnectionState = c.Properties.PrivateLinkServiceConnectionState
			conn.Properties.GroupIDs = c.Properties.GroupIDs
		}
	}
	props.IPConfigurations = d.ipConfigurations()
	return armnetwork.PrivateEndpoint{Location: new(d.Location), Tags: tags, Properties: props}
}

// ipConfigurations are the static IP configurations of the PUT body: the
// one address of an endpoint to a private link service, or one per member
// of an Azure service's sub-resource (with its group ID, as Azure's
// PrivateEndpointCreate example sends them).
func (d Desired) ipConfigurations() []*armnetwork.PrivateEndpointIPConfiguration {
	if d.IPAddress != "" {
		return []*armnetwork.PrivateEndpointIPConfiguration{{
			Name:       new(d.Name + "-ipconfig"),
			Properties: &armnetwork.PrivateEndpointIPConfigurationProperties{PrivateIPAddress: new(d.IPAddress)},
		}}
	}
	var out []*armnetwork.PrivateEndpointIPConfiguration
	for _, c := range d.IPConfigs {
		name := c.Name
		if name == "" {
			name = d.Name + "-" + c.MemberName
		}
		p := &armnetwork.PrivateEndpointIPConfigurationProperties{MemberName: new(c.MemberName), PrivateIPAddress: new(c.Address)}
		if len(d.GroupIDs) > 0 {
			p.GroupID = new(d.GroupIDs[0])
		}
		out = append(out, &armnetwork.PrivateEndpointIPConfiguration{Name: new(name), Properties: p})
	}
	return out
}

func firstConnection(p *armnetwork.PrivateEndpointProperties) *armnetwork.PrivateLinkServiceConnection {
	conns := p.PrivateLinkServiceConnections
	if len(p.ManualPrivateLinkServiceConnections) > 0 {
		conns = p.ManualPrivateLinkServiceConnections
	}
	if len(conns) == 0 {
		return nil
	}
	return conns[0]
}

// Drift lists what of an observed endpoint Azure lets the operator change
// and that differs from d: its tags (the owner tag and d.Tags; others'
// tags do not count), its application security groups and, for a manual
// connection, the request message. The subnet, the target, a static
// address and the NIC's name cannot change on an existing endpoint;
// Immutable reports those.
func Drift(d Desired, observed *armnetwork.PrivateEndpoint) []string {
	var out []string
	if ptr.Deref(observed.Tags[OwnerTag], "") != d.Owner || len(azure.TagsDiffer(observed.Tags, d.Tags)) > 0 {
		out = append(out, "tags")
	}
	if p := observed.Properties; p != nil && len(d.ASGs) > 0 && !sameIDs(p.ApplicationSecurityGroups, d.ASGs) {
		out = append(out, "applicationSecurityGroups")
	}
	if p := observed.Properties; p != nil && d.ManualApproval {
		if c := firstConnection(p); c != nil && c.Properties != nil && ptr.Deref(c.Properties.RequestMessage, "") != d.RequestMessage {
			out = append(out, "requestMessage")
		}
	}
	return out
}

// Immutable names the first field of an observed endpoint that differs
// from d and that Azure cannot change in place ("" when none does): the
// endpoint must be deleted and created again, which the operator leaves to
// a person.
func Immutable(d Desired, observed *armnetwork.PrivateEndpoint) string {
	p := observed.Properties
	if p == nil {
		return ""
	}
	if p.Subnet != nil && p.Subnet.ID != nil && !strings.EqualFold(*p.Subnet.ID, d.SubnetID) {
		return "subnet"
	}
	if (len(p.ManualPrivateLinkServiceConnections) > 0) != d.ManualApproval {
		return "manualApproval"
	}
	if d.NICName != "" && ptr.Deref(p.CustomNetworkInterfaceName, "") != d.NICName {
		return "networkInterfaceName"
	}
	// A target given by alias comes back as the service's resource ID, so
	// only a target given by ID can be compared.
	c := firstConnection(p)
	if c != nil && c.Properties != nil && strings.HasPrefix(d.Target, "/") &&
		!strings.EqualFold(ptr.Deref(c.Properties.PrivateLinkServiceID, ""), d.Target) {
		return FieldTarget
	}
	if c != nil && c.Properties != nil && len(d.GroupIDs) > 0 &&
		!slices.EqualFunc(c.Properties.GroupIDs, d.GroupIDs, func(have *string, want string) bool { return ptr.Deref(have, "") == want }) {
		return "groupIDs"
	}
	if len(d.IPConfigs) > 0 && !sameStatic(p.IPConfigurations, d.IPConfigs) {
		return "ipConfigurations"
	}
	return ""
}

// sameStatic says whether an endpoint has exactly the static addresses
// asked for, member by member.
func sameStatic(have []*armnetwork.PrivateEndpointIPConfiguration, want []IPConfig) bool {
	got := map[string]string{}
	for _, c := range have {
		if c != nil && c.Properties != nil {
			got[ptr.Deref(c.Properties.MemberName, "")] = ptr.Deref(c.Properties.PrivateIPAddress, "")
		}
	}
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if got[w.MemberName] != w.Address {
			return false
		}
	}
	return true
}

// FieldTarget is what Immutable names when the endpoint connects to
// another service than the desired one.
const FieldTarget = "privateLinkServiceID"

// Owner reads the owner tag: the owning object's namespace/name, or "".
func Owner(pe *armnetwork.PrivateEndpoint) string {
	if pe == nil {
		return ""
	}
	return ptr.Deref(pe.Tags[OwnerTag], "")
}

// Get returns the private endpoint, or nil when it does not exist.
func (s SDK) Get(ctx context.Context, rg, name string) (*armnetwork.PrivateEndpoint, error) {
	resp, err := s.Endpoints.Get(ctx, rg, name, nil)
	if azure.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &resp.PrivateEndpoint, nil
}

// Put starts creating or updating the private endpoint; it does not wait.
func (s SDK) Put(ctx context.Context, rg, name string, body armnetwork.PrivateEndpoint) error {
	_, err := s.Endpoints.BeginCreateOrUpdate(ctx, rg, name, body, nil)
	return err
}

// Delete starts deleting the private endpoint; a missing one is fine.
func (s SDK) Delete(ctx context.Context, rg, name string) error {
	_, err := s.Endpoints.BeginDelete(ctx, rg, name, nil)
	return azure.IgnoreNotFound(err)
}

// AskAgain turns a PUT body (Body of the observed endpoint) into the
// consumer's request made again after a rejection: its manual connection
// Pending, with the request message. Azure lets only the consumer take a
// connection out of Rejected (the provider cannot approve it); see
// azuresim's askAgain for the sources. It reports false for an endpoint
// without a manual connection.
func AskAgain(body *armnetwork.PrivateEndpoint, message string) bool {
	if body.Properties == nil || len(body.Properties.ManualPrivateLinkServiceConnections) != 1 {
		return false
	}
	c := body.Properties.ManualPrivateLinkServiceConnections[0]
	if c == nil || c.Properties == nil {
		return false
	}
	c.Properties.PrivateLinkServiceConnectionState = &armnetwork.PrivateLinkServiceConnectionState{Status: new(StatePending)}
	if message != "" {
		c.Properties.RequestMessage = new(message)
	}
	return true
}

// sameIDs says whether the groups are exactly ids, in any order and case.
func sameIDs(groups []*armnetwork.ApplicationSecurityGroup, ids []string) bool {
	if len(groups) != len(ids) {
		return false
	}
	have := map[string]bool{}
	for _, g := range groups {
		if g != nil {
			have[strings.ToLower(ptr.Deref(g.ID, ""))] = true
		}
	}
	for _, id := range ids {
		if !have[strings.ToLower(id)] {
			return false
		}
	}
	return true
}
