package clusterlink

import (
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// mcSnapshot reads the management cluster for WC reconciles: from the cache
// without copying it, and parsed once per resourceVersion. Every MC change
// reconciles every WC, and at 1,000 WCs the MC object is about 450 KiB, so a
// copy and a parse per WC reconcile would dominate the operator's CPU.
// Callers must not modify what it returns.
type mcSnapshot struct {
	mu    sync.Mutex
	state mcState
}

// mcState is the MC as one resourceVersion shows it, with what the
// decisions need from its managedFields, parsed once.
type mcState struct {
	u    *unstructured.Unstructured
	view *capz.AzureCluster
	// owned is what the operator holds of the MC (capz.CurrentOwned).
	owned capz.Owned
	// owners are the field managers of each endpoint entry the cache shows
	// (capz.EndpointOwners).
	owners map[capz.EndpointKey][]string
	// held is what the operator holds of owned's entries (heldTargets): every WC's
	// plan asks, and at 1,000 WCs building it per plan is a million map
	// writes per MC change.
	held Held
	// taken is TakenNames of the MC, computed once per resourceVersion
	// (takenNames).
	taken *takenMemo
}

// takenMemo holds TakenNames of one MC state for the field managers it
// was computed with. Every WC's plan asks for it, and computing it per
// plan is a lookup per MC entry per WC pass: at N = 1,000 in DNS mode
// 1.3 s of the operator's CPU, growing with N².
type takenMemo struct {
	mu          sync.Mutex
	adopt, capz []string
	names       map[string]bool
}

// takenNames is TakenNames(s.view, s.owners, opts.olderInMC()), which
// depends on opts only through its field manager lists. Callers must not
// modify the map.
func (s mcState) takenNames(opts Options) map[string]bool {
	if s.taken == nil {
		return TakenNames(s.view, s.owners, opts.olderInMC())
	}
	m := s.taken
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.names == nil || !slices.Equal(m.adopt, opts.AdoptFieldManagers) || !slices.Equal(m.capz, opts.CAPZFieldManagers) {
		m.adopt, m.capz = opts.AdoptFieldManagers, opts.CAPZFieldManagers
		m.names = TakenNames(s.view, s.owners, opts.olderInMC())
	}
	return m.names
}

func (s *mcSnapshot) get(ctx context.Context, c client.Reader, key types.NamespacedName) (*unstructured.Unstructured, *capz.AzureCluster, error) {
	st, err := s.read(ctx, c, key)
	return st.u, st.view, err
}

// read returns the MC's current state; a zero state when it does not exist.
//
// One cached Get without a copy: the cache's object is shared, never
// written. (It was a list of the MC's namespace, filtered by name: with
// the workload clusters in the MC's namespace, a look at each of them per
// WC pass.)
func (s *mcSnapshot) read(ctx context.Context, c client.Reader, key types.NamespacedName) (mcState, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := c.Get(ctx, key, u, client.UnsafeDisableDeepCopy); err != nil {
		return mcState{}, client.IgnoreNotFound(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.state.u; old == nil || old.GetUID() != u.GetUID() || old.GetResourceVersion() != u.GetResourceVersion() {
		// What could be read is used even when some field is malformed;
		// the MC reconcile reports the errors.
		view, _ := capz.FromUnstructured(u)
		owned := capz.CurrentOwned(u, view, capz.FieldManager)
		s.state = mcState{u: u, view: view, owned: owned, owners: capz.EndpointOwners(u), held: heldTargets(owned.Endpoints), taken: &takenMemo{}}
	}
	return s.state, nil
}

// last is the MC as it was last read, even if it is gone now; the zero
// state when it was never read.
func (s *mcSnapshot) last() mcState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}
