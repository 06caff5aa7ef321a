package testenv

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCAPZWebhooks proves that every test world runs CAPZ's own admission
// webhooks: a write CAPZ refuses in production is refused here with CAPZ's
// message, and what CAPZ defaults is defaulted.
func TestCAPZWebhooks(t *testing.T) {
	for _, s := range Schemas {
		t.Run(string(s), func(t *testing.T) {
			ctx := context.Background()
			e := StartT(t, Options{Schema: s})

			// CAPZ defaults: the resource group is the cluster's name, the
			// VNet is <name>-vnet (setDefaultAzureCluster* in both releases).
			ac := probeAzureCluster("wc1")
			unstructured.RemoveNestedField(ac.Object, "spec", "resourceGroup")
			if err := e.Client.Create(ctx, ac); err != nil {
				t.Fatalf("creating a valid AzureCluster: %v", err)
			}
			if rg, _, _ := unstructured.NestedString(ac.Object, "spec", "resourceGroup"); rg != "wc1" {
				t.Errorf("spec.resourceGroup = %q, want CAPZ's default %q", rg, "wc1")
			}
			if vnet, _, _ := unstructured.NestedString(ac.Object, "spec", "networkSpec", "vnet", "name"); vnet != "wc1-vnet" {
				t.Errorf("spec.networkSpec.vnet.name = %q, want CAPZ's default %q", vnet, "wc1-vnet")
			}

			// CAPZ refuses: a name Kubernetes allows but CAPZ's regex does
			// not, no identityRef, a changed resource group.
			bad := probeAzureCluster("wc.one")
			wantRefused(t, e.Client.Create(ctx, bad), "Cluster Name doesn't match regex")
			noID := probeAzureCluster("wc2")
			unstructured.RemoveNestedField(noID.Object, "spec", "identityRef")
			wantRefused(t, e.Client.Create(ctx, noID), "identityRef is required")
			moved := ac.DeepCopy()
			if err := unstructured.SetNestedField(moved.Object, "elsewhere", "spec", "resourceGroup"); err != nil {
				t.Fatal(err)
			}
			wantRefused(t, e.Client.Update(ctx, moved), "field is immutable")
		})
	}
}

// TestCAPZWebhooksKeepForkFields proves that v1.23.0's defaulting webhook,
// which the fork's schema runs, keeps the fork's privateLinks: its types do
// not know them, and controller-runtime's defaulter removes no field.
func TestCAPZWebhooksKeepForkFields(t *testing.T) {
	ctx := context.Background()
	e := StartT(t, Options{Schema: SchemaFork})
	ac := probeAzureCluster("wc1")
	unstructured.RemoveNestedField(ac.Object, "spec", "resourceGroup")
	links := []any{map[string]any{
		"name":                    "wc1-pls",
		"lbFrontendIPConfigNames": []any{"wc1-frontend"},
		"natIpConfigurations":     []any{map[string]any{"allocationMethod": "Dynamic", "subnet": "wc1-node-subnet"}},
	}}
	if err := unstructured.SetNestedSlice(ac.Object, links, "spec", "networkSpec", "apiServerLB", "privateLinks"); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Create(ctx, ac); err != nil {
		t.Fatalf("creating a fork AzureCluster with privateLinks: %v", err)
	}
	got, _, _ := unstructured.NestedSlice(ac.Object, "spec", "networkSpec", "apiServerLB", "privateLinks")
	if len(got) != 1 {
		t.Fatalf("privateLinks after CAPZ's defaulting = %v, want the one written", got)
	}
	if name, _, _ := unstructured.NestedString(ac.Object, "spec", "resourceGroup"); name != "wc1" {
		t.Errorf("spec.resourceGroup = %q: CAPZ's defaulting did not run", name)
	}
}

// TestCAPZWebhooksUpgrade proves that a CAPZ upgrade in the test world
// replaces the webhooks too: v1.27.0 validates apiServerLB.privateLinks,
// which v1.23.0 does not know, and refuses them on the public API server
// load balancer CAPZ defaults to.
func TestCAPZWebhooksUpgrade(t *testing.T) {
	ctx := context.Background()
	e := StartT(t, Options{Schema: SchemaUpstream})
	ac := probeAzureCluster("wc1")
	if err := e.Client.Create(ctx, ac); err != nil {
		t.Fatalf("creating an AzureCluster under v1.23.0: %v", err)
	}
	if err := e.InstallSchema(ctx, SchemaV127); err != nil {
		t.Fatalf("upgrading to v1.27.0: %v", err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(ac.GroupVersionKind())
	links := []any{map[string]any{
		"name":                    "wc1-pls",
		"lbFrontendIPConfigNames": []any{"wc1-public-lb-frontEnd"},
		"natIPConfigurations":     []any{map[string]any{"allocationMethod": "Dynamic", "subnet": "wc1-controlplane-subnet"}},
	}}
	// The new CRD may take a moment to be served; CAPZ's refusal is the
	// answer once it is (the old CRD prunes the field: accepted, silently).
	var err error
	pollErr := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ac), got); err != nil {
			return false, err
		}
		if err := unstructured.SetNestedSlice(got.Object, links, "spec", "networkSpec", "apiServerLB", "privateLinks"); err != nil {
			return false, err
		}
		err = e.Client.Update(ctx, got)
		return err != nil, nil
	})
	if pollErr != nil && err == nil {
		t.Fatalf("writing privateLinks after the upgrade: %v", pollErr)
	}
	wantRefused(t, err, "private links can be added only to an internal load balancer")
}

func wantRefused(t *testing.T, err error, message string) {
	t.Helper()
	if err == nil {
		t.Errorf("accepted; want CAPZ's refusal %q", message)
		return
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), message) {
		t.Errorf("error %v; want CAPZ's refusal %q", err, message)
	}
}
