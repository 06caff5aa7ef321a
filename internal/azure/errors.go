// Package azure holds what every controller needs from Azure: error
// classification, credentials and clients. Resource-specific code lives in
// sub-packages.
package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// Class is what a controller does about an error (docs/design.md, *Classify errors once*).
type Class string

const (
	// ClassWait is an expected state: requeue after a while, log nothing.
	ClassWait Class = "Wait"
	// ClassTransient will likely pass: retry after RetryAfter, or with backoff.
	ClassTransient Class = "Transient"
	// ClassTerminal needs a person: set a condition, emit an event, and
	// requeue only after a long while (or when the spec changes).
	ClassTerminal Class = "Terminal"
)

// Reasons are constant, for conditions and events.
const (
	ReasonNotFound = "NotFound"
	ReasonInUse    = "InUse"
	// ReasonDependencyNotReady: a resource the request refers to is still
	// being provisioned or updated (ReferencedResourceNotProvisioned).
	ReasonDependencyNotReady    = "DependencyNotReady"
	ReasonThrottled             = "Throttled"
	ReasonOperationInProgress   = "OperationInProgress"
	ReasonAzureUnavailable      = "AzureUnavailable"
	ReasonTimeout               = "Timeout"
	ReasonAuthenticationFailed  = "AuthenticationFailed"
	ReasonCredentialUnavailable = "CredentialUnavailable" //nolint:gosec // G101: a condition reason, not a credential
	ReasonAuthorizationFailed   = "AuthorizationFailed"
	// ReasonDisallowedByPolicy: an Azure Policy assignment denied the
	// write (a required tag, an allowed location, ...); the message names
	// the assignment.
	ReasonDisallowedByPolicy = "RequestDisallowedByPolicy"
	// ReasonFeatureNotRegistered: the subscription has not registered a
	// preview feature the request needs ("az feature register").
	ReasonFeatureNotRegistered = "SubscriptionNotRegisteredForFeature"
	ReasonInvalidRequest       = "InvalidRequest"
	ReasonConflict             = "Conflict"
	ReasonOperationFailed      = "OperationFailed"
	ReasonUnknown              = "Unknown"
)

// Classification is the verdict on one error.
type Classification struct {
	Class  Class
	Reason string
	// Code and StatusCode are ARM's, when the error came from ARM. A failed
	// long-running operation has StatusCode 200 and the operation's code.
	Code       string
	StatusCode int
	// RetryAfter is ARM's Retry-After hint, when it gave one.
	RetryAfter time.Duration
	// Permission is the action the identity lacks, and on which scope, when
	// ARM said so (AuthorizationFailed, LinkedAuthorizationFailed).
	Permission string
	// Message is short and sanitized: fit for a condition or an event.
	Message string
	// HeldBack says the operator did not send the request: its own pacing
	// or budget held it back, before Azure could refuse it. Metrics count
	// these (..._azure_requests_paced_total,
	// ..._private_dns_requests_deferred_total); they are logged only at
	// debug level (--zap-log-level=debug), since in a large fleet every
	// waiting object is held back again and again.
	HeldBack bool
}

// waitCodes are refusals that pass once something else finishes: Azure
// removing connections, endpoints or NICs that still use a resource.
var waitCodes = map[string]bool{
	"PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted": true,
	"CannotDeleteLoadBalancerWithPrivateLinkService":                  true,
	"InUseSubnetCannotBeDeleted":                                      true,
	"InUseNetworkInterfaceCannotBeDeleted":                            true,
	// ARM's 409 for a parent whose children exist: a private DNS zone with
	// virtual network links, also while they are being deleted (ASO v2
	// recording Test_Networking_PrivateDnsZone_CRUD.yaml answers it five
	// times during one link's deletion), and for a while after a child
	// reads 404 (terraform-provider-azurerm waits on it, tracked in
	// azure-rest-api-specs issues 22691 and 26000).
	"CannotDeleteResource": true,
}

// transientCodes are codes ARM uses for conditions that retrying fixes,
// whatever the status.
var transientCodes = map[string]bool{
	"AnotherOperationInProgress": true,
	"RetryableError":             true,
	"InternalServerError":        true,
	"OperationPreempted":         true,
	// An operation a later write superseded: Azure's status body has code
	// Canceled, and the reason, CanceledAndSupersededDueToAnotherOperation,
	// in error.details (the sources are named in azuresim's supersedable).
	// The detail's code is listed too, for an error whose innermost code is
	// the one that reaches the classifier.
	"Canceled": true,
	"CanceledAndSupersededDueToAnotherOperation": true,
	"ServiceUnavailable":                         true,
	"GatewayTimeout":                             true,
	"TooManyRequests":                            true,
	"SubscriptionRequestsThrottled":              true,
	"PreconditionFailed":                         true,
}

