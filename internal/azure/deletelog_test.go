package azure

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"
)

type statusTransport int

func (s statusTransport) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(s), Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// TestDeleteLog: every DELETE is logged at the default level, once, with
// the resource, the caller's reason (or "unstated") and what Azure
// answered (ARM answers 204 for a resource that does not exist); other
// methods are not logged.
func TestDeleteLog(t *testing.T) {
	const id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/pe"
	for _, tc := range []struct {
		method, reason string
		status         int
		want           []string // substrings of the one line; none: no line
	}{
		{http.MethodDelete, "the AzurePrivateEndpoint is deleted", http.StatusAccepted, []string{`"deleted in Azure"`, `"reason"="the AzurePrivateEndpoint is deleted"`, `"status"=202`, id, `"name"="app"`}},
		{http.MethodDelete, "", http.StatusNoContent, []string{`"deleted in Azure: it was gone already"`, `"reason"="unstated"`}},
		{http.MethodDelete, "healing", http.StatusForbidden, []string{`"delete in Azure refused"`, `"status"=403`}},
		{http.MethodPut, "the AzurePrivateEndpoint is deleted", http.StatusOK, nil},
		{http.MethodGet, "", http.StatusOK, nil},
	} {
		var lines []string
		log := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{}).WithValues("name", "app")
		ctx := ctrl.LoggerInto(context.Background(), log)
		if tc.reason != "" {
			ctx = WithDeletionReason(ctx, tc.reason)
		}
		pl := runtime.NewPipeline("test", "v0", runtime.PipelineOptions{PerCall: []policy.Policy{deleteLog{}}},
			&policy.ClientOptions{Transport: statusTransport(tc.status), Retry: policy.RetryOptions{MaxRetries: -1}})
		req, err := runtime.NewRequest(ctx, tc.method, "https://management.example"+id)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := pl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if len(tc.want) == 0 {
			if len(lines) > 0 {
				t.Errorf("%s: logged %q", tc.method, lines)
			}
			continue
		}
		if len(lines) != 1 {
			t.Fatalf("%s %d: %d lines, want 1: %q", tc.method, tc.status, len(lines), lines)
		}
		for _, w := range tc.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%s %d: %q lacks %s", tc.method, tc.status, lines[0], w)
			}
		}
	}
}
