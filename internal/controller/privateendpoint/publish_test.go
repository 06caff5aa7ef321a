package privateendpoint_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestPublish: the endpoint's addresses and names reach a ConfigMap, a
// Secret and an external-dns Service; keys others add stay, a key edited by
// hand is written back; an object of that name the endpoint does not own
// is never touched; names leaving the spec, then the object itself, take
// what was published with them.
func TestPublish(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{PublishSecrets: true})
	ctx := context.Background()
	// Someone else's ConfigMap of the name the second object asks for.
	taken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Data: map[string]string{"ipAddress": "keep me"}}
	if err := w.Client.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}

	obj := ape("pub", svc.Status.ResourceID)
	obj.Spec.DNS.AdditionalZones = []v1alpha1.PrivateEndpointDNSZone{{ZoneName: "base.internal", Records: []string{"api-pub"}}}
	obj.Spec.Publish = &v1alpha1.PrivateEndpointPublish{
		ConfigMapName: "pub-endpoint", SecretName: "pub-endpoint",
		Service: &v1alpha1.PublishService{Name: "pub-dns", Hostnames: []string{"api.pub.example.com", "*.apps.pub.example.com"}},
	}
	create(t, w, obj)
	other := ape("other", svc.Status.ResourceID)
	other.Spec.Publish = &v1alpha1.PrivateEndpointPublish{ConfigMapName: "taken"}
	create(t, w, other)

	st := waitCondition(t, w, "pub", v1alpha1.ConditionPublished, metav1.ConditionTrue, privateendpoint.ReasonPublished).Status
	ready(t, w, "pub")
	want := map[string]string{
		privateendpoint.KeyIPAddress: st.IPAddresses[0], privateendpoint.KeyIPAddresses: st.IPAddresses[0],
		privateendpoint.KeyFQDNs:             "api.pub.hcp.internal,*.apps.pub.hcp.internal,api-pub.base.internal",
		privateendpoint.KeyPrivateEndpointID: st.PrivateEndpointID,
	}
	cm := &corev1.ConfigMap{}
	published(t, w, "pub-endpoint", cm, func() map[string]string { return cm.Data }, want)
	sec := &corev1.Secret{}
	published(t, w, "pub-endpoint", sec, func() map[string]string { return strData(sec.Data) }, want)
	if sec.Type != corev1.SecretTypeOpaque || !metav1.IsControlledBy(sec, ownerOf(t, w, "pub")) || sec.Labels[privateendpoint.PublishedByLabel] != "pub" {
		t.Errorf("secret: type %q, owners %+v, labels %v", sec.Type, sec.OwnerReferences, sec.Labels)
	}
	dnsSvc := &corev1.Service{}
	published(t, w, "pub-dns", dnsSvc, func() map[string]string { return dnsSvc.Annotations }, map[string]string{
		privateendpoint.ExternalDNSHostname: "api.pub.example.com,*.apps.pub.example.com",
		privateendpoint.ExternalDNSTarget:   st.IPAddresses[0],
	})
	if dnsSvc.Spec.ClusterIP != corev1.ClusterIPNone || len(dnsSvc.Spec.Selector) != 0 || len(dnsSvc.Spec.Ports) != 0 {
		t.Errorf("the external-dns Service routes something: %+v", dnsSvc.Spec)
	}
	if p := st.Published; p == nil || *p != (v1alpha1.PublishedStatus{ConfigMapName: "pub-endpoint", SecretName: "pub-endpoint", ServiceName: "pub-dns"}) {
		t.Errorf("status.published %+v", p)
	}

	// Not owned: reported, Ready False, the ConfigMap as it was.
	waitCondition(t, w, "other", v1alpha1.ConditionPublished, metav1.ConditionFalse, privateendpoint.ReasonPublishNotOwned)
	waitCondition(t, w, "other", v1alpha1.ConditionReady, metav1.ConditionFalse, privateendpoint.ReasonPublishNotOwned)
	hasEvent(t, w, "other", privateendpoint.ReasonPublishNotOwned)
	if err := w.Client.Get(ctx, key("taken"), taken); err != nil || len(taken.Data) != 1 || taken.Data["ipAddress"] != "keep me" || len(taken.OwnerReferences) != 0 {
		t.Errorf("someone else's ConfigMap was changed: %+v %v", taken, err)
	}

	// A key someone added stays; a key of the operator's edited by hand is
	// written back.
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["extra"], cm.Data[privateendpoint.KeyIPAddress] = "mine", "10.0.0.1"
	if err := w.Client.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	touch(t, w, "pub")
	want["extra"] = "mine"
	published(t, w, "pub-endpoint", cm, func() map[string]string { return cm.Data }, want)

	// Renamed: the old ConfigMap goes, the new one comes; the Service
	// leaves the spec and goes.
	update(t, w, "pub", func(o *v1alpha1.AzurePrivateEndpoint) {
		o.Spec.Publish.ConfigMapName, o.Spec.Publish.Service = "pub-endpoint-2", nil
	})
	published(t, w, "pub-endpoint-2", &corev1.ConfigMap{}, nil, nil)
	gone(t, w, "pub-endpoint", &corev1.ConfigMap{})
	gone(t, w, "pub-dns", &corev1.Service{})
	hasEvent(t, w, "pub", privateendpoint.EventUnpublished)

	// The provider rejects the connection: the address leaves what was
	// published (it leads nowhere now); the objects, their names and keys
	// someone added stay.
	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: svc.Status.ResourceID,
		PrivateEndpointID: peResource + "pub", Status: "Rejected", Description: "rejected by the provider"}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, w, "pub", v1alpha1.ConditionPublished, metav1.ConditionFalse, privateendpoint.ReasonWaitingForEndpoint)
	cm2 := &corev1.ConfigMap{}
	for _, o := range []struct {
		name string
		obj  client.Object
		data func() map[string]string
	}{
		{"pub-endpoint-2", cm2, func() map[string]string { return cm2.Data }},
		{"pub-endpoint", sec, func() map[string]string { return strData(sec.Data) }},
	} {
		testworld.Eventually(t, testworld.Timeout, "the address is withdrawn from "+o.name, func(ctx context.Context) (bool, string) {
			if err := w.Client.Get(ctx, key(o.name), o.obj); err != nil {
				return false, err.Error()
			}
			d := o.data()
			_, ip := d[privateendpoint.KeyIPAddress]
			_, ips := d[privateendpoint.KeyIPAddresses]
			_, id := d[privateendpoint.KeyPrivateEndpointID]
			return !ip && !ips && !id && d[privateendpoint.KeyFQDNs] != "", fmt.Sprint(d)
		})
	}
	hasEvent(t, w, "pub", privateendpoint.EventWithdrawn)

	// Deleted: what it published goes with it; someone else's stays.
	for _, name := range []string{"pub", "other"} {
		if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, w, name)
	}
	gone(t, w, "pub-endpoint-2", &corev1.ConfigMap{})
	gone(t, w, "pub-endpoint", &corev1.Secret{})
	if err := w.Client.Get(ctx, key("taken"), &corev1.ConfigMap{}); err != nil {
		t.Errorf("someone else's ConfigMap: %v", err)
	}
}

