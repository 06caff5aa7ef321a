package azuresim_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// What the real CAPZ asks beyond what the operator reads (test/realcapz):
// Compute's SKU list, the generic store and the Tags API at a scope.

func rawClient(t *testing.T) (*azuresim.Server, func(method, path string, body any) (int, map[string]any)) {
	t.Helper()
	srv := azuresim.New(azuresim.Options{TLS: true, NoAuth: true})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: srv.CertPool(), MinVersion: tls.VersionTLS12}}}
	do := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd bytes.Buffer
		if body != nil {
			if err := json.NewEncoder(&rd).Encode(body); err != nil {
				t.Fatal(err)
			}
		}
		req, err := http.NewRequest(method, srv.URL()+path, &rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	return srv, do
}

func TestSKUList(t *testing.T) {
	_, do := rawClient(t)
	status, out := do(http.MethodGet, "/subscriptions/"+providerSub+"/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location+eq+'northeurope'", nil)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, out)
	}
	value, _ := out["value"].([]any)
	if len(value) == 0 {
		t.Fatalf("no SKU: %v", out)
	}
	for _, v := range value {
		sku, _ := v.(map[string]any)
		info, _ := sku["locationInfo"].([]any)
		if sku["resourceType"] != "virtualMachines" || len(info) != 1 {
			t.Fatalf("SKU %v", sku)
		}
		li, _ := info[0].(map[string]any)
		if zones, _ := li["zones"].([]any); li["location"] != "northeurope" || len(zones) != 3 {
			t.Errorf("location info %v, want northeurope with zones 1, 2, 3", li)
		}
	}
}

func TestGenericStoreAndTags(t *testing.T) {
	srv, do := rawClient(t)
	if err := srv.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: providerSub, Name: "rg", Location: location}}}); err != nil {
		t.Fatal(err)
	}
	nsg := "/subscriptions/" + providerSub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/cp-nsg"
	const v = "?api-version=2023-05-01"
	if status, out := do(http.MethodPut, nsg+v, map[string]any{"properties": map[string]any{}}); status != http.StatusBadRequest {
		t.Errorf("PUT without a location: status %d, want 400: %v", status, out)
	}
	rules := []any{map[string]any{"name": "allow_ssh", "properties": map[string]any{"priority": 2200.0, "access": "Allow"}}}
	status, out := do(http.MethodPut, nsg+v, map[string]any{"location": location, "tags": map[string]any{"owner": "capz"},
		"properties": map[string]any{"securityRules": rules, "provisioningState": "Failed"}})
	if status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("PUT: status %d: %v", status, out)
	}
	status, out = do(http.MethodGet, nsg+v, nil)
	props, _ := out["properties"].(map[string]any)
	if status != http.StatusOK || props["provisioningState"] != "Succeeded" || out["type"] != "Microsoft.Network/networkSecurityGroups" ||
		!strings.EqualFold(out["id"].(string), nsg) {
		t.Fatalf("GET: status %d: %v", status, out)
	}
	if got, _ := json.Marshal(props["securityRules"]); !strings.Contains(string(got), "allow_ssh") {
		t.Errorf("the rules sent are not kept: %s", got)
	}

	tags := nsg + "/providers/Microsoft.Resources/tags/default?api-version=2021-04-01"
	status, out = do(http.MethodGet, tags, nil)
	if status != http.StatusOK || out["name"] != "default" || tagValue(out, "owner") != "capz" {
		t.Fatalf("GET tags: status %d: %v", status, out)
	}
	for _, step := range []struct {
		op          string
		tags        map[string]any
		owner, team string
	}{
		{"Merge", map[string]any{"team": "a"}, "capz", "a"},
		{"Replace", map[string]any{"team": "b"}, "", "b"},
		{"Delete", map[string]any{"team": "b"}, "", ""},
	} {
		status, out = do(http.MethodPatch, tags, map[string]any{"operation": step.op, "properties": map[string]any{"tags": step.tags}})
		if status != http.StatusOK || tagValue(out, "owner") != step.owner || tagValue(out, "team") != step.team {
			t.Fatalf("PATCH %s: status %d: %v", step.op, status, out)
		}
	}
	// The resource shows what the Tags API wrote.
	if err := mustNoTags(do(http.MethodGet, nsg+v, nil)); err != "" {
		t.Error(err)
	}
	if status, out := do(http.MethodGet, "/subscriptions/"+providerSub+"/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/none/providers/Microsoft.Resources/tags/default?api-version=2021-04-01", nil); status != http.StatusNotFound {
		t.Errorf("tags of a missing resource: status %d: %v", status, out)
	}
	if u := srv.Unserved(); len(u) > 0 {
		t.Errorf("unserved: %v", u)
	}
	do(http.MethodGet, "/subscriptions/"+providerSub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworkGateways/gw?api-version=2023-05-01", nil)
	do(http.MethodGet, "/"+tenant+"/oauth2/v2.0/devicecode", nil)
	if u := srv.Unserved(); len(u) != 2 || !strings.Contains(u[0], "virtualNetworkGateways/gw") || !strings.Contains(u[1], "/oauth2/v2.0/devicecode") {
		t.Errorf("Unserved() = %v, want the gateway's GET and the token endpoint's device code path", u)
	}
}

func tagValue(out map[string]any, name string) string {
	props, _ := out["properties"].(map[string]any)
	tags, _ := props["tags"].(map[string]any)
	s, _ := tags[name].(string)
	return s
}

func mustNoTags(status int, out map[string]any) string {
	if status != http.StatusOK {
		return "GET after the tags' delete failed"
	}
	if tags, ok := out["tags"]; ok {
		return "the resource still has tags " + func() string { b, _ := json.Marshal(tags); return string(b) }()
	}
	return ""
}
