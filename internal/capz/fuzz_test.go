package capz_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// FuzzView reads AzureClusters of any shape, managedFields included: the
// view reports what it cannot read as field errors, reading what a field
// manager owns never panics, and the cache's trimmed copy
// (TrimAzureCluster) reads the same as the whole object.
func FuzzView(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"mc","namespace":"ns","managedFields":[{"manager":"azure-private-endpoint-operator","operation":"Apply","fieldsType":"FieldsV1",` +
		`"fieldsV1":{"f:spec":{"f:networkSpec":{"f:subnets":{"k:{\"name\":\"nodes\"}":{"f:privateEndpoints":{"k:{\"name\":\"pe\"}":{}}}}}}}}]},` +
		`"spec":{"networkSpec":{"subnets":[{"name":"nodes","privateEndpoints":[{"name":"pe","privateLinkServiceConnections":[{"privateLinkServiceID":"/x"}]}]}]}}}`))
	f.Add([]byte(`{"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:networkSpec":{"f:subnets":{"k:{bad":{"f:privateEndpoints":7}}}}}}]},"spec":{"networkSpec":{"subnets":"x"}}}`))
	f.Add([]byte(`{"spec":{"subscriptionID":1,"networkSpec":{"apiServerLB":{"privateLinks":[null,{"name":""}],"frontendIPs":[7]},"subnets":[null,{"privateEndpoints":[null]}]}},"status":{"conditions":[null,{"type":"PrivateLinksReady"}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m := map[string]any{}
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		u := &unstructured.Unstructured{Object: m}
		view, _ := capz.FromUnstructured(u)
		if view == nil {
			t.Fatal("no view, not even a partial one")
		}
		owned := capz.CurrentOwned(u, view, capz.FieldManager)
		_ = capz.EndpointOwners(u)
		_ = owned.ApplyConfiguration(view.Namespace, view.Name, "")
		_ = owned.Equal(capz.CurrentOwned(u, view, capz.FieldManager))
		// The cache's copy reads the same, whatever the shape.
		sameReads(t, u, capz.TrimAzureCluster(u.DeepCopy()))
		sameReads(t, u, cached(u))
	})
}
