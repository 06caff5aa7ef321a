package azuresim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

// The admin API lives under /_sim/, apart from ARM paths, and needs no token:
//
//	GET    /_sim/health                  liveness
//	POST   /_sim/reset                   forget all resources, operations, faults, counters
//	GET    /_sim/resources[?type=T]      every stored resource: id, type, provisioningState
//	GET    /_sim/counters                request counters (see Counters)
//	DELETE /_sim/counters                zero the counters
//	GET    /_sim/faults                  active faults
//	POST   /_sim/faults                  add a fault (see Fault); answers it with its id
//	DELETE /_sim/faults[/ID]             remove one or all faults
//	POST   /_sim/principals              add a service principal (see Principal)
//	GET    /_sim/config                  current settings
//	PUT    /_sim/config                  change latency, page size, throttling
//	POST   /_sim/seed                    create resource groups and resources (see Seed), at once
//	POST   /_sim/connections             act as a private link service owner (see ConnectionAction)
//	GET    /_sim/dns/resolve?vnet=V&name=N  what N resolves to from virtual network V (see Resolution)

// Seed is a set of objects to create at once, as if already provisioned.
type Seed struct {
	ResourceGroups []SeedResourceGroup `json:"resourceGroups,omitempty"`
	// Resources are ARM resources: an ID and the body of its PUT, applied in
	// order with the same validation as ARM requests.
	Resources []SeedResource `json:"resources,omitempty"`
}

// SeedResourceGroup is a resource group to create.
type SeedResourceGroup struct {
	SubscriptionID string `json:"subscriptionID"`
	Name           string `json:"name"`
	Location       string `json:"location"`
}

// SeedResource is a resource to create.
type SeedResource struct {
	ID   string          `json:"id"`
	Body json.RawMessage `json:"body"`
}

// ConnectionAction is what a private link service owner does to a private
// endpoint connection: set its status (Approved, Rejected) or remove it.
type ConnectionAction struct {
	PrivateLinkServiceID string `json:"privateLinkServiceID"`
	// PrivateEndpointID selects the connection by its endpoint.
	PrivateEndpointID string `json:"privateEndpointID"`
	Status            string `json:"status,omitempty"`
	Description       string `json:"description,omitempty"`
	Remove            bool   `json:"remove,omitempty"`
}

// Config is the part of Options that can change while running.
type Config struct {
	Latency    string      `json:"latency"`
	PageSize   int         `json:"pageSize"`
	Throttling *Throttling `json:"throttling,omitempty"`
}

// ResourceInfo is one line of GET /_sim/resources.
type ResourceInfo struct {
	ID                string `json:"id"`
	Type              string `json:"type"`
	ProvisioningState string `json:"provisioningState"`
}

func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/_sim/")
	route := r.Method + " " + strings.SplitN(path, "/", 2)[0]
	h, ok := adminRoutes[route]
	if !ok {
		adminError(w, http.StatusNotFound, fmt.Errorf("no admin route %s /_sim/%s", r.Method, path))
		return
	}
	h(s, w, r, path)
}

type adminHandler func(s *Server, w http.ResponseWriter, r *http.Request, path string)

var adminRoutes = map[string]adminHandler{
	"GET health": func(_ *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	},
	"POST reset": func(s *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	},
	"GET resources": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		writeJSON(w, http.StatusOK, s.Resources(r.URL.Query().Get("type")))
	},
	"GET counters": func(s *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusOK, s.Counters())
	},
	"DELETE counters": func(s *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		s.ResetCounters()
		w.WriteHeader(http.StatusNoContent)
	},
	"GET faults": func(s *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusOK, s.faults.list())
	},
	"POST faults": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		var f Fault
		if !decodeAdmin(w, r, &f) {
			return
		}
		id, err := s.AddFault(f)
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]string{"id": id})
	},
	"DELETE faults": func(s *Server, w http.ResponseWriter, _ *http.Request, path string) {
		if id := strings.TrimPrefix(path, "faults/"); id != path && id != "" {
			s.RemoveFault(id)
		} else {
			s.faults.clear()
		}
		w.WriteHeader(http.StatusNoContent)
	},
	"POST principals": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		var p Principal
		if !decodeAdmin(w, r, &p) {
			return
		}
		if p.ClientID == "" {
			adminError(w, http.StatusBadRequest, errors.New("clientID is required"))
			return
		}
		s.auth.add(p)
		w.WriteHeader(http.StatusNoContent)
	},
	"GET config": func(s *Server, w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusOK, s.config())
	},
	"PUT config": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		var c Config
		if !decodeAdmin(w, r, &c) {
			return
		}
		if err := s.setConfig(c); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, s.config())
	},
	"POST seed": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		var sd Seed
		if decodeAdmin(w, r, &sd) {
			adminResult(w, s.Seed(sd))
		}
	},
	"GET dns": func(s *Server, w http.ResponseWriter, r *http.Request, path string) {
		q := r.URL.Query()
		if path != "dns/resolve" || q.Get("vnet") == "" || q.Get("name") == "" {
			adminError(w, http.StatusBadRequest, errors.New("use GET /_sim/dns/resolve?vnet=<virtual network ID>&name=<name>"))
			return
		}
		writeJSON(w, http.StatusOK, s.Resolve(q.Get("vnet"), q.Get("name")))
	},
	"POST connections": func(s *Server, w http.ResponseWriter, r *http.Request, _ string) {
		var a ConnectionAction
		if decodeAdmin(w, r, &a) {
			adminResult(w, s.ActOnConnection(a))
		}
	},
}

