package clusterlink

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TestViewMemo: a pass converts an AzureCluster only when its UID or
// resourceVersion is new to the memo, gives the view FromUnstructured
// gives, and forgets the objects it did not read.
func TestViewMemo(t *testing.T) {
	raw, err := os.ReadFile("../../capz/testdata/azurecluster-wc.json")
	if err != nil {
		t.Fatal(err)
	}
	object := func(uid types.UID, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		u.SetUID(uid)
		u.SetResourceVersion(rv)
		return u
	}
	var m viewMemo
	read := func(objs ...*unstructured.Unstructured) []*capz.AzureCluster {
		p := m.pass()
		defer p.end()
		var out []*capz.AzureCluster
		for _, u := range objs {
			out = append(out, checkMemo(t, u, p.of(u)))
		}
		return out
	}

	first := read(object("a", "1"), object("b", "1"))
	again := read(object("a", "1"), object("b", "2"))
	if again[0] != first[0] {
		t.Error("an object of the same UID and resourceVersion was converted again")
	}
	if again[1] == first[1] {
		t.Error("an object of a new resourceVersion was not converted again")
	}
	read(object("a", "1")) // b not read: forgotten
	if _, ok := m.views["b"]; ok || len(m.views) != 1 {
		t.Errorf("the memo holds %d views after a pass that read one", len(m.views))
	}
	if v := read(object("a", "1")); v[0] != first[0] {
		t.Error("a view kept across passes was converted again")
	}
	if v := read(object("", "")); v[0] == read(object("", ""))[0] || len(m.views) != 0 {
		t.Error("an object without UID was memoized")
	}
}

// checkMemo fails t unless memo is what reading u gives; it returns the view.
func checkMemo(t *testing.T, u *unstructured.Unstructured, memo memoView) *capz.AzureCluster {
	t.Helper()
	if memo.servicesSay != servicesSay(u) {
		t.Errorf("%s: servicesSay %q, want %q", u.GetUID(), memo.servicesSay, servicesSay(u))
	}
	want, wantErrs := capz.FromUnstructured(u)
	if diff := cmp.Diff(want, memo.view); diff != "" {
		t.Errorf("%s at %s: view (-FromUnstructured +memo):\n%s", u.GetUID(), u.GetResourceVersion(), diff)
	}
	if diff := cmp.Diff(wantErrs.ToAggregate(), memo.errs.ToAggregate()); diff != "" {
		t.Errorf("%s: errors (-FromUnstructured +memo):\n%s", u.GetUID(), diff)
	}
	return memo.view
}
