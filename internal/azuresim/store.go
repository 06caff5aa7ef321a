package azuresim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Provisioning states as ARM reports them.
const (
	stateUpdating  = "Updating"
	stateDeleting  = "Deleting"
	stateSucceeded = "Succeeded"
	stateFailed    = "Failed"
)

// Operation statuses of the Azure-AsyncOperation protocol.
const (
	opInProgress = "InProgress"
	opSucceeded  = "Succeeded"
	opFailed     = "Failed"
	opCanceled   = "Canceled"
)

// resource is one stored ARM resource. obj is the SDK model the emulator
// renders as JSON; the kind's render function fills in derived fields.
// objOf returns r's SDK model as a *T. The kinds table decides each
// resource type's model, so a mismatch is a bug in the emulator.
func objOf[T any](r *resource) *T {
	o, ok := r.obj.(*T)
	if !ok {
		panic(fmt.Sprintf("azuresim: %s holds a %T, not a %T", r.id, r.obj, o))
	}
	return o
}

// bodyOf returns a PUT's decoded body as a *T (the kind's model).
func bodyOf[T any](req *putRequest) *T {
	o, ok := req.body.(*T)
	if !ok {
		panic(fmt.Sprintf("azuresim: the body of PUT %s is a %T, not a %T", req.id, req.body, o))
	}
	return o
}

type resource struct {
	id       string // canonical ID, casing as created
	typeKey  string
	sub, rg  string
	name     string
	obj      any
	state    string // provisioning state
	etag     string
	busy     string // ID of the operation in progress on it, "" when idle
	location string
	// link is a private endpoint's connection bookkeeping.
	link *peLink
	// guid is the resourceGuid Azure gives a virtual network, load
	// balancer or private link service at creation and keeps.
	guid string
	// nicID is the network interface Azure makes for a private link
	// service (<name>.nic.<guid>).
	nicID string
}

// operation is a long-running operation. It completes when the clock passes
// doneAt; completion is applied lazily by advance, under the state lock.
type operation struct {
	id       string
	sub      string
	rg       string // set for a Private DNS operation, whose URLs are under its group
	dns      bool
	location string
	resource string // key of the resource
	method   string
	doneAt   time.Time
	status   string
	err      *armError
	onDone   func() // applied on success
	onFail   func() // applied on failure
}

// kind describes how the emulator serves one resource type.
type kind struct {
	// newObj returns an empty SDK model to decode a PUT body into.
	newObj func() any
	// put validates a PUT and stores the result in r.obj. existing is the
	// stored resource for an update, nil for a create. It runs under the lock.
	put func(s *state, req *putRequest) *armError
	// checkDelete refuses a DELETE the way Azure would (in use, ...).
	checkDelete func(s *state, r *resource) *armError
	// onDelete releases what the resource held; it runs when the delete
	// completes.
	onDelete func(s *state, r *resource)
	// render fills derived fields of r.obj (provisioning state, ETag,
	// references) before it is marshalled.
	render func(s *state, r *resource)
	// view, if set, returns what a response shows of r.obj when that
	// differs from what the emulator keeps (it must not change r.obj).
	view func(s *state, r *resource) any
	// lro says PUT and DELETE are long-running operations.
	lro bool
	// lroDelete says only DELETE is long-running.
	lroDelete bool
	// location says a PUT must name a location.
	location bool
	// privateDNS says the long-running operations are Private DNS's: PUT
	// and DELETE answer 202 with an empty object (PUT) or no body
	// (DELETE), and the status URLs are under the resource group.
	privateDNS bool
	// newETag makes the resource's ETag; default W/"<guid>".
	newETag func() string
}

// putRequest is a PUT being applied.
type putRequest struct {
	path     armPath
	id       string
	body     any       // decoded body (SDK model)
	existing *resource // nil on create
	res      *resource // the resource being written (new or existing)
	// onDone, if set by put, runs when the operation completes successfully.
	onDone func()
	// principal is the caller.
	principal *principal
	// opErr, if set by put, is how the operation ends: Azure accepted the
	// request and refuses it inside the operation (the resource stays,
	// Failed).
	opErr *armError
}

