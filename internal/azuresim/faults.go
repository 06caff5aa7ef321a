package azuresim

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Fault is an injected failure. A request matches when its method equals
// Method (any when empty), its path matches PathRegex (any when empty) and
// it comes from Principal (a client ID; any when empty). ARM requests are
// matched after authentication; token-endpoint requests only by faults with
// a PathRegex (a fault without one is about ARM), by the client_id they
// name.
// Every fault that hits is counted with its kind and principal
// (Counters.Faults).
//
// A matching request is answered with Status and an ARM error (Code,
// Message), or its connection is dropped (Drop), after Latency. With
// Operation set, the request itself succeeds but the long-running operation
// it starts ends Failed with Code and Message, and the resource's
// provisioningState becomes Failed.
type Fault struct {
	ID          string        `json:"id,omitempty"`
	Method      string        `json:"method,omitempty"`
	PathRegex   string        `json:"pathRegex,omitempty"`
	Status      int           `json:"status,omitempty"`
	Code        string        `json:"code,omitempty"`
	Message     string        `json:"message,omitempty"`
	RetryAfter  int           `json:"retryAfterSeconds,omitempty"`
	Count       int           `json:"count,omitempty"`       // 0: unlimited
	Probability float64       `json:"probability,omitempty"` // 0: always
	Latency     time.Duration `json:"latency,omitempty"`
	Drop        bool          `json:"drop,omitempty"`
	Operation   bool          `json:"operation,omitempty"`
	Principal   string        `json:"principal,omitempty"`

	re *regexp.Regexp
}

// kind names the fault for the counters.
func (f *Fault) kind() string {
	switch {
	case f.Operation:
		return "operation:" + f.Code
	case f.Drop:
		return "drop"
	case f.Status == 0:
		return "latency"
	}
	return f.Code
}

func (f *Fault) validate() error {
	if f.PathRegex != "" {
		re, err := regexp.Compile(f.PathRegex)
		if err != nil {
			return fmt.Errorf("pathRegex: %w", err)
		}
		f.re = re
	}
	if f.Probability < 0 || f.Probability > 1 {
		return fmt.Errorf("probability %v is not between 0 and 1", f.Probability)
	}
	if f.Count < 0 {
		return fmt.Errorf("count %d is negative", f.Count)
	}
	if !f.Drop && f.Latency == 0 && f.Status == 0 {
		return fmt.Errorf("a fault needs a status, a latency or drop")
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("status %d is not an error status", f.Status)
	}
	if f.Status != 0 && f.Code == "" {
		f.Code = http.StatusText(f.Status)
	}
	if f.Message == "" {
		f.Message = "Injected fault " + f.Code + "."
	}
	if f.ID == "" {
		f.ID = newGUID()
	}
	return nil
}

func (f *Fault) matches(method, path, principal string) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, method) {
		return false
	}
	if f.Principal != "" && !strings.EqualFold(f.Principal, principal) {
		return false
	}
	if f.re != nil && !f.re.MatchString(path) {
		return false
	}
	return f.Probability == 0 || rand.Float64() < f.Probability //nolint:gosec // G404: a test fault's dice, not a secret
}

// apply acts out a request fault. It returns true when the request has been
// answered (or dropped) and must not go further.
func (f *Fault) apply(w http.ResponseWriter, r *http.Request) bool {
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			// The client gave up (its try timeout, or it stopped): no
			// answer is read any more, and a held request must not keep
			// the server from shutting down.
			panic(http.ErrAbortHandler)
		}
	}
	if f.Drop {
		if hj, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
			w = hj.Unwrap()
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return true
			}
		}
		panic(http.ErrAbortHandler)
	}
	if f.Status == 0 {
		return false // latency only
	}
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(f.RetryAfter))
	}
	writeError(w, &armError{Status: f.Status, Code: f.Code, Message: f.Message})
	return true
}

// faultSet holds the active faults.
type faultSet struct {
	mu     sync.Mutex
	faults []*Fault
	// hit counts a fault that hit a principal.
	hit func(kind, principal string)
}

func (fs *faultSet) add(f *Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = append(fs.faults, f)
	return nil
}

func (fs *faultSet) list() []Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]Fault, 0, len(fs.faults))
	for _, f := range fs.faults {
		out = append(out, *f)
	}
	return out
}

func (fs *faultSet) clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.faults = nil
}

// match returns the first request fault matching a request and spends one of
// its uses.
func (fs *faultSet) match(method, path, principal string) *Fault {
	return fs.take(method, path, principal, false)
}

// matchAuthority is match for the token endpoint: only faults that name a
// path.
func (fs *faultSet) matchAuthority(method, path, principal string) *Fault {
	return fs.pick(method, path, principal, func(f *Fault) bool { return !f.Operation && f.re != nil })
}

func (fs *faultSet) take(method, path, principal string, operation bool) *Fault {
	return fs.pick(method, path, principal, func(f *Fault) bool { return f.Operation == operation })
}

// pick returns the first fault that eligible admits and that matches the
// request, spends one of its uses and counts the hit.
func (fs *faultSet) pick(method, path, principal string, eligible func(*Fault) bool) *Fault {
	fs.mu.Lock()
	var hit *Fault
	for i, f := range fs.faults {
		if !eligible(f) || !f.matches(method, path, principal) {
			continue
		}
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
			}
		}
		hit = f
		break
	}
	fs.mu.Unlock()
	if hit != nil && fs.hit != nil {
		fs.hit(hit.kind(), principal)
	}
	return hit
}

// takeOperationFault returns an operation fault for a long-running operation
// on the resource, if one matches the request that starts it.
func (s *state) takeOperationFault(method, id string) *Fault {
	if s.faults == nil {
		return nil
	}
	return s.faults.take(method, id, s.principal, true)
}
