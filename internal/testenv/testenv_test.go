package testenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestCRDsOverlay(t *testing.T) {
	tests := []struct {
		reason   string
		schema   Schema
		wantNAT  string // "" means no privateLinks field at all
		wantKeys []string
	}{
		{
			reason: "upstream CAPZ has no privateLinks",
			schema: SchemaUpstream,
		},
		{
			reason:   "the fork spells the NAT list natIpConfigurations",
			schema:   SchemaFork,
			wantNAT:  "natIpConfigurations",
			wantKeys: []string{"name"},
		},
		{
			reason:  "CAPZ v1.27 spells the NAT list natIPConfigurations, in an atomic list",
			schema:  SchemaV127,
			wantNAT: "natIPConfigurations",
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			crds, err := CRDs(context.Background(), tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"AzureASOManagedControlPlane", "AzureCluster", "AzureClusterIdentity", "AzureManagedControlPlane", "Cluster", "KubeadmControlPlane", "PrivateEndpoint", "PrivateLinkService"}, kindsOf(crds)); diff != "" {
				t.Errorf("%s: CRD kinds (-want +got):\n%s", tc.reason, diff)
			}
			fields, keys := privateLinksShape(t, crds)
			if tc.wantNAT == "" {
				if fields != nil {
					t.Errorf("%s: privateLinks present with fields %v", tc.reason, fields)
				}
				return
			}
			want := []string{"allowedSubscriptions", "autoApprovedSubscriptions", "enableProxyProtocol",
				"lbFrontendIPConfigNames", "name", tc.wantNAT}
			sort.Strings(want)
			if diff := cmp.Diff(want, fields); diff != "" {
				t.Errorf("%s: privateLinks item fields (-want +got):\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantKeys, keys); diff != "" {
				t.Errorf("%s: privateLinks list map keys (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func kindsOf(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var kinds []string
	for _, crd := range crds {
		kinds = append(kinds, crd.Spec.Names.Kind)
	}
	sort.Strings(kinds)
	return kinds
}

// privateLinksShape returns the sorted item fields and list map keys of
// AzureCluster's apiServerLB.privateLinks, or nil fields when it is absent.
func privateLinksShape(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) (fields, keys []string) {
	t.Helper()
	for _, crd := range crds {
		if crd.Spec.Names.Kind != "AzureCluster" {
			continue
		}
		lb, err := schemaAt(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "spec", "networkSpec", "apiServerLB")
		if err != nil {
			t.Fatal(err)
		}
		links, ok := lb.Properties["privateLinks"]
		if !ok {
			return nil, nil
		}
		for f := range links.Items.Schema.Properties {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		return fields, links.XListMapKeys
	}
	t.Fatal("no AzureCluster CRD")
	return nil, nil
}

func TestSchemaAtMissingPath(t *testing.T) {
	s := &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}},
	}}
	_, err := schemaAt(s, "spec", "networkSpec", "apiServerLB")
	if err == nil || !strings.Contains(err.Error(), "[spec networkSpec]") {
		t.Errorf("want an error naming the missing step, got %v", err)
	}
}

// TestEnvtestAssetsBuildIsIdempotent runs the build script where make test
// has just built the binaries, and checks that it reports them up to date and
// leaves them untouched.
func TestEnvtestAssetsBuildIsIdempotent(t *testing.T) {
	script := filepath.Join(repoRoot(), "hack", "envtest", "build.sh")
	out, err := exec.Command(script, "--print-dir").Output()
	if err != nil {
		t.Fatalf("%s --print-dir: %v", script, err)
	}
	dir := strings.TrimSpace(string(out))
	// --check never builds, so a missing build fails here in a second rather
	// than starting a 12-minute compile inside a test.
	if out, err := exec.Command(script, "--check").CombinedOutput(); err != nil {
		t.Fatalf("%s --check: %v\n%s", script, err, out)
	}
	before := modTimes(t, dir)
	out, err = exec.Command(script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	if !strings.Contains(string(out), "up to date") {
		t.Errorf("second run did not report the binaries up to date:\n%s", out)
	}
	if diff := cmp.Diff(before, modTimes(t, dir)); diff != "" {
		t.Errorf("second run touched the binaries (-before +after):\n%s", diff)
	}
}

func modTimes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, bin))
		if err != nil {
			t.Fatal(err)
		}
		out[bin] = fi.ModTime().String()
	}
	return out
}
