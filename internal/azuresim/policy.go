package azuresim

import (
	"encoding/json"
	"fmt"
	"strings"
)

// TagPolicy is an Azure Policy assignment with the deny effect that
// requires a tag, as the built-ins "Require a tag on resources" and
// "Require a tag and its value on resources" do: a PUT of a resource type
// that has tags and a location (their mode is Indexed) without the tag, or
// with another value, is refused. It is evaluated on every such PUT, creates and updates alike;
// child resources without tags (record sets) are not evaluated.
type TagPolicy struct {
	// Subscription the assignment applies to; empty: every subscription.
	Subscription string `json:"subscription,omitempty"`
	// Tag is the required tag's name (compared case-insensitively, as
	// Azure compares tag names).
	Tag string `json:"tag"`
	// Value the tag must have; empty: any value.
	Value string `json:"value,omitempty"`
}

// SetPolicies replaces the tag policies.
func (s *Server) SetPolicies(p []TagPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.policies = append([]TagPolicy(nil), p...)
}

// checkPolicies refuses a PUT a tag policy denies, with Azure's error:
// 403 RequestDisallowedByPolicy, "Resource '<name>' was disallowed by
// policy. Policy identifiers: '[...]'." (Microsoft's troubleshooting page
// for the code, and reports of real responses such as
// microsoft/vscode-apimanagement issue 348).
func (s *state) checkPolicies(p armPath, k *kind, body any) *armError {
	if len(s.policies) == 0 || !k.location {
		return nil
	}
	tags := tagsOf(body)
	for i, pol := range s.policies {
		if pol.Subscription != "" && !strings.EqualFold(pol.Subscription, p.sub) {
			continue
		}
		if hasTag(tags, pol.Tag, pol.Value) {
			continue
		}
		name := fmt.Sprintf("require-tag-%d", i)
		// A subscription's own assignment of its own definition (the
		// built-ins' IDs are not modelled).
		ids := fmt.Sprintf(`[{"policyAssignment":{"name":"%[1]s","id":"/subscriptions/%[2]s/providers/Microsoft.Authorization/policyAssignments/%[1]s"},"policyDefinition":{"name":"%[1]s","id":"/subscriptions/%[2]s/providers/Microsoft.Authorization/policyDefinitions/%[1]s"}}]`, name, p.sub)
		return newError(403, "RequestDisallowedByPolicy", "Resource '%s' was disallowed by policy. Policy identifiers: '%s'.", p.names[len(p.names)-1], ids)
	}
	return nil
}

func hasTag(tags map[string]*string, name, value string) bool {
	for k, v := range tags {
		if strings.EqualFold(k, name) && v != nil && (value == "" || *v == value) {
			return true
		}
	}
	return false
}

// tagsOf reads the tags of a decoded PUT body (nil when it has none).
func tagsOf(body any) map[string]*string {
	var tagged struct {
		Tags map[string]*string `json:"tags"`
	}
	if raw, err := json.Marshal(body); err == nil {
		_ = json.Unmarshal(raw, &tagged)
	}
	return tagged.Tags
}