// maxMessage bounds condition and event messages.
const maxMessage = 256

// ClassifiedError is an error already classified. Share it, not the SDK's
// error, among goroutines: classifying an SDK error reads its response.
type ClassifiedError struct {
	Classification Classification
}

func (e *ClassifiedError) Error() string { return e.Classification.Message }

// Freeze classifies err once and returns an error that is safe to hand to
// several callers at once; nil stays nil.
func Freeze(err error) error {
	if err == nil {
		return nil
	}
	var ce *ClassifiedError
	if errors.As(err, &ce) {
		return err
	}
	return &ClassifiedError{Classification: Classify(err)}
}

// Classify maps any error from the Azure SDK (or the network under it) to
// what to do about it. It is the only place that knows Azure's codes.
func Classify(err error) Classification {
	if err == nil {
		return Classification{}
	}
	var frozen *ClassifiedError
	if errors.As(err, &frozen) {
		return frozen.Classification
	}
	var re *azcore.ResponseError
	var authErr *azidentity.AuthenticationFailedError
	// azidentity's credential-unavailable error is unexported; it carries
	// azcore's NonRetriable marker (checked after AuthenticationFailedError,
	// which carries it too).
	var unavailable interface {
		error
		NonRetriable()
	}
	var netErr net.Error
	var idErr *IdentityError
	switch {
	case errors.As(err, &idErr):
		return Classification{Class: ClassTerminal, Reason: idErr.Reason, Message: sanitize(idErr.Message)}
	case errors.As(err, &authErr):
		return Classification{Class: ClassTerminal, Reason: ReasonAuthenticationFailed,
			Message: sanitize("authentication with Azure AD failed: " + aadCode(authErr.Error()))}
	case errors.As(err, &unavailable):
		return Classification{Class: ClassTerminal, Reason: ReasonCredentialUnavailable,
			Message: sanitize("no Azure credential available: " + firstLine(unavailable.Error()))}
	case errors.As(err, &re):
		return classifyResponse(re)
	case errors.Is(err, context.DeadlineExceeded):
		return Classification{Class: ClassTransient, Reason: ReasonTimeout, Message: "the request to Azure timed out"}
	case errors.Is(err, context.Canceled):
		return Classification{Class: ClassTransient, Reason: ReasonTimeout, Message: "the request to Azure was canceled"}
	case errors.As(err, &netErr):
		return Classification{Class: ClassTransient, Reason: ReasonAzureUnavailable, Message: sanitize("cannot reach Azure: " + firstLine(err.Error()))}
	default:
		return Classification{Class: ClassTransient, Reason: ReasonUnknown, Message: sanitize(firstLine(err.Error()))}
	}
}

func classifyResponse(re *azcore.ResponseError) Classification {
	c := Classification{Code: re.ErrorCode, StatusCode: re.StatusCode, RetryAfter: retryAfter(re.RawResponse)}
	c.Message = sanitize(responseMessage(re))
	status := re.StatusCode
	switch {
	case waitCodes[c.Code]:
		c.Class, c.Reason = ClassWait, ReasonInUse
	case c.Code == "ReferencedResourceNotProvisioned":
		// Another operation on the load balancer, subnet or NIC referred to
		// is running: it passes when that one ends.
		c.Class, c.Reason = ClassWait, ReasonDependencyNotReady
	case status == http.StatusTooManyRequests || c.Code == "SubscriptionRequestsThrottled" || c.Code == "TooManyRequests":
		c.Class, c.Reason = ClassTransient, ReasonThrottled
	case c.Code == "AnotherOperationInProgress":
		c.Class, c.Reason = ClassTransient, ReasonOperationInProgress
	case status == http.StatusNotFound:
		c.Class, c.Reason = ClassWait, ReasonNotFound
	case status == http.StatusUnauthorized:
		c.Class, c.Reason = ClassTerminal, ReasonAuthenticationFailed
	case c.Code == "RequestDisallowedByPolicy":
		c.Class, c.Reason = ClassTerminal, ReasonDisallowedByPolicy
	case c.Code == "SubscriptionNotRegisteredForFeature":
		c.Class, c.Reason = ClassTerminal, ReasonFeatureNotRegistered
	case status == http.StatusForbidden:
		c.Class, c.Reason = ClassTerminal, ReasonAuthorizationFailed
		if c.Permission = missingPermission(c.Code, re); c.Permission != "" {
			c.Message = sanitize(c.Code + ": the identity lacks " + c.Permission)
		}
	case transientCodes[c.Code], status >= 500, status == http.StatusRequestTimeout, status == http.StatusPreconditionFailed:
		c.Class, c.Reason = ClassTransient, ReasonAzureUnavailable
	case status == http.StatusConflict:
		c.Class, c.Reason = ClassTerminal, ReasonConflict
	case status == http.StatusBadRequest:
		c.Class, c.Reason = ClassTerminal, ReasonInvalidRequest
	case status < 300:
		// A long-running operation that ended Failed with a code not known
		// to be retryable: Azure refused the resource as specified.
		c.Class, c.Reason = ClassTerminal, ReasonOperationFailed
	default:
		c.Class, c.Reason = ClassTransient, ReasonUnknown
	}
	return c
}

