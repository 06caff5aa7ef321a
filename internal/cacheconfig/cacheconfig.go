// Package cacheconfig holds the client and cache options every manager of
// the operator runs with, so that the binary and the controller tests read
// Kubernetes the same way.
//
// The rule: a controller reads from the cache only the kinds it watches or
// declares with Cached at setup. A cached read of any other kind fails at
// once with cache.ErrResourceNotCached instead of starting an informer on
// the spot, which needs list and watch on the kind cluster-wide and, when
// the chart does not grant them, waits for ever with nothing in the log. A
// kind read once per reconcile and not watched (a control plane, a
// Crossplane ProviderConfig, a Service a consumer publishes to) is read past
// the cache (the manager's API reader).
package cacheconfig

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Client is the managers' client options: CAPZ's and Cluster API's kinds
// are read as unstructured objects from the cache, Secrets never (the
// operator reads the few Secrets identities reference, past the cache).
func Client() client.Options {
	return client.Options{Cache: &client.CacheOptions{Unstructured: true, DisableFor: []client.Object{&corev1.Secret{}}}}
}

// Cache is the managers' cache options: transform trims what the cache
// keeps of each object, and a read of a kind without an informer fails.
func Cache(transform toolscache.TransformFunc) cache.Options {
	return cache.Options{DefaultTransform: transform, ReaderFailOnMissingInformer: true}
}

// Cached declares the kinds a controller reads from the cache without
// watching them: their informers start with the manager, and the cache
// serves them once synced. Unstructured objects need their kind set.
func Cached(mgr ctrl.Manager, objs ...client.Object) error {
	for _, obj := range objs {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj, cache.BlockUntilSynced(false)); err != nil {
			gvk, _ := apiutil.GVKForObject(obj, mgr.GetScheme())
			return fmt.Errorf("starting the cache of %s: %w", gvk.Kind, err)
		}
	}
	return nil
}
