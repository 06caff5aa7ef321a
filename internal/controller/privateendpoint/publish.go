package privateendpoint

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
)

// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;create;patch;delete

// Keys of a published ConfigMap or Secret. They are part of the API:
// applications read them.
const (
	KeyIPAddress         = "ipAddress"
	KeyIPAddresses       = "ipAddresses"
	KeyFQDNs             = "fqdns"
	KeyPrivateEndpointID = "privateEndpointID"
	// KeyHosts holds the names Azure says the endpoint serves
	// (status.customDNSConfigs), one "<address> <fqdn>" line each, as in
	// a hosts file: for an Azure service, each member's name with its
	// address. Present only when Azure names any.
	KeyHosts = "hosts"
)

// The annotations external-dns reads on a Service: the names to publish
// and, instead of the Service's own addresses, the targets. A target
// annotation takes precedence over the Service's type (external-dns'
// Service source, "Targets": https://kubernetes-sigs.github.io/external-dns/latest/docs/sources/service/;
// the annotations table from v0.14.0 on lists target for Services).
const (
	ExternalDNSHostname = "external-dns.alpha.kubernetes.io/hostname"
	ExternalDNSTarget   = "external-dns.alpha.kubernetes.io/target"
)

// PublishedByLabel is on every object the operator publishes into: the
// name of the AzurePrivateEndpoint (ownership is the controller owner
// reference; the label lets people find them).
const PublishedByLabel = "privatelink.giantswarm.io/published-by"

// Condition and Event reasons of publishing.
const (
	ReasonPublished          = "Published"
	ReasonWaitingForEndpoint = "WaitingForEndpoint"
	ReasonPublishNotOwned    = "NotOwned"
	ReasonSecretsDisabled    = "SecretsDisabled"
	EventPublished           = "Published"
	EventUnpublished         = "Unpublished"
	// EventWithdrawn: the address was taken out of the published objects
	// because the endpoint has no Approved connection.
	EventWithdrawn = "AddressWithdrawn"
)

// publication is what spec.publish's objects hold: a pure function of the
// spec and the observed status.
type publication struct {
	data      map[string]string
	hostnames string
	targets   string
}

// publicationOf is what to publish, once the endpoint has an address and an
// Approved connection (before that the address leads nowhere, and what was
// published stays as it is).
func publicationOf(obj *v1alpha1.AzurePrivateEndpoint) (publication, bool) {
	st := obj.Status
	if len(st.IPAddresses) == 0 || st.ConnectionState != pe.StateApproved || st.PrivateEndpointID == "" {
		return publication{}, false
	}
	fqdns := append([]string(nil), st.FQDNs...)
	for _, z := range st.DNSZones {
		fqdns = append(fqdns, z.FQDNs...)
	}
	p := publication{
		data: map[string]string{
			KeyIPAddress:         st.IPAddresses[0],
			KeyIPAddresses:       strings.Join(st.IPAddresses, ","),
			KeyFQDNs:             strings.Join(fqdns, ","),
			KeyPrivateEndpointID: st.PrivateEndpointID,
		},
		targets: strings.Join(st.IPAddresses, ","),
	}
	if hosts := hostsLines(st.CustomDNSConfigs); hosts != "" {
		p.data[KeyHosts] = hosts
	}
	if s := obj.Spec.Publish.Service; s != nil {
		p.hostnames = strings.Join(s.Hostnames, ",")
	}
	return p, true
}

// hostsLines is "<address> <fqdn>" per address of each name, a line each.
func hostsLines(configs []v1alpha1.CustomDNSConfig) string {
	var b strings.Builder
	for _, c := range configs {
		for _, ip := range c.IPAddresses {
			if c.FQDN != "" {
				fmt.Fprintf(&b, "%s %s\n", ip, c.FQDN)
			}
		}
	}
	return b.String()
}

