package testworld

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// Cluster describes an AzureCluster to create.
type Cluster struct {
	Namespace, Name string
	Subscription    string
	// ResourceGroup defaults to "<name>-rg" (deliberately not the name).
	ResourceGroup string
	Location      string
	// Private makes the API server load balancer Internal.
	Private bool
	// LBType overrides the load balancer type (for invalid values).
	LBType string
	// PrivateLinks are the fork's apiServerLB.privateLinks.
	PrivateLinks []PrivateLink
	// CIDR16 is the second octet of the cluster's 10.x.0.0/16 VNet.
	CIDR16 int
	// AzureEnvironment is spec.azureEnvironment ("" leaves it out).
	AzureEnvironment string
}

// PrivateLink is one of the fork's private links.
type PrivateLink struct {
	Name                      string
	AllowedSubscriptions      []string
	AutoApprovedSubscriptions []string
}

// Object builds the AzureCluster for a schema, with a control-plane and a
// node subnet and the world's identity.
func (c Cluster) Object(schema testenv.Schema) *unstructured.Unstructured {
	rg := c.ResourceGroup
	if rg == "" {
		rg = c.Name + "-rg"
	}
	loc := c.Location
	if loc == "" {
		loc = DefaultLocation
	}
	lb := map[string]any{"name": c.Name + "-api-lb", "type": capz.LBTypePublic}
	if c.Private {
		lb["type"] = capz.LBTypeInternal
		lb["frontendIPs"] = []any{map[string]any{"name": c.Name + "-api-lb-frontend", "privateIP": fmt.Sprintf("10.%d.0.100", c.CIDR16)}}
	}
	if c.LBType != "" {
		lb["type"] = c.LBType
	}
	if nat := schema.NATConfigurationsField(); nat != "" && len(c.PrivateLinks) > 0 {
		links := make([]any, 0, len(c.PrivateLinks))
		for _, pl := range c.PrivateLinks {
			links = append(links, map[string]any{
				"name":                      pl.Name,
				"allowedSubscriptions":      strs(pl.AllowedSubscriptions),
				"autoApprovedSubscriptions": strs(pl.AutoApprovedSubscriptions),
				nat:                         []any{map[string]any{"allocationMethod": "Dynamic", "subnet": c.Name + "-cp"}},
				"lbFrontendIPConfigNames":   []any{c.Name + "-api-lb-frontend"},
			})
		}
		lb["privateLinks"] = links
	}
	spec := map[string]any{
		"subscriptionID": c.Subscription,
		"resourceGroup":  rg,
		"location":       loc,
		"networkSpec": map[string]any{
			"vnet":        map[string]any{"name": c.Name + "-vnet", "cidrBlocks": []any{fmt.Sprintf("10.%d.0.0/16", c.CIDR16)}},
			"apiServerLB": lb,
			"subnets": []any{
				map[string]any{"name": c.Name + "-cp", "role": "control-plane", "cidrBlocks": []any{fmt.Sprintf("10.%d.0.0/24", c.CIDR16)}},
				map[string]any{"name": c.Name + "-nodes", "role": "node", "cidrBlocks": []any{fmt.Sprintf("10.%d.1.0/24", c.CIDR16)}},
			},
		},
	}
	spec["identityRef"] = map[string]any{"kind": "AzureClusterIdentity", "name": IdentityName, "namespace": IdentityNS}
	if c.AzureEnvironment != "" {
		spec["azureEnvironment"] = c.AzureEnvironment
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace(c.Namespace)
	u.SetName(c.Name)
	return u
}

func strs(in []string) []any {
	out := make([]any, 0, len(in))
	for _, s := range in {
		out = append(out, s)
	}
	return out
}

// CreateOwned creates a Cluster API Cluster and the cluster's AzureCluster
// for a schema, owned by the Cluster and labelled with its name, as Cluster
// API's Cluster controller leaves them (no Cluster API controller runs in
// a test world).
func (w *World) CreateOwned(t testing.TB, c Cluster, schema testenv.Schema) {
	t.Helper()
	ctx := context.Background()
	cl := capz.Object(capz.ClusterGVK)
	cl.SetNamespace(c.Namespace)
	cl.SetName(c.Name)
	cl.Object["spec"] = map[string]any{
		"infrastructureRef": map[string]any{"apiGroup": capz.AzureClusterGVK.Group, "kind": "AzureCluster", "name": c.Name},
	}
	if err := w.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	ac := c.Object(schema)
	ac.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: capz.ClusterGVK.GroupVersion().String(), Kind: "Cluster", Name: c.Name, UID: cl.GetUID()}})
	ac.SetLabels(map[string]string{capz.ClusterNameLabel: c.Name})
	if err := w.Client.Create(ctx, ac); err != nil {
		t.Fatal(err)
	}
}