// TestPublishSecretsDisabled: without --publish-secrets a Secret is never
// written; the object says why, and a ConfigMap beside it is written all
// the same.
func TestPublishSecretsDisabled(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	obj := ape("nosecret", svc.Status.ResourceID)
	obj.Spec.Publish = &v1alpha1.PrivateEndpointPublish{ConfigMapName: "nosecret", SecretName: "nosecret"}
	create(t, w, obj)
	waitCondition(t, w, "nosecret", v1alpha1.ConditionPublished, metav1.ConditionFalse, privateendpoint.ReasonSecretsDisabled)
	hasEvent(t, w, "nosecret", privateendpoint.ReasonSecretsDisabled)
	published(t, w, "nosecret", &corev1.ConfigMap{}, nil, nil)
	err := w.Client.Get(context.Background(), key("nosecret"), &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a Secret was written without --publish-secrets: %v", err)
	}
	update(t, w, "nosecret", func(o *v1alpha1.AzurePrivateEndpoint) { o.Spec.Publish.SecretName = "" })
	waitCondition(t, w, "nosecret", v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	published(t, w, "nosecret", &corev1.ConfigMap{}, nil, nil)
}

// published waits until the object exists and, when want is given, data()
// holds every key of want with its value.
func published(t *testing.T, w *testworld.World, name string, obj client.Object, data func() map[string]string, want map[string]string) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%T %s published", obj, name), func(ctx context.Context) (bool, string) {
		if err := w.Client.Get(ctx, key(name), obj); err != nil {
			return false, err.Error()
		}
		if data == nil {
			return true, ""
		}
		got := data()
		for k, v := range want {
			if got[k] != v {
				return false, fmt.Sprintf("%s=%q, want %q (all: %v)", k, got[k], v, got)
			}
		}
		return true, ""
	})
}

func gone(t *testing.T, w *testworld.World, name string, obj client.Object) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, fmt.Sprintf("%T %s is gone", obj, name), func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, key(name), obj)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func update(t *testing.T, w *testworld.World, name string, change func(*v1alpha1.AzurePrivateEndpoint)) {
	t.Helper()
	testworld.Eventually(t, testworld.Timeout, "updating "+name, func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateEndpoint{}
		if err := w.Client.Get(ctx, key(name), obj); err != nil {
			return false, err.Error()
		}
		change(obj)
		err := w.Client.Update(ctx, obj)
		return err == nil, fmt.Sprint(err)
	})
}

func ownerOf(t *testing.T, w *testworld.World, name string) *v1alpha1.AzurePrivateEndpoint {
	t.Helper()
	obj := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(context.Background(), key(name), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func strData(d map[string][]byte) map[string]string {
	out := make(map[string]string, len(d))
	for k, v := range d {
		out[k] = string(v)
	}
	return out
}
