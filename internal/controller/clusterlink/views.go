package clusterlink

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// viewMemo keeps the view (capz.FromUnstructured) of each workload
// cluster's AzureCluster the MC's pass read, and what its condition says
// of the MC's services (servicesSay), by the object's UID and
// resourceVersion: an object the API server has not changed since the
// last pass is not read again. Every MC pass reads every WC, and at N
// = 3,000 (test/scale --profile-dir) converting them all on every pass
// was 7.7 s of the 140 s of CPU the operator spent converging, growing
// with N × passes; with the memo a pass converts only the WCs that
// changed since the one before.
//
// The views are shared between passes: what reads them must not write
// them (decideMC and what it calls build new values; TestDecideMC checks
// that the views it was given are unchanged). Memory: the views of the
// WCs seen in the last pass, about 1 KiB each beside the cache's objects,
// whose strings they share. A restart starts with an empty memo: it only
// saves work, it decides nothing.
type viewMemo struct {
	mu    sync.Mutex
	views map[types.UID]memoView
}

type memoView struct {
	resourceVersion string
	view            *capz.AzureCluster
	errs            field.ErrorList
	// servicesSay is servicesSay of the object.
	servicesSay string
}

// viewPass is one pass over the WCs: the views it reads become the memo's
// when it ends (those of objects it did not read are forgotten).
type viewPass struct {
	memo *viewMemo
	next map[types.UID]memoView
}

// pass starts a pass; end it with end. Passes do not overlap: the MC's
// reconciles are of one key, which controller-runtime never runs twice at
// once, and the lock makes sure of it.
func (m *viewMemo) pass() *viewPass {
	m.mu.Lock()
	return &viewPass{memo: m, next: make(map[types.UID]memoView, len(m.views))}
}

// of is the view of u, as capz.FromUnstructured gives it, with what
// servicesSay says of u.
func (p *viewPass) of(u *unstructured.Unstructured) memoView {
	uid, rv := u.GetUID(), u.GetResourceVersion()
	if v, ok := p.memo.views[uid]; ok && uid != "" && rv != "" && v.resourceVersion == rv {
		p.next[uid] = v
		return v
	}
	view, errs := capz.FromUnstructured(u)
	v := memoView{resourceVersion: rv, view: view, errs: errs, servicesSay: servicesSay(u)}
	if uid != "" && rv != "" {
		// Else not an API server's object (unit tests): nothing
		// identifies its content.
		p.next[uid] = v
	}
	return v
}

// end makes the views this pass read the memo's.
func (p *viewPass) end() {
	p.memo.views = p.next
	p.memo.mu.Unlock()
}
