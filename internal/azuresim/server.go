package azuresim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures a Server. The zero value is a fast emulator for tests:
// operations complete on the first poll, throttling is off, every client
// secret is accepted.
type Options struct {
	// Latency is how long a long-running operation takes to complete.
	Latency time.Duration
	// MaxPollInterval caps the retry hint (Retry-After, retry-after-ms) an
	// operation in progress gives its poller. Default 1s; Azure's is ~10s.
	MaxPollInterval time.Duration
	// PageSize is the number of items per page of a list. Default 100.
	PageSize int
	// Throttling configures ARM's request limits. Disabled by default.
	Throttling Throttling
	// TLS serves HTTPS with a self-signed certificate the server generates.
	TLS bool
	// Hosts are further names the certificate is valid for, so that
	// clients that know only Azure's well-known clouds reach the emulator
	// as management.chinacloudapi.cn, login.microsoftonline.us, … (through
	// a proxy: sandbox.StartCloudProxy).
	Hosts []string
	// Principals are the service principals the token endpoint knows. With
	// none, any client ID and secret get a token.
	Principals []Principal
	// NoAuth serves ARM requests without a bearer token (for curl).
	NoAuth bool
	// Now is the clock; default time.Now. Tests may move it.
	Now func() time.Time
	// Limits are Azure's resource-count limits, always enforced; a zero
	// field takes Azure's value (see AzureLimits).
	Limits Limits
}

// Throttling configures ARM's token buckets per subscription and principal.
type Throttling struct {
	Enabled bool
	Reads   Bucket
	Writes  Bucket
	Deletes Bucket
	// Exempt lists client IDs that are never throttled: a benchmark uses it
	// for the CAPZ stand-in, whose own limits are not what it measures.
	// They are outside the resource provider's windows below too: in
	// Azure every principal of a subscription shares those, but the
	// stand-in re-reads Azure far more often than CAPZ does (every second
	// in the chaos run), so its requests would measure the stand-in.
	Exempt []string
	// The resource provider's own limits, per subscription and every
	// principal together, in a sliding window, applied after ARM's
	// buckets (sources at PrivateDNSReadsLimit): Private DNS reads (GET,
	// the operation polls included) 500 per 5 minutes; Microsoft.Network
	// writes and deletes (Private DNS included) 1,000 per 5 minutes; other
	// Microsoft.Network reads 10,000 per 5 minutes. A zero Window is no
	// limit.
	PrivateDNSReads Window
	NetworkWrites   Window
	NetworkReads    Window
}

// Window is a limit of requests in a sliding period.
type Window struct {
	Limit  int
	Period time.Duration
}

// Bucket is one token bucket: Burst requests at once, refilled at PerSecond.
type Bucket struct {
	Burst     int
	PerSecond float64
}

// DefaultThrottling is ARM's documented default per subscription and
// principal: reads 250 burst / 25 per s, writes and deletes 200 / 10 per s;
// and the Network and Private DNS resource providers' limits per
// subscription (see Throttling).
func DefaultThrottling() Throttling {
	return Throttling{
		Enabled: true,
		Reads:   Bucket{Burst: 250, PerSecond: 25},
		Writes:  Bucket{Burst: 200, PerSecond: 10},
		Deletes: Bucket{Burst: 200, PerSecond: 10},

		PrivateDNSReads: Window{Limit: PrivateDNSReadsLimit, Period: PrivateDNSWindow},
		NetworkWrites:   Window{Limit: NetworkWritesLimit, Period: PrivateDNSWindow},
		NetworkReads:    Window{Limit: NetworkReadsLimit, Period: PrivateDNSWindow},
	}
}

// Server is a running emulator.
type Server struct {
	mu       sync.Mutex
	opts     Options
	st       *state
	auth     *authority
	throttle *throttler
	faults   *faultSet
	counters *counters
	dnsRate  dnsTimeline
	unserved unservedLog

	httpSrv *http.Server
	ln      net.Listener
	url     string
	ca      []byte // PEM of the self-signed CA, with TLS
	certs   *x509.CertPool
}

