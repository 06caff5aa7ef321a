package cpgate_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/cpgate"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

var gates = []string{"GSPrivateLinksReady", "GSDNSZoneReady"}

const (
	mcNS  = "org-giantswarm"
	ns    = "org-gates"
	human = "kubectl-annotate"
)

// TestGates runs every case of the gate on one API server, with the
// operator's controller as the binary sets it up: the operator's pause comes
// and goes with the gates; someone else's pause, an initialized control
// plane, a paused Cluster, a control plane without owner, a Cluster without
// infrastructure and a public WC are never touched; the older operator's
// unmarked pause is released.
func TestGates(t *testing.T) {
	env, _ := gateEnv(t)
	c := env.Client

	// Created before the operator starts, so that their first reconcile
	// comes before the one of "held" (one worker, in order).
	w := gateWorld{t: t, c: c}
	w.cluster("initialized", clusterOpts{private: true})
	w.setStatus(cpgate.KubeadmControlPlaneGVK, "initialized-cp", map[string]any{"initialization": map[string]any{"controlPlaneInitialized": true}})
	w.cluster("cluster-paused", clusterOpts{private: true, clusterPaused: true})
	w.cluster("no-owner", clusterOpts{private: true, noOwner: true})
	w.cluster("no-infra", clusterOpts{private: true, noInfra: true})
	w.cluster("public", clusterOpts{})
	w.cluster("human", clusterOpts{private: true, pausedBy: human})
	w.cluster("older", clusterOpts{private: true, pausedBy: "manager", olderFinalizer: true})
	// Another controller running as /manager (CAPI, CAPZ and every
	// kubebuilder scaffold do) pauses a control plane of a cluster the
	// older operator never reconciled: not the older operator's pause.
	w.cluster("other-manager", clusterOpts{private: true, pausedBy: "manager"})

	start(t, env, cpgate.Options{Gates: gates})
	w.cluster("held", clusterOpts{private: true})

	w.waitKCP("held", "paused by the operator", func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()[cpgate.PausedAnnotation] == "true" && u.GetAnnotations()[cpgate.PausedByAnnotation] == strings.Join(gates, ",")
	})
	w.waitEvent("held-cp", cpgate.ReasonPaused)
	for _, name := range []string{"initialized", "cluster-paused", "no-owner", "no-infra", "public"} {
		if _, paused := w.kcp(name).GetAnnotations()[cpgate.PausedAnnotation]; paused {
			t.Errorf("%s: paused; it must be left alone", name)
		}
	}

	// One gate met: still held.
	w.conditions("held", map[string]string{"GSPrivateLinksReady": "True"})
	w.conditions("human", map[string]string{"GSPrivateLinksReady": "True", "GSDNSZoneReady": "True"})
	w.conditions("older", map[string]string{"GSPrivateLinksReady": "True", "GSDNSZoneReady": "True"})
	w.conditions("other-manager", map[string]string{"GSPrivateLinksReady": "True", "GSDNSZoneReady": "True"})
	w.waitKCP("older", "the older operator's pause released", func(u *unstructured.Unstructured) bool {
		_, paused := u.GetAnnotations()[cpgate.PausedAnnotation]
		return !paused
	})
	if _, paused := w.kcp("held").GetAnnotations()[cpgate.PausedAnnotation]; !paused {
		t.Error("held: released with GSDNSZoneReady not True")
	}
	// Both met: released, the mark gone.
	w.conditions("held", map[string]string{"GSPrivateLinksReady": "True", "GSDNSZoneReady": "True"})
	w.waitKCP("held", "released", func(u *unstructured.Unstructured) bool {
		_, paused := u.GetAnnotations()[cpgate.PausedAnnotation]
		_, marked := u.GetAnnotations()[cpgate.PausedByAnnotation]
		return !paused && !marked
	})
	w.waitEvent("held-cp", cpgate.ReasonReleased)
	// The person's and the other controller's pauses stay, unmarked, with
	// every gate met.
	for _, name := range []string{"human", "other-manager"} {
		if u := w.kcp(name); u.GetAnnotations()[cpgate.PausedAnnotation] != "true" || u.GetAnnotations()[cpgate.PausedByAnnotation] != "" {
			t.Errorf("%s: someone else's pause was changed: %v", name, u.GetAnnotations())
		}
	}
	// A condition going back does not pause an initialized control plane.
	w.conditions("initialized", map[string]string{"GSPrivateLinksReady": "False"})
	w.conditions("held", map[string]string{"GSPrivateLinksReady": "True", "GSDNSZoneReady": "False"})
	w.waitKCP("held", "held again before initialization", func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()[cpgate.PausedByAnnotation] == "GSDNSZoneReady"
	})
	if _, paused := w.kcp("initialized").GetAnnotations()[cpgate.PausedAnnotation]; paused {
		t.Error("initialized: paused")
	}
}

