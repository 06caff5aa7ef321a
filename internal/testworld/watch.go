package testworld

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Watch runs check every 20 ms until the returned function is called (or
// the test ends), and records each description check returns of a state
// that must never be ("" when the state is fine). The function stops the
// watch and returns what was recorded. It is for invariants that must hold
// throughout a sequence (a name never resolving to a freed address, an
// annotation never empty), which a final look cannot prove.
func Watch(t testing.TB, check func() string) func() []string {
	t.Helper()
	stop, done := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var seen []string
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if v := check(); v != "" {
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	finish := func() []string {
		once.Do(func() { close(stop); <-done })
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
	t.Cleanup(func() { finish() })
	return finish
}

// WatchClusters calls record with every state of the AzureClusters of a
// namespace (of one of them, if name is not "") that a watch shows, in
// order, until the test ends. The API server ends a watch now and then,
// and always when the CRD is replaced (a CAPZ upgrade): it is opened
// again, which shows the current state first. record runs on one
// goroutine.
func (w *World) WatchClusters(t testing.TB, namespace, name string, record func(*unstructured.Unstructured)) {
	t.Helper()
	dc, err := dynamic.NewForConfig(w.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := capz.AzureClusterGVK.GroupVersion().WithResource("azureclusters")
	var opts metav1.ListOptions
	if name != "" {
		opts.FieldSelector = "metadata.name=" + name
	}
	ctx, cancel := context.WithCancel(context.Background())
	open := func() (watch.Interface, error) { return dc.Resource(gvr).Namespace(namespace).Watch(ctx, opts) }
	wi, err := open()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for wi != nil {
			for ev := range wi.ResultChan() {
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Deleted {
					record(u)
				}
			}
			wi = reopen(ctx, open)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// reopen opens a watch again until it succeeds; nil once ctx is done.
func reopen(ctx context.Context, open func() (watch.Interface, error)) watch.Interface {
	for ctx.Err() == nil {
		if wi, err := open(); err == nil {
			return wi
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}
