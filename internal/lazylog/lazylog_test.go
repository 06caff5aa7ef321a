package lazylog_test

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/lazylog"
)

// counting counts the With calls that reach the encoding core.
type counting struct {
	zapcore.Core
	withs *atomic.Int32
}

func (c counting) With(fields []zapcore.Field) zapcore.Core {
	c.withs.Add(1)
	return counting{c.Core.With(fields), c.withs}
}

func (c counting) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func newLogger(t *testing.T, lazy bool) (*bytes.Buffer, *atomic.Int32, *zap.Logger) {
	t.Helper()
	var buf bytes.Buffer
	withs := &atomic.Int32{}
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg", LevelKey: "level", EncodeLevel: zapcore.LowercaseLevelEncoder})
	var core zapcore.Core = counting{zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel), withs}
	if lazy {
		core = lazylog.Core(core)
	}
	return &buf, withs, zap.New(core)
}

// TestCore: a chain of WithValues encodes nothing until the logger writes
// at an enabled level; what it writes has every field, as without the
// wrapper; a logger that never writes never encodes.
func TestCore(t *testing.T) {
	lines := map[bool]string{}
	for _, lazy := range []bool{false, true} {
		buf, withs, z := newLogger(t, lazy)
		log := zapr.NewLogger(z).WithName("controller").WithValues("controller", "wc", "object", map[string]string{"name": "wc1"})
		log = log.WithValues("reconcileID", "r-1")
		silent := log.WithValues("never", "logged")
		log.V(1).Info("not enabled")
		if lazy && withs.Load() != 0 {
			t.Errorf("lazy: %d Withs reached the encoder before anything was written", withs.Load())
		}
		if !lazy && withs.Load() == 0 {
			t.Fatal("the counting core counts nothing: the test shows nothing")
		}
		log.Info("done", "took", 2)
		if lazy && withs.Load() != 2 {
			t.Errorf("lazy: %d Withs reached the encoder after one write, want the chain's 2", withs.Load())
		}
		_ = silent
		var m map[string]any
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("lazy=%v: %v: %q", lazy, err, buf.String())
		}
		for _, k := range []string{"controller", "object", "reconcileID", "took"} {
			if _, ok := m[k]; !ok {
				t.Errorf("lazy=%v: %q missing from %s", lazy, k, buf.String())
			}
		}
		lines[lazy] = buf.String()
	}
	if lines[false] != lines[true] {
		t.Errorf("the lazy core writes\n%s\nwhere the core writes\n%s", lines[true], lines[false])
	}
}

// BenchmarkWithValues is what a reconcile's logger costs when the
// reconcile logs nothing (controller-runtime's fields).
func BenchmarkWithValues(b *testing.B) {
	for _, lazy := range []bool{false, true} {
		name := "eager"
		if lazy {
			name = "lazy"
		}
		b.Run(name, func(b *testing.B) {
			enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
			core := zapcore.NewCore(enc, zapcore.AddSync(&bytes.Buffer{}), zapcore.InfoLevel)
			if lazy {
				core = lazylog.Core(core)
			}
			log := zapr.NewLogger(zap.New(core))
			b.ReportAllocs()
			for b.Loop() {
				l := log.WithValues("controller", "workload-cluster", "controllerGroup", "infrastructure.cluster.x-k8s.io",
					"controllerKind", "AzureCluster", "AzureCluster", map[string]string{"name": "wc1", "namespace": "org-1"},
					"namespace", "org-1", "name", "wc1", "reconcileID", "7d1c1d8e-0c1b-4e5e-9a53-6f1f0f2b9a77")
				l.V(1).Info("not logged")
			}
		})
	}
}
