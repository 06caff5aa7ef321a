package azuresim

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Counters are request counts, for benchmarks and tests.
type Counters struct {
	// Requests counts ARM requests by method, resource type and status;
	// status 0 is a connection dropped by an injected fault.
	Requests []RequestCount `json:"requests"`
	// ByPrincipal counts ARM requests by client ID ("" without auth).
	ByPrincipal map[string]int `json:"byPrincipal"`
	// Tokens counts requests to the token endpoint.
	Tokens int `json:"tokens"`
	// TokensByClient counts token requests by the client_id they name
	// ("" for requests that name none, such as metadata discovery).
	TokensByClient map[string]int `json:"tokensByClient"`
	// Throttled counts 429 answers.
	Throttled int `json:"throttled"`
	// Total counts ARM requests.
	Total int `json:"total"`
	// Faults counts injected faults by kind and principal.
	Faults []FaultCount `json:"faults"`
	// Hosts counts ARM and token requests by the host they were sent to
	// (the Host header): which cloud's endpoints a client derived.
	Hosts map[string]int `json:"hosts"`
	// TokenScopes counts token requests by the scope they ask for.
	TokenScopes map[string]int `json:"tokenScopes"`
	// Errors counts ARM error answers by their code (x-ms-error-code), so
	// a test can tell a limit's refusal from any other 400.
	Errors map[string]int `json:"errors"`
	// ErrorAnswers splits the error answers by principal, request and
	// code: which client Azure refused what (a benchmark reports the
	// operator's refusals apart from CAPZ's).
	ErrorAnswers []ErrorAnswer `json:"errorAnswers"`
	// Reads counts the GETs of one resource (not of a collection) answered
	// 200, by the resource's ID in lower case: how often it was read on
	// its own, beside the lists that hold it.
	Reads map[string]int `json:"reads"`
}

// FaultCount is how often faults of one kind hit one principal. Kind is
// the error code answered (for example SubscriptionRequestsThrottled),
// "drop", "latency", or "operation:<code>" for a failed long-running
// operation.
type FaultCount struct {
	Kind      string `json:"kind"`
	Principal string `json:"principal,omitempty"`
	Count     int    `json:"count"`
}

// ErrorAnswer is how often Azure answered one kind of request of one
// principal with one error code.
type ErrorAnswer struct {
	Principal    string `json:"principal,omitempty"`
	Method       string `json:"method"`
	ResourceType string `json:"resourceType"`
	Status       int    `json:"status"`
	Code         string `json:"code"`
	Count        int    `json:"count"`
}

// RequestCount is the number of requests of one kind.
type RequestCount struct {
	Method       string `json:"method"`
	ResourceType string `json:"resourceType"`
	Status       int    `json:"status"`
	// Principal is the client ID that made the requests ("" without auth).
	Principal string `json:"principal,omitempty"`
	Count     int    `json:"count"`
}

// Sum adds up the requests that match a method and resource type ("" matches
// any) and whose status is in [minStatus, maxStatus].
func (c Counters) Sum(method, resourceType string, minStatus, maxStatus int) int {
	n := 0
	for _, r := range c.Requests {
		if (method == "" || r.Method == method) && (resourceType == "" || r.ResourceType == resourceType) &&
			r.Status >= minStatus && r.Status <= maxStatus {
			n += r.Count
		}
	}
	return n
}

// SumFor is Sum restricted to one principal's requests.
func (c Counters) SumFor(principal, method, resourceType string, minStatus, maxStatus int) int {
	n := 0
	for _, r := range c.Requests {
		if r.Principal == principal && (method == "" || r.Method == method) && (resourceType == "" || r.ResourceType == resourceType) &&
			r.Status >= minStatus && r.Status <= maxStatus {
			n += r.Count
		}
	}
	return n
}

type requestKey struct {
	method, typ, principal string
	status                 int
}

type counters struct {
	mu          sync.Mutex
	requests    map[requestKey]int
	byPrincipal map[string]int
	tokens      map[string]int
	faults      map[FaultCount]int // Count unset in the key
	hosts       map[string]int
	scopes      map[string]int
	errors      map[string]int
	answers     map[ErrorAnswer]int // Count unset in the key
	reads       map[string]int
}