// publish writes spec.publish's objects and deletes those that left the
// spec. It never writes an object this one does not control.
func (r *Reconciler) publish(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) (ctrl.Result, error) {
	cond := v1alpha1.ConditionPublished
	want := v1alpha1.PublishedStatus{}
	if p := obj.Spec.Publish; p != nil {
		want.ConfigMapName, want.SecretName = p.ConfigMapName, p.SecretName
		if p.Service != nil {
			want.ServiceName = p.Service.Name
		}
	}
	if err := r.unpublish(ctx, obj, want); err != nil {
		return r.fail(ctx, obj, cond, err)
	}
	if obj.Spec.Publish == nil {
		setCondition(obj, cond, metav1.ConditionTrue, ReasonNotRequested, "spec.publish is not set")
		return ctrl.Result{}, nil
	}
	secretsOff := want.SecretName != "" && !r.Opts.PublishSecrets
	if secretsOff {
		// The other objects are still published; the Secret is reported.
		want.SecretName = ""
	}
	pub, ok := publicationOf(obj)
	if !ok {
		// An address published for an endpoint that is not Approved (or
		// no longer exists) leads nowhere, or, once Azure hands it to the
		// next endpoint in the subnet, to someone else: it is withdrawn.
		if err := r.withdraw(ctx, obj); err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		setCondition(obj, cond, metav1.ConditionFalse, ReasonWaitingForEndpoint, "waiting for the endpoint's address and an Approved connection")
		return ctrl.Result{}, nil
	}
	var written []string
	cm, secret, svc := &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Service{}
	for _, o := range []struct {
		name   string
		target client.Object
		fill   func() bool
	}{
		{want.ConfigMapName, cm, func() bool { return fillConfigMap(cm, pub) }},
		{want.SecretName, secret, func() bool { return fillSecret(secret, pub) }},
		{want.ServiceName, svc, func() bool { return fillService(svc, pub) }},
	} {
		if o.name == "" {
			continue
		}
		o.target.SetNamespace(obj.Namespace)
		o.target.SetName(o.name)
		changed, err := r.ensurePublished(ctx, obj, o.target, o.fill)
		if err != nil {
			return r.fail(ctx, obj, cond, err)
		}
		if changed {
			written = append(written, kindOf(o.target)+" "+o.name)
		}
		recordPublished(obj, o.target)
	}
	if len(written) > 0 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventPublished, "Publish", "wrote %s: %s", strings.Join(written, ", "), pub.data[KeyIPAddresses])
	}
	if secretsOff {
		return r.fail(ctx, obj, cond, terminal(ReasonSecretsDisabled,
			"spec.publish.secretName: the operator does not write Secrets (it runs without --publish-secrets); use configMapName, or ask the operator's admin"))
	}
	setCondition(obj, cond, metav1.ConditionTrue, ReasonPublished, fmt.Sprintf("%s published to %s", pub.data[KeyIPAddresses], describe(want)))
	return ctrl.Result{}, nil
}

// ensurePublished creates target (controlled by obj) or brings the fields
// the operator owns on it up to date with one merge patch of only those
// fields; it says whether it wrote.
func (r *Reconciler) ensurePublished(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, target client.Object, fill func() bool) (bool, error) {
	err := r.reader().Get(ctx, client.ObjectKeyFromObject(target), target)
	if apierrors.IsNotFound(err) {
		target.SetLabels(map[string]string{PublishedByLabel: obj.Name})
		if err := controllerutil.SetControllerReference(obj, target, r.Client.Scheme()); err != nil {
			return false, err
		}
		fill()
		return true, r.Client.Create(ctx, target)
	}
	if err != nil {
		return false, err
	}
	if !metav1.IsControlledBy(target, obj) {
		return false, terminal(ReasonPublishNotOwned, "%s %s/%s exists and is not this object's: it is left as it is; delete it or name another in spec.publish",
			kindOf(target), target.GetNamespace(), target.GetName())
	}
	before, ok := target.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("copying %s %s", kindOf(target), target.GetName())
	}
	if !fill() {
		return false, nil
	}
	return true, r.Client.Patch(ctx, target, client.MergeFrom(before))
}

// withdraw takes the address out of every object the status says is
// published (only while obj controls it): the ConfigMap's and Secret's
// keys of the operator, and the Service's external-dns annotations, so
// that external-dns removes its records. The objects and everything else
// in them stay; the address comes back when the endpoint is Approved.
func (r *Reconciler) withdraw(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint) error {
	had := obj.Status.Published
	if had == nil {
		return nil
	}
	var withdrawn []string
	for _, o := range []struct {
		name   string
		target client.Object
	}{
		{had.ConfigMapName, &corev1.ConfigMap{}},
		{had.SecretName, &corev1.Secret{}},
		{had.ServiceName, &corev1.Service{}},
	} {
		if o.name == "" {
			continue
		}
		err := r.reader().Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: o.name}, o.target)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return err
		case !metav1.IsControlledBy(o.target, obj):
			continue
		}
		before, ok := o.target.DeepCopyObject().(client.Object)
		if !ok {
			return fmt.Errorf("copying %s %s", kindOf(o.target), o.name)
		}
		if !clearAddress(o.target) {
			continue
		}
		if err := r.Client.Patch(ctx, o.target, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
			return err
		}
		withdrawn = append(withdrawn, kindOf(o.target)+" "+o.name)
	}
	if len(withdrawn) > 0 {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventWithdrawn, "Withdraw",
			"withdrew the address from %s: the endpoint has no Approved connection (%s)", strings.Join(withdrawn, ", "), or(obj.Status.ConnectionState, "no endpoint"))
	}
	return nil
}

