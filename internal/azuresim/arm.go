package azuresim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// armError is an error in ARM's shape: an HTTP status and an error code and
// message as Azure returns them. Codes are Azure's own; see the package doc.
type armError struct {
	Status  int
	Code    string
	Message string
	// Details are the inner errors Azure lists under error.details.
	Details []errorDetail
}

func (e *armError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// detail is the error as a response body shows it.
func (e *armError) detail() errorDetail {
	return errorDetail{Code: e.Code, Message: e.Message, Details: e.Details}
}

func newError(status int, code, format string, args ...any) *armError {
	return &armError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func errBadRequest(code, format string, args ...any) *armError {
	return newError(http.StatusBadRequest, code, format, args...)
}

func errResourceNotFound(p armPath) *armError {
	return newError(http.StatusNotFound, "ResourceNotFound",
		"The Resource '%s/%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
		p.provider+"/"+p.types[0], p.names[0], p.rg)
}

func errParentNotFound(p armPath) *armError {
	return newError(http.StatusNotFound, "ParentResourceNotFound",
		"Can not perform requested operation on nested resource. Parent resource '%s' not found.", p.names[0])
}

func errNotFoundChild(p armPath) *armError {
	// Child resources of the network provider answer NotFound with the
	// resource's own description.
	return newError(http.StatusNotFound, "NotFound", "Resource %s not found.", p.id())
}

func errResourceGroupNotFound(rg string) *armError {
	return newError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rg)
}

func errInvalidReference(ref, by string) *armError {
	return errBadRequest("InvalidResourceReference",
		"Resource %s referenced by resource %s was not found. Please make sure that the referenced resource exists, and that both resources are in the same region.",
		ref, by)
}

// errAnotherOperation names the running operation's status URL, as Azure's
// message does.
func errAnotherOperation(uri string) *armError {
	return newError(http.StatusConflict, "AnotherOperationInProgress",
		"Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: %s.", uri)
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Details []errorDetail `json:"details,omitempty"`
}

func writeError(w http.ResponseWriter, e *armError) {
	w.Header().Set("x-ms-error-code", e.Code)
	writeJSON(w, e.Status, errorBody{Error: e.detail()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

// armPath is a parsed ARM resource path:
//
//	/subscriptions/{sub}/resourceGroups/{rg}/providers/{provider}/{type}/{name}[/{childType}/{childName}]
//
// A collection path ends with a type and has one name fewer than types.
type armPath struct {
	sub, rg  string
	provider string
	types    []string
	names    []string
	// tags says the path is the Tags API at the scope of the resource the
	// rest of it names (tags.go).
	tags bool
}

// parseARMPath splits an ARM path. ARM paths are case-insensitive; the
// returned segments keep the caller's casing.
func parseARMPath(path string) (armPath, bool) {
	if scope, ok := splitTagsPath(path); ok {
		p, ok := parseARMPath(scope)
		p.tags = true
		return p, ok && p.rg != "" && p.provider != "" && !p.isCollection()
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var p armPath
	if len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") || segs[1] == "" {
		return p, false
	}
	p.sub = segs[1]
	rest := segs[2:]
	if len(rest) >= 2 && strings.EqualFold(rest[0], "resourceGroups") {
		p.rg = rest[1]
		rest = rest[2:]
	}
	if len(rest) == 0 {
		return p, true
	}
	if len(rest) == 2 && p.rg == "" && strings.EqualFold(rest[0], "operationresults") && rest[1] != "" {
		// A resource group deletion's Location: /subscriptions/s/operationresults/<token>.
		p.types, p.names = []string{rest[0]}, []string{rest[1]}
		return p, true
	}
	if len(rest) < 3 || !strings.EqualFold(rest[0], "providers") {
		return p, false
	}
	p.provider = rest[1]
	rest = rest[2:]
	for i := 0; i < len(rest); i += 2 {
		p.types = append(p.types, rest[i])
		if i+1 < len(rest) {
			if rest[i+1] == "" {
				return p, false
			}
			p.names = append(p.names, rest[i+1])
		}
	}
	return p, true
}

// typeKey is the lower-case resource type, e.g.
// "microsoft.network/privatelinkservices/privateendpointconnections".
func (p armPath) typeKey() string {
	return strings.ToLower(p.provider + "/" + strings.Join(p.types, "/"))
}

func (p armPath) isCollection() bool { return len(p.names) < len(p.types) }

// id is the canonical resource ID of an item path.
func (p armPath) id() string {
	return resourceID(p.sub, p.rg, p.typeKey(), p.names...)
}

// parent returns the path of the parent resource of a child path.
func (p armPath) parent() armPath {
	q := p
	q.types = p.types[:1]
	q.names = p.names[:1]
	return q
}

// canonical spellings of the types the emulator serves, so that IDs it
// returns look like Azure's whatever casing the caller used.
var canonicalTypes = map[string]string{
	"microsoft.network/virtualnetworks":                                      "Microsoft.Network/virtualNetworks",
	"microsoft.network/virtualnetworks/subnets":                              "Microsoft.Network/virtualNetworks/subnets",
	"microsoft.network/loadbalancers":                                        "Microsoft.Network/loadBalancers",
	"microsoft.network/loadbalancers/frontendipconfigurations":               "Microsoft.Network/loadBalancers/frontendIPConfigurations",
	"microsoft.network/networkinterfaces":                                    "Microsoft.Network/networkInterfaces",
	"microsoft.network/privatelinkservices":                                  "Microsoft.Network/privateLinkServices",
	"microsoft.network/privatelinkservices/privateendpointconnections":       "Microsoft.Network/privateLinkServices/privateEndpointConnections",
	"microsoft.network/privatelinkservices/ipconfigurations":                 "Microsoft.Network/privateLinkServices/ipConfigurations",
	"microsoft.network/privateendpoints":                                     "Microsoft.Network/privateEndpoints",
	"microsoft.network/privateendpoints/privatelinkserviceconnections":       "Microsoft.Network/privateEndpoints/privateLinkServiceConnections",
	"microsoft.network/privateendpoints/manualprivatelinkserviceconnections": "Microsoft.Network/privateEndpoints/manualPrivateLinkServiceConnections",
	"microsoft.network/privatednszones":                                      "Microsoft.Network/privateDnsZones",
	"microsoft.network/privatednszones/a":                                    "Microsoft.Network/privateDnsZones/A",
	"microsoft.network/privatednszones/virtualnetworklinks":                  "Microsoft.Network/privateDnsZones/virtualNetworkLinks",
	"microsoft.network/networkinterfaces/ipconfigurations":                   "Microsoft.Network/networkInterfaces/ipConfigurations",
}

// canonicalType returns Azure's spelling of a lower-case type key.
func canonicalType(key string) string {
	if c, ok := canonicalTypes[key]; ok {
		return c
	}
	return key
}

// resourceID builds a canonical resource ID for a type key and names.
func resourceID(sub, rg, typeKey string, names ...string) string {
	typ := canonicalType(typeKey)
	parts := strings.Split(typ, "/")
	var b strings.Builder
	b.WriteString("/subscriptions/")
	b.WriteString(sub)
	b.WriteString("/resourceGroups/")
	b.WriteString(rg)
	b.WriteString("/providers/")
	b.WriteString(parts[0])
	for i, t := range parts[1:] {
		b.WriteString("/")
		b.WriteString(t)
		if i < len(names) {
			b.WriteString("/")
			b.WriteString(names[i])
		}
	}
	return b.String()
}

// key normalises a resource ID for map lookups: ARM IDs are case-insensitive.
func key(id string) string { return strings.ToLower(strings.TrimRight(id, "/")) }
