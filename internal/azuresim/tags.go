package azuresim

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
)

// The Tags API at a resource's scope ({resource ID}/providers/
// Microsoft.Resources/tags/default), which CAPZ uses to keep the tags of
// what it does not PUT again: its private DNS zones and their links
// (azure/services/tags in CAPZ v1.27.0; the requests, at api-version
// 2021-04-01, were seen from the real CAPZ in test/realcapz). Where the
// shapes come from: Azure's REST reference for "Tags - Get At Scope",
// "Create Or Update At Scope" and "Update At Scope" (TagsResource: id,
// name "default", type "Microsoft.Resources/tags", properties.tags;
// TagsPatchResource: operation Merge, Replace or Delete), which are
// synchronous at that version (armresources v1's TagsClient has no
// poller for them). The emulator reads and writes the tags the resource
// itself shows. Only resources inside a resource group are served. The
// error for an unknown operation, InvalidTagOperation, is the emulator's
// own: no recording of Azure's was found.

const tagsSuffix = "/providers/microsoft.resources/tags/default"

// splitTagsPath returns the scope of a Tags API path. It runs for every
// ARM request: it compares the suffix in place, without copying the path.
func splitTagsPath(path string) (string, bool) {
	trimmed := strings.TrimRight(path, "/")
	n := len(trimmed) - len(tagsSuffix)
	if n < 0 || !strings.EqualFold(trimmed[n:], tagsSuffix) {
		return "", false
	}
	return trimmed[:n], true
}

type tagsResource struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Type       string `json:"type"`
	Properties struct {
		Tags map[string]string `json:"tags"`
	} `json:"properties"`
}

type tagsPatch struct {
	Operation  string `json:"operation"`
	Properties struct {
		Tags map[string]string `json:"tags"`
	} `json:"properties"`
}

func (s *Server) serveTags(w http.ResponseWriter, r *http.Request, p armPath) {
	if e := s.st.existsCheck(p); e != nil {
		writeError(w, e)
		return
	}
	res := s.st.lookup(p.id())
	if res == nil || kinds[res.typeKey] == nil {
		writeError(w, notFoundFor(p))
		return
	}
	tags := map[string]string{}
	for name, v := range tagsOf(res.obj) {
		if v != nil {
			tags[name] = *v
		}
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut, http.MethodPatch:
		var e *armError
		if tags, e = updatedTags(r, tags); e != nil {
			writeError(w, e)
			return
		}
		if err := setTags(res, kinds[res.typeKey], tags); err != nil {
			writeError(w, newError(http.StatusInternalServerError, "InternalServerError", "%v", err))
			return
		}
		res.etag = newETag()
	default:
		writeError(w, newError(http.StatusMethodNotAllowed, "MethodNotAllowed", "The method '%s' is not allowed on tags.", r.Method))
		return
	}
	out := tagsResource{ID: res.id + "/providers/Microsoft.Resources/tags/default", Name: "default", Type: "Microsoft.Resources/tags"}
	out.Properties.Tags = tags
	if tags == nil {
		out.Properties.Tags = map[string]string{}
	}
	writeJSON(w, http.StatusOK, out)
}

// updatedTags applies a PUT (replace) or a PATCH (its operation) to tags.
func updatedTags(r *http.Request, tags map[string]string) (map[string]string, *armError) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, errBadRequest("InvalidRequestContent", "The request content could not be read: %v", err)
	}
	var in tagsPatch
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, errBadRequest("InvalidRequestContent", "The request content was invalid and could not be deserialized: %v", err)
	}
	op := "Replace"
	if r.Method == http.MethodPatch {
		op = in.Operation
	}
	switch strings.ToLower(op) {
	case "replace":
		return maps.Clone(in.Properties.Tags), nil
	case "merge":
		maps.Copy(tags, in.Properties.Tags)
		return tags, nil
	case "delete":
		for name, value := range in.Properties.Tags {
			if cur, ok := tags[name]; ok && (value == "" || value == cur) {
				delete(tags, name)
			}
		}
		return tags, nil
	}
	return nil, errBadRequest("InvalidTagOperation", "The tag operation '%s' is not valid. It must be one of Merge, Replace or Delete.", op)
}

// setTags writes tags into a resource's model (its kind's SDK type).
func setTags(r *resource, k *kind, tags map[string]string) error {
	raw, err := json.Marshal(r.obj)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	if len(tags) == 0 {
		delete(m, "tags")
	} else {
		m["tags"] = tags
	}
	raw, err = json.Marshal(m)
	if err != nil {
		return err
	}
	obj := k.newObj()
	if err := json.Unmarshal(raw, obj); err != nil {
		return err
	}
	r.obj = obj
	return nil
}