// addressKeys are the keys of a published ConfigMap or Secret that say
// where the endpoint is; fqdns (names) stays.
var addressKeys = []string{KeyIPAddress, KeyIPAddresses, KeyHosts, KeyPrivateEndpointID}

// clearAddress removes the address from a published object; it says
// whether anything changed.
func clearAddress(o client.Object) bool {
	changed := false
	switch t := o.(type) {
	case *corev1.ConfigMap:
		for _, k := range addressKeys {
			if _, ok := t.Data[k]; ok {
				delete(t.Data, k)
				changed = true
			}
		}
	case *corev1.Secret:
		for _, k := range addressKeys {
			if _, ok := t.Data[k]; ok {
				delete(t.Data, k)
				changed = true
			}
		}
	case *corev1.Service:
		a := t.GetAnnotations()
		for _, k := range []string{ExternalDNSHostname, ExternalDNSTarget} {
			if _, ok := a[k]; ok {
				delete(a, k)
				changed = true
			}
		}
		t.SetAnnotations(a)
	}
	return changed
}

// unpublish deletes the objects the status names that want no longer does
// (only while obj controls them), and forgets them.
func (r *Reconciler) unpublish(ctx context.Context, obj *v1alpha1.AzurePrivateEndpoint, want v1alpha1.PublishedStatus) error {
	had := obj.Status.Published
	if had == nil {
		return nil
	}
	for _, o := range []struct {
		had, want string
		target    client.Object
		forget    func()
	}{
		{had.ConfigMapName, want.ConfigMapName, &corev1.ConfigMap{}, func() { had.ConfigMapName = "" }},
		{had.SecretName, want.SecretName, &corev1.Secret{}, func() { had.SecretName = "" }},
		{had.ServiceName, want.ServiceName, &corev1.Service{}, func() { had.ServiceName = "" }},
	} {
		if o.had == "" || o.had == o.want {
			continue
		}
		err := r.reader().Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: o.had}, o.target)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		case metav1.IsControlledBy(o.target, obj):
			uid := o.target.GetUID()
			if err := r.Client.Delete(ctx, o.target, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return err
			}
			r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, EventUnpublished, "Unpublish", "deleted %s %s: it left spec.publish", kindOf(o.target), o.had)
		}
		o.forget()
	}
	if *had == (v1alpha1.PublishedStatus{}) {
		obj.Status.Published = nil
	}
	return nil
}

func recordPublished(obj *v1alpha1.AzurePrivateEndpoint, target client.Object) {
	if obj.Status.Published == nil {
		obj.Status.Published = &v1alpha1.PublishedStatus{}
	}
	switch target.(type) {
	case *corev1.ConfigMap:
		obj.Status.Published.ConfigMapName = target.GetName()
	case *corev1.Secret:
		obj.Status.Published.SecretName = target.GetName()
	case *corev1.Service:
		obj.Status.Published.ServiceName = target.GetName()
	}
}

// fillConfigMap sets the operator's keys; other keys stay.
func fillConfigMap(cm *corev1.ConfigMap, p publication) bool {
	changed := false
	for k, v := range p.data {
		if old, ok := cm.Data[k]; !ok || old != v {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k], changed = v, true
		}
	}
	return changed
}

// fillSecret sets the operator's keys of an Opaque Secret; other keys stay.
func fillSecret(s *corev1.Secret, p publication) bool {
	changed := false
	if s.Type == "" {
		s.Type, changed = corev1.SecretTypeOpaque, true
	}
	for k, v := range p.data {
		if old, ok := s.Data[k]; !ok || string(old) != v {
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[k], changed = []byte(v), true
		}
	}
	return changed
}

// fillService makes a headless Service without selector or ports (it
// routes nothing and takes no cluster IP) carrying external-dns'
// annotations; other annotations stay.
func fillService(s *corev1.Service, p publication) bool {
	changed := false
	if s.CreationTimestamp.IsZero() {
		s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone}
		changed = true
	}
	want := map[string]string{ExternalDNSHostname: p.hostnames, ExternalDNSTarget: p.targets}
	a := s.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	for k, v := range want {
		if a[k] != v {
			a[k], changed = v, true
		}
	}
	s.SetAnnotations(a)
	return changed
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Secret:
		return "Secret"
	default:
		return "Service"
	}
}

func describe(p v1alpha1.PublishedStatus) string {
	var out []string
	for _, o := range [][2]string{{"ConfigMap", p.ConfigMapName}, {"Secret", p.SecretName}, {"Service", p.ServiceName}} {
		if o[1] != "" {
			out = append(out, o[0]+" "+o[1])
		}
	}
	return strings.Join(out, ", ")
}
