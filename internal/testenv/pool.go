package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
)

// Starting an API server with every CRD and CAPZ's webhooks takes 6-10 s on
// a 2-core machine and stopping it about 2 s, most of it waiting: in a
// package of thirty envtests that is five minutes of the suite. A package
// whose TestMain calls Main gets its environments from a pool instead: when
// a test takes an environment, the next one of the same schema starts in
// the background, and a stopped environment finishes stopping in the
// background. Each test still gets a fresh API server of its own; nothing is
// reused. Main waits for every background start and stop before the test
// binary exits, so no server outlives its package, and fails the package
// when one of them failed.
var pool = struct {
	sync.Mutex
	on bool
	// next holds one environment starting (or started) per schema.
	next map[Schema]chan started
	// stopping counts environments stopping in the background.
	stopping sync.WaitGroup
	// errs collects background stop errors, reported by Main.
	errs []error
}{next: map[Schema]chan started{}}

type started struct {
	env *Env
	err error
}

// Main runs the package's tests with pooled environments (see pool) and
// exits. Call it from TestMain.
func Main(m *testing.M) {
	pool.Lock()
	pool.on = true
	pool.Unlock()
	code := m.Run()
	if err := drain(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// poolable says whether Start may hand out a pre-started environment for
// opts: only the plain ones, which any test of that schema can use.
func poolable(opts Options) bool {
	pool.Lock()
	defer pool.Unlock()
	return pool.on && len(opts.ExtraCRDs) == 0 && len(opts.APIServerFlags) == 0
}

// take returns a started environment of the schema and starts the next one
// in the background. A background start that failed is tried again here, so
// the test reports the error of its own attempt.
func take(ctx context.Context, opts Options) (*Env, error) {
	pool.Lock()
	ch := pool.next[opts.Schema]
	next := make(chan started, 1)
	pool.next[opts.Schema] = next
	pool.Unlock()
	// The next environment is for the next test: this call's cancellation
	// does not stop it.
	bg := context.WithoutCancel(ctx)
	go func() {
		e, err := start(bg, Options{Schema: opts.Schema})
		next <- started{env: e, err: err}
	}()
	if ch != nil {
		if r := <-ch; r.err == nil {
			r.env.pooled = true
			return r.env, nil
		}
	}
	e, err := start(ctx, opts)
	if err != nil {
		return nil, err
	}
	e.pooled = true
	return e, nil
}

// stopLater stops a pooled environment in the background.
func stopLater(e *Env) {
	pool.stopping.Add(1)
	go func() {
		defer pool.stopping.Done()
		if err := e.stop(); err != nil {
			pool.Lock()
			pool.errs = append(pool.errs, err)
			pool.Unlock()
		}
	}()
}

// drain stops the environments started for tests that never came and waits
// for every background stop.
func drain() error {
	pool.Lock()
	pending := pool.next
	pool.next = map[Schema]chan started{}
	pool.on = false
	pool.Unlock()
	for _, ch := range pending {
		if r := <-ch; r.err == nil {
			stopLater(r.env)
		}
	}
	pool.stopping.Wait()
	pool.Lock()
	defer pool.Unlock()
	if len(pool.errs) > 0 {
		return fmt.Errorf("stopping test environments: %v", pool.errs)
	}
	return nil
}