// state is everything the emulator stores. It is guarded by Server.mu.
type state struct {
	now     func() time.Time
	latency time.Duration
	rgs     map[string]*resourceGroup
	// res holds every resource by key(id); byType the same resources by
	// type, so that a list or a limit's count reads only its type's: with
	// 1,000 consumers there are 7,000 resources. store and drop keep both.
	res    map[string]*resource
	byType map[string]map[string]*resource
	ops    map[string]*operation
	// pending are the operations of ops in progress, which advance looks
	// at on every request; swept is when finished ones were last forgotten.
	pending map[string]*operation
	swept   time.Time
	pools   map[string]*ipPool
	aliases map[string]string // lower alias -> resource key of the PLS
	// policies are the tag policies every tagged PUT must pass.
	policies []TagPolicy
	// faults can make long-running operations end Failed.
	faults *faultSet
	// renderCtx carries request options (such as $expand) to render.
	renderCtx renderContext
	// principal is the client ID of the request being served (operation
	// faults target it).
	principal string
	// limits are Azure's resource-count limits, enforced on create.
	limits Limits
	// features are the preview features registered per subscription
	// (lower-case subscription -> lower-case "<namespace>/<feature>").
	features map[string]map[string]bool
}

// renderContext is what a GET asked for beyond the resource itself.
type renderContext struct {
	expand string
}

func newState(now func() time.Time) *state {
	return &state{
		now:     now,
		rgs:     map[string]*resourceGroup{},
		res:     map[string]*resource{},
		byType:  map[string]map[string]*resource{},
		ops:     map[string]*operation{},
		pending: map[string]*operation{},
		pools:   map[string]*ipPool{},
		aliases: map[string]string{},
	}
}

// advance completes every operation whose time has come.
func (s *state) advance() {
	now := s.now()
	for id, op := range s.pending {
		if op.status != opInProgress {
			delete(s.pending, id) // canceled
			continue
		}
		if now.Before(op.doneAt) {
			continue
		}
		delete(s.pending, id)
		if r := s.res[op.resource]; r != nil && r.busy == op.id {
			r.busy = ""
		}
		if op.err != nil {
			op.status = opFailed
			if op.onFail != nil {
				op.onFail()
			}
			continue
		}
		op.status = opSucceeded
		if op.onDone != nil {
			op.onDone()
		}
	}
	// Forget finished operations after a while so the map stays small; a
	// poller that comes back later than that gets 404, as from ARM. Once a
	// minute: every request advances, and a fleet of 1,000 keeps thousands
	// of operations (a loop over all of them on every request was a third
	// of azuresim's CPU in a wiring benchmark of 1,000 WCs).
	if now.Sub(s.swept) < time.Minute {
		return
	}
	s.swept = now
	for id, op := range s.ops {
		if op.status != opInProgress && now.Sub(op.doneAt) > 10*time.Minute {
			delete(s.ops, id)
		}
	}
}

// addOperation records an operation in progress.
func (s *state) addOperation(op *operation) {
	s.ops[op.id] = op
	s.pending[op.id] = op
}

// startOperation registers a long-running operation on r.
func (s *state) startOperation(r *resource, method string, onDone, onFail func()) *operation {
	loc := r.location
	if loc == "" {
		// A child (a subnet, a connection) has no location of its own: its
		// operation runs in its parent's region.
		if parent := s.lookup(armPathOf(r.id).parent().id()); parent != nil {
			loc = parent.location
		}
	}
	op := &operation{
		id:       newGUID(),
		sub:      r.sub,
		location: loc,
		resource: key(r.id),
		method:   method,
		doneAt:   s.now().Add(s.latency),
		status:   opInProgress,
		onDone:   onDone,
		onFail:   onFail,
	}
	if f := s.takeOperationFault(method, r.id); f != nil {
		op.err = &armError{Status: f.Status, Code: f.Code, Message: f.Message}
	}
	s.addOperation(op)
	r.busy = op.id
	return op
}

