package clusterlink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// cacheReader gets one stored object the way the informer cache does with
// UnsafeDisableDeepCopy: without copying it. A Get that would copy is an
// error.
type cacheReader struct {
	client.Reader
	obj  *unstructured.Unstructured
	gets int
}

func (c *cacheReader) Get(_ context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	c.gets++
	o := client.GetOptions{}
	o.ApplyOptions(opts)
	if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
		return errors.New("a Get of the MC that copies it")
	}
	if key != client.ObjectKeyFromObject(c.obj) {
		return apierrors.NewNotFound(schema.GroupResource{Group: capz.AzureClusterGVK.Group, Resource: "azureclusters"}, key.Name)
	}
	*out.(*unstructured.Unstructured) = *c.obj
	return nil
}

// bigMC is a management cluster holding n private endpoints.
func bigMC(n int) *unstructured.Unstructured {
	var pes []any
	for i := range n {
		pes = append(pes, map[string]any{
			"name": fmt.Sprintf("wc%04d-api-privatelink-privateendpoint", i), "location": "westeurope",
			"privateLinkServiceConnections": []any{map[string]any{
				"name":                 fmt.Sprintf("wc%04d-api-privatelink-connection", i),
				"privateLinkServiceID": fmt.Sprintf("/subscriptions/s/resourceGroups/wc%04d/providers/Microsoft.Network/privateLinkServices/wc%04d-api-privatelink", i, i),
				"requestMessage":       "please",
			}},
		})
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"subscriptionID": "s", "resourceGroup": "mc", "location": "westeurope",
		"networkSpec": map[string]any{
			"vnet":        map[string]any{"name": "mc-vnet", "id": "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/virtualNetworks/mc-vnet"},
			"apiServerLB": map[string]any{"name": "mc-lb", "type": "Internal"},
			"subnets": []any{map[string]any{"name": "mc-nodes", "role": "node", "id": "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/virtualNetworks/mc-vnet/subnets/mc-nodes",
				"privateEndpoints": pes}},
		},
	}}}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	u.SetNamespace("org")
	u.SetName("mc")
	u.SetUID("uid")
	u.SetResourceVersion("1")
	return u
}

func TestMCSnapshotParsesOncePerVersion(t *testing.T) {
	r := &cacheReader{obj: bigMC(3)}
	var s mcSnapshot
	key := types.NamespacedName{Namespace: "org", Name: "mc"}
	_, v1, err := s.get(context.Background(), r, key)
	if err != nil || v1 == nil || len(v1.Subnets[0].PrivateEndpoints) != 3 {
		t.Fatalf("first read: %+v, %v", v1, err)
	}
	if _, v2, _ := s.get(context.Background(), r, key); v2 != v1 {
		t.Error("an unchanged MC was parsed again")
	}
	r.obj = bigMC(4)
	r.obj.SetResourceVersion("2")
	if _, v3, _ := s.get(context.Background(), r, key); v3 == v1 || len(v3.Subnets[0].PrivateEndpoints) != 4 {
		t.Error("a changed MC was not parsed again")
	}
	if u, v, err := s.get(context.Background(), r, types.NamespacedName{Namespace: "org", Name: "other"}); u != nil || v != nil || err != nil {
		t.Errorf("a missing MC: %v, %v, %v", u, v, err)
	}
}

// BenchmarkMCRead compares what each WC reconcile spent reading a
// 1,000-endpoint MC before (a deep copy from the cache and a parse) with the
// snapshot's cost when the MC has not changed, and the parse alone (what
// a change of the MC costs).
func BenchmarkMCRead(b *testing.B) {
	mc := bigMC(1000)
	b.Run("copy-and-parse", func(b *testing.B) {
		for b.Loop() {
			if _, errs := capz.FromUnstructured(mc.DeepCopy()); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := capz.FromUnstructured(mc); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		r := &cacheReader{obj: mc}
		var s mcSnapshot
		for b.Loop() {
			if _, _, err := s.get(context.Background(), r, types.NamespacedName{Namespace: "org", Name: "mc"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMCSnapshotTakenNames: the snapshot's TakenNames of the MC is
// TakenNames itself, computed once per resourceVersion and field manager
// lists, and computed anew when either changes.
func TestMCSnapshotTakenNames(t *testing.T) {
	mc := bigMC(3)
	// CAPZ's patch helper wrote the first entry back: held by CAPZ's
	// manager alone, it is the operator's when that manager is CAPZ's.
	first := `{"f:spec":{"f:networkSpec":{"f:subnets":{"k:{\"name\":\"mc-nodes\"}":{"f:privateEndpoints":{"k:{\"name\":\"wc0000-api-privatelink-privateendpoint\"}":{".":{}}}}}}}}`
	mc.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "capz", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(first)}})
	r := &cacheReader{obj: mc}
	var s mcSnapshot
	key := types.NamespacedName{Namespace: "org", Name: "mc"}
	read := func() mcState {
		t.Helper()
		st, err := s.read(context.Background(), r, key)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	same := func(a, b map[string]bool) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	withCAPZ := Options{Config: Config{}, CAPZFieldManagers: []string{"capz"}}
	st := read()
	got := st.takenNames(withCAPZ)
	if want := TakenNames(st.view, st.owners, withCAPZ.olderInMC()); !maps.Equal(got, want) || len(got) != 2 {
		t.Fatalf("takenNames = %v, want %v (two entries of no one's)", got, want)
	}
	if again := read().takenNames(withCAPZ); !same(got, again) {
		t.Error("the MC's taken names were computed again for an unchanged MC")
	}
	none := Options{}
	other := read().takenNames(none)
	if want := TakenNames(st.view, st.owners, none.olderInMC()); !maps.Equal(other, want) || len(other) != 3 {
		t.Errorf("with other field managers: %v, want %v (all three)", other, want)
	}
	mc2 := bigMC(4)
	mc2.SetResourceVersion("2")
	r.obj = mc2
	if changed := read().takenNames(none); len(changed) != 4 {
		t.Errorf("after the MC changed: %v, want its four entries", changed)
	}
}