func adminResult(w http.ResponseWriter, err error) {
	if err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func decodeAdmin(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 16<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("decoding request: %w", err))
		return false
	}
	return true
}

func adminError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// Reset forgets every resource, operation, fault, token and counter. Known
// principals and settings stay.
func (s *Server) Reset() {
	s.mu.Lock()
	latency := s.st.latency
	s.st = newState(s.opts.Now)
	s.st.latency = latency
	s.st.faults = s.faults
	s.mu.Unlock()
	s.faults.clear()
	s.counters.reset()
	s.auth.reset()
	s.throttle.configure(s.throttleConfig())
}

func (s *Server) throttleConfig() Throttling {
	s.throttle.mu.Lock()
	defer s.throttle.mu.Unlock()
	return s.throttle.cfg
}

// Resources lists stored resources, optionally of one type (case-insensitive).
func (s *Server) Resources(typ string) []ResourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.advance()
	// Sorted by each ID's key, made once (byKey): harnesses poll this
	// while thousands of resources exist.
	found := []keyed[ResourceInfo]{}
	for _, rg := range s.st.rgs {
		if typ == "" || strings.EqualFold(typ, rg.Type) {
			found = append(found, keyed[ResourceInfo]{key(rg.ID), ResourceInfo{ID: rg.ID, Type: rg.Type, ProvisioningState: rg.Properties.ProvisioningState}})
		}
	}
	for k, r := range s.st.res {
		t := canonicalType(r.typeKey)
		if typ == "" || strings.EqualFold(typ, t) {
			found = append(found, keyed[ResourceInfo]{k, ResourceInfo{ID: r.id, Type: t, ProvisioningState: r.state}})
		}
	}
	return byKey(found)
}

// EndpointInfo is what azuresim holds of a private endpoint: its address,
// its network interface (a recreated endpoint gets a new one) and its
// connection's state.
type EndpointInfo struct {
	ID, Name, IP, NIC, ConnectionState, ProvisioningState string
	// PrivateLinkService is the service the endpoint connects to (or the
	// Azure service).
	PrivateLinkService string
	// Subnet is the ID of the subnet it is in.
	Subnet string
	// Members are the addresses of an endpoint to an Azure service, by
	// member name (IP is the first member's); nil for a private link
	// service.
	Members map[string]string
}

// Endpoints lists every private endpoint, for harnesses that check what
// Azure holds without going through ARM (and its faults).
func (s *Server) Endpoints() []EndpointInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.advance()
	found := []keyed[EndpointInfo]{}
	for k, r := range s.st.byType[typePE] {
		if r.link == nil {
			continue
		}
		found = append(found, keyed[EndpointInfo]{k, EndpointInfo{
			ID: r.id, Name: r.id[strings.LastIndex(r.id, "/")+1:], IP: r.link.address, NIC: r.link.nicID,
			ConnectionState: ptr.Deref(connectionState(s.st, r.link).Status, ""), ProvisioningState: r.state,
			PrivateLinkService: r.link.plsID, Subnet: r.link.subnetID, Members: memberAddresses(r.link),
		}})
	}
	return byKey(found)
}

// AddFault injects a fault and returns its ID.
func (s *Server) AddFault(f Fault) (string, error) {
	if err := s.faults.add(&f); err != nil {
		return "", err
	}
	return f.ID, nil
}

// RemoveFault removes one fault.
func (s *Server) RemoveFault(id string) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for i, f := range s.faults.faults {
		if f.ID == id {
			s.faults.faults = append(s.faults.faults[:i], s.faults.faults[i+1:]...)
			return
		}
	}
}

// AddPrincipal registers a service principal with the token endpoint.
func (s *Server) AddPrincipal(p Principal) { s.auth.add(p) }