// TestGateLiftsItsOwnPause: the operator's pause never outlives the reason
// for it. Upstream KubeadmControlPlane returns on pause before it handles
// deletion, so a pause left on a control plane being deleted keeps its
// Cluster Deleting forever; a WC turned public, gates turned off, a
// control plane that lost the watch-filter label and a management cluster
// that is gone all lift the operator's pause too. Another instance's
// control planes (another filter value) are never touched.
func TestGateLiftsItsOwnPause(t *testing.T) {
	env, mc := gateEnv(t)
	ctx := context.Background()
	c := env.Client
	w := gateWorld{t: t, c: c}
	pausedByOperator := func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()[cpgate.PausedAnnotation] == "true" && u.GetAnnotations()[cpgate.PausedByAnnotation] != ""
	}
	released := func(u *unstructured.Unstructured) bool {
		ann := u.GetAnnotations()
		_, paused := ann[cpgate.PausedAnnotation]
		_, marked := ann[cpgate.PausedByAnnotation]
		_, filter := ann[cpgate.PausedFilterAnnotation]
		return !paused && !marked && !filter
	}

	stop := start(t, env, cpgate.Options{Gates: gates})
	for _, name := range []string{"deleting", "initializes", "gates-off"} {
		w.cluster(name, clusterOpts{private: true})
		w.waitKCP(name, "paused by the operator", pausedByOperator)
	}
	// Deleted: Cluster API's finalizer keeps the object; the pause goes.
	if err := c.Delete(ctx, w.kcp("deleting")); err != nil {
		t.Fatal(err)
	}
	w.waitKCP("deleting", "released while being deleted", func(u *unstructured.Unstructured) bool {
		return u.GetDeletionTimestamp() != nil && released(u)
	})
	w.waitEvent("deleting-cp", cpgate.ReasonReleased)
	// The control plane comes up while paused (a person lifted and set the
	// pause, say). A workload cluster cannot turn public instead: CAPZ's
	// webhook refuses a change of apiServerLB.type ("should not be
	// modified after AzureCluster creation"); Decide's table covers it.
	w.setStatus(cpgate.KubeadmControlPlaneGVK, "initializes-cp", map[string]any{"initialization": map[string]any{"controlPlaneInitialized": true}})
	w.waitKCP("initializes", "released once initialized", released)
	// The gates are turned off: the operator restarts without them.
	stop()
	stop = start(t, env, cpgate.Options{})
	w.waitKCP("gates-off", "released with the gates off", released)
	stop()

	// An instance with a watch filter pauses what carries its label only,
	// lifts its pause when the label goes, and when the MC is gone.
	start(t, env, cpgate.Options{Gates: gates, WatchFilter: "a"})
	w.cluster("other-instance", clusterOpts{private: true, labels: map[string]string{"cluster.x-k8s.io/watch-filter": "b"}})
	for _, name := range []string{"filtered", "mc-gone"} {
		w.cluster(name, clusterOpts{private: true, labels: map[string]string{"cluster.x-k8s.io/watch-filter": "a"}})
		w.waitKCP(name, "paused by the instance with filter a", func(u *unstructured.Unstructured) bool {
			return pausedByOperator(u) && u.GetAnnotations()[cpgate.PausedFilterAnnotation] == "a"
		})
	}
	kcp := w.kcp("filtered")
	if err := c.Patch(ctx, kcp, client.RawPatch(types.JSONPatchType,
		[]byte(`[{"op":"remove","path":"/metadata/labels/cluster.x-k8s.io~1watch-filter"}]`))); err != nil {
		t.Fatal(err)
	}
	w.waitKCP("filtered", "released when the label went", released)
	if err := c.Delete(ctx, mc); err != nil {
		t.Fatal(err)
	}
	w.waitKCP("mc-gone", "released with the management cluster gone", released)
	if _, paused := w.kcp("other-instance").GetAnnotations()[cpgate.PausedAnnotation]; paused {
		t.Error("other-instance: paused by an instance whose filter does not select it")
	}
}

// gateEnv starts an API server with the two namespaces and a private
// management cluster's AzureCluster.
func gateEnv(t *testing.T) (*testenv.Env, *unstructured.Unstructured) {
	env := testenv.StartT(t, testenv.Options{})
	ctx := context.Background()
	for _, n := range []string{mcNS, ns} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	mc := testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: "s", Private: true, CIDR16: 10}.Object(env.Schema)
	if err := env.Client.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	return env, mc
}

