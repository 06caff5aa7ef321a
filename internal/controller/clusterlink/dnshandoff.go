package clusterlink

import (
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// dnsHandOff is what the DNS controller (dnsmode.go) tells the wiring
// (wc.go), in process: what each side's records of a workload cluster hold
// after the last DNS pass, and whether a deleted cluster's DNS is
// released. The other way, the wiring tells the DNS controller nothing in
// memory: it publishes the IP annotations on the AzureCluster, which the
// DNS controller watches and follows (docs/design.md, *The wiring's
// pipeline*).
//
// The rule "a record holds only the address of an Approved endpoint of its
// cluster" asks that the wiring delete an endpoint (a heal), retire one (a
// layout switch) or drop the managed private link service (a hand-over)
// only once the records no longer hold its address, and that it release
// its finalizer only once the DNS is gone. Unknown (no pass yet, as after a
// restart, or a pass that did not finish) holds those steps back. A
// cluster the wiring held back is woken (wake) as soon as its state
// changes, so the wait costs no recheck interval.
type dnsHandOff struct {
	mu sync.Mutex
	// held is, per "<wc>|<side>", the address the records hold: "" none,
	// heldNothing when the operator writes no records on that side.
	held map[string]string
	// released are the deleted clusters (by UID) whose DNS is gone.
	released map[string]types.UID
	// waiting are the clusters the wiring held back.
	waiting map[string]bool
	// wake reaches the wiring's queue; nil: nobody listens.
	wake chan event.GenericEvent
}

// heldNothing is what a side holds whose records the operator does not
// write (no endpoints, or names it cannot build).
const heldNothing = "-"

func newDNSHandOff() *dnsHandOff {
	// The buffer takes a burst of wake-ups; beyond it one is dropped, and
	// the wiring's own recheck (pendingRecheck) brings that cluster back.
	return &dnsHandOff{held: map[string]string{}, released: map[string]types.UID{}, waiting: map[string]bool{}, wake: make(chan event.GenericEvent, 1024)}
}

// note records what one side's records hold after a pass; a pass that did
// not finish (known false) makes it unknown.
func (h *dnsHandOff) note(wc string, side DNSSide, ip string, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := wc + "|" + string(side)
	was, had := h.held[k]
	if !known {
		delete(h.held, k)
		return
	}
	h.held[k] = ip
	if !had || was != ip {
		h.wakeLocked(wc)
	}
}

// dnsSide is the side whose records take the IP of a direction's
// endpoints: the MC's network resolves the WC's API (MC→WC endpoints), the
// WC's network the MC's ingress (WC→MC endpoints).
func dnsSide(d Direction) DNSSide {
	if d == DirectionMCToWC {
		return DNSSideMC
	}
	return DNSSideWC
}

// allowsHeal says whether an endpoint of direction d whose address is ip
// may be deleted: its side's records are known not to hold ip (an address
// Azure gives to the next endpoint in the subnet).
func (h *dnsHandOff) allowsHeal(wc string, d Direction, ip string) bool {
	return h.check(wc, d, func(held string) bool { return held == heldNothing || held == "" || ip != "" && held != ip })
}

// holds says whether the records of direction d's side hold ip (or the
// operator writes none there), so that the endpoint they held before may
// go.
func (h *dnsHandOff) holds(wc string, d Direction, ip string) bool {
	return h.check(wc, d, func(held string) bool { return held == heldNothing || held == ip })
}

// check applies ok to what d's side holds; unknown is false. A cluster
// held back is woken when its state changes.
func (h *dnsHandOff) check(wc string, d Direction, ok func(string) bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, known := h.held[wc+"|"+string(dnsSide(d))]
	if known && ok(held) {
		return true
	}
	h.waiting[wc] = true
	return false
}

// markReleased says that the DNS of the deleted cluster wc (uid) is gone,
// and forgets what its records held.
func (h *dnsHandOff) markReleased(wc string, uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, wc+"|"+string(DNSSideMC))
	delete(h.held, wc+"|"+string(DNSSideWC))
	h.released[wc] = uid
	h.wakeLocked(wc)
}

// isReleased says whether the DNS of the deleted cluster wc (uid) is gone;
// the wiring is woken when it is.
func (h *dnsHandOff) isReleased(wc string, uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released[wc] == uid {
		return true
	}
	h.waiting[wc] = true
	return false
}

// releasedAlready says, without waiting for it, whether the DNS of the
// deleted cluster wc (uid) is gone: the DNS controller's later passes of a
// cluster still being deleted read nothing again.
func (h *dnsHandOff) releasedAlready(wc string, uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released[wc] == uid
}

// forget drops a cluster whose finalizer the wiring released.
func (h *dnsHandOff) forget(wc string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, wc+"|"+string(DNSSideMC))
	delete(h.held, wc+"|"+string(DNSSideWC))
	delete(h.released, wc)
	delete(h.waiting, wc)
}

// wakeLocked enqueues a waiting cluster in the wiring, without blocking.
func (h *dnsHandOff) wakeLocked(wc string) {
	if !h.waiting[wc] || h.wake == nil {
		return
	}
	delete(h.waiting, wc)
	ns, name, _ := strings.Cut(wc, "/")
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	select {
	case h.wake <- event.GenericEvent{Object: client.Object(obj)}:
	default:
	}
}
