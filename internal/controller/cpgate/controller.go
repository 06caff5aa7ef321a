package cpgate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/eventrec"
)

// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kubeadmcontrolplanes,verbs=get;list;watch;patch

// KubeadmControlPlaneGVK identifies Cluster API's KubeadmControlPlane.
var KubeadmControlPlaneGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlane"}

const (
	// PausedAnnotation is Cluster API's pause annotation.
	PausedAnnotation = capz.PausedAnnotation
	// PausedByAnnotation marks the operator's pause; its value lists the
	// gates that were unmet when it paused.
	PausedByAnnotation = "azure-private-endpoint-operator.giantswarm.io/paused-by-gates"
	// PausedFilterAnnotation records, beside the mark, the --watch-filter
	// value of the instance that paused, so that the pause is lifted by
	// that instance when the control plane loses the label.
	PausedFilterAnnotation = "azure-private-endpoint-operator.giantswarm.io/paused-by-watch-filter"
	// olderFinalizer is the finalizer the older operator (0.1 to 0.7) put
	// on every workload cluster's AzureCluster it reconciled
	// (controllers/azurecluster_controller.go); the operator kept its name.
	olderFinalizer = clusterlink.Finalizer
	// olderPauseValue is the value the older operator's gate wrote
	// (controllers/kubeadmcontrolplane_controller.go, 0.5 to 0.7).
	olderPauseValue = "true"
	// ReasonPaused is the Event reason of the operator's pause.
	ReasonPaused = "ControlPlanePaused"
	// ReasonReleased is the Event reason of its release.
	ReasonReleased = "ControlPlaneReleased"
)

var held = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "azure_private_endpoint_operator_control_planes_held",
	Help: "KubeadmControlPlanes the operator holds paused until their AzureCluster's gate conditions (--azure-cluster-gates) are True.",
})

func init() { metrics.Registry.MustRegister(held) }

// Options configure the gate.
type Options struct {
	// Gates are the AzureCluster condition types that must be True.
	Gates []string
	// ManagementCluster is the MC's AzureCluster.
	ManagementCluster types.NamespacedName
	// AdoptFieldManagers are the older operator's field managers: a pause
	// only they hold is the older operator's when the rest of its traces
	// are there too (olderOperatorPause).
	AdoptFieldManagers []string
	// WatchFilter, when set, limits the gate to control planes labelled
	// cluster.x-k8s.io/watch-filter=<value>.
	WatchFilter string
}

// watchFilterLabel is Cluster API's watch filter label.
const watchFilterLabel = "cluster.x-k8s.io/watch-filter"

// Reconciler gates KubeadmControlPlanes.
type Reconciler struct {
	Client client.Client
	// APIReader reads a control plane's full managedFields (the cache
	// keeps only the operator's and the older operator's).
	APIReader client.Reader
	Recorder  events.EventRecorder
	Opts      Options

	mu   sync.Mutex
	hold map[types.NamespacedName]bool
}

