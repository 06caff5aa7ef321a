package azure_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// armError builds the error azcore returns for an ARM response.
func armError(status int, code, msg string, header ...string) error {
	req, _ := http.NewRequest(http.MethodGet, "https://management.azure.com/subscriptions/s/resourceGroups/rg?api-version=2024-06-01", nil)
	resp := &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(strings.NewReader(fmt.Sprintf(`{"error":{"code":%q,"message":%q}}`, code, msg))),
		Request:    req,
	}
	for i := 0; i+1 < len(header); i += 2 {
		resp.Header.Set(header[i], header[i+1])
	}
	return runtime.NewResponseError(resp)
}

func TestClassify(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		reason string
		err    error
		want   azure.Classification
	}{
		{reason: "no error", err: nil, want: azure.Classification{}},
		{
			reason: "not found: wait (a delete treats it as success)",
			err:    armError(404, "ResourceNotFound", "The Resource 'x' was not found."),
			want:   azure.Classification{Class: azure.ClassWait, Reason: azure.ReasonNotFound, Code: "ResourceNotFound", StatusCode: 404, Message: "ResourceNotFound: The Resource 'x' was not found."},
		},
		{
			reason: "throttled: transient after Retry-After",
			err:    armError(429, "SubscriptionRequestsThrottled", "Number of 'read' requests exceeded.", "Retry-After", "30"),
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonThrottled, Code: "SubscriptionRequestsThrottled", StatusCode: 429, RetryAfter: 30 * time.Second, Message: "SubscriptionRequestsThrottled: Number of 'read' requests exceeded."},
		},
		{
			reason: "another operation in progress: transient",
			err:    armError(409, "AnotherOperationInProgress", "busy"),
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonOperationInProgress, Code: "AnotherOperationInProgress", StatusCode: 409, Message: "AnotherOperationInProgress: busy"},
		},
		{
			reason: "any other conflict needs a person",
			err:    armError(409, "Conflict", "Private zone 'z' is already linked to the virtual network 'v'."),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonConflict, Code: "Conflict", StatusCode: 409, Message: "Conflict: Private zone 'z' is already linked to the virtual network 'v'."},
		},
		{
			reason: "server errors are transient, with Retry-After when given",
			err:    armError(503, "ServiceUnavailable", "try later", "Retry-After", "5"),
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonAzureUnavailable, Code: "ServiceUnavailable", StatusCode: 503, RetryAfter: 5 * time.Second, Message: "ServiceUnavailable: try later"},
		},
		{
			reason: "authorization failed needs a person",
			err:    armError(403, "AuthorizationFailed", "The client 'c' does not have authorization."),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Code: "AuthorizationFailed", StatusCode: 403, Message: "AuthorizationFailed: The client 'c' does not have authorization."},
		},
		{
			reason: "a policy denial names the policy, not a missing permission",
			err:    armError(403, "RequestDisallowedByPolicy", "Resource 'pe' was disallowed by policy."),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonDisallowedByPolicy, Code: "RequestDisallowedByPolicy", StatusCode: 403, Message: "RequestDisallowedByPolicy: Resource 'pe' was disallowed by policy."},
		},
		{
			reason: "a preview feature the subscription has not registered needs a person (409, as Microsoft.Storage documents the code)",
			err:    armError(409, "SubscriptionNotRegisteredForFeature", "Subscription s is not registered for feature Microsoft.Network/AllowPrivateLinkserviceUDR required to carry out the requested operation."),
			want: azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonFeatureNotRegistered, Code: "SubscriptionNotRegisteredForFeature", StatusCode: 409,
				Message: "SubscriptionNotRegisteredForFeature: Subscription s is not registered for feature Microsoft.Network/AllowPrivateLinkserviceUDR required to carry out the requested operation."},
		},
		{
			reason: "linked authorization failed is an authorization failure too",
			err:    armError(403, "LinkedAuthorizationFailed", "no join/action on the subnet"),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Code: "LinkedAuthorizationFailed", StatusCode: 403, Message: "LinkedAuthorizationFailed: no join/action on the subnet"},
		},
		{
			reason: "authorization failed names the missing action and scope",
			err:    armError(403, "AuthorizationFailed", "The client 'c' with object id 'o' does not have authorization to perform action 'Microsoft.Network/privateLinkServices/write' over scope '/subscriptions/s/resourceGroups/rg' or the scope is invalid."),
			want: azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Code: "AuthorizationFailed", StatusCode: 403,
				Permission: "Microsoft.Network/privateLinkServices/write on /subscriptions/s/resourceGroups/rg",
				Message:    "AuthorizationFailed: the identity lacks Microsoft.Network/privateLinkServices/write on /subscriptions/s/resourceGroups/rg"},
		},
		{
			reason: "linked authorization failed names the linked action and scope (a NAT subnet in another resource group)",
			err:    armError(403, "LinkedAuthorizationFailed", "The client 'c' with object id 'o' has permission to perform action 'Microsoft.Network/privateLinkServices/write' on scope 'p'; however, it does not have permission to perform action(s) 'Microsoft.Network/virtualNetworks/subnets/join/action' on the linked scope(s) '/subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nat' (respectively) or the linked scope(s) are invalid."),
			want: azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Code: "LinkedAuthorizationFailed", StatusCode: 403,
				Permission: "Microsoft.Network/virtualNetworks/subnets/join/action on /subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nat",
				Message:    "LinkedAuthorizationFailed: the identity lacks Microsoft.Network/virtualNetworks/subnets/join/action on /subscriptions/s/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v/subnets/nat"},
		},
		{
			reason: "a validation error needs a spec change",
			err:    armError(400, "InvalidResourceReference", "Resource s referenced by resource p was not found."),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonInvalidRequest, Code: "InvalidResourceReference", StatusCode: 400, Message: "InvalidResourceReference: Resource s referenced by resource p was not found."},
		},
		{
			reason: "a private DNS zone whose links are still there or being deleted: wait, not a conflict for a person",
			err:    armError(409, "CannotDeleteResource", "Can not delete resource before nested resources are deleted."),
			want:   azure.Classification{Class: azure.ClassWait, Reason: azure.ReasonInUse, Code: "CannotDeleteResource", StatusCode: 409, Message: "CannotDeleteResource: Can not delete resource before nested resources are deleted."},
		},
		{
			reason: "a service that still has connections: wait for them to go",
			err:    armError(400, "PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted", "has connections"),
			want:   azure.Classification{Class: azure.ClassWait, Reason: azure.ReasonInUse, Code: "PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted", StatusCode: 400, Message: "PrivateLinkServiceWithPrivateEndpointConnectionsCannotBeDeleted: has connections"},
		},
		{
			reason: "a referenced resource still being provisioned: wait, it is not a person's problem",
			err:    armError(400, "ReferencedResourceNotProvisioned", "Cannot proceed with operation because resource lb used by resource pls is not in Succeeded state."),
			want: azure.Classification{Class: azure.ClassWait, Reason: azure.ReasonDependencyNotReady, Code: "ReferencedResourceNotProvisioned", StatusCode: 400,
				Message: "ReferencedResourceNotProvisioned: Cannot proceed with operation because resource lb used by resource pls is not in Succeeded state."},
		},
		{
			reason: "a long-running operation that failed with a retryable code",
			err:    armError(200, "InternalServerError", "oops"),
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonAzureUnavailable, Code: "InternalServerError", StatusCode: 200, Message: "InternalServerError: oops"},
		},
		{
			reason: "a long-running operation that Azure refused",
			err:    armError(200, "PrivateIPAddressInUse", "10.0.0.4 is taken"),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonOperationFailed, Code: "PrivateIPAddressInUse", StatusCode: 200, Message: "PrivateIPAddressInUse: 10.0.0.4 is taken"},
		},
		{
			reason: "tokens in a message are redacted",
			err:    armError(401, "InvalidAuthenticationToken", "token Bearer eyJhbGciOi.abc.def is invalid; client_secret=hunter2"),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthenticationFailed, Code: "InvalidAuthenticationToken", StatusCode: 401, Message: "InvalidAuthenticationToken: token Bearer [redacted] is invalid; client_secret=[redacted]"},
		},
		{
			reason: "a credential that cannot be used needs a person",
			err:    azidentity.NewCredentialUnavailableError("WorkloadIdentityCredential: no token file"),
			want:   azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonCredentialUnavailable, Message: "no Azure credential available: WorkloadIdentityCredential: no token file"},
		},
		{
			reason: "a timeout is transient",
			err:    fmt.Errorf("getting endpoint: %w", context.DeadlineExceeded),
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonTimeout, Message: "the request to Azure timed out"},
		},
		{
			reason: "a network error is transient",
			err:    &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")},
			want:   azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonAzureUnavailable, Message: "cannot reach Azure: dial tcp: connection refused"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, azure.Classify(tc.err)); diff != "" {
				t.Errorf("%s: classification (-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	t.Run("a long message is cut to a valid, bounded string", func(t *testing.T) {
		got := azure.Classify(armError(400, "BadRequest", long)).Message
		if len(got) > 256 || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
			t.Errorf("message of %d bytes, valid UTF-8 %v: %q", len(got), utf8.ValidString(got), got)
		}
	})
	t.Run("a frozen error keeps its classification", func(t *testing.T) {
		err := armError(429, "SubscriptionRequestsThrottled", "slow down", "Retry-After", "7")
		frozen := azure.Freeze(err)
		if diff := cmp.Diff(azure.Classify(err), azure.Classify(frozen)); diff != "" {
			t.Errorf("frozen classification (-want +got):\n%s", diff)
		}
		if !azure.IsNotFound(azure.Freeze(armError(404, "NotFound", "x"))) || azure.Freeze(nil) != nil {
			t.Error("Freeze must keep IsNotFound and nil")
		}
	})
	t.Run("IsNotFound", func(t *testing.T) {
		if !azure.IsNotFound(armError(404, "NotFound", "x")) || azure.IsNotFound(armError(400, "BadRequest", "x")) || azure.IsNotFound(nil) {
			t.Error("IsNotFound is true exactly for 404s")
		}
	})
}