// store adds or replaces a resource. A replacement has the same type: the
// type is part of the ID.
func (s *state) store(r *resource) {
	k := key(r.id)
	s.res[k] = r
	if s.byType[r.typeKey] == nil {
		s.byType[r.typeKey] = map[string]*resource{}
	}
	s.byType[r.typeKey][k] = r
}

// drop removes a resource by key.
func (s *state) drop(k string) {
	if r := s.res[k]; r != nil {
		delete(s.byType[r.typeKey], k)
	}
	delete(s.res, k)
}

// lookup returns a stored resource by ID.
func (s *state) lookup(id string) *resource { return s.res[key(id)] }

// list returns the resources of a type under a scope (a subscription,
// resource group or parent resource ID), sorted by ID.
func (s *state) list(typeKey, scope string) []*resource {
	return s.sorted(typeKey, key(scope)+"/")
}

// countUnder is len(list(typeKey, scope)) without the sorting and copying:
// limits count on every create.
func (s *state) countUnder(typeKey, scope string) int {
	prefix, n := key(scope)+"/", 0
	for k := range s.byType[typeKey] {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// sorted returns the resources of a type whose key starts with prefix,
// sorted by key. The maps are keyed by key(id), so the sort compares keys
// as they are: lower-casing both IDs in every comparison cost 12.9 ms per
// Resolve among 1,000 links, under the lock (BenchmarkResolveInFleet).
func (s *state) sorted(typeKey, prefix string) []*resource {
	var found []keyed[*resource]
	for k, r := range s.byType[typeKey] {
		if strings.HasPrefix(k, prefix) {
			found = append(found, keyed[*resource]{k, r})
		}
	}
	return byKey(found)
}

// keyed is a value with its ID's key (key(id)), made once for sorting.
type keyed[T any] struct {
	k string
	v T
}

// byKey returns the values sorted by their keys.
func byKey[T any](in []keyed[T]) []T {
	slices.SortFunc(in, func(a, b keyed[T]) int { return strings.Compare(a.k, b.k) })
	out := make([]T, len(in))
	for i, e := range in {
		out[i] = e.v
	}
	return out
}

// marshal renders a resource to JSON under the lock, so that what leaves the
// lock is a private copy.
func (s *state) marshal(k *kind, r *resource) json.RawMessage {
	if k.render != nil {
		k.render(s, r)
	}
	obj := r.obj
	if k.view != nil {
		obj = k.view(s, r)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("azuresim: marshalling %s: %v", r.id, err))
	}
	return b
}

// page is one page of a list response.
type page struct {
	Value    []json.RawMessage `json:"value"`
	NextLink *string           `json:"nextLink,omitempty"`
}

// paginate is the page of a list of total items, in pages of n,
// continuing from $skiptoken: the items start to end go in its Value (empty
// here), and its nextLink follows when there are more.
func paginate(r *http.Request, base string, total, n int) (p page, start, end int, e *armError) {
	if tok := r.URL.Query().Get("$skiptoken"); tok != "" {
		if _, err := fmt.Sscanf(tok, "%d", &start); err != nil || start < 0 || start > total {
			return page{}, 0, 0, errBadRequest("InvalidSkipToken", "The skip token '%s' is not valid.", tok)
		}
	}
	end = min(start+n, total)
	p.Value = make([]json.RawMessage, 0, end-start)
	if end < total {
		q := r.URL.Query()
		q.Set("$skiptoken", fmt.Sprint(end))
		next := base + r.URL.Path + "?" + q.Encode()
		p.NextLink = &next
	}
	return p, start, end, nil
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func newETag() string { return `W/"` + newGUID() + `"` }

// Private DNS's ETags: a zone's and a record set's are a bare GUID, a
// virtual network link's a quoted one (ASO v2 recording
// Test_Networking_PrivateDnsZone_CRUD.yaml).
func bareETag() string   { return newGUID() }
func quotedETag() string { return `"` + newGUID() + `"` }