// Setup registers the gate with mgr. With no gates configured it still
// runs when Cluster API's KubeadmControlPlane CRD is installed, to lift the
// pauses an earlier configuration (or the older operator) left: turning
// the gates off must not strand a control plane.
func Setup(mgr ctrl.Manager, opts Options) error {
	if _, err := mgr.GetRESTMapper().RESTMapping(KubeadmControlPlaneGVK.GroupKind(), KubeadmControlPlaneGVK.Version); err != nil {
		if len(opts.Gates) == 0 {
			mgr.GetLogger().V(1).Info("No KubeadmControlPlane CRD: no control plane pause to lift")
			return nil
		}
		return fmt.Errorf("the KubeadmControlPlane %s CRD of Cluster API is not installed (install it, or turn the gates off): %w", KubeadmControlPlaneGVK.Version, err)
	}
	rec, err := eventrec.For(mgr)
	if err != nil {
		return err
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: rec, Opts: opts}
	conditionsChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, _ := e.ObjectOld.(*unstructured.Unstructured)
			b, _ := e.ObjectNew.(*unstructured.Unstructured)
			if a == nil || b == nil {
				return true
			}
			if (a.GetDeletionTimestamp() == nil) != (b.GetDeletionTimestamp() == nil) || a.GetGeneration() != b.GetGeneration() {
				return true // its deletion, or a public load balancer, lifts the operator's pause
			}
			ca, _, _ := unstructured.NestedSlice(a.Object, "status", "conditions")
			cb, _, _ := unstructured.NestedSlice(b.Object, "status", "conditions")
			return !equalJSON(ca, cb)
		},
	}
	return ctrl.NewControllerManagedBy(mgr).Named("control-plane-gate").
		For(newObject(KubeadmControlPlaneGVK)).
		Watches(newObject(capz.AzureClusterGVK), handler.EnqueueRequestsFromMapFunc(r.controlPlaneOfAzureCluster), builder.WithPredicates(conditionsChanged)).
		Watches(newObject(capz.ClusterGVK), handler.EnqueueRequestsFromMapFunc(controlPlaneOfCluster)).
		Complete(r)
}

// Reconcile reads what the gate decides on, decides (Decide), and pauses
// or releases.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	kcp := newObject(KubeadmControlPlaneGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, kcp); err != nil {
		r.setHeld(req.NamespacedName, false)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	o, ac, err := r.observe(ctx, kcp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ac != nil && ac.GetDeletionTimestamp() != nil {
		ac = nil // no Event on an object being deleted
	}
	decision, why := Decide(o)
	var related k8sruntime.Object // the AzureCluster, when read
	if ac != nil {
		related = ac
	}
	switch decision {
	case Hold:
		if !o.Paused {
			if err := r.pause(ctx, kcp, o.Unmet); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
			r.Recorder.Eventf(kcp, related, corev1.EventTypeNormal, ReasonPaused, "Gate",
				"paused until the AzureCluster's conditions %s are True, so the control plane does not come up before the management cluster can reach it", strings.Join(o.Unmet, ", "))
		}
		r.setHeld(req.NamespacedName, true)
	case Release:
		if err := r.release(ctx, kcp); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		r.Recorder.Eventf(kcp, related, corev1.EventTypeNormal, ReasonReleased, "Gate", "released: %s", why)
		r.setHeld(req.NamespacedName, false)
	default:
		log.V(1).Info("Not gating the control plane", "why", why)
		r.setHeld(req.NamespacedName, false)
	}
	return ctrl.Result{}, nil
}

// observe reads the MC, the control plane's owning Cluster and its
// AzureCluster (returned, for Events) into an Observed. A missing object
// is a fact (the gate may no longer apply); any other read error is
// returned, so that a pause is never lifted on a failed read.
func (r *Reconciler) observe(ctx context.Context, kcp *unstructured.Unstructured) (Observed, *unstructured.Unstructured, error) {
	ann := kcp.GetAnnotations()
	o := Observed{
		GatesOff:    len(r.Opts.Gates) == 0,
		Unselected:  r.Opts.WatchFilter != "" && kcp.GetLabels()[watchFilterLabel] != r.Opts.WatchFilter,
		Initialized: initialized(kcp),
		Deleting:    kcp.GetDeletionTimestamp() != nil,
	}
	_, o.Paused = ann[PausedAnnotation]
	o.PausedByOperator = o.Paused && ann[PausedByAnnotation] != ""
	o.FilterMatches = ann[PausedFilterAnnotation] == r.Opts.WatchFilter
	mc := newObject(capz.AzureClusterGVK)
	switch err := r.Client.Get(ctx, r.Opts.ManagementCluster, mc); {
	case apierrors.IsNotFound(err):
		o.MCMissing = true
	case err != nil:
		return o, nil, err
	default:
		o.MCPrivate = lbType(mc) == capz.LBTypeInternal
	}
	ac, err := r.observeCluster(ctx, kcp, &o)
	if err != nil || !o.Paused || o.PausedByOperator || ac == nil {
		return o, ac, err
	}
	// An unmarked pause may be the older operator's.
	older, err := r.olderOperatorPause(ctx, kcp, ac)
	o.PausedByOperator = older
	return o, ac, err
}

