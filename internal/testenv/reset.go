package testenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// An environment a test has finished with is emptied back to what the API
// server held when it was first handed out (its baseline: the API server's
// own objects, the CRDs and CAPZ's webhook configurations) and handed to the
// next test of the same schema (pool.go). Emptying is strict: every object
// the test made is deleted (finalizers dropped, namespaces finalized, the
// namespace controller's work, which envtest does not run), and an
// environment whose baseline changed (a CRD or webhook configuration
// replaced, a schema upgraded, a baseline object deleted or edited) or
// that does not come back empty is stopped instead, and the next test gets
// a new one.

// objKey names one object of the API server.
type objKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (k objKey) String() string {
	if k.namespace == "" {
		return k.gvr.Resource + "/" + k.name
	}
	return k.gvr.Resource + " " + k.namespace + "/" + k.name
}

// baseline is what an environment holds when first handed out: each
// object's generation (or resourceVersion, for kinds without one).
type baseline map[objKey]string

// volatile kinds are written by the API server itself while it runs
// (leases it renews, its own endpoints, priority-and-fairness status,
// Events): their baseline objects may change, extra ones are still deleted.
var volatile = map[string]bool{
	"leases": true, "endpoints": true, "endpointslices": true,
	"flowschemas": true, "prioritylevelconfigurations": true, "events": true,
}

// inventory lists every object of every kind the API server can list and
// delete, metadata only: a baseline and a reset need no more, and the CRDs
// in full are megabytes the API server would encode and the test decode at
// every round.
func (e *Env) inventory(ctx context.Context) (map[objKey]*metav1.PartialObjectMetadata, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.quiet())
	if err != nil {
		return nil, err
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	mc, err := metadata.NewForConfig(e.quiet())
	if err != nil {
		return nil, err
	}
	all := map[objKey]*metav1.PartialObjectMetadata{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			got, err := mc.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", gvr, err)
			}
			for i := range got.Items {
				o := &got.Items[i]
				all[objKey{gvr: gvr, namespace: o.GetNamespace(), name: o.GetName()}] = o
			}
		}
	}
	return all, nil
}

// quiet is the administrator's config without the API server's deprecation
// warnings (every kind is listed, deprecated ones too).
func (e *Env) quiet() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// version is what a baseline records of an object: its generation, which
// only a spec change moves, or else its resourceVersion.
func version(o *metav1.PartialObjectMetadata) string {
	if g := o.GetGeneration(); g != 0 {
		return fmt.Sprintf("g%d", g)
	}
	return "rv" + o.GetResourceVersion()
}

// snapshot records the environment's baseline.
func (e *Env) snapshot(ctx context.Context) (baseline, error) {
	all, err := e.inventory(ctx)
	if err != nil {
		return nil, err
	}
	b := baseline{}
	for k, o := range all {
		b[k] = version(o)
	}
	return b, nil
}

// reset empties the environment back to its baseline, or says why it
// cannot be reused.
func (e *Env) reset(ctx context.Context) error {
	switch {
	case e.base == nil:
		return errors.New("no baseline was recorded")
	case e.Schema != e.startSchema:
		return fmt.Errorf("the schema moved from %s to %s", e.startSchema, e.Schema)
	case e.webhooks == nil:
		return errors.New("CAPZ's webhooks are not running")
	}
	select {
	case <-e.webhooks.Done():
		return errors.New("CAPZ's webhook server exited")
	default:
	}
	dyn, err := dynamic.NewForConfig(e.quiet())
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(e.quiet())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		all, err := e.inventory(ctx)
		if err != nil {
			return err
		}
		if err := e.base.unchanged(all); err != nil {
			return err
		}
		extra := e.base.extra(all)
		if len(extra) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d objects the test made are still there, e.g. %s", len(extra), extra[0])
		}
		if err := deleteAll(ctx, dyn, cs, extra, all); err != nil {
			return err
		}
	}
}

// unchanged fails when a baseline object is gone or changed.
func (b baseline) unchanged(all map[objKey]*metav1.PartialObjectMetadata) error {
	for k, v := range b {
		if volatile[k.gvr.Resource] {
			continue
		}
		o, ok := all[k]
		switch {
		case !ok:
			return fmt.Errorf("%s was deleted", k)
		case version(o) != v:
			return fmt.Errorf("%s was changed", k)
		}
	}
	return nil
}

// extra lists the objects not in the baseline, namespaced ones first and
// namespaces last, so a namespace is emptied before it is finalized.
func (b baseline) extra(all map[objKey]*metav1.PartialObjectMetadata) []objKey {
	var out []objKey
	for k := range all {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	rank := func(k objKey) int {
		switch {
		case k.namespace != "":
			return 0
		case k.gvr.Resource == "namespaces" && k.gvr.Group == "":
			return 2
		default:
			return 1
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if rank(out[i]) != rank(out[j]) {
			return rank(out[i]) < rank(out[j])
		}
		return out[i].String() < out[j].String()
	})
	return out
}

// deleteAll deletes the objects, dropping their finalizers first, and
// finalizes the namespaces among them.
func deleteAll(ctx context.Context, dyn dynamic.Interface, cs kubernetes.Interface, keys []objKey, all map[objKey]*metav1.PartialObjectMetadata) error {
	for _, k := range keys {
		ri := dyn.Resource(k.gvr).Namespace(k.namespace)
		if len(all[k].GetFinalizers()) > 0 {
			_, err := ri.Patch(ctx, k.name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("dropping the finalizers of %s: %w", k, err)
			}
		}
		if err := ri.Delete(ctx, k.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
		if k.gvr.Group == "" && k.gvr.Resource == "namespaces" {
			if err := finalizeNamespace(ctx, cs, k.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// finalizeNamespace does what the namespace controller does once a
// namespace is empty: it drops the namespace's spec finalizers, and the
// API server removes it.
func finalizeNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ns.Spec.Finalizers) == 0 {
		return nil
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	return nil
}