// start runs the gate as the binary sets it up, until the returned stop
// (also called at cleanup) ends it.
func start(t *testing.T, env *testenv.Env, opts cpgate.Options) (stop func()) {
	// As the chart's ServiceAccount, under the chart's RBAC.
	cfg, err := env.AsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
		Client:     client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:      cache.Options{DefaultTransform: clusterlink.TrimCached(slices.Concat(clusterlink.DefaultAdoptFieldManagers, clusterlink.DefaultCAPZFieldManagers)...)},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts.ManagementCluster = types.NamespacedName{Namespace: mcNS, Name: "mc"}
	opts.AdoptFieldManagers = clusterlink.DefaultAdoptFieldManagers
	if err := cpgate.Setup(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

type clusterOpts struct {
	private, clusterPaused, noOwner, noInfra bool
	pausedBy                                 string // field manager of a pause set at creation
	// olderFinalizer: the older operator reconciled the cluster (its
	// finalizer on the AzureCluster, written by its field manager).
	olderFinalizer bool
	labels         map[string]string // on the KubeadmControlPlane
}

type gateWorld struct {
	t *testing.T
	c client.Client
}

// cluster creates a workload cluster's Cluster, AzureCluster and
// KubeadmControlPlane (<name>-cp) as Cluster API and CAPZ would.
func (w gateWorld) cluster(name string, o clusterOpts) {
	ctx := context.Background()
	cl := obj(capz.ClusterGVK, name)
	spec := map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": cpgate.KubeadmControlPlaneGVK.Group, "kind": "KubeadmControlPlane", "name": name + "-cp"},
	}
	if !o.noInfra {
		spec["infrastructureRef"] = map[string]any{"apiGroup": capz.AzureClusterGVK.Group, "kind": "AzureCluster", "name": name}
	}
	if o.clusterPaused {
		spec["paused"] = true
	}
	cl.Object["spec"] = spec
	w.create(cl, "cluster-api")
	ac := testworld.Cluster{Namespace: ns, Name: name, Subscription: "s", Private: o.private, CIDR16: 20}.Object(testenv.SchemaFork)
	ac.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: capz.ClusterGVK.GroupVersion().String(), Kind: "Cluster", Name: name, UID: cl.GetUID()}})
	w.create(ac, "capz")
	if o.olderFinalizer {
		patch := []byte(`{"metadata":{"finalizers":["` + clusterlink.Finalizer + `"]}}`)
		if err := w.c.Patch(ctx, ac, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("manager")); err != nil {
			w.t.Fatal(err)
		}
	}
	kcp := obj(cpgate.KubeadmControlPlaneGVK, name+"-cp")
	kcp.SetLabels(o.labels)
	// Cluster API's own finalizer keeps a deleted control plane around
	// until KCP has handled its deletion.
	kcp.SetFinalizers([]string{"kubeadm.controlplane.cluster.x-k8s.io"})
	kcp.Object["spec"] = map[string]any{
		"version": "v1.33.0",
		"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": map[string]any{
			"apiGroup": capz.AzureClusterGVK.Group, "kind": "AzureMachineTemplate", "name": name + "-cp",
		}}},
	}
	if !o.noOwner {
		kcp.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: capz.ClusterGVK.GroupVersion().String(), Kind: "Cluster", Name: name, UID: cl.GetUID(), Controller: new(true)}})
	}
	w.create(kcp, "cluster-api")
	if o.pausedBy != "" {
		patch := []byte(`{"metadata":{"annotations":{"` + cpgate.PausedAnnotation + `":"true"}}}`)
		if err := w.c.Patch(ctx, kcp, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(o.pausedBy)); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w gateWorld) create(u *unstructured.Unstructured, manager string) {
	if err := w.c.Create(context.Background(), u, client.FieldOwner(manager)); err != nil {
		w.t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// conditions sets the AzureCluster's status conditions.
func (w gateWorld) conditions(name string, conds map[string]string) {
	var list []any
	for _, typ := range slices.Sorted(maps.Keys(conds)) {
		list = append(list, map[string]any{"type": typ, "status": conds[typ], "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	}
	w.setStatus(capz.AzureClusterGVK, name, map[string]any{"conditions": list})
}

func (w gateWorld) setStatus(gvk schemaGVK, name string, status map[string]any) {
	u := obj(gvk, name)
	u.Object["status"] = status
	raw, err := u.MarshalJSON()
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, raw)); err != nil {
		w.t.Fatalf("status of %s %s: %v", gvk.Kind, name, err)
	}
}

func (w gateWorld) kcp(cluster string) *unstructured.Unstructured {
	u := obj(cpgate.KubeadmControlPlaneGVK, cluster+"-cp")
	if err := w.c.Get(context.Background(), client.ObjectKeyFromObject(u), u); err != nil {
		w.t.Fatal(err)
	}
	return u
}

func (w gateWorld) waitKCP(cluster, what string, ok func(*unstructured.Unstructured) bool) {
	testworld.Eventually(w.t, testworld.Timeout, cluster+": "+what, func(context.Context) (bool, string) {
		u := w.kcp(cluster)
		return ok(u), fmt.Sprint(u.GetAnnotations())
	})
}

func (w gateWorld) waitEvent(name, reason string) {
	testworld.Eventually(w.t, testworld.Timeout, "event "+reason+" on "+name, func(ctx context.Context) (bool, string) {
		list := &eventsv1.EventList{}
		if err := w.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				seen = append(seen, e.Reason)
				if e.Reason == reason {
					return true, ""
				}
			}
		}
		return false, strings.Join(seen, ",")
	})
}

type schemaGVK = schema.GroupVersionKind

func obj(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
