package privatelinkservices

import (
	"fmt"
	"path"
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

// Policy is what to do with connections: Rules first (the first that
// matches decides), then the subscription lists, for Pending connections.
type Policy struct {
	Rules        []Rule
	Approve      []string
	RejectOthers bool
	Description  string
}

// Rule decides one named connection (Name), or every connection whose
// endpoint's resource ID matches EndpointPattern (path.Match syntax within
// segments, case-insensitive).
type Rule struct {
	Name, EndpointPattern string
	Reject                bool
	Reason                string
}

// Matches says whether the rule decides c.
func (r Rule) Matches(c Connection) bool {
	if r.Name != "" {
		return strings.EqualFold(r.Name, c.Name)
	}
	ok, err := path.Match(strings.ToLower(r.EndpointPattern), strings.ToLower(c.PrivateEndpointID))
	return err == nil && ok
}

// Verdict is what a policy says about one connection, and what to write.
type Verdict struct {
	Name string
	// By is the policy entry that decides: rules[<i>], approveSubscriptions
	// or rejectOthers.
	By string
	// Decision is Approve or Reject.
	Decision string
	// Reason is the description written with it, or why Azure cannot
	// carry it out.
	Reason string
	// Write is the state to set now ("" when the connection already is
	// there, or cannot get there).
	Write string
}

// Verdict decisions.
const (
	DecisionApprove = "Approve"
	DecisionReject  = "Reject"
)

// CannotApproveRejected is the reason of an Approve rule that meets a
// Rejected connection: Azure keeps a rejection (the provider cannot approve
// it; the consumer must ask again).
const CannotApproveRejected = "Azure cannot approve a Rejected connection: the consumer must ask again (an AzurePrivateEndpoint's spec.requestRevision, or a new endpoint)"

// Judge says, for each connection an entry of the policy decides, which
// entry, what, why, and what to write. A rule's Approve writes only a
// Pending connection; its Reject a Pending or an Approved one; the lists
// decide only Pending connections. Connections being deleted or
// Disconnected are left alone.
func Judge(conns []Connection, p Policy) []Verdict {
	var out []Verdict
	for _, c := range conns {
		if c.Deleting || c.State == StateDisconnected {
			continue
		}
		if v, ok := judgeByRule(c, p.Rules); ok {
			out = append(out, v)
			continue
		}
		if c.State != StatePending {
			continue
		}
		approve := false
		for _, s := range p.Approve {
			approve = approve || strings.EqualFold(s, c.SubscriptionID)
		}
		switch {
		case approve:
			out = append(out, Verdict{Name: c.Name, By: "approveSubscriptions", Decision: DecisionApprove, Write: StateApproved,
				Reason: describe(p.Description, "approved by azure-private-endpoint-operator: subscription "+c.SubscriptionID+" is allowed")})
		case p.RejectOthers:
			out = append(out, Verdict{Name: c.Name, By: "rejectOthers", Decision: DecisionReject, Write: StateRejected,
				Reason: describe(p.Description, "rejected by azure-private-endpoint-operator: subscription "+c.SubscriptionID+" is not allowed")})
		}
	}
	return out
}

func judgeByRule(c Connection, rules []Rule) (Verdict, bool) {
	for i, r := range rules {
		if !r.Matches(c) {
			continue
		}
		v := Verdict{Name: c.Name, By: fmt.Sprintf("rules[%d]", i)}
		if r.Reject {
			v.Decision, v.Reason = DecisionReject, describe(r.Reason, "rejected by azure-private-endpoint-operator: spec.connectionApproval."+v.By)
			if c.State == StatePending || c.State == StateApproved {
				v.Write = StateRejected
			}
			return v, true
		}
		v.Decision, v.Reason = DecisionApprove, describe(r.Reason, "approved by azure-private-endpoint-operator: spec.connectionApproval."+v.By)
		switch c.State {
		case StatePending:
			v.Write = StateApproved
		case StateRejected:
			v.Reason = CannotApproveRejected
		}
		return v, true
	}
	return Verdict{}, false
}

// Decision is a state to set on a connection.
type Decision struct {
	Name, State, Description string
}

// Decide is what Judge says to write.
func Decide(conns []Connection, p Policy) []Decision {
	var out []Decision
	for _, v := range Judge(conns, p) {
		if v.Write != "" {
			out = append(out, Decision{Name: v.Name, State: v.Write, Description: v.Reason})
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
