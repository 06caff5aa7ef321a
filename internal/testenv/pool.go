package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Starting an API server with every CRD and CAPZ's webhooks costs about
// 25 CPU-seconds on a 2-core machine (kube-apiserver alone 15, etcd 3, the
// CRDs and webhooks the rest; measured with a bare envtest.Environment):
// with a hundred envtests in the suite that was most of `make test`'s
// time. A package whose TestMain calls Main therefore reuses them: when a
// test stops its environment, the environment is emptied back to what it
// held when first handed out (reset.go) and handed to the next test of the
// same schema. Every test still starts from an API server that holds only
// the CRDs, CAPZ's webhooks and the API server's own objects; one that
// cannot be emptied, or whose CRDs or webhooks the test changed, is stopped
// and the next test gets a new one. Main stops every environment before the
// test binary exits, so no server outlives its package, and fails the
// package when one of them failed to stop.
var pool = struct {
	sync.Mutex
	on bool
	// idle holds, per schema, the environments tests finished with, each
	// being emptied for the next test (or refused, with the reason).
	idle map[Schema][]chan started
	// stopping counts environments stopping in the background.
	stopping sync.WaitGroup
	// errs collects background stop errors, reported by Main.
	errs []error
	// started, reused and refused are reported by Main under -v.
	started, reused int
	refused         []string
}{idle: map[Schema][]chan started{}}

type started struct {
	env *Env
	err error
}

// Main runs the package's tests with reused environments (see pool) and
// exits. Call it from TestMain.
func Main(m *testing.M) {
	pool.Lock()
	pool.on = true
	pool.Unlock()
	code := m.Run()
	err := drain()
	if testing.Verbose() {
		pool.Lock()
		fmt.Fprintf(os.Stderr, "testenv: %d API servers started, %d reused", pool.started, pool.reused)
		if len(pool.refused) > 0 {
			fmt.Fprintf(os.Stderr, "; not reused: %s", strings.Join(pool.refused, "; "))
		}
		fmt.Fprintln(os.Stderr)
		pool.Unlock()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// poolable says whether Start may hand out a reused environment for opts:
// only the plain ones, which any test of that schema can use.
func poolable(opts Options) bool {
	pool.Lock()
	defer pool.Unlock()
	return pool.on && len(opts.ExtraCRDs) == 0 && len(opts.APIServerFlags) == 0
}

// take returns an emptied environment of the schema a test finished with,
// or starts one and records its baseline.
func take(ctx context.Context, opts Options) (*Env, error) {
	for {
		pool.Lock()
		q := pool.idle[opts.Schema]
		if len(q) == 0 {
			pool.Unlock()
			break
		}
		pool.idle[opts.Schema] = q[1:]
		pool.Unlock()
		if r := <-q[0]; r.err == nil {
			pool.Lock()
			pool.reused++
			pool.Unlock()
			return r.env, nil
		}
	}
	e, err := start(ctx, opts)
	if err != nil {
		return nil, err
	}
	e.pooled = true
	pool.Lock()
	pool.started++
	pool.Unlock()
	// Without a baseline the environment is simply not reused.
	if base, err := e.snapshot(ctx); err == nil {
		e.base = base
	}
	return e, nil
}

// giveBack empties a pooled environment in the background for the next
// test of its schema, or stops it when it cannot be reused.
func giveBack(e *Env) {
	ch := make(chan started, 1)
	pool.Lock()
	if !pool.on {
		pool.Unlock()
		stopLater(e)
		return
	}
	pool.idle[e.startSchema] = append(pool.idle[e.startSchema], ch)
	pool.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.reset(ctx); err != nil {
			pool.Lock()
			pool.refused = append(pool.refused, err.Error())
			pool.Unlock()
			stopLater(e)
			ch <- started{err: err}
			return
		}
		ch <- started{env: e}
	}()
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

// drain stops the environments no test is using and waits for every
// background stop.
func drain() error {
	pool.Lock()
	idle := pool.idle
	pool.idle = map[Schema][]chan started{}
	pool.on = false
	pool.Unlock()
	for _, q := range idle {
		for _, ch := range q {
			if r := <-ch; r.err == nil {
				stopLater(r.env)
			}
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