// New returns a Server that is not listening yet; see Start.
func New(opts Options) *Server {
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxPollInterval <= 0 {
		opts.MaxPollInterval = time.Second
	}
	s := &Server{opts: opts}
	s.st = newState(opts.Now)
	s.st.latency = opts.Latency
	s.st.limits = opts.Limits.withDefaults()
	s.auth = newAuthority(opts.Principals, opts.Now)
	s.auth.unserved = &s.unserved
	s.throttle = newThrottler(opts.Throttling, opts.Now)
	s.counters = newCounters()
	s.faults = &faultSet{hit: s.counters.fault}
	s.st.faults = s.faults
	return s
}

// Start listens on addr (for example "127.0.0.1:0") and serves in the
// background until Close.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	scheme := "http"
	if s.opts.TLS {
		addr, ok := ln.Addr().(*net.TCPAddr)
		if !ok {
			_ = ln.Close()
			return fmt.Errorf("azuresim: %s is not a TCP address", ln.Addr())
		}
		cert, caPEM, pool, err := selfSigned(addr.IP, s.opts.Hosts...)
		if err != nil {
			_ = ln.Close()
			return err
		}
		s.ca, s.certs = caPEM, pool
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}
	s.ln = ln
	s.url = fmt.Sprintf("%s://%s", scheme, ln.Addr().String())
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.httpSrv.Serve(ln) }()
	return nil
}

// URL is the base URL of the emulator: ARM, the token endpoint and the admin
// API all live under it.
func (s *Server) URL() string { return s.url }

// CACertPEM is the PEM of the CA that signed the server's certificate, with TLS.
func (s *Server) CACertPEM() []byte { return s.ca }

// CertPool trusts the server's certificate, with TLS.
func (s *Server) CertPool() *x509.CertPool { return s.certs }

// WriteCAFile writes the CA certificate to path, for clients in other
// processes.
func (s *Server) WriteCAFile(path string) error {
	if s.ca == nil {
		return errors.New("azuresim: TLS is off; there is no CA certificate")
	}
	return os.WriteFile(path, s.ca, 0o644) //nolint:gosec // G306: a CA certificate is public; clients of other users read it
}

// Close stops the server.
func (s *Server) Close() error {
	if s.httpSrv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.httpSrv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// A connection still open after the grace period (an HTTP/2
		// connection of a stopped client finishing its GOAWAY on a loaded
		// machine, as a CI run saw): the emulator is going away and nothing
		// it would still answer matters, so close it instead of failing
		// the caller's teardown.
		return s.httpSrv.Close()
	}
	return err
}

// ServeHTTP routes a request: the admin API, the token endpoint, or ARM.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/_sim/"):
		s.serveAdmin(w, r)
	case isAuthorityPath(r.URL.Path):
		client := r.FormValue("client_id")
		s.counters.host(r.Host)
		s.counters.token(client)
		if strings.HasSuffix(r.URL.Path, "/token") {
			s.counters.scope(r.FormValue("scope"))
		}
		if f := s.faults.matchAuthority(r.Method, r.URL.Path, client); f != nil && f.apply(w, r) {
			return // the token endpoint is down, slow or unreachable
		}
		s.auth.serve(w, r, s.baseURL(r))
	default:
		s.counters.host(r.Host)
		s.serveARMRequest(w, r)
	}
}

func (s *Server) baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// count counts an answered ARM request, and a Private DNS one on its
// subscription's timeline.
func (s *Server) count(method string, p armPath, ok bool, status int, principalID string) {
	s.counters.request(method, counterType(p, ok), status, principalID)
	if ok && method == http.MethodGet && status == http.StatusOK && p.provider != "" && !p.isCollection() && !isOperationPath(p) && !isPrivateDNSOperationPath(p) {
		s.counters.read(p.id())
	}
	// Private DNS counts its operation polls against the same limits (the
	// recordings show x-ms-ratelimit-remaining-subscription-resource-requests
	// falling with each poll).
	if ok && strings.EqualFold(p.provider, "Microsoft.Network") && len(p.types) > 0 &&
		(strings.EqualFold(p.types[0], "privateDnsZones") || isPrivateDNSOperationPath(p)) {
		s.dnsRate.add(p.sub, method, time.Now())
	}
}

