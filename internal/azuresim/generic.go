package azuresim

import "strings"

// The generic store serves resource types that CAPZ writes for a cluster
// but that neither the operator nor any test here reads for their meaning:
// network security groups, route tables, public IP addresses, NAT gateways
// and bastion hosts. Each is kept as sent (ARM's common fields and the
// properties), under ARM's rules for every tracked network resource: a PUT
// needs a location, PUT and DELETE are long-running operations, and GET
// shows id, name, type, etag and properties.provisioningState. Nothing
// else is modelled: no rule is checked, no address is allocated (a public
// IP has no ipAddress), nothing is refused as in use (a subnet naming a
// security group does not hold it), and children are not served. A test
// that needs one of these to behave like Azure needs a real kind instead.
// Which types: the network security groups the real CAPZ v1.27.0 PUT
// and GET for a private cluster in test/realcapz
// (azure/services/securitygroups), and what CAPZ's other cluster services
// write for other cluster shapes (routetables and publicips directly,
// natgateways and bastionhosts through ASO). The ARM rules are those the
// conformance recordings show for the modelled network types.
var genericTypes = []string{
	"Microsoft.Network/networkSecurityGroups",
	"Microsoft.Network/routeTables",
	"Microsoft.Network/publicIPAddresses",
	"Microsoft.Network/natGateways",
	"Microsoft.Network/bastionHosts",
}

// genericResource is what the generic store keeps of a resource.
type genericResource struct {
	ID         *string            `json:"id,omitempty"`
	Name       *string            `json:"name,omitempty"`
	Type       *string            `json:"type,omitempty"`
	Etag       *string            `json:"etag,omitempty"`
	Location   *string            `json:"location,omitempty"`
	Tags       map[string]*string `json:"tags,omitempty"`
	SKU        map[string]any     `json:"sku,omitempty"`
	Zones      []string           `json:"zones,omitempty"`
	Properties map[string]any     `json:"properties,omitempty"`
}

var genericKind = &kind{
	newObj:   func() any { return &genericResource{} },
	lro:      true,
	location: true,
	put: func(_ *state, req *putRequest) *armError {
		o := bodyOf[genericResource](req)
		// Read-only fields a client sends back are Azure's to set.
		if o.Properties != nil {
			delete(o.Properties, "provisioningState")
			delete(o.Properties, "resourceGuid")
		}
		req.res.obj = o
		return nil
	},
	render: func(_ *state, r *resource) {
		o := objOf[genericResource](r)
		setCommon(&o.ID, &o.Name, &o.Type, &o.Etag, r)
		if o.Properties == nil {
			o.Properties = map[string]any{}
		}
		o.Properties["provisioningState"] = r.state
		o.Properties["resourceGuid"] = r.guid
	},
}

func init() {
	for _, t := range genericTypes {
		k := strings.ToLower(t)
		kinds[k] = genericKind
		canonicalTypes[k] = t
	}
}