// TestClassifyRealSDKErrors classifies errors as the real SDK produces them
// against azuresim: a wrong client secret, and a 429 whose Retry-After is
// longer than the client waits.
func TestClassifyRealSDKErrors(t *testing.T) {
	const secret = "the-right-secret"
	srv := azuresim.New(azuresim.Options{TLS: true, Principals: []azuresim.Principal{{TenantID: "t", ClientID: "c", ClientSecret: secret}}})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	opts := azcore.ClientOptions{
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: srv.URL() + "/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: srv.URL(), Audience: srv.URL()},
		}},
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.CertPool(), MinVersion: tls.VersionTLS12}}},
		Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: time.Second},
	}
	client := func(secret string) *armnetwork.PrivateEndpointsClient {
		cred, err := azidentity.NewClientSecretCredential("t", "c", secret, &azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := armnetwork.NewPrivateEndpointsClient("s", cred, &arm.ClientOptions{ClientOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := srv.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: "s", Name: "rg", Location: "westeurope"}}}); err != nil {
		t.Fatal(err)
	}

	_, err := client("wrong-secret").Get(context.Background(), "rg", "pe", nil)
	got := azure.Classify(err)
	if got.Class != azure.ClassTerminal || got.Reason != azure.ReasonAuthenticationFailed || !strings.Contains(got.Message, "AADSTS7000215") {
		t.Errorf("wrong secret: %+v", got)
	}
	if strings.Contains(got.Message, "wrong-secret") || strings.Contains(got.Message, secret) {
		t.Errorf("the message leaks a secret: %q", got.Message)
	}

	if _, err := srv.AddFault(azuresim.Fault{Method: http.MethodGet, Status: 429, Code: "SubscriptionRequestsThrottled", RetryAfter: 30, Count: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = client(secret).Get(context.Background(), "rg", "pe", nil)
	want := azure.Classification{Class: azure.ClassTransient, Reason: azure.ReasonThrottled, Code: "SubscriptionRequestsThrottled", StatusCode: 429, RetryAfter: 30 * time.Second}
	if diff := cmp.Diff(want, azure.Classify(err), cmpopts.IgnoreFields(azure.Classification{}, "Message")); diff != "" {
		t.Errorf("throttled (-want +got):\n%s", diff)
	}
}
