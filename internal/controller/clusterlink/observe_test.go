package clusterlink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// fakeEndpoints answers ResourceGroupEndpoints per cluster name, with no
// Azure and no API server.
type fakeEndpoints map[string]struct {
	obs map[string]privateendpoints.Observation
	err error
}

func (f fakeEndpoints) ResourceGroupEndpoints(_ context.Context, ac *capz.AzureCluster) (map[string]privateendpoints.Observation, error) {
	a := f[ac.Name]
	return a.obs, a.err
}

// TestObserve covers the WC reconcile's decision from what Azure says:
// which annotations to publish, which states to count, whether the
// cluster is ready, and when to look again; fast, beside the envtest tests.
func TestObserve(t *testing.T) {
	mc := &capz.AzureCluster{Name: "mc", Namespace: "org-giantswarm"}
	wc := &capz.AzureCluster{Name: "wc1", Namespace: "org-a"}
	toWC := []Endpoint{{Direction: DirectionMCToWC, PrivateEndpoint: capz.PrivateEndpoint{
		Name: "wc1-api-privatelink-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls/wc1-api-privatelink"}},
	}}}
	toMC := []Endpoint{{Direction: DirectionWCToMC, PrivateEndpoint: capz.PrivateEndpoint{
		Name: "wc1-to-mc-privatelink-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls/mc-ingress-privatelink"}},
	}}}
	ready := func(ip string) privateendpoints.Observation {
		return privateendpoints.Observation{ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateApproved, IP: ip}
	}
	apiAnn, ingressAnn := DefaultAnnotationPrefix+"/"+AnnotationAPIServerIP, DefaultAnnotationPrefix+"/"+AnnotationMCIngressIP
	terminal := &azure.ClassifiedError{Classification: azure.Classification{Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Message: "lacks read"}}

	type want struct {
		Annotations map[string]string
		States      map[Direction]string
		Ready       bool
		Requeue     string // "drift", "pending" or "terminal"
		Err         bool
	}
	cases := []struct {
		reason     string
		azure      fakeEndpoints
		toWC, toMC []Endpoint
		current    map[string]string
		want       want
	}{
		{
			reason: "both endpoints ready: both IPs published, next look at the drift check",
			azure: fakeEndpoints{
				"mc":  {obs: map[string]privateendpoints.Observation{"wc1-api-privatelink-privateendpoint": ready("10.0.0.4")}},
				"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-privatelink-privateendpoint": ready("10.1.0.4")}},
			},
			toWC: toWC, toMC: toMC,
			want: want{Annotations: map[string]string{apiAnn: "10.0.0.4", ingressAnn: "10.1.0.4"}, States: map[Direction]string{DirectionMCToWC: stateReady, DirectionWCToMC: stateReady}, Ready: true, Requeue: "drift"},
		},
		{
			reason: "a pending approval: no annotation for it, the other published, looked at again soon",
			azure: fakeEndpoints{
				"mc":  {obs: map[string]privateendpoints.Observation{"wc1-api-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StatePending, IP: "10.0.0.4"}}},
				"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-privatelink-privateendpoint": ready("10.1.0.4")}},
			},
			toWC: toWC, toMC: toMC, current: map[string]string{apiAnn: "10.0.0.9", "user/keep": "x"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.4", "user/keep": "x"}, States: map[Direction]string{DirectionMCToWC: statePending, DirectionWCToMC: stateReady}, Requeue: "pending"},
		},
		{
			reason: "Azure cannot be read: the published IP is left alone, the state unknown, an error a person must fix",
			azure: fakeEndpoints{
				"mc":  {err: terminal},
				"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-privatelink-privateendpoint": ready("10.1.0.4")}},
			},
			toWC: toWC, toMC: toMC, current: map[string]string{apiAnn: "10.0.0.4"},
			want: want{Annotations: map[string]string{apiAnn: "10.0.0.4", ingressAnn: "10.1.0.4"}, States: map[Direction]string{DirectionMCToWC: stateUnknown, DirectionWCToMC: stateReady}, Requeue: "terminal"},
		},
		{
			reason: "an endpoint not in Azure yet: provisioning, nothing published",
			azure:  fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{}}},
			toMC:   toMC,
			want:   want{Annotations: map[string]string{}, States: map[Direction]string{DirectionWCToMC: stateProvisioning}, Requeue: "pending"},
		},
		{
			reason: "a direction with no endpoint loses its annotation",
			azure:  fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-privatelink-privateendpoint": ready("10.1.0.4")}}},
			toMC:   toMC, current: map[string]string{apiAnn: "10.0.0.4"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.4"}, States: map[Direction]string{DirectionWCToMC: stateReady}, Ready: true, Requeue: "drift"},
		},
	}
	for _, c := range cases {
		opts := Options{PendingRecheck: time.Nanosecond, DriftCheck: time.Hour, TerminalRecheck: 42 * time.Minute}
		opts.setDefaults()
		r := &WCReconciler{Opts: opts, Endpoints: c.azure, Recorder: events.NewFakeRecorder(100)}
		u := &unstructured.Unstructured{}
		u.SetNamespace(wc.Namespace)
		u.SetName(wc.Name)
		o := r.observe(context.Background(), u, wc, mc, c.toWC, c.toMC, c.current)
		requeue := map[time.Duration]string{time.Nanosecond: "pending", 42 * time.Minute: "terminal"}[o.result.RequeueAfter]
		if requeue == "" {
			requeue = "drift"
		}
		got := want{Annotations: o.annotations, States: o.states, Ready: o.ready, Requeue: requeue, Err: o.err != nil}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

// TestObserveReportsTerminalErrors: an error a person must fix becomes a
// Warning Event with Azure's reason, once per reconcile.
func TestObserveReportsTerminalErrors(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	opts := Options{}
	opts.setDefaults()
	r := &WCReconciler{Opts: opts, Recorder: rec, Endpoints: fakeEndpoints{"mc": {err: &azure.ClassifiedError{Classification: azure.Classification{
		Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Message: "lacks Microsoft.Network/privateEndpoints/read",
	}}}}}
	u := &unstructured.Unstructured{}
	toWC := []Endpoint{{Direction: DirectionMCToWC, PrivateEndpoint: capz.PrivateEndpoint{Name: "pe", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls"}}}}}
	r.observe(context.Background(), u, &capz.AzureCluster{Name: "wc"}, &capz.AzureCluster{Name: "mc"}, toWC, nil, nil)
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning AuthorizationFailed") || !strings.Contains(e, "lacks Microsoft.Network/privateEndpoints/read") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error(errors.New("no event for an error a person must fix"))
	}
}