func newCounters() *counters {
	return &counters{requests: map[requestKey]int{}, byPrincipal: map[string]int{}, tokens: map[string]int{}, faults: map[FaultCount]int{},
		hosts: map[string]int{}, scopes: map[string]int{}, errors: map[string]int{}, answers: map[ErrorAnswer]int{}, reads: map[string]int{}}
}

func (c *counters) read(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[strings.ToLower(id)]++
}

// errorAnswer counts an error answer (a key with Count unset).
func (c *counters) errorAnswer(a ErrorAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errors[a.Code]++
	c.answers[a]++
}

func (c *counters) host(h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hosts[strings.ToLower(h)]++
}

func (c *counters) scope(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scopes[s]++
}

func (c *counters) fault(kind, principal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults[FaultCount{Kind: kind, Principal: principal}]++
}

func (c *counters) request(method, typ string, status int, principal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[requestKey{method, typ, principal, status}]++
	c.byPrincipal[principal]++
}

func (c *counters) token(client string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens[client]++
}

func (c *counters) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = map[requestKey]int{}
	c.byPrincipal = map[string]int{}
	c.tokens = map[string]int{}
	c.faults = map[FaultCount]int{}
	c.hosts = map[string]int{}
	c.scopes = map[string]int{}
	c.errors = map[string]int{}
	c.answers = map[ErrorAnswer]int{}
	c.reads = map[string]int{}
}

func (c *counters) snapshot() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counters{ByPrincipal: map[string]int{}, TokensByClient: map[string]int{}, Requests: []RequestCount{},
		Hosts: maps.Clone(c.hosts), TokenScopes: maps.Clone(c.scopes), Errors: maps.Clone(c.errors), Reads: maps.Clone(c.reads)}
	for client, n := range c.tokens {
		out.Tokens += n
		out.TokensByClient[client] = n
	}
	for k, n := range c.requests {
		out.Requests = append(out.Requests, RequestCount{Method: k.method, ResourceType: k.typ, Status: k.status, Principal: k.principal, Count: n})
		out.Total += n
		if k.status == 429 {
			out.Throttled += n
		}
	}
	for p, n := range c.byPrincipal {
		out.ByPrincipal[p] = n
	}
	out.ErrorAnswers = make([]ErrorAnswer, 0, len(c.answers))
	for k, n := range c.answers {
		k.Count = n
		out.ErrorAnswers = append(out.ErrorAnswers, k)
	}
	slices.SortFunc(out.ErrorAnswers, func(a, b ErrorAnswer) int {
		return cmp.Or(strings.Compare(a.Principal, b.Principal), strings.Compare(a.ResourceType, b.ResourceType),
			strings.Compare(a.Method, b.Method), cmp.Compare(a.Status, b.Status), strings.Compare(a.Code, b.Code))
	})
	out.Faults = []FaultCount{}
	for k, n := range c.faults {
		k.Count = n
		out.Faults = append(out.Faults, k)
	}
	sort.Slice(out.Faults, func(i, j int) bool {
		if out.Faults[i].Kind != out.Faults[j].Kind {
			return out.Faults[i].Kind < out.Faults[j].Kind
		}
		return out.Faults[i].Principal < out.Faults[j].Principal
	})
	sort.Slice(out.Requests, func(i, j int) bool {
		a, b := out.Requests[i], out.Requests[j]
		if a.ResourceType != b.ResourceType {
			return a.ResourceType < b.ResourceType
		}
		if a.Method != b.Method {
			return a.Method < b.Method
		}
		if a.Status != b.Status {
			return a.Status < b.Status
		}
		return a.Principal < b.Principal
	})
	return out
}

// Counters returns a snapshot of the request counters.
func (s *Server) Counters() Counters { return s.counters.snapshot() }

// ResetCounters zeroes the request counters.
func (s *Server) ResetCounters() { s.counters.reset() }