// countAnswer counts an answered ARM request, and its error code if it is
// an error.
func (s *Server) countAnswer(method string, p armPath, ok bool, rec *statusRecorder, principalID string) {
	s.count(method, p, ok, rec.status, principalID)
	if code := rec.Header().Get("x-ms-error-code"); code != "" && rec.status >= http.StatusBadRequest {
		s.counters.errorAnswer(ErrorAnswer{Principal: principalID, Method: method, ResourceType: counterType(p, ok), Status: rec.status, Code: code})
	}
}

// serveARMRequest is the ARM pipeline: authentication, faults,
// authorization, throttling, then the resource provider; every answer is
// counted.
func (s *Server) serveARMRequest(w http.ResponseWriter, r *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	p, ok := parseARMPath(r.URL.Path)
	principalID := ""
	dropped := false
	defer func() {
		if !dropped {
			s.countAnswer(r.Method, p, ok, rec, principalID)
		}
	}()

	if !ok {
		s.unserved.note(r)
		writeError(rec, newError(http.StatusNotFound, "InvalidResourceType", "The resource path '%s' is not served by the emulator.", r.URL.Path))
		return
	}
	var pr *principal
	if !s.opts.NoAuth {
		var aerr *armError
		pr, aerr = s.auth.authenticate(r)
		if aerr != nil {
			rec.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer authorization_uri="%s/common/oauth2/authorize", error="invalid_token", error_description="%s"`, s.baseURL(r), aerr.Message))
			writeError(rec, aerr)
			return
		}
		principalID = pr.ClientID
	}
	// Faults come after authentication, so that they can target one
	// principal and are counted with it.
	if f := s.faults.match(r.Method, r.URL.Path, principalID); f != nil {
		if f.Drop {
			// Count it before the connection closes: the client retries at
			// once, and whoever reads the counters next must see it.
			dropped = true
			s.counters.request(r.Method, counterType(p, ok), 0, principalID)
		}
		if f.apply(rec, r) {
			return
		}
	}
	if pr != nil {
		if aerr := pr.authorize(r.Method, p); aerr != nil {
			writeError(rec, aerr)
			return
		}
	}
	if retry, remaining, class := s.throttle.take(p.sub, principalID, r.Method); retry > 0 {
		rec.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(retry.Seconds()))))
		writeError(rec, newError(http.StatusTooManyRequests, "SubscriptionRequestsThrottled",
			"Number of '%s' requests for subscription '%s' actor '%s' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
			class, p.sub, principalID, int(math.Ceil(retry.Seconds()))))
		return
	} else if remaining >= 0 {
		rec.Header().Set("x-ms-ratelimit-remaining-subscription-"+class, fmt.Sprint(remaining))
	}
	if aerr := s.throttle.provider(rec, p, principalID, r.Method); aerr != nil {
		writeError(rec, aerr)
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		writeError(rec, errBadRequest("MissingApiVersionParameter", "The api-version query parameter (?api-version=) is required for all requests."))
		return
	}
	rec.Header().Set("x-ms-request-id", newGUID())
	s.serveARM(rec, r, p, pr)
}

// serveARM dispatches a parsed ARM request.
func (s *Server) serveARM(w http.ResponseWriter, r *http.Request, p armPath, pr *principal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.advance()
	s.st.principal = ""
	if pr != nil {
		s.st.principal = pr.ClientID
	}

	switch {
	case p.tags:
		s.serveTags(w, r, p)
	case p.provider == "" && p.rg != "":
		s.serveResourceGroup(w, r, p)
	case p.provider == "" && p.rg == "" && len(p.types) == 1:
		s.serveGroupOperation(w, r, p)
	case isOperationPath(p):
		s.serveOperation(w, r, p)
	case isPrivateDNSOperationPath(p):
		s.servePrivateDNSOperation(w, r, p)
	case isSKUList(p):
		serveSKUs(w, r)
	case p.rg == "" && !p.isCollection():
		s.unserved.note(r)
		writeError(w, newError(http.StatusNotFound, "InvalidResourceType", "The resource type '%s' is not served by the emulator.", p.typeKey()))
	default:
		k, ok := kinds[p.typeKey()]
		if !ok {
			s.unserved.note(r)
			writeError(w, newError(http.StatusNotFound, "InvalidResourceType", "The resource type '%s' could not be found in the namespace '%s'.", strings.Join(p.types, "/"), p.provider))
			return
		}
		if p.isCollection() {
			s.serveList(w, r, p, k)
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.serveGet(w, r, p, k)
		case http.MethodPut:
			s.servePut(w, r, p, k, pr)
		case http.MethodDelete:
			s.serveDelete(w, r, p, k)
		default:
			writeError(w, newError(http.StatusMethodNotAllowed, "MethodNotAllowed", "The method '%s' is not allowed on '%s'.", r.Method, p.typeKey()))
		}
	}
}

// existsCheck returns the error Azure gives for a missing resource or parent.
func (s *state) existsCheck(p armPath) *armError {
	if s.rgs[key(rgID(p.sub, p.rg))] == nil {
		return errResourceGroupNotFound(p.rg)
	}
	if len(p.names) > 1 && s.lookup(p.parent().id()) == nil {
		if len(p.types) > 1 {
			return errParentNotFound(p)
		}
	}
	return nil
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, p armPath, k *kind) {
	if e := s.st.existsCheck(p); e != nil {
		writeError(w, e)
		return
	}
	res := s.st.lookup(p.id())
	if res == nil {
		writeError(w, notFoundFor(p))
		return
	}
	ctx := renderContext{expand: r.URL.Query().Get("$expand")}
	s.st.renderCtx = ctx
	body := s.st.marshal(k, res)
	s.st.renderCtx = renderContext{}
	// A GET carries the resource's ETag as a header too; PUT responses do
	// not (the recordings above).
	if res.etag != "" {
		w.Header().Set("Etag", res.etag)
	}
	writeJSON(w, http.StatusOK, body)
}

func notFoundFor(p armPath) *armError {
	if len(p.types) > 1 {
		return errNotFoundChild(p)
	}
	return errResourceNotFound(p)
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, p armPath, k *kind) {
	var scope string
	switch {
	case len(p.names) > 0: // children of a parent resource
		parent := p
		parent.types = p.types[:len(p.names)]
		if s.st.rgs[key(rgID(p.sub, p.rg))] == nil {
			writeError(w, errResourceGroupNotFound(p.rg))
			return
		}
		if s.st.lookup(parent.id()) == nil {
			writeError(w, notFoundFor(parent))
			return
		}
		scope = parent.id()
	case p.rg != "":
		if s.st.rgs[key(rgID(p.sub, p.rg))] == nil {
			writeError(w, errResourceGroupNotFound(p.rg))
			return
		}
		scope = rgID(p.sub, p.rg)
	default:
		scope = "/subscriptions/" + p.sub
	}
	// Only the page's resources are rendered: rendering all of them for
	// every page made a list of n resources in pages of 100 cost n²/100
	// renders (at N = 3,000 in test/scale, 142 s of the harness's CPU,
	// most of it armnetwork's MarshalJSON, on the cores the operator
	// runs on). Rendering changes nothing beyond the resource's own JSON.
	all := s.st.list(p.typeKey(), scope)
	pg, start, end, e := paginate(r, s.baseURL(r), len(all), s.opts.PageSize)
	if e != nil {
		writeError(w, e)
		return
	}
	for _, res := range all[start:end] {
		pg.Value = append(pg.Value, s.st.marshal(k, res))
	}
	writeJSON(w, http.StatusOK, pg)
}

func (s *Server) servePut(w http.ResponseWriter, r *http.Request, p armPath, k *kind, pr *principal) {
	if e := s.st.existsCheck(p); e != nil {
		writeError(w, e)
		return
	}
	id := p.id()
	existing := s.st.lookup(id)
	if e := checkPreconditions(r, existing); e != nil {
		writeError(w, e)
		return
	}
	// A PUT while another PUT of the resource runs supersedes it; any other
	// overlap is refused (supersedable).
	superseded := ""
	if existing != nil && existing.busy != "" {
		if !s.st.supersedable(k, existing) {
			writeError(w, errAnotherOperation(s.operationURI(r, existing.busy)))
			return
		}
		superseded = existing.busy
	}
	if e := s.st.parentDeleting(p, k); e != nil {
		writeError(w, e)
		return
	}
	body, loc, e := decodePut(r, k)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := s.st.checkPolicies(p, k, body); e != nil {
		writeError(w, e)
		return
	}
	res := existing
	if res == nil {
		res = &resource{id: id, typeKey: p.typeKey(), sub: p.sub, rg: p.rg, name: p.names[len(p.names)-1], guid: newGUID()}
	}
	req := &putRequest{path: p, id: id, body: body, existing: existing, res: res, principal: pr}
	if k.location && loc == "" {
		writeError(w, errBadRequest("LocationRequired", "The location property is required for this definition."))
		return
	}
	if existing != nil && k.location && !strings.EqualFold(existing.location, loc) {
		writeError(w, errBadRequest("InvalidResourceLocation",
			"The resource '%s' already exists in location '%s' in resource group '%s'. A resource with the same name cannot be created in location '%s'.",
			p.names[len(p.names)-1], existing.location, p.rg, loc))
		return
	}
	if e := k.put(s.st, req); e != nil {
		writeError(w, e)
		return
	}
	if loc != "" {
		res.location = loc
	}
	res.etag = newETag()
	if k.newETag != nil {
		res.etag = k.newETag()
	}
	s.st.store(res)
	status := http.StatusCreated
	if existing != nil {
		status = http.StatusOK
	}
	s.answerPut(w, r, k, req, status)
	if superseded != "" {
		// After answerPut, res.busy names the superseding operation.
		s.st.cancelSuperseded(superseded, res)
	}
}

// answerPut completes a stored PUT: at once, or by starting its operation,
// and answers as the resource's provider does.
func (s *Server) answerPut(w http.ResponseWriter, r *http.Request, k *kind, req *putRequest, status int) {
	res := req.res
	if !k.lro {
		res.state = stateSucceeded
		if req.onDone != nil {
			req.onDone()
		}
		if k.privateDNS {
			// A record set's PUT carries its ETag as a header.
			w.Header().Set("Etag", res.etag)
		}
		writeJSON(w, status, s.st.marshal(k, res))
		return
	}
	res.state = stateUpdating
	op := s.st.startOperation(res, http.MethodPut,
		func() {
			res.state = stateSucceeded
			if !k.privateDNS {
				// Networking gives the resource a new etag when the
				// operation ends, as it does for the write itself: ASO's
				// recording of a private endpoint (conformance testdata
				// private-endpoint-storage.json) answers the PUT with
				// one etag (Updating) and the GET after it with another
				// (Succeeded). Private DNS is not known to; left as is.
				res.etag = newETag()
			}
			if req.onDone != nil {
				req.onDone()
			}
		},
		func() { res.state = stateFailed })
	if req.opErr != nil && op.err == nil {
		op.err = req.opErr
	}
	if k.privateDNS {
		// Private DNS answers a zone's or a link's PUT with 202 and {}
		// (the recording above): the resource is only in the next GET.
		s.writePrivateDNSOperationHeaders(w, r, op, req.path.rg)
		writeJSON(w, http.StatusAccepted, json.RawMessage("{}"))
		return
	}
	s.writeOperationHeaders(w, r, op)
	writeJSON(w, status, s.st.marshal(k, res))
}

// decodePut reads a PUT body into the kind's SDK model and returns it with
// its location.
func decodePut(r *http.Request, k *kind) (any, string, *armError) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return nil, "", errBadRequest("InvalidRequestContent", "The request content could not be read: %v", err)
	}
	body := k.newObj()
	if err := json.Unmarshal(raw, body); err != nil {
		return nil, "", errBadRequest("InvalidRequestFormat", "Cannot parse the request: %v", err)
	}
	var meta struct {
		Location string `json:"location"`
	}
	_ = json.Unmarshal(raw, &meta)
	return body, meta.Location, nil
}

func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request, p armPath, k *kind) {
	if e := s.st.existsCheck(p); e != nil {
		if e.Code == "ResourceGroupNotFound" {
			writeError(w, e)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	res := s.st.lookup(p.id())
	if res == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if e := checkPreconditions(r, res); e != nil {
		writeError(w, e)
		return
	}
	if res.busy != "" {
		writeError(w, errAnotherOperation(s.operationURI(r, res.busy)))
		return
	}
	if e := s.st.parentDeleting(p, k); e != nil {
		writeError(w, e)
		return
	}
	if k.checkDelete != nil {
		if e := k.checkDelete(s.st, res); e != nil {
			writeError(w, e)
			return
		}
	}
	remove := func() {
		if k.onDelete != nil {
			k.onDelete(s.st, res)
		}
		s.st.drop(key(res.id))
	}
	if !k.lro && !k.lroDelete {
		remove()
		w.WriteHeader(http.StatusOK)
		return
	}
	prev := res.state
	res.state = stateDeleting
	op := s.st.startOperation(res, http.MethodDelete, remove, func() { res.state = prev })
	if k.privateDNS {
		s.writePrivateDNSOperationHeaders(w, r, op, p.rg)
	} else {
		s.writeOperationHeaders(w, r, op)
	}
	w.WriteHeader(http.StatusAccepted)
}

// operationURI is the status URL of the operation with that ID, which
// AnotherOperationInProgress names as Azure's does.
func (s *Server) operationURI(r *http.Request, id string) string {
	op := s.st.ops[id]
	if op == nil {
		return id
	}
	v := r.URL.Query().Get("api-version")
	if op.dns {
		return fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/privateDnsOperationStatuses/%s?api-version=%s", s.baseURL(r), op.sub, op.rg, op.id, v)
	}
	loc := op.location
	if loc == "" {
		loc = "global"
	}
	return fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Network/locations/%s/operations/%s?api-version=%s", s.baseURL(r), op.sub, loc, op.id, v)
}

// supersedable reports whether a PUT may supersede the operation running
// on existing, as Microsoft.Network does: a second PUT of a resource while
// its first PUT runs is accepted and the first operation ends Canceled
// with CanceledAndSupersededDueToAnotherOperation. Sources, all public
// code or notes, no recording: a deployment log quoting the status body
// Terraform's azurerm provider received for a security rule
// (PutSecurityRuleOperation), a Go program quoting the same body for a load
// balancer (PutLoadBalancerOperation), a terragrunt retry pattern for
// PutSubnetOperation, and cloud-provider-azure, which retries on the code.
// The body is rendered as that log shows it. A PUT while a DELETE
// runs stays 409 AnotherOperationInProgress; Private DNS is not known to
// supersede and stays 409 too.
func (s *state) supersedable(k *kind, existing *resource) bool {
	if k.privateDNS {
		return false
	}
	op := s.ops[existing.busy]
	return op != nil && op.method == http.MethodPut && op.status == opInProgress
}

// cancelSuperseded ends the operation a later PUT superseded, with Azure's
// status body: Canceled, "Operation was canceled.", and the detail
// CanceledAndSupersededDueToAnotherOperation naming both operations. What
// the canceled PUT would have done on completion is not done; the later
// PUT's operation (now r.busy) decides the resource's state.
func (s *state) cancelSuperseded(opID string, r *resource) {
	old := s.ops[opID]
	if old == nil || old.status != opInProgress {
		return
	}
	name := operationName(http.MethodPut, r.typeKey)
	old.status = opCanceled
	old.doneAt = s.now()
	old.err = &armError{Status: http.StatusConflict, Code: "Canceled", Message: "Operation was canceled.",
		Details: []errorDetail{{Code: "CanceledAndSupersededDueToAnotherOperation",
			Message: fmt.Sprintf("Operation %s (%s) was canceled and superseded by operation %s (%s).", name, old.id, name, r.busy)}}}
}

// operationName is Microsoft.Network's name of an operation on a type, as
// its messages spell it: PutLoadBalancerOperation, DeleteSubnetOperation.
func operationName(method, typeKey string) string {
	typ := canonicalType(typeKey)
	typ = strings.TrimSuffix(typ[strings.LastIndex(typ, "/")+1:], "s")
	if typ != "" {
		typ = strings.ToUpper(typ[:1]) + typ[1:]
	}
	verb := "Put"
	if method == http.MethodDelete {
		verb = "Delete"
	}
	return verb + typ + "Operation"
}

// parentDeleting refuses a write to a child of a Microsoft.Network resource
// that is being deleted, as Azure does: 400 ReferencedResourceNotProvisioned
// (ASO v2 recording Test_Networking_PrivateEndpoint_CRUD.yaml, a private DNS
// zone group's DELETE while its endpoint was being deleted). Private DNS is
// not known to answer so and is left out.
func (s *state) parentDeleting(p armPath, k *kind) *armError {
	if len(p.names) < 2 || k.privateDNS {
		return nil
	}
	parent := s.lookup(p.parent().id())
	if parent == nil || parent.state != stateDeleting {
		return nil
	}
	return errBadRequest("ReferencedResourceNotProvisioned",
		"Cannot proceed with operation because resource %s used by resource %s is not in Succeeded state. Resource is in Deleting state and the last operation that updated/is updating the resource is %s.",
		parent.id, p.id(), operationName(http.MethodDelete, parent.typeKey))
}

func checkPreconditions(r *http.Request, existing *resource) *armError {
	if m := r.Header.Get("If-Match"); m != "" && m != "*" && (existing == nil || existing.etag != m) {
		return newError(http.StatusPreconditionFailed, "PreconditionFailed", "The condition specified using HTTP conditional header(s) is not met.")
	}
	if m := r.Header.Get("If-None-Match"); m == "*" && existing != nil {
		return newError(http.StatusPreconditionFailed, "PreconditionFailed", "The resource already exists and If-None-Match: * was given.")
	}
	return nil
}

// writeOperationHeaders points the client at the operation's status.
func (s *Server) writeOperationHeaders(w http.ResponseWriter, r *http.Request, op *operation) {
	loc := op.location
	if loc == "" {
		loc = "global"
	}
	base := fmt.Sprintf("%s/subscriptions/%s/providers/Microsoft.Network/locations/%s", s.baseURL(r), op.sub, loc)
	v := r.URL.Query().Get("api-version")
	w.Header().Set("Azure-AsyncOperation", fmt.Sprintf("%s/operations/%s?api-version=%s", base, op.id, v))
	// Microsoft.Network answers a PUT with Azure-AsyncOperation only, a
	// DELETE with both (ASO v2 recording
	// Test_Networking_PrivateLinkService_CRUD.yaml).
	if op.method == http.MethodDelete {
		w.Header().Set("Location", fmt.Sprintf("%s/operationResults/%s?api-version=%s", base, op.id, v))
	}
	s.setRetryAfter(w, op.doneAt)
}

// setRetryAfter tells the poller when to come back: when the operation is
// due, at most MaxPollInterval from now. retry-after-ms (which azcore
// prefers) keeps tests fast; Retry-After in whole seconds is ARM's.
func (s *Server) setRetryAfter(w http.ResponseWriter, doneAt time.Time) {
	d := min(max(doneAt.Sub(s.st.now()), 10*time.Millisecond), s.opts.MaxPollInterval)
	w.Header().Set("retry-after-ms", fmt.Sprint(d.Milliseconds()))
	w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(d.Seconds()))))
}

// writePrivateDNSOperationHeaders points the client at a Private DNS
// operation: privateDnsOperationStatuses and privateDnsOperationResults
// under the resource group, both for PUT and DELETE (ASO v2 recordings
// Test_Networking_PrivateDnsZone_CRUD.yaml and
// Test_Networking_PrivateEndpoint_CRUD.yaml). Azure's Retry-After there is
// 30; the emulator's follows its latency, as for other operations.
func (s *Server) writePrivateDNSOperationHeaders(w http.ResponseWriter, r *http.Request, op *operation, rg string) {
	op.rg, op.dns = rg, true
	base := fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network", s.baseURL(r), op.sub, rg)
	v := r.URL.Query().Get("api-version")
	w.Header().Set("Azure-AsyncOperation", fmt.Sprintf("%s/privateDnsOperationStatuses/%s?api-version=%s", base, op.id, v))
	w.Header().Set("Location", fmt.Sprintf("%s/privateDnsOperationResults/%s?api-version=%s", base, op.id, v))
	s.setRetryAfter(w, op.doneAt)
}

// isPrivateDNSOperationPath says p is a Private DNS operation's status or
// result.
func isPrivateDNSOperationPath(p armPath) bool {
	return p.rg != "" && strings.EqualFold(p.provider, "Microsoft.Network") && len(p.types) == 1 && len(p.names) == 1 &&
		(strings.EqualFold(p.types[0], "privateDnsOperationStatuses") || strings.EqualFold(p.types[0], "privateDnsOperationResults"))
}

// servePrivateDNSOperation answers a Private DNS operation's URLs: while it
// runs, 202 with {"status":"InProgress"} and the same three headers; then
// 200 with its status (the recordings above).
func (s *Server) servePrivateDNSOperation(w http.ResponseWriter, r *http.Request, p armPath) {
	op := s.st.ops[p.names[0]]
	if op == nil || !op.dns || !strings.EqualFold(op.sub, p.sub) || !strings.EqualFold(op.rg, p.rg) {
		writeError(w, newError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", p.names[0]))
		return
	}
	if op.status == opInProgress {
		s.writePrivateDNSOperationHeaders(w, r, op, op.rg)
		writeJSON(w, http.StatusAccepted, operationStatus{Status: op.status})
		return
	}
	if op.err != nil {
		writeJSON(w, http.StatusOK, operationStatus{Status: op.status, Error: &errorDetail{Code: op.err.Code, Message: op.err.Message}})
		return
	}
	writeJSON(w, http.StatusOK, operationStatus{Status: op.status})
}

func isOperationPath(p armPath) bool {
	return p.rg == "" && len(p.types) == 2 && len(p.names) == 2 &&
		strings.EqualFold(p.types[0], "locations") &&
		(strings.EqualFold(p.types[1], "operations") || strings.EqualFold(p.types[1], "operationResults"))
}

// operationStatus is Microsoft.Network's answer on an Azure-AsyncOperation
// URL: the status, and the error once Failed (no id or name).
type operationStatus struct {
	Status    string       `json:"status"`
	StartTime string       `json:"startTime,omitempty"`
	Error     *errorDetail `json:"error,omitempty"`
}

func (s *Server) serveOperation(w http.ResponseWriter, _ *http.Request, p armPath) {
	op := s.st.ops[p.names[1]]
	if op == nil || !strings.EqualFold(op.sub, p.sub) {
		writeError(w, newError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", p.names[1]))
		return
	}
	results := strings.EqualFold(p.types[1], "operationResults")
	if op.status == opInProgress {
		s.setRetryAfter(w, op.doneAt)
		if results {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		writeJSON(w, http.StatusOK, operationStatus{Status: op.status})
		return
	}
	if op.err != nil {
		if results {
			writeError(w, op.err)
			return
		}
		d := op.err.detail()
		writeJSON(w, http.StatusOK, operationStatus{Status: op.status, Error: &d})
		return
	}
	if results {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, operationStatus{Status: op.status})
}

// statusRecorder remembers the status code for the counters.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController and fault injection reach the
// connection underneath.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// counterType names what a request was about, for the counters.
func counterType(p armPath, ok bool) string {
	switch {
	case !ok:
		return "unknown"
	case p.provider == "" && p.rg != "":
		return "Microsoft.Resources/resourceGroups"
	case isOperationPath(p):
		return "Microsoft.Network/locations/operations"
	case isPrivateDNSOperationPath(p):
		return "Microsoft.Network/privateDnsOperationStatuses"
	case p.provider == "":
		return "subscription"
	default:
		return canonicalType(p.typeKey())
	}
}

// unservedLog lists the requests the emulator answered InvalidResourceType
// (or, at its token endpoint, 404) because it does not model what they ask
// for, so that a test world whose
// clients are not ours (the real CAPZ and ASO) can name each one.
type unservedLog struct {
	mu   sync.Mutex
	seen map[string]bool
	list []string
}

func (l *unservedLog) note(r *http.Request) {
	what := r.Method + " " + r.URL.Path + "?api-version=" + r.URL.Query().Get("api-version")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if !l.seen[what] {
		l.seen[what] = true
		l.list = append(l.list, what)
	}
}

// Unserved returns each distinct request ("METHOD path?api-version=…") the
// emulator answered InvalidResourceType because it does not serve that
// path or resource type, or answered 404 at its token endpoint (an
// authority path it does not serve), in the order first seen.
func (s *Server) Unserved() []string {
	s.unserved.mu.Lock()
	defer s.unserved.mu.Unlock()
	return slices.Clone(s.unserved.list)
}
