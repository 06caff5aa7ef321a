package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestASOCRDsAreASOs: the test world serves ASO's own schema, generated from
// its Go types: the version CAPZ writes, typed down to the fields CAPZ
// writes and the operator reads, and nothing kept beyond ASO's fields (an
// unknown field is pruned or refused, as in a cluster with ASO).
func TestASOCRDsAreASOs(t *testing.T) {
	crds, err := ASOCRDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][][]string{
		"PrivateEndpoint": {
			{"spec", "azureName"},
			{"spec", "owner", "name"},
			{"spec", "subnet", "reference", "armId"},
			{"spec", "privateLinkServiceConnections", "[]", "privateLinkServiceReference", "armId"},
			{"spec", "manualPrivateLinkServiceConnections", "[]", "requestMessage"},
			{"status", "id"},
			{"status", "networkInterfaces", "[]", "id"},
			{"status", "privateLinkServiceConnections", "[]", "privateLinkServiceConnectionState", "status"},
			{"status", "conditions", "[]", "type"},
		},
		"PrivateLinkService": {
			{"spec", "loadBalancerFrontendIpConfigurations", "[]", "reference", "armId"},
			{"spec", "ipConfigurations", "[]", "primary"},
			{"spec", "visibility", "subscriptions"},
			{"status", "alias"},
		},
	}
	seen := 0
	for _, crd := range crds {
		paths, ok := want[crd.Spec.Names.Kind]
		if !ok || crd.Spec.Group != "network.azure.com" {
			t.Errorf("unexpected CRD %s", crd.Name)
			continue
		}
		seen++
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1api20220701" || !crd.Spec.Versions[0].Storage {
			t.Errorf("%s: versions %+v, want v1api20220701 (stored)", crd.Name, crd.Spec.Versions)
			continue
		}
		root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, p := range paths {
			if _, err := walk(root, p); err != nil {
				t.Errorf("%s: %v", crd.Name, err)
			}
		}
		for _, p := range [][]string{{"spec"}, {"status"}} {
			if s, err := walk(root, p); err == nil && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
				t.Errorf("%s: %v preserves unknown fields; ASO's schema does not", crd.Name, p)
			}
		}
	}
	if seen != 2 {
		t.Errorf("got %d of ASO's two CRDs", seen)
	}
}

// TestASOVersionIsPinned: ASOVersion names the release hack/asocrds
// generates the CRDs from.
func TestASOVersionIsPinned(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(repoRoot(), "hack", "asocrds", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "github.com/Azure/azure-service-operator/v2 "+ASOVersion+"\n") {
		t.Errorf("hack/asocrds/go.mod does not require ASO %s (ASOVersion)", ASOVersion)
	}
}

// walk follows properties, "[]" stepping into an array's items.
func walk(s *apiextensionsv1.JSONSchemaProps, path []string) (*apiextensionsv1.JSONSchemaProps, error) {
	cur := s
	for i, p := range path {
		if p == "[]" {
			if cur.Items == nil || cur.Items.Schema == nil {
				return nil, fmt.Errorf("schema has no field %v", path[:i+1])
			}
			cur = cur.Items.Schema
			continue
		}
		next, ok := cur.Properties[p]
		if !ok {
			return nil, fmt.Errorf("schema has no field %v", path[:i+1])
		}
		cur = &next
	}
	return cur, nil
}
