package azure

import (
	"maps"
	"slices"
	"strings"
)

// Tags are the tags the operator puts on what it creates: the operator's
// defaults (--azure-tags) under an object's own (spec.tags). The owner tag
// is added by each resource's body, last, so neither can replace it.
func Tags(defaults, own map[string]string) map[string]string {
	if len(defaults)+len(own) == 0 {
		return nil
	}
	out := make(map[string]string, len(defaults)+len(own))
	maps.Copy(out, defaults)
	maps.Copy(out, own)
	return out
}

// MergeTags is a PUT body's tags: what the resource has (tags others set
// stay: a PUT replaces the whole map), then want, then the owner tag.
// Azure compares tag names case-insensitively: a name in want replaces the
// observed one whatever its case.
func MergeTags(observed map[string]*string, want map[string]string, ownerKey, owner string) map[string]*string {
	out := make(map[string]*string, len(observed)+len(want)+1)
	for k, v := range observed {
		out[k] = v
	}
	for k, v := range want {
		for old := range out {
			if strings.EqualFold(old, k) {
				delete(out, old)
			}
		}
		out[k] = new(v)
	}
	out[ownerKey] = new(owner)
	return out
}

// TagsDiffer lists the names of want the resource lacks or carries with
// another value (sorted); tags the resource has beside them do not count.
func TagsDiffer(observed map[string]*string, want map[string]string) []string {
	var out []string
	for k, v := range want {
		found := false
		for ok, ov := range observed {
			if strings.EqualFold(ok, k) && ov != nil && *ov == v {
				found = true
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ParseTags reads "k=v,k2=v2" (--azure-tags); an empty string is no tags.
func ParseTags(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &TagError{Tag: kv, Why: "want name=value"}
		}
		if why := InvalidTagName(strings.TrimSpace(k)); why != "" {
			return nil, &TagError{Tag: kv, Why: why}
		}
		if v = strings.TrimSpace(v); len(v) > 256 {
			return nil, &TagError{Tag: kv, Why: "value longer than 256 characters"}
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

// TagError is a malformed tag.
type TagError struct{ Tag, Why string }

func (e *TagError) Error() string { return "tag " + e.Tag + ": " + e.Why }

// InvalidTagName says why Azure refuses a tag name ("" when it takes it):
// at most 512 characters and none of < > % & \ ? / (Azure Resource
// Manager's tag limitations, "Use tags to organize your Azure resources").
func InvalidTagName(k string) string {
	switch {
	case len(k) > 512:
		return "longer than 512 characters"
	case strings.ContainsAny(k, `<>%&\?/`):
		return `contains one of < > % & \ ? /`
	}
	return ""
}
