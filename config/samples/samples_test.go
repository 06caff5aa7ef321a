// Package samples holds example objects for the README and the demo; its
// test keeps them valid against the real CRDs and the operator.
package samples

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// TestSamplesAreValid creates every sample in a real API server (dry run,
// strict field validation) and checks what the operator makes of them.
func TestSamplesAreValid(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{Schema: testenv.SchemaV127})
	ctx := context.Background()
	for _, ns := range []string{"org-giantswarm", "org-team-a"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	clusters := map[string]*capz.AzureCluster{}
	for _, f := range files {
		for _, u := range readObjects(t, f) {
			if err := env.Client.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s: %s %s: %v", f, u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "AzureCluster" {
				view, errs := capz.FromUnstructured(u)
				if len(errs) > 0 {
					t.Errorf("%s: %v", f, errs)
				}
				clusters[u.GetName()] = view
			}
		}
	}
	checkWiring(t, clusters)
	checkPrivateLinkServiceVariants(t, files)
	if _, err := azure.LoadCustomCloud("custom-cloud.json"); err != nil {
		t.Errorf("custom-cloud.json: %v", err)
	}
}

// checkWiring checks that the samples show what their comments promise.
func checkWiring(t *testing.T, clusters map[string]*capz.AzureCluster) {
	t.Helper()
	mc := clusters["mc"]
	if mc == nil {
		t.Fatal("no management cluster sample")
	}
	got := map[string]string{}
	for _, name := range []string{"wc1", "wc2", "wc3"} {
		wc := clusters[name]
		if wc == nil {
			t.Fatalf("no sample %s", name)
		}
		wc.PrivateLinksReady = true // as CAPZ reports once it created them
		toWC, problems := clusterlink.MCToWC(mc, wc, clusterlink.Config{}, nil)
		if len(problems) > 0 {
			t.Errorf("%s: %v", name, problems)
		}
		toMC, _ := clusterlink.WCToMC(mc, wc, clusterlink.Config{})
		desc := "mc->wc:none"
		if len(toWC) == 1 {
			desc = "mc->wc:auto"
			if toWC[0].ManualApproval {
				desc = "mc->wc:manual"
			}
		}
		if len(toMC) == 1 {
			desc += " wc->mc:" + toMC[0].Name
		}
		got[name] = desc
	}
	want := map[string]string{
		"wc1": "mc->wc:auto wc->mc:wc1-to-mc-privatelink-privateendpoint",
		"wc2": "mc->wc:manual wc->mc:wc2-to-mc-privatelink-privateendpoint",
		"wc3": "mc->wc:none wc->mc:wc3-to-mc-privatelink-privateendpoint",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("wiring of the samples (-want +got):\n%s", diff)
	}
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// checkPrivateLinkServiceVariants checks that the AzurePrivateLinkService
// samples show every variant the README promises.
func checkPrivateLinkServiceVariants(t *testing.T, files []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range files {
		for _, u := range readObjects(t, f) {
			if u.GetKind() != "AzurePrivateLinkService" {
				continue
			}
			var p v1alpha1.AzurePrivateLinkService
			if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, &p, true); err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			s := p.Spec
			for variant, ok := range map[string]bool{
				"frontend.loadBalancer": s.Frontend.LoadBalancer != nil, "frontend.privateIPAddress": s.Frontend.PrivateIPAddress != "",
				"frontend.service": s.Frontend.Service != nil, "natSubnet.name": s.NATSubnet.Name != "", "natSubnet.id": s.NATSubnet.ID != "",
				"natSubnet.create": s.NATSubnet.Create != nil, "natSubnet.fixNetworkPolicies": s.NATSubnet.FixNetworkPolicies,
				"natIPConfigurations.staticIPs": len(s.NATIPConfigurations.StaticIPs) > 0, "visibility *": slices.Contains(s.Visibility, "*"),
				"connectionApproval": s.ConnectionApproval != nil, "adopt": s.Adopt, "deletionPolicy Orphan": s.DeletionPolicy == v1alpha1.DeletionPolicyOrphan,
				"operator credential": s.IdentityRef == nil, "proxy protocol and FQDNs": s.EnableProxyProtocol && len(s.FQDNs) > 0,
			} {
				seen[variant] = seen[variant] || ok
			}
		}
	}
	for variant, ok := range seen {
		if !ok {
			t.Errorf("no AzurePrivateLinkService sample shows %s", variant)
		}
	}
	if len(seen) == 0 {
		t.Error("no AzurePrivateLinkService samples")
	}
}
