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
	// only they hold (no other manager) is the operator's to lift.
	AdoptFieldManagers []string
}

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

// Setup registers the gate with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	if _, err := mgr.GetRESTMapper().RESTMapping(KubeadmControlPlaneGVK.GroupKind(), KubeadmControlPlaneGVK.Version); err != nil {
		return fmt.Errorf("the KubeadmControlPlane %s CRD of Cluster API is not installed (install it, or turn the gates off): %w", KubeadmControlPlaneGVK.Version, err)
	}
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("azure-private-endpoint-operator"), Opts: opts}
	conditionsChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			a, _ := e.ObjectOld.(*unstructured.Unstructured)
			b, _ := e.ObjectNew.(*unstructured.Unstructured)
			if a == nil || b == nil {
				return true
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
		r.Recorder.Eventf(kcp, related, corev1.EventTypeNormal, ReasonReleased, "Gate",
			"released: the AzureCluster's conditions %s are True", strings.Join(r.Opts.Gates, ", "))
		r.setHeld(req.NamespacedName, false)
	default:
		log.V(1).Info("Not gating the control plane", "why", why)
		r.setHeld(req.NamespacedName, false)
	}
	return ctrl.Result{}, nil
}

// observe reads the MC, the control plane's owning Cluster and its
// AzureCluster (returned, for Events) into an Observed.
func (r *Reconciler) observe(ctx context.Context, kcp *unstructured.Unstructured) (Observed, *unstructured.Unstructured, error) {
	var o Observed
	mc := newObject(capz.AzureClusterGVK)
	if err := r.Client.Get(ctx, r.Opts.ManagementCluster, mc); err != nil {
		return o, nil, client.IgnoreNotFound(err) // no MC: a public one, as far as the gate knows
	}
	o.MCPrivate = lbType(mc) == capz.LBTypeInternal
	o.Initialized = initialized(kcp)
	o.Deleting = kcp.GetDeletionTimestamp() != nil
	_, o.Paused = kcp.GetAnnotations()[PausedAnnotation]
	o.PausedByOperator = o.Paused && kcp.GetAnnotations()[PausedByAnnotation] != ""
	if o.Paused && !o.PausedByOperator && len(r.Opts.AdoptFieldManagers) > 0 {
		// An unmarked pause may be the older operator's: only the full
		// managedFields tell whether anyone else holds it.
		full := newObject(KubeadmControlPlaneGVK)
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(kcp), full); err != nil {
			return o, nil, client.IgnoreNotFound(err)
		}
		o.PausedByOperator = pausedOnlyBy(full, r.Opts.AdoptFieldManagers)
	}
	owner := ownerCluster(kcp)
	if owner == "" {
		return o, nil, nil
	}
	cl := newObject(capz.ClusterGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: kcp.GetNamespace(), Name: owner}, cl); err != nil {
		return o, nil, client.IgnoreNotFound(err)
	}
	o.Owned = true
	p, _, _ := unstructured.NestedBool(cl.Object, "spec", "paused")
	_, annotated := cl.GetAnnotations()[PausedAnnotation]
	o.ClusterPaused = p || annotated
	infra, _, _ := unstructured.NestedString(cl.Object, "spec", "infrastructureRef", "name")
	if infra == "" {
		return o, nil, nil
	}
	ac := newObject(capz.AzureClusterGVK)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: kcp.GetNamespace(), Name: infra}, ac); err != nil {
		// The reference may come before the object: its creation brings
		// the control plane back.
		return o, nil, client.IgnoreNotFound(err)
	}
	o.HasInfrastructure = true
	o.WCPrivate = lbType(ac) == capz.LBTypeInternal
	o.Unmet = Unmet(ac, r.Opts.Gates)
	return o, ac, nil
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
	kcp.SetAnnotations(ann)
	return r.Client.Patch(ctx, kcp, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), client.FieldOwner(capz.FieldManager))
}

// release removes the pause and the mark, guarded by the values seen, so
// that only the operator's pause is lifted.
func (r *Reconciler) release(ctx context.Context, kcp *unstructured.Unstructured) error {
	var ops []map[string]any
	for _, k := range []string{PausedByAnnotation, PausedAnnotation} {
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

// pausedOnlyBy reports whether the pause annotation is held by one of
// managers and by no one else (the older operator's unmarked pause).
func pausedOnlyBy(u *unstructured.Unstructured, managers []string) bool {
	field := "f:" + PausedAnnotation
	holders := 0
	ours := true
	for _, mf := range u.GetManagedFields() {
		if mf.FieldsV1 == nil || !strings.Contains(string(mf.FieldsV1.GetRawBytes()), `"`+field+`"`) {
			continue
		}
		holders++
		ours = ours && slices.Contains(managers, mf.Manager)
	}
	return holders > 0 && ours
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