// observeCluster reads the owning Cluster and its AzureCluster into o.
func (r *Reconciler) observeCluster(ctx context.Context, kcp *unstructured.Unstructured, o *Observed) (*unstructured.Unstructured, error) {
	owner := ownerCluster(kcp)
	if owner == "" {
		return nil, nil
	}
	cl := newObject(capz.ClusterGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: kcp.GetNamespace(), Name: owner}, cl); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	o.Owned = true
	o.Deleting = o.Deleting || cl.GetDeletionTimestamp() != nil
	p, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
	_, annotated := cl.GetAnnotations()[PausedAnnotation]
	o.ClusterPaused = p || annotated
	infra, _, _ := unstructured.NestedString(cl.Object, "spec", "infrastructureRef", "name")
	if infra == "" {
		return nil, nil
	}
	ac := newObject(capz.AzureClusterGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: kcp.GetNamespace(), Name: infra}, ac); err != nil {
		// The reference may come before the object: its creation brings
		// the control plane back.
		return nil, client.IgnoreNotFound(err)
	}
	o.HasInfrastructure = true
	o.Deleting = o.Deleting || ac.GetDeletionTimestamp() != nil
	o.WCPrivate = lbType(ac) == capz.LBTypeInternal
	o.Unmet = Unmet(ac, r.Opts.Gates)
	return ac, nil
}

// olderOperatorPause reports whether an unmarked pause is provably the
// older operator's. Its releases run as /manager with no field owner, so
// their field manager ("manager") is the one of CAPI, CAPZ and every
// kubebuilder scaffold too: the manager alone proves nothing. The older
// operator's gate (0.5 to 0.7, controllers/kubeadmcontrolplane_controller.go)
// wrote the value "true" with a merge patch (an Update), and its
// AzureCluster controller put its finalizer on every workload cluster it
// reconciled (controllers/azurecluster_controller.go). A pause is the older
// operator's only when all of that holds: the value is "true", only the
// adopted managers hold the annotation and only with Update, and the
// cluster's AzureCluster carries the finalizer, held by one of them.
func (r *Reconciler) olderOperatorPause(ctx context.Context, kcp, ac *unstructured.Unstructured) (bool, error) {
	if len(r.Opts.AdoptFieldManagers) == 0 || kcp.GetAnnotations()[PausedAnnotation] != olderPauseValue ||
		!slices.Contains(ac.GetFinalizers(), olderFinalizer) ||
		!holdsOnlyBy(ac, `"f:finalizers"`, r.Opts.AdoptFieldManagers, false) {
		return false, nil
	}
	// The cache keeps only the operator's and the adopted managers'
	// entries: only the full managedFields tell whether anyone else holds
	// the annotation.
	full := newObject(KubeadmControlPlaneGVK)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(kcp), full); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return holdsOnlyBy(full, `"f:`+PausedAnnotation+`"`, r.Opts.AdoptFieldManagers, true), nil
}

// pause sets the pause and the operator's mark in one write, guarded by
// resourceVersion so a pause someone sets meanwhile is not taken over.
func (r *Reconciler) pause(ctx context.Context, kcp *unstructured.Unstructured, unmet []string) error {
	before := kcp.DeepCopy()
	ann := kcp.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[PausedAnnotation] = "true"
	ann[PausedByAnnotation] = strings.Join(unmet, ",")
	if r.Opts.WatchFilter != "" {
		ann[PausedFilterAnnotation] = r.Opts.WatchFilter
	}
	kcp.SetAnnotations(ann)
	return r.Client.Patch(ctx, kcp, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(capz.FieldManager))
}

