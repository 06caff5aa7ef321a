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
// Method (any when empty) and its path matches PathRegex (any when empty).
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

	re *regexp.Regexp
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

func (f *Fault) matches(method, path string) bool {
	if f.Method != "" && !strings.EqualFold(f.Method, method) {
		return false
	}
	if f.re != nil && !f.re.MatchString(path) {
		return false
	}
	return f.Probability == 0 || rand.Float64() < f.Probability //nolint:gosec // G404: a test fault's dice, not a secret
}

// apply acts out a request fault. It returns true when the request has been
// answered (or dropped) and must not go further.
func (f *Fault) apply(w http.ResponseWriter, _ *http.Request) bool {
	if f.Latency > 0 {
		time.Sleep(f.Latency)
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
func (fs *faultSet) match(method, path string) *Fault {
	return fs.take(method, path, false)
}

func (fs *faultSet) take(method, path string, operation bool) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, f := range fs.faults {
		if f.Operation != operation || !f.matches(method, path) {
			continue
		}
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				fs.faults = append(fs.faults[:i], fs.faults[i+1:]...)
			}
		}
		return f
	}
	return nil
}

// takeOperationFault returns an operation fault for a long-running operation
// on the resource, if one matches.
func (s *state) takeOperationFault(method, id string) *Fault {
	if s.faults == nil {
		return nil
	}
	return s.faults.take(method, id, true)
}
