package cpgate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestDecide(t *testing.T) {
	gated := Observed{MCPrivate: true, Owned: true, HasInfrastructure: true, WCPrivate: true, Unmet: []string{"GSDNSZoneReady"}}
	with := func(f func(*Observed)) Observed { o := gated; f(&o); return o }
	ours := func(f func(*Observed)) Observed {
		return with(func(o *Observed) { o.Paused, o.PausedByOperator = true, true; f(o) })
	}
	cases := []struct {
		reason string
		o      Observed
		want   Decision
	}{
		{"a private WC whose gate is unmet is held", gated, Hold},
		{"held and already paused by the operator: still held", with(func(o *Observed) { o.Paused, o.PausedByOperator = true, true }), Hold},
		{"every gate met, the operator's pause: released", with(func(o *Observed) { o.Unmet, o.Paused, o.PausedByOperator = nil, true, true }), Release},
		{"every gate met, not paused: nothing to do", with(func(o *Observed) { o.Unmet = nil }), Skip},
		{"someone else's pause is never lifted", with(func(o *Observed) { o.Unmet, o.Paused = nil, true }), Leave},
		{"someone else's pause while a gate is unmet: left, not marked", with(func(o *Observed) { o.Paused = true }), Leave},
		{"a public MC gates nothing", with(func(o *Observed) { o.MCPrivate = false }), Skip},
		{"an initialized control plane is left", with(func(o *Observed) { o.Initialized = true }), Skip},
		{"a control plane being deleted is left", with(func(o *Observed) { o.Deleting = true }), Skip},
		{"a control plane without owning Cluster is left", with(func(o *Observed) { o.Owned = false }), Skip},
		{"a paused Cluster's control plane is left (clusterctl move)", with(func(o *Observed) { o.ClusterPaused = true }), Skip},
		{"a Cluster without infrastructure reference is left", with(func(o *Observed) { o.HasInfrastructure = false }), Skip},
		{"a public WC is not gated", with(func(o *Observed) { o.WCPrivate = false }), Skip},
		{"an unselected control plane is not gated", with(func(o *Observed) { o.Unselected = true }), Skip},
		{"gates off: nothing is paused", with(func(o *Observed) { o.GatesOff = true }), Skip},
		// The operator's own pause goes whenever the gate no longer applies:
		// upstream KubeadmControlPlane returns on pause before deletion.
		{"the operator's pause on a control plane being deleted is lifted", ours(func(o *Observed) { o.Deleting = true }), Release},
		{"deletion first: lifted even while the Cluster is paused", ours(func(o *Observed) { o.Deleting, o.ClusterPaused = true, true }), Release},
		{"deletion first: lifted even with the MC gone", ours(func(o *Observed) { o.Deleting, o.MCMissing = true, true }), Release},
		{"a public MC: the operator's pause is lifted", ours(func(o *Observed) { o.MCPrivate = false }), Release},
		{"the MC's AzureCluster is gone: the operator's pause is lifted", ours(func(o *Observed) { o.MCMissing, o.MCPrivate = true, false }), Release},
		{"the WC turned public: the operator's pause is lifted", ours(func(o *Observed) { o.WCPrivate = false }), Release},
		{"the gates were turned off: the operator's pause is lifted", ours(func(o *Observed) { o.GatesOff = true }), Release},
		{"a condition left the list and the rest are met: lifted", ours(func(o *Observed) { o.Unmet = nil }), Release},
		{"initialized under the operator's pause: lifted", ours(func(o *Observed) { o.Initialized = true }), Release},
		{"no infrastructure any more: lifted", ours(func(o *Observed) { o.HasInfrastructure = false }), Release},
		{"a paused Cluster keeps the operator's pause (nothing is written during a move)", ours(func(o *Observed) { o.ClusterPaused = true }), Skip},
		{"someone else's pause on a control plane being deleted is left", with(func(o *Observed) { o.Deleting, o.Paused = true, true }), Skip},
		{"someone else's pause with the gates off is left", with(func(o *Observed) { o.GatesOff, o.Paused = true, true }), Skip},
		{"unselected, paused by another instance's filter value: left", ours(func(o *Observed) { o.Unselected = true }), Skip},
		{"unselected, paused by this instance's filter value: lifted", ours(func(o *Observed) { o.Unselected, o.FilterMatches = true, true }), Release},
		{"unselected and someone else's pause: left", with(func(o *Observed) { o.Unselected, o.Paused, o.FilterMatches = true, true, true }), Skip},
	}
	for _, c := range cases {
		if got, why := Decide(c.o); got != c.want {
			t.Errorf("%s: got %d (%s), want %d", c.reason, got, why, c.want)
		}
	}
}

func TestUnmet(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "GSPrivateLinksReady", "status": "True"},
		map[string]any{"type": "GSDNSZoneReady", "status": "False"},
		map[string]any{"type": "Ready", "status": "True"},
	}}}}
	got := Unmet(u, []string{"GSPrivateLinksReady", "GSDNSZoneReady", "Missing"})
	if diff := cmp.Diff([]string{"GSDNSZoneReady", "Missing"}, got); diff != "" {
		t.Errorf("unmet (-want +got):\n%s", diff)
	}
}