// release removes the pause and the marks, guarded by the values seen, so
// that only the operator's pause is lifted.
func (r *Reconciler) release(ctx context.Context, kcp *unstructured.Unstructured) error {
	var ops []map[string]any
	for _, k := range []string{PausedByAnnotation, PausedFilterAnnotation, PausedAnnotation} {
		if v, ok := kcp.GetAnnotations()[k]; ok {
			path := "/metadata/annotations/" + capz.JSONPointerEscape(k)
			ops = append(ops, map[string]any{"op": "test", "path": path, "value": v}, map[string]any{"op": "remove", "path": path})
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	return r.Client.Patch(ctx, kcp, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(capz.FieldManager))
}

func (r *Reconciler) setHeld(key types.NamespacedName, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == nil {
		r.hold = map[types.NamespacedName]bool{}
	}
	if on {
		r.hold[key] = true
	} else {
		delete(r.hold, key)
	}
	held.Set(float64(len(r.hold)))
}

// controlPlaneOfAzureCluster maps an AzureCluster to its Cluster's control
// plane.
func (r *Reconciler) controlPlaneOfAzureCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if client.ObjectKeyFromObject(u) == r.Opts.ManagementCluster {
		// The MC turning public or going away concerns every control plane.
		return r.allControlPlanes(ctx)
	}
	view, _ := capz.FromUnstructured(u)
	if view == nil || view.ClusterName == "" {
		return nil
	}
	cl := newObject(capz.ClusterGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: view.ClusterName}, cl); err != nil {
		return nil
	}
	return controlPlaneOfCluster(ctx, cl)
}

// allControlPlanes lists every KubeadmControlPlane in the cache.
func (r *Reconciler) allControlPlanes(ctx context.Context) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(KubeadmControlPlaneGVK.GroupVersion().WithKind(KubeadmControlPlaneGVK.Kind + "List"))
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing control planes after a management cluster change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// controlPlaneOfCluster maps a Cluster to its KubeadmControlPlane.
func controlPlaneOfCluster(_ context.Context, obj client.Object) []reconcile.Request {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneRef", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneRef", "name")
	if kind != KubeadmControlPlaneGVK.Kind || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: u.GetNamespace(), Name: name}}}
}

// ownerCluster is the name of the control plane's controlling Cluster.
func ownerCluster(kcp *unstructured.Unstructured) string {
	for _, ref := range kcp.GetOwnerReferences() {
		if ref.Kind == capz.ClusterGVK.Kind && ref.Controller != nil && *ref.Controller &&
			strings.HasPrefix(ref.APIVersion, capz.ClusterGVK.Group+"/") {
			return ref.Name
		}
	}
	return ""
}

func initialized(kcp *unstructured.Unstructured) bool {
	v2, _, _ := unstructured.NestedBool(kcp.Object, "status", "initialization", "controlPlaneInitialized")
	v1, _, _ := unstructured.NestedBool(kcp.Object, "status", "initialized")
	return v2 || v1
}

// holdsOnlyBy reports whether the field (a quoted FieldsV1 key) of u is
// held by one of managers, with an Update, and, when exclusive, by no one
// else. With exclusive false it is enough that one of them holds it.
func holdsOnlyBy(u *unstructured.Unstructured, field string, managers []string, exclusive bool) bool {
	holders, ours := 0, 0
	for _, mf := range capz.ManagedFields(u) {
		if mf.FieldsV1 == nil || !strings.Contains(string(mf.FieldsV1.GetRawBytes()), field) {
			continue
		}
		holders++
		if slices.Contains(managers, mf.Manager) && mf.Operation == metav1.ManagedFieldsOperationUpdate && mf.Subresource == "" {
			ours++
		}
	}
	if exclusive {
		return holders > 0 && ours == holders
	}
	return ours > 0
}

func lbType(u *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(u.Object, "spec", "networkSpec", "apiServerLB", "type")
	return t
}

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
