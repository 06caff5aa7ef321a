package cacheconfig_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/cacheconfig"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// A cached read of a kind nobody declared fails at once, and names the kind;
// a declared kind is served from the cache.
func TestMissingInformerFailsLoudly(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{"team": "a"}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Client: cacheconfig.Client(), Cache: cacheconfig.Cache(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cacheconfig.Cached(mgr, azure.CachedKinds()...); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache never synced")
	}

	// Declared: a namespace's labels come from the cache.
	got := &corev1.Namespace{}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(ns), got); err != nil || got.Labels["team"] != "a" {
		t.Fatalf("declared kind: got %v, %v; want the namespace with its labels", got.Labels, err)
	}

	// Not declared: the read fails at once instead of starting an informer
	// (which, without list and watch, would wait for ever).
	start := time.Now()
	err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	var notCached *cache.ErrResourceNotCached
	if !errors.As(err, &notCached) || notCached.GVK.Kind != "ConfigMap" {
		t.Fatalf("undeclared kind: got %v, want ErrResourceNotCached for ConfigMap", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("undeclared kind: the read took %v before failing", d)
	}
	// Past the cache, the same object is read.
	if err := mgr.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
		t.Fatalf("API reader: %v", err)
	}
}
