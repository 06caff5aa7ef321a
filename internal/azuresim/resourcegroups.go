package azuresim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// resourceGroup is Microsoft.Resources/resourceGroups in ARM's JSON shape.
type resourceGroup struct {
	ID         string             `json:"id"`
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Location   string             `json:"location"`
	Tags       map[string]*string `json:"tags,omitempty"`
	Properties struct {
		ProvisioningState string `json:"provisioningState"`
	} `json:"properties"`
}

func rgID(sub, rg string) string { return "/subscriptions/" + sub + "/resourceGroups/" + rg }

// serveResourceGroup serves PUT, GET, HEAD and DELETE of a resource group.
// Deleting a group deletes everything in it, at once.
func (s *Server) serveResourceGroup(w http.ResponseWriter, r *http.Request, p armPath) {
	id := rgID(p.sub, p.rg)
	existing := s.st.rgs[key(id)]
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if existing == nil {
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			writeError(w, errResourceGroupNotFound(p.rg))
			return
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeJSON(w, http.StatusOK, existing)
	case http.MethodPut:
		var in resourceGroup
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(raw, &in); err != nil {
			writeError(w, errBadRequest("InvalidRequestContent", "The request content was invalid and could not be deserialized: %v", err))
			return
		}
		if in.Location == "" {
			writeError(w, errBadRequest("LocationRequired", "The location property is required for this definition."))
			return
		}
		status := http.StatusOK
		if existing == nil {
			status = http.StatusCreated
		}
		rg := s.st.putResourceGroup(p.sub, p.rg, in.Location, in.Tags)
		writeJSON(w, status, rg)
	case http.MethodDelete:
		if existing == nil {
			writeError(w, errResourceGroupNotFound(p.rg))
			return
		}
		// ARM answers 202 with a Location under the subscription and
		// Retry-After 15, polled until 200 (ASO v2 recording
		// Test_Networking_PrivateLinkService_CRUD.yaml). The emulator
		// removes the contents at once; the operation ends after Latency.
		s.st.deleteResourceGroup(id)
		op := &operation{id: newGUID(), sub: p.sub, method: http.MethodDelete, doneAt: s.st.now().Add(s.st.latency), status: opInProgress}
		s.st.addOperation(op)
		w.Header().Set("Location", fmt.Sprintf("%s/subscriptions/%s/operationresults/%s?api-version=%s", s.baseURL(r), p.sub, op.id, r.URL.Query().Get("api-version")))
		s.setRetryAfter(w, op.doneAt)
		w.WriteHeader(http.StatusAccepted)
	default:
		writeError(w, newError(http.StatusMethodNotAllowed, "MethodNotAllowed", "The method '%s' is not allowed on resource groups.", r.Method))
	}
}

func (s *state) putResourceGroup(sub, name, location string, tags map[string]*string) *resourceGroup {
	id := rgID(sub, name)
	rg := s.rgs[key(id)]
	if rg == nil {
		rg = &resourceGroup{ID: id, Name: name, Type: "Microsoft.Resources/resourceGroups"}
		s.rgs[key(id)] = rg
	}
	rg.Location, rg.Tags = location, tags
	rg.Properties.ProvisioningState = stateSucceeded
	return rg
}

// deleteResourceGroup removes a group and every resource in it, releasing
// what they hold.
func (s *state) deleteResourceGroup(id string) {
	prefix := key(id) + "/"
	for k, r := range s.res {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if kd := kinds[r.typeKey]; kd != nil && kd.onDelete != nil {
			kd.onDelete(s, r)
		}
		s.drop(k)
	}
	delete(s.rgs, key(id))
}

// serveGroupOperation answers a resource group deletion's Location: 202
// while it runs, 200 with no body once it is done.
func (s *Server) serveGroupOperation(w http.ResponseWriter, r *http.Request, p armPath) {
	op := s.st.ops[p.names[0]]
	if !strings.EqualFold(p.types[0], "operationresults") || op == nil || !strings.EqualFold(op.sub, p.sub) || op.resource != "" {
		writeError(w, newError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", p.names[0]))
		return
	}
	if op.status == opInProgress {
		s.setRetryAfter(w, op.doneAt)
		w.Header().Set("Location", s.baseURL(r)+r.URL.RequestURI())
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.WriteHeader(http.StatusOK)
}