func (s *Server) config() Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.throttleConfig()
	return Config{Latency: s.st.latency.String(), PageSize: s.opts.PageSize, Throttling: &t}
}

func (s *Server) setConfig(c Config) error {
	var latency time.Duration
	if c.Latency != "" {
		d, err := time.ParseDuration(c.Latency)
		if err != nil || d < 0 {
			return fmt.Errorf("latency %q is not a non-negative duration", c.Latency)
		}
		latency = d
	}
	if c.PageSize < 0 {
		return fmt.Errorf("pageSize %d is negative", c.PageSize)
	}
	s.mu.Lock()
	if c.Latency != "" {
		s.st.latency = latency
	}
	if c.PageSize > 0 {
		s.opts.PageSize = c.PageSize
	}
	s.mu.Unlock()
	if c.Throttling != nil {
		s.throttle.configure(*c.Throttling)
	}
	return nil
}

// SetLatency changes how long long-running operations take from now on.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.latency = d
}

// SetThrottling replaces the throttling settings and refills the buckets.
func (s *Server) SetThrottling(t Throttling) { s.throttle.configure(t) }

// Seed creates resource groups and resources as if already provisioned. Each
// resource goes through the same validation as an ARM PUT.
func (s *Server) Seed(sd Seed) error {
	s.mu.Lock()
	for _, rg := range sd.ResourceGroups {
		if rg.SubscriptionID == "" || rg.Name == "" || rg.Location == "" {
			s.mu.Unlock()
			return errors.New("a seeded resource group needs subscriptionID, name and location")
		}
		s.st.putResourceGroup(rg.SubscriptionID, rg.Name, rg.Location, nil)
	}
	s.mu.Unlock()
	for _, res := range sd.Resources {
		p, ok := parseARMPath(res.ID)
		if !ok || p.provider == "" || p.isCollection() {
			return fmt.Errorf("seed: %q is not a resource ID", res.ID)
		}
		req := httptest.NewRequest(http.MethodPut, res.ID+"?api-version=seed", bytes.NewReader(res.Body))
		rec := httptest.NewRecorder()
		s.serveARM(rec, req, p, nil)
		if rec.Code >= 300 {
			return fmt.Errorf("seed %s: %d %s", res.ID, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		s.completeOperations(res.ID)
	}
	return nil
}

// Delete deletes a resource as an ARM DELETE would (with the same checks),
// and finishes its operation at once: how a harness removes what its
// clients do not manage, such as an Azure service behind an endpoint.
func (s *Server) Delete(id string) error {
	p, ok := parseARMPath(id)
	if !ok || p.provider == "" || p.isCollection() {
		return fmt.Errorf("delete: %q is not a resource ID", id)
	}
	req := httptest.NewRequest(http.MethodDelete, id+"?api-version=admin", nil)
	rec := httptest.NewRecorder()
	s.serveARM(rec, req, p, nil)
	if rec.Code >= 300 && rec.Code != http.StatusNotFound {
		return fmt.Errorf("delete %s: %d %s", id, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	s.completeOperations(id)
	return nil
}

// completeOperations finishes at once the operations in progress on a
// resource (seeding skips the provisioning wait).
func (s *Server) completeOperations(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.st.now()
	for _, op := range s.st.ops {
		if op.status == opInProgress && op.resource == key(id) {
			op.doneAt = now
		}
	}
	s.st.advance()
}

// ActOnConnection changes or removes a private endpoint connection as the
// private link service's owner would.
func (s *Server) ActOnConnection(a ConnectionAction) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.advance()
	if s.st.lookup(a.PrivateLinkServiceID) == nil {
		return fmt.Errorf("private link service %s not found", a.PrivateLinkServiceID)
	}
	for _, c := range s.st.list(typePLSConn, a.PrivateLinkServiceID) {
		pc := objOf[armnetwork.PrivateEndpointConnection](c)
		if !strings.EqualFold(ptr.Deref(pc.Properties.PrivateEndpoint.ID, ""), a.PrivateEndpointID) {
			continue
		}
		if a.Remove {
			s.st.drop(key(c.id))
			return nil
		}
		switch a.Status {
		case ConnectionApproved, ConnectionRejected, ConnectionPending:
		default:
			return fmt.Errorf("status %q: want Approved, Rejected or Pending", a.Status)
		}
		pc.Properties.PrivateLinkServiceConnectionState = &armnetwork.PrivateLinkServiceConnectionState{
			Status: new(a.Status), Description: new(a.Description), ActionsRequired: new("None"),
		}
		c.etag = newETag()
		return nil
	}
	return fmt.Errorf("no connection from %s on %s", a.PrivateEndpointID, a.PrivateLinkServiceID)
}
