package azuresim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Principal is a service principal the token endpoint knows.
type Principal struct {
	TenantID     string `json:"tenantID"`
	ClientID     string `json:"clientID"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// FederatedToken, if set, is the client assertion accepted in place of a
	// secret (workload identity federation).
	FederatedToken string `json:"federatedToken,omitempty"`
	// Certificate, if set, is the PEM certificate whose key must sign the
	// client assertion (certificate credentials).
	Certificate string `json:"certificate,omitempty"`
	// ManagedIdentity lets the managed identity endpoint issue tokens for
	// this client ID (user-assigned managed identity).
	ManagedIdentity bool `json:"managedIdentity,omitempty"`
	// Scopes limit what the principal may touch, as resource ID prefixes
	// (a subscription or a resource group ID). Empty means everything.
	Scopes []string `json:"scopes,omitempty"`
}

type principal struct {
	Principal
}

// tokenLifetime is how long issued tokens are valid, as AAD's default.
const tokenLifetime = time.Hour

type issuedToken struct {
	principal *principal
	expires   time.Time
}

// authority is an AAD-style token endpoint (client credentials grant).
type authority struct {
	mu         sync.Mutex
	principals map[string]*principal // lower client ID
	tokens     map[string]issuedToken
	now        func() time.Time
	// unserved is the server's list of requests it cannot answer.
	unserved *unservedLog
}

func newAuthority(ps []Principal, now func() time.Time) *authority {
	a := &authority{principals: map[string]*principal{}, tokens: map[string]issuedToken{}, now: now}
	for _, p := range ps {
		a.add(p)
	}
	return a
}

func (a *authority) add(p Principal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.principals[strings.ToLower(p.ClientID)] = &principal{Principal: p}
}

func (a *authority) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens = map[string]issuedToken{}
}

// isAuthorityPath tells token-endpoint paths from ARM paths.
func isAuthorityPath(path string) bool {
	if strings.HasPrefix(strings.ToLower(path), "/subscriptions/") {
		return false
	}
	return path == managedIdentityPath || strings.Contains(path, "/oauth2/") ||
		strings.HasSuffix(path, "/.well-known/openid-configuration") ||
		strings.HasSuffix(path, "/discovery/instance")
}

func (a *authority) serve(w http.ResponseWriter, r *http.Request, base string) {
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	tenant := segs[0]
	switch {
	case r.URL.Path == managedIdentityPath:
		a.managedIdentity(w, r)
	case strings.HasSuffix(r.URL.Path, "/discovery/instance"):
		host := strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")
		writeJSON(w, http.StatusOK, map[string]any{
			"tenant_discovery_endpoint": base + "/" + tenant + "/v2.0/.well-known/openid-configuration",
			"api-version":               "1.1",
			"metadata": []map[string]any{{
				"preferred_network": host, "preferred_cache": host, "aliases": []string{host},
			}},
		})
	case strings.HasSuffix(r.URL.Path, "/.well-known/openid-configuration"):
		writeJSON(w, http.StatusOK, map[string]any{
			"token_endpoint":         base + "/" + tenant + "/oauth2/v2.0/token",
			"authorization_endpoint": base + "/" + tenant + "/oauth2/v2.0/authorize",
			"issuer":                 base + "/" + tenant + "/v2.0",
			"jwks_uri":               base + "/" + tenant + "/discovery/v2.0/keys",
		})
	case strings.HasSuffix(r.URL.Path, "/token") && r.Method == http.MethodPost:
		a.token(w, r, tenant)
	default:
		if a.unserved != nil {
			a.unserved.note(r)
		}
		aadError(w, http.StatusNotFound, "invalid_request", 90002, "The endpoint %s is not served by the emulator.", r.URL.Path)
	}
}

// token implements the client credentials grant, with a secret or a
// federated assertion.
func (a *authority) token(w http.ResponseWriter, r *http.Request, tenant string) {
	if err := r.ParseForm(); err != nil {
		aadError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body could not be parsed: %v", err)
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		aadError(w, http.StatusBadRequest, "unsupported_grant_type", 70003, "The app requested an unsupported grant type '%s'.", gt)
		return
	}
	clientID := r.PostForm.Get("client_id")
	secret := r.PostForm.Get("client_secret")
	assertion := r.PostForm.Get("client_assertion")
	if clientID == "" {
		aadError(w, http.StatusBadRequest, "invalid_request", 900144, "The request body must contain the following parameter: 'client_id'.")
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.principals[strings.ToLower(clientID)]
	switch {
	case p == nil && len(a.principals) == 0:
		// Open mode: any client gets a token.
		p = &principal{Principal: Principal{TenantID: tenant, ClientID: clientID}}
	case p == nil || (p.TenantID != "" && !strings.EqualFold(p.TenantID, tenant)):
		aadError(w, http.StatusBadRequest, "unauthorized_client", 700016,
			"Application with identifier '%s' was not found in the directory '%s'.", clientID, tenant)
		return
	case assertion != "" && p.Certificate != "":
		if err := verifyCertAssertion(assertion, p.Certificate, clientID, a.now()); err != nil {
			aadError(w, http.StatusUnauthorized, "invalid_client", 700027, "Client assertion failed signature validation: %v", err)
			return
		}
	case assertion != "":
		if p.FederatedToken == "" || assertion != p.FederatedToken {
			aadError(w, http.StatusUnauthorized, "invalid_client", 700213, "No matching federated identity record found for presented assertion.")
			return
		}
	case secret == "" || secret != p.ClientSecret:
		aadError(w, http.StatusUnauthorized, "invalid_client", 7000215,
			"Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '%s'.", clientID)
		return
	}
	tok := a.issue(p)
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type":     "Bearer",
		"expires_in":     int(tokenLifetime.Seconds()) - 1,
		"ext_expires_in": int(tokenLifetime.Seconds()) - 1,
		"access_token":   tok,
	})
}

// issue records a new token for p; the caller holds a.mu.
func (a *authority) issue(p *principal) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	tok := "azuresim." + hex.EncodeToString(b[:])
	a.tokens[tok] = issuedToken{principal: p, expires: a.now().Add(tokenLifetime)}
	return tok
}

// managedIdentityPath serves the App Service managed identity protocol
// (IDENTITY_ENDPOINT and IDENTITY_HEADER), the one way the Azure identity
// library can be pointed at a managed identity endpoint other than IMDS.
const managedIdentityPath = "/msi/token"

func (a *authority) managedIdentity(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-IDENTITY-HEADER") == "" {
		aadError(w, http.StatusUnauthorized, "invalid_request", 0, "The X-IDENTITY-HEADER header is required.")
		return
	}
	q := r.URL.Query()
	clientID := q.Get("client_id")
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.principals[strings.ToLower(clientID)]
	if p == nil || !p.ManagedIdentity {
		aadError(w, http.StatusBadRequest, "invalid_request", 0, "No managed identity with client ID '%s' is assigned to this resource.", clientID)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": a.issue(p),
		"expires_on":   fmt.Sprint(a.now().Add(tokenLifetime).Unix()),
		"resource":     q.Get("resource"),
		"token_type":   "Bearer",
		"client_id":    p.ClientID,
	})
}

// authenticate returns the principal of an ARM request's bearer token.
func (a *authority) authenticate(r *http.Request) (*principal, *armError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, newError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is missing.")
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return nil, newError(http.StatusUnauthorized, "AuthenticationFailed", "Authentication failed. The 'Authorization' header is provided in an invalid format.")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	it, ok := a.tokens[tok]
	if !ok {
		return nil, newError(http.StatusUnauthorized, "InvalidAuthenticationToken", "The access token is invalid.")
	}
	if a.now().After(it.expires) {
		return nil, newError(http.StatusUnauthorized, "ExpiredAuthenticationToken", "The access token expiry UTC time is earlier than current UTC time.")
	}
	return it.principal, nil
}

// canAccess reports whether the principal's scopes cover a resource ID.
func (p *principal) canAccess(id string) bool {
	if p == nil || len(p.Scopes) == 0 {
		return true
	}
	for _, s := range p.Scopes {
		if key(id) == key(s) || hasPrefixFold(id, strings.TrimRight(s, "/")+"/") {
			return true
		}
	}
	return false
}

// authorize checks the request's scope against the principal's scopes.
func (p *principal) authorize(method string, ap armPath) *armError {
	scope := "/subscriptions/" + ap.sub
	if ap.rg != "" {
		scope = rgID(ap.sub, ap.rg)
	}
	if ap.provider != "" && !ap.isCollection() {
		scope = ap.id()
	}
	if p.canAccess(scope) {
		return nil
	}
	return errAuthorizationFailed(p, action(ap, method), scope)
}

func errAuthorizationFailed(p *principal, act, scope string) *armError {
	return newError(http.StatusForbidden, "AuthorizationFailed",
		"The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		p.ClientID, p.ClientID, act, scope)
}

// errLinkedAuthorizationFailed is Azure's answer when the caller may write
// a resource but not use another resource it references (a subnet in
// another resource group, a private link service it cannot approve for).
func errLinkedAuthorizationFailed(p *principal, act, scope, linkedAct, linked string) *armError {
	return newError(http.StatusForbidden, "LinkedAuthorizationFailed",
		"The client '%s' with object id '%s' has permission to perform action '%s' on scope '%s'; however, it does not have permission to perform action(s) '%s' on the linked scope(s) '%s' (respectively) or the linked scope(s) are invalid.",
		p.ClientID, p.ClientID, act, scope, linkedAct, linked)
}

// action names the ARM action of a request, as in authorization errors.
func action(ap armPath, method string) string {
	verb := "read"
	switch method {
	case http.MethodPut, http.MethodPatch, http.MethodPost:
		verb = "write"
	case http.MethodDelete:
		verb = "delete"
	}
	typ := "Microsoft.Resources/subscriptions/resourceGroups"
	if ap.provider != "" {
		typ = canonicalType(ap.typeKey())
	}
	return typ + "/" + verb
}

// aadError answers in AAD's error shape; aadsts 0 means no AADSTS code.
func aadError(w http.ResponseWriter, status int, code string, aadsts int, format string, args ...any) {
	body := map[string]any{"error": code, "error_description": fmt.Sprintf(format, args...)}
	if aadsts != 0 {
		body["error_description"] = fmt.Sprintf("AADSTS%d: %s", aadsts, body["error_description"])
		body["error_codes"] = []int{aadsts}
	}
	writeJSON(w, status, body)
}
