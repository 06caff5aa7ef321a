package azure

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCachedCredentialWorkStops: the background work of a cached credential
// (a UserAssignedIdentityCredential's file watcher) stops when the entry is
// replaced, forgotten, or the operator shuts down; never while it is in use.
func TestCachedCredentialWorkStops(t *testing.T) {
	done := make(chan struct{})
	c := &Credentials{Done: done}
	entry := func() (*credEntry, context.Context) {
		ctx, stop := c.entryContext()
		return &credEntry{stop: stop}, ctx
	}
	stopped := func(ctx context.Context) bool {
		select {
		case <-ctx.Done():
			return true
		case <-time.After(10 * time.Millisecond):
			return false
		}
	}
	first, firstCtx := entry()
	c.replace("k", first)
	second, secondCtx := entry()
	c.replace("k", first) // the same entry again: nothing stops
	type state struct{ First, Second bool }
	if diff := cmp.Diff(state{false, false}, state{stopped(firstCtx), stopped(secondCtx)}); diff != "" {
		t.Errorf("after setting the same entry again (-want +got):\n%s", diff)
	}
	c.replace("k", second)
	if diff := cmp.Diff(state{true, false}, state{stopped(firstCtx), stopped(secondCtx)}); diff != "" {
		t.Errorf("after a rebuild (-want +got):\n%s", diff)
	}
	c.Forget("k")
	if diff := cmp.Diff(state{true, true}, state{stopped(firstCtx), stopped(secondCtx)}); diff != "" {
		t.Errorf("after Forget (-want +got):\n%s", diff)
	}
	third, thirdCtx := entry()
	c.replace("k", third)
	close(done)
	select {
	case <-thirdCtx.Done():
	case <-time.After(time.Minute):
		t.Error("shutdown did not stop the cached credential's work")
	}
}
