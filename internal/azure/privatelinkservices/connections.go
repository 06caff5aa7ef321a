package privatelinkservices

import (
	"strings"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

// Connection states.
const (
	StatePending      = "Pending"
	StateApproved     = "Approved"
	StateRejected     = "Rejected"
	StateDisconnected = "Disconnected"
)

// Connection is one private endpoint connection as the operator sees it.
type Connection struct {
	Name, PrivateEndpointID, SubscriptionID, State, Description, LinkIdentifier string
	// Deleting says Azure is removing the connection.
	Deleting bool
}

// Connections reads an observed service's connections.
func Connections(pls *armnetwork.PrivateLinkService) []Connection {
	if pls == nil || pls.Properties == nil {
		return nil
	}
	var out []Connection
	for _, c := range pls.Properties.PrivateEndpointConnections {
		if c == nil || c.Properties == nil {
			continue
		}
		conn := Connection{Name: ptr.Deref(c.Name, ""), LinkIdentifier: ptr.Deref(c.Properties.LinkIdentifier, ""),
			Deleting: ptr.Deref(c.Properties.ProvisioningState, "") == armnetwork.ProvisioningStateDeleting}
		if c.Properties.PrivateEndpoint != nil {
			conn.PrivateEndpointID = ptr.Deref(c.Properties.PrivateEndpoint.ID, "")
			conn.SubscriptionID = SubscriptionOf(conn.PrivateEndpointID)
		}
		if s := c.Properties.PrivateLinkServiceConnectionState; s != nil {
			conn.State, conn.Description = ptr.Deref(s.Status, ""), ptr.Deref(s.Description, "")
		}
		out = append(out, conn)
	}
	return out
}

// SubscriptionOf is the subscription of a resource ID ("" if none).
func SubscriptionOf(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) >= 2 && strings.EqualFold(segs[0], "subscriptions") {
		return strings.ToLower(segs[1])
	}
	return ""
}

// Policy is what to do with Pending connections.
type Policy struct {
	Approve      []string
	RejectOthers bool
	Description  string
}

// Decision is a state to set on a connection.
type Decision struct {
	Name, State, Description string
}

// Decide returns, for each Pending connection, Approved when its
// subscription is listed, Rejected when others are rejected; nothing else.
func Decide(conns []Connection, p Policy) []Decision {
	var out []Decision
	for _, c := range conns {
		if c.State != StatePending {
			continue
		}
		approve := false
		for _, s := range p.Approve {
			approve = approve || strings.EqualFold(s, c.SubscriptionID)
		}
		switch {
		case approve:
			out = append(out, Decision{Name: c.Name, State: StateApproved, Description: describe(p.Description, "approved by azure-private-endpoint-operator: subscription "+c.SubscriptionID+" is allowed")})
		case p.RejectOthers:
			out = append(out, Decision{Name: c.Name, State: StateRejected, Description: describe(p.Description, "rejected by azure-private-endpoint-operator: subscription "+c.SubscriptionID+" is not allowed")})
		}
	}
	return out
}

func describe(custom, def string) string {
	if custom != "" {
		return custom
	}
	return def
}
