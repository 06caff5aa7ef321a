package capz_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestFromUnstructured(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
			"kind":       "AzureCluster",
			"metadata": map[string]any{
				"name": "wc1", "namespace": "org-a",
				"labels": map[string]any{"cluster.x-k8s.io/cluster-name": "wc1-from-label"},
			},
			"spec": map[string]any{
				"subscriptionID": "sub-wc", "resourceGroup": "wc1-rg", "location": "westeurope",
				"identityRef": map[string]any{"name": "id"},
				"networkSpec": map[string]any{
					"apiServerLB": map[string]any{"type": "Internal"},
					"subnets": []any{
						map[string]any{"name": "cp", "role": "control-plane"},
						map[string]any{"name": "nodes", "role": "node", "id": "/subscriptions/sub-wc/x",
							"privateEndpoints": []any{map[string]any{
								"name": "pe", "location": "westeurope", "manualApproval": true,
								"privateLinkServiceConnections": []any{map[string]any{
									"name": "pe-connection", "privateLinkServiceID": "/pls", "requestMessage": "hi",
								}},
							}}},
					},
				},
			},
			"status": map[string]any{"conditions": []any{
				map[string]any{"type": "Ready", "status": "False"},
				map[string]any{"type": "PrivateLinksReady", "status": "True"},
			}},
		}
	}
	wantBase := func() *capz.AzureCluster {
		return &capz.AzureCluster{
			Name: "wc1", Namespace: "org-a", SubscriptionID: "sub-wc", ResourceGroup: "wc1-rg", Location: "westeurope",
			IdentityRef:     &capz.ObjectRef{Name: "id", Namespace: "org-a"},
			APIServerLBType: capz.LBTypeInternal,
			// CAPZ's defaults for an internal load balancer without a name.
			APIServerLBName: "wc1-internal-lb", APIServerFrontendName: "wc1-internal-lb-frontEnd",
			Subnets: []capz.Subnet{
				{Name: "cp", Role: "control-plane"},
				{Name: "nodes", Role: "node", ID: "/subscriptions/sub-wc/x", PrivateEndpoints: []capz.PrivateEndpoint{{
					Name: "pe", Location: "westeurope", ManualApproval: true,
					Connections: []capz.PrivateLinkServiceConnection{{Name: "pe-connection", PrivateLinkServiceID: "/pls", RequestMessage: "hi"}},
				}}},
			},
			PrivateLinksReady: true,
			ClusterName:       "wc1-from-label",
		}
	}
	link := func(nat string) map[string]any {
		return map[string]any{
			"name": "wc1-api-privatelink", "lbFrontendIPConfigNames": []any{"fe"},
			"allowedSubscriptions": []any{"sub-mc"}, "autoApprovedSubscriptions": []any{"sub-mc"},
			"enableProxyProtocol": true,
			nat:                   []any{map[string]any{"allocationMethod": "Dynamic", "subnet": "cp"}},
		}
	}
	wantLink := capz.PrivateLink{
		Name: "wc1-api-privatelink", LBFrontendIPConfigNames: []string{"fe"},
		AllowedSubscriptions: []string{"sub-mc"}, AutoApprovedSubscriptions: []string{"sub-mc"}, EnableProxyProtocol: true,
		NATIPConfigurations: []capz.NATIPConfiguration{{AllocationMethod: "Dynamic", Subnet: "cp"}},
	}
	setLinks := func(o map[string]any, links ...any) {
		o["spec"].(map[string]any)["networkSpec"].(map[string]any)["apiServerLB"].(map[string]any)["privateLinks"] = links
	}

	tests := []struct {
		reason     string
		mutate     func(o map[string]any)
		owner      *metav1.OwnerReference
		want       func() *capz.AzureCluster
		wantErrors []string
	}{
		{
			reason: "upstream CAPZ: no privateLinks, identity namespace defaults to the cluster's",
			want:   wantBase,
		},
		{
			reason: "fork spelling natIpConfigurations",
			mutate: func(o map[string]any) { setLinks(o, link("natIpConfigurations")) },
			want:   func() *capz.AzureCluster { w := wantBase(); w.PrivateLinks = []capz.PrivateLink{wantLink}; return w },
		},
		{
			reason: "CAPZ v1.27 spelling natIPConfigurations",
			mutate: func(o map[string]any) { setLinks(o, link("natIPConfigurations")) },
			want:   func() *capz.AzureCluster { w := wantBase(); w.PrivateLinks = []capz.PrivateLink{wantLink}; return w },
		},
		{
			reason: "the owner reference names the Cluster before the label",
			owner:  &metav1.OwnerReference{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Name: "wc1-owner", UID: "u"},
			want:   func() *capz.AzureCluster { w := wantBase(); w.ClusterName = "wc1-owner"; return w },
		},
		{
			reason: "PrivateLinksReady False",
			mutate: func(o map[string]any) {
				o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "PrivateLinksReady", "status": "False"}}}
			},
			want: func() *capz.AzureCluster { w := wantBase(); w.PrivateLinksReady = false; return w },
		},
		{
			reason: "PrivateLinksReady True in the v1beta2 form a v1beta1 API carries (status.v1beta2.conditions)",
			mutate: func(o map[string]any) {
				o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
					"v1beta2": map[string]any{"conditions": []any{map[string]any{"type": "PrivateLinksReady", "status": "True", "reason": "Ready", "observedGeneration": int64(3)}}}}
			},
			want: wantBase,
		},
		{
			reason: "PrivateLinksReady True where a v1beta2 API keeps the v1beta1 form (status.deprecated.v1beta1.conditions)",
			mutate: func(o map[string]any) {
				o["status"] = map[string]any{"deprecated": map[string]any{"v1beta1": map[string]any{"conditions": []any{map[string]any{"type": "PrivateLinksReady", "status": "True"}}}}}
			},
			want: wantBase,
		},
		{
			reason: "status.conditions decides when it has the type (a v1beta2 API's own list): False there wins over True in the deprecated form",
			mutate: func(o map[string]any) {
				o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "PrivateLinksReady", "status": "False", "reason": "Provisioning", "observedGeneration": int64(3)}},
					"deprecated": map[string]any{"v1beta1": map[string]any{"conditions": []any{map[string]any{"type": "PrivateLinksReady", "status": "True"}}}}}
			},
			want: func() *capz.AzureCluster { w := wantBase(); w.PrivateLinksReady = false; return w },
		},
		{
			reason: "malformed fields are all reported with their paths; the rest is read",
			mutate: func(o map[string]any) {
				bad := link("natIpConfigurations")
				delete(bad, "name")
				bad["allowedSubscriptions"] = []any{"sub-mc", 42}
				bad["enableProxyProtocol"] = "yes"
				setLinks(o, bad)
				o["spec"].(map[string]any)["location"] = 7
			},
			want: func() *capz.AzureCluster {
				w := wantBase()
				w.Location = ""
				l := wantLink
				l.Name, l.EnableProxyProtocol = "", false
				w.PrivateLinks = []capz.PrivateLink{l}
				return w
			},
			wantErrors: []string{
				"spec.location",
				"spec.networkSpec.apiServerLB.privateLinks[0].allowedSubscriptions[1]",
				"spec.networkSpec.apiServerLB.privateLinks[0].enableProxyProtocol",
				"spec.networkSpec.apiServerLB.privateLinks[0].name",
			},
		},
		{
			reason: "malformed items deeper in the lists are reported with their paths",
			mutate: func(o map[string]any) {
				bad := link("natIpConfigurations")
				bad["natIpConfigurations"].([]any)[0].(map[string]any)["subnet"] = 3
				setLinks(o, bad)
				subnets := o["spec"].(map[string]any)["networkSpec"].(map[string]any)["subnets"].([]any)
				pe := subnets[1].(map[string]any)["privateEndpoints"].([]any)[0].(map[string]any)
				pe["manualApproval"] = "true"
				pe["privateLinkServiceConnections"].([]any)[0].(map[string]any)["name"] = false
			},
			want: func() *capz.AzureCluster {
				w := wantBase()
				l := wantLink
				l.NATIPConfigurations = slices.Clone(l.NATIPConfigurations)
				l.NATIPConfigurations[0].Subnet = ""
				w.PrivateLinks = []capz.PrivateLink{l}
				w.Subnets[1].PrivateEndpoints[0].ManualApproval = false
				w.Subnets[1].PrivateEndpoints[0].Connections[0].Name = ""
				return w
			},
			wantErrors: []string{
				"spec.networkSpec.apiServerLB.privateLinks[0].natIpConfigurations[0].subnet",
				"spec.networkSpec.subnets[1].privateEndpoints[0].manualApproval",
				"spec.networkSpec.subnets[1].privateEndpoints[0].privateLinkServiceConnections[0].name",
			},
		},
		{
			reason: "subnets that are not a list",
			mutate: func(o map[string]any) {
				o["spec"].(map[string]any)["networkSpec"].(map[string]any)["subnets"] = "nodes"
			},
			want:       func() *capz.AzureCluster { w := wantBase(); w.Subnets = nil; return w },
			wantErrors: []string{"spec.networkSpec.subnets"},
		},
	}
	// The API server load balancer's name and first frontend, when given.
	named := base()
	named["spec"].(map[string]any)["networkSpec"].(map[string]any)["apiServerLB"] = map[string]any{
		"type": "Internal", "name": "api-lb", "frontendIPs": []any{map[string]any{"name": "api-fe"}, map[string]any{"name": "second"}},
	}
	if got, _ := capz.FromUnstructured(&unstructured.Unstructured{Object: named}); got.APIServerLBName != "api-lb" || got.APIServerFrontendName != "api-fe" {
		t.Errorf("named load balancer: %q %q", got.APIServerLBName, got.APIServerFrontendName)
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			o := base()
			if tc.mutate != nil {
				tc.mutate(o)
			}
			u := &unstructured.Unstructured{Object: o}
			if tc.owner != nil {
				u.SetOwnerReferences([]metav1.OwnerReference{*tc.owner})
			}
			got, errs := capz.FromUnstructured(u)
			want := tc.want()
			want.Annotations = got.Annotations
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: view (-want +got):\n%s", tc.reason, diff)
			}
			checkGroupAndLinks(t, tc.reason, u, got)
			var gotErrors []string
			for _, e := range errs {
				gotErrors = append(gotErrors, e.Field)
			}
			if diff := cmp.Diff(tc.wantErrors, gotErrors); diff != "" {
				t.Errorf("%s: error fields (-want +got):\n%s\n%v", tc.reason, diff, errs)
			}
		})
	}
}

// checkGroupAndLinks: GroupAndLinks reads what the view reads, malformed
// or not.
func checkGroupAndLinks(t *testing.T, reason string, u *unstructured.Unstructured, view *capz.AzureCluster) {
	t.Helper()
	sub, rg, links := capz.GroupAndLinks(u)
	var names []string
	for _, pl := range view.PrivateLinks {
		if pl.Name != "" {
			names = append(names, pl.Name)
		}
	}
	if sub != view.SubscriptionID || rg != view.ResourceGroup || !slices.Equal(links, names) {
		t.Errorf("%s: GroupAndLinks %q %q %v, the view %q %q %v", reason, sub, rg, links, view.SubscriptionID, view.ResourceGroup, names)
	}
}
