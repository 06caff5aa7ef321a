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

// FeatureDirectConnect is the preview feature a subscription registers
// before it may create a Private Link Service Direct Connect service (one
// with destinationIPAddress): "az feature register --namespace
// Microsoft.Network --name AllowPrivateLinkserviceUDR" (the public preview
// walk-through in gist maskati/e56d1bf6b4cc0e14f77d409e7f158e45).
const FeatureDirectConnect = "Microsoft.Network/AllowPrivateLinkserviceUDR"

// RegisterFeature registers a preview feature ("<namespace>/<name>") on a
// subscription, as "az feature register" does.
func (s *Server) RegisterFeature(subscription, feature string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.features == nil {
		s.st.features = map[string]map[string]bool{}
	}
	sub := strings.ToLower(subscription)
	if s.st.features[sub] == nil {
		s.st.features[sub] = map[string]bool{}
	}
	s.st.features[sub][strings.ToLower(feature)] = true
}

// checkFeature refuses what needs a feature the subscription has not
// registered, with ARM's code SubscriptionNotRegisteredForFeature and its
// message "Subscription <id> is not registered for feature <feature>
// required to carry out the requested operation." (as reported for other
// Microsoft.Network features, e.g. AllowBringYourOwnPublicIpAddress). The
// status Microsoft.Network gives it is not on record (Microsoft.Storage
// documents 409); the emulator answers 400 and the operator decides on
// the code.
func (s *state) checkFeature(sub, feature string) *armError {
	if s.features[strings.ToLower(sub)][strings.ToLower(feature)] {
		return nil
	}
	return errBadRequest("SubscriptionNotRegisteredForFeature",
		"Subscription %s is not registered for feature %s required to carry out the requested operation.", sub, feature)
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