// missingPermission reads the missing action and its scope out of ARM's
// authorization errors, whose messages are too long to show whole.
func missingPermission(code string, re *azcore.ResponseError) string {
	if re.RawResponse == nil {
		return ""
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil {
		return ""
	}
	rx := authRE
	if code == "LinkedAuthorizationFailed" {
		rx = linkedRE
	}
	m := rx.FindSubmatch(body)
	if m == nil {
		return ""
	}
	return fmt.Sprintf("%s on %s", m[1], m[2])
}

// IsNotFound reports whether err says the resource does not exist, which a
// delete treats as success.
func IsNotFound(err error) bool {
	var frozen *ClassifiedError
	if errors.As(err, &frozen) {
		return frozen.Classification.StatusCode == http.StatusNotFound
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound
}

// IsPreconditionFailed reports whether err is a 412: an If-Match or
// If-None-Match the resource did not meet.
func IsPreconditionFailed(err error) bool {
	var frozen *ClassifiedError
	if errors.As(err, &frozen) {
		return frozen.Classification.StatusCode == http.StatusPreconditionFailed
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed
}

// IgnoreNotFound returns nil for a 404 (a delete of something already
// gone), err otherwise.
func IgnoreNotFound(err error) error {
	if IsNotFound(err) {
		return nil
	}
	return err
}

func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	d, _ := parseRetryAfter(resp.Header.Get("Retry-After"))
	return d
}

// parseRetryAfter reads a Retry-After value, seconds or an HTTP date, and
// says whether it was one.
func parseRetryAfter(v string) (time.Duration, bool) {
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// responseMessage is "<code>: <ARM's message>", from the error body, without
// the request dump azcore puts in Error().
func responseMessage(re *azcore.ResponseError) string {
	code := re.ErrorCode
	if code == "" {
		code = fmt.Sprintf("HTTP %d", re.StatusCode)
	}
	if re.RawResponse == nil {
		return code
	}
	body, err := runtime.Payload(re.RawResponse)
	if err != nil || len(body) == 0 {
		return code
	}
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return code
	}
	msg := v.Error.Message
	if msg == "" {
		msg = v.Message
	}
	if msg == "" {
		return code
	}
	return code + ": " + msg
}

var (
	linkedRE  = regexp.MustCompile(`does not have permission to perform action\(s\) '([^']+)' on the linked scope\(s\) '([^']+)'`)
	authRE    = regexp.MustCompile(`does not have authorization to perform action '([^']+)' over scope '([^']+)'`)
	bearerRE  = regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/=-]+`)
	secretRE  = regexp.MustCompile(`(?i)(client_secret|client_assertion|sig|access_token|password)=([^&\s"]+)`)
	aadCodeRE = regexp.MustCompile(`AADSTS\d+[^\r\n]*`)
	spaceRE   = regexp.MustCompile(`\s+`)
)

// sanitize removes credentials, folds white space and bounds the length.
func sanitize(s string) string {
	s = bearerRE.ReplaceAllString(s, "Bearer [redacted]")
	s = secretRE.ReplaceAllString(s, "$1=[redacted]")
	s = strings.TrimSpace(spaceRE.ReplaceAllString(s, " "))
	if len(s) > maxMessage {
		cut := maxMessage - len("...")
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// aadCode picks the AADSTS line out of azidentity's long error, which
// otherwise includes the whole token request and response.
func aadCode(s string) string {
	if m := aadCodeRE.FindString(s); m != "" {
		return m
	}
	return firstLine(s)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
