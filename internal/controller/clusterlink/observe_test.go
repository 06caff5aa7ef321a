package clusterlink

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
)

// fakeEndpoints answers ResourceGroupEndpoints per cluster name, with no
// Azure and no API server.
type fakeEndpoints map[string]struct {
	obs map[string]privateendpoints.Observation
	err error
}

func (f fakeEndpoints) ResourceGroupEndpoints(_ context.Context, ac *capz.AzureCluster, _ time.Time, _ ...string) (map[string]privateendpoints.Observation, error) {
	a := f[ac.Name]
	return a.obs, a.err
}

func (f fakeEndpoints) Delete(context.Context, *capz.AzureCluster, string) error { return nil }

func (f fakeEndpoints) Now() time.Time { return time.Now() }

// connected fills in, for every observation without one, the service its
// endpoint declares (as Azure reports an endpoint the declared connection
// made), so that cases about states need not spell it out; a case about a
// foreign target sets it.
func connected(f fakeEndpoints, eps ...[]Endpoint) fakeEndpoints {
	out := fakeEndpoints{}
	for cluster, a := range f {
		obs := map[string]privateendpoints.Observation{}
		for name, ob := range a.obs {
			for _, ep := range slices.Concat(eps...) {
				if strings.EqualFold(ep.Name, name) && ob.PrivateLinkServiceID == "" {
					ob.PrivateLinkServiceID = ep.Connections[0].PrivateLinkServiceID
				}
			}
			obs[name] = ob
		}
		a.obs = obs
		out[cluster] = a
	}
	return out
}

// recordingEndpoints is fakeEndpoints that records deletions.
type recordingEndpoints struct {
	fakeEndpoints
	deleted []string
}

func (f *recordingEndpoints) Delete(_ context.Context, ac *capz.AzureCluster, name string) error {
	f.deleted = append(f.deleted, ac.Name+"/"+name)
	return nil
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
	second := Endpoint{Direction: DirectionWCToMC, PrivateEndpoint: capz.PrivateEndpoint{
		Name: "wc1-to-mc-gateway-privatelink-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls/mc-gateway-privatelink"}},
	}}

	gateway := Endpoint{Direction: DirectionWCToMC, PrivateEndpoint: capz.PrivateEndpoint{
		Name: "wc1-to-mc-gateway-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls/mc-gateway-privatelink"}},
	}}

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
		retiring   []Endpoint
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
			reason: "a terminal error on one side does not put off the pending recheck of the other",
			azure: fakeEndpoints{
				"mc":  {err: terminal},
				"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StatePending}}},
			},
			toWC: toWC, toMC: toMC,
			want: want{Annotations: map[string]string{}, States: map[Direction]string{DirectionMCToWC: stateUnknown, DirectionWCToMC: statePending}, Requeue: "pending"},
		},
		{
			reason: "a second endpoint of a direction that is rejected: the first's IP is published, the cluster is not ready",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-privatelink-privateendpoint":         ready("10.1.0.4"),
				"wc1-to-mc-gateway-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateRejected, IP: "10.1.0.5"},
			}}},
			toMC: append(slices.Clone(toMC), second),
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.4"}, States: map[Direction]string{DirectionWCToMC: stateRejected}, Requeue: "pending"},
		},
		{
			reason: "an endpoint of the cluster's name connected to another service (a colliding name): its IP is never published, the one held is removed",
			azure: fakeEndpoints{
				"mc": {obs: map[string]privateendpoints.Observation{"wc1-api-privatelink-privateendpoint": {
					ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateApproved, IP: "10.0.0.8",
					PrivateLinkServiceID: "/pls/other-tenants-wc1-api-privatelink",
				}}},
			},
			toWC: toWC, current: map[string]string{apiAnn: "10.0.0.8"},
			want: want{Annotations: map[string]string{}, States: map[Direction]string{DirectionMCToWC: stateForeign}, Requeue: "pending"},
		},
		{
			reason: "the service's ID in another case is the same service",
			azure: fakeEndpoints{
				"mc": {obs: map[string]privateendpoints.Observation{"wc1-api-privatelink-privateendpoint": {
					ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateApproved, IP: "10.0.0.4",
					PrivateLinkServiceID: "/PLS/WC1-API-PRIVATELINK",
				}}},
			},
			toWC: toWC,
			want: want{Annotations: map[string]string{apiAnn: "10.0.0.4"}, States: map[Direction]string{DirectionMCToWC: stateReady}, Ready: true, Requeue: "drift"},
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
		{
			reason: "a layout switch: the new endpoint is not ready, the annotation keeps the ready old one's IP",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-privatelink-privateendpoint": {ProvisioningState: "Updating"},
				"wc1-to-mc-gateway-privateendpoint":     ready("10.1.0.7"),
			}}},
			toMC: toMC, retiring: []Endpoint{gateway}, current: map[string]string{ingressAnn: "10.1.0.7"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.7"}, States: map[Direction]string{DirectionWCToMC: stateProvisioning}, Requeue: "pending"},
		},
		{
			reason: "a layout switch: the new endpoint is ready and takes the annotation",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-privatelink-privateendpoint": ready("10.1.0.4"),
				"wc1-to-mc-gateway-privateendpoint":     ready("10.1.0.7"),
			}}},
			toMC: toMC, retiring: []Endpoint{gateway}, current: map[string]string{ingressAnn: "10.1.0.7"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.4"}, States: map[Direction]string{DirectionWCToMC: stateReady}, Ready: true, Requeue: "drift"},
		},
		{
			reason: "a layout switch where no endpoint serves: no annotation",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-gateway-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateDisconnected, IP: "10.1.0.7"},
			}}},
			toMC: toMC, retiring: []Endpoint{gateway}, current: map[string]string{ingressAnn: "10.1.0.7"},
			want: want{Annotations: map[string]string{}, States: map[Direction]string{DirectionWCToMC: stateProvisioning}, Requeue: "pending"},
		},
		{
			reason:   "an MC that cannot be judged: only the old endpoints, which keep the annotation but do not make the cluster ready",
			azure:    fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{"wc1-to-mc-gateway-privateendpoint": ready("10.1.0.7")}}},
			retiring: []Endpoint{gateway}, current: map[string]string{ingressAnn: "10.1.0.7"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.7"}, States: map[Direction]string{}, Requeue: "drift"},
		},
		{
			reason: "a second endpoint of this layout keeps the IP the annotation holds while the first is not ready (ingress+gateway after gateway)",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StatePending},
				"wc1-to-mc-gateway-privateendpoint":     ready("10.1.0.7"),
			}}},
			toMC: []Endpoint{toMC[0], gateway}, current: map[string]string{ingressAnn: "10.1.0.7"},
			want: want{Annotations: map[string]string{ingressAnn: "10.1.0.7"}, States: map[Direction]string{DirectionWCToMC: statePending}, Requeue: "pending"},
		},
		{
			reason: "the annotation never moves to an endpoint that is not the first (steady state of ingress+gateway)",
			azure: fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
				"wc1-to-mc-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: privateendpoints.StateRejected, IP: "10.1.0.4"},
				"wc1-to-mc-gateway-privateendpoint":     ready("10.1.0.7"),
			}}},
			toMC: []Endpoint{toMC[0], gateway}, current: map[string]string{ingressAnn: "10.1.0.4"},
			want: want{Annotations: map[string]string{}, States: map[Direction]string{DirectionWCToMC: stateRejected}, Requeue: "pending"},
		},
	}
	for _, c := range cases {
		opts := Options{PendingRecheck: time.Nanosecond, DriftCheck: time.Hour, TerminalRecheck: 42 * time.Minute}
		opts.SetDefaults()
		r := &WCReconciler{Opts: opts, Endpoints: connected(c.azure, c.toWC, c.toMC, c.retiring), Recorder: events.NewFakeRecorder(100)}
		u := &unstructured.Unstructured{}
		u.SetNamespace(wc.Namespace)
		u.SetName(wc.Name)
		u.SetAnnotations(c.current)
		o := r.observe(context.Background(), u, wc, mc, c.toWC, c.toMC, c.retiring, c.current)
		requeue := map[time.Duration]string{time.Nanosecond: "pending", 42 * time.Minute: "terminal"}[o.result.RequeueAfter]
		if requeue == "" {
			requeue = "drift"
		}
		got := want{Annotations: withoutEndpointNames(t, c.reason, o.annotations, c.current, c.azure), States: o.states, Ready: o.ready, Requeue: requeue, Err: o.err != nil}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

// withoutEndpointNames checks the endpoint names published beside the IP
// annotations — each names an endpoint Azure shows with that IP, and an
// IP this pass set has one — and returns the annotations without them.
func withoutEndpointNames(t *testing.T, reason string, got, current map[string]string, azure fakeEndpoints) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range got {
		if !strings.HasSuffix(k, "-endpoint") {
			out[k] = v
		}
	}
	for _, ipAnn := range []string{prefixed(AnnotationAPIServerIP), prefixed(AnnotationMCIngressIP)} {
		ip, name := got[ipAnn], got[endpointAnnotation(ipAnn)]
		switch {
		case ip == "" && name != "":
			t.Errorf("%s: %s names endpoint %s without an IP", reason, endpointAnnotation(ipAnn), name)
		case ip != "" && name == "" && current[ipAnn] != ip:
			t.Errorf("%s: %s set to %s without the endpoint's name", reason, ipAnn, ip)
		case name != "":
			found := false
			for _, rg := range azure {
				if ob, ok := rg.obs[strings.ToLower(name)]; ok && ob.IP == ip {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: %s names %s, which does not hold %s", reason, endpointAnnotation(ipAnn), name, ip)
			}
		}
	}
	return out
}

// TestObserveReportsTerminalErrors: an error a person must fix becomes a
// Warning Event with Azure's reason, once per reconcile.
func TestObserveReportsTerminalErrors(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	opts := Options{}
	opts.SetDefaults()
	r := &WCReconciler{Opts: opts, Recorder: rec, Endpoints: fakeEndpoints{"mc": {err: &azure.ClassifiedError{Classification: azure.Classification{
		Class: azure.ClassTerminal, Reason: azure.ReasonAuthorizationFailed, Message: "lacks Microsoft.Network/privateEndpoints/read",
	}}}}}
	u := &unstructured.Unstructured{}
	toWC := []Endpoint{{Direction: DirectionMCToWC, PrivateEndpoint: capz.PrivateEndpoint{Name: "pe", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls"}}}}}
	r.observe(context.Background(), u, &capz.AzureCluster{Name: "wc"}, &capz.AzureCluster{Name: "mc"}, toWC, nil, nil, nil)
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning AuthorizationFailed") || !strings.Contains(e, "lacks Microsoft.Network/privateEndpoints/read") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error(errors.New("no event for an error a person must fix"))
	}
}

// TestObserveHeldBack: a read the request budget holds back (the
// operator's pacing, Azure's 429) leaves the cluster not ready, without a
// wait reason or an Event, with what to say if the cluster has no
// condition yet (whyWaiting), and comes back after Azure's wait; a
// transient error says what it was, since no Event does.
func TestObserveHeldBack(t *testing.T) {
	toWC := []Endpoint{{Direction: DirectionMCToWC, PrivateEndpoint: capz.PrivateEndpoint{Name: "pe", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls"}}}}}
	for _, c := range []struct {
		reason        string
		err           error
		wantThrottled bool
		wantWait      string // in the wait message
	}{
		{"held back by the pacer", &azure.ClassifiedError{Classification: azure.Classification{
			Class: azure.ClassTransient, Reason: azure.ReasonThrottled, RetryAfter: 3 * time.Second, Message: "holding back Azure reads"}}, true, ""},
		{"Azure unavailable for a moment", &azure.ClassifiedError{Classification: azure.Classification{
			Class: azure.ClassTransient, Reason: "InternalServerError", Message: "HTTP 500"}}, false, "for now: HTTP 500"},
	} {
		rec := events.NewFakeRecorder(10)
		opts := Options{}
		opts.SetDefaults()
		r := &WCReconciler{Opts: opts, Recorder: rec, Endpoints: fakeEndpoints{"mc": {err: c.err}}}
		o := r.observe(context.Background(), &unstructured.Unstructured{}, &capz.AzureCluster{Name: "wc"}, &capz.AzureCluster{Name: "mc"}, toWC, nil, nil, nil)
		if o.ready || o.throttled != c.wantThrottled || (c.wantWait == "") != (o.waitReason == "") || !strings.Contains(o.waitMessage, c.wantWait) {
			t.Errorf("%s: ready %v, throttled %v, wait %q %q", c.reason, o.ready, o.throttled, o.waitReason, o.waitMessage)
		}
		if c.wantThrottled && !strings.Contains(o.throttledMessage, "the private endpoints of /mc are not read yet") {
			t.Errorf("%s: message for a cluster without a condition %q", c.reason, o.throttledMessage)
		}
		if c.wantThrottled && o.result.RequeueAfter != 3*time.Second {
			t.Errorf("%s: requeue after %s, want Azure's 3s", c.reason, o.result.RequeueAfter)
		}
		select {
		case e := <-rec.Events:
			t.Errorf("%s: event %q", c.reason, e)
		default:
		}
	}
}

// TestObserveHealsDisconnected: an endpoint Disconnected for the grace
// period is deleted in Azure once, with an Event; not again before the
// backoff step; a Rejected one only when allowed.
func TestObserveHealsDisconnected(t *testing.T) {
	mc := &capz.AzureCluster{Name: "mc", Namespace: "org-giantswarm"}
	wc := &capz.AzureCluster{Name: "wc1", Namespace: "org-a"}
	toMC := []Endpoint{{Direction: DirectionWCToMC, PrivateEndpoint: capz.PrivateEndpoint{
		Name: "wc1-to-mc-privatelink-privateendpoint", Connections: []capz.PrivateLinkServiceConnection{{PrivateLinkServiceID: "/pls/mc-ingress-privatelink"}},
	}}}
	broken := func(state string) fakeEndpoints {
		return fakeEndpoints{"wc1": {obs: map[string]privateendpoints.Observation{
			"wc1-to-mc-privatelink-privateendpoint": {ProvisioningState: "Succeeded", ConnectionState: state, IP: "10.1.0.4", PrivateLinkServiceID: "/pls/mc-ingress-privatelink"},
		}}}
	}
	for _, c := range []struct {
		reason       string
		state        string
		healRejected bool
		// steps: minutes since start at which the cluster is observed.
		steps       []int
		wantDeletes int
	}{
		{"disconnected: nothing before the grace period", privateendpoints.StateDisconnected, false, []int{0, 1}, 0},
		{"disconnected for the grace period: healed once", privateendpoints.StateDisconnected, false, []int{0, 1, 2, 3}, 1},
		{"still disconnected after a heal: not again before twice the grace", privateendpoints.StateDisconnected, false, []int{0, 2, 3, 4, 5}, 1},
		{"and again after the backoff step", privateendpoints.StateDisconnected, false, []int{0, 2, 3, 5, 7}, 2},
		{"rejected: left alone by default", privateendpoints.StateRejected, false, []int{0, 2, 4, 8}, 0},
		{"rejected, healing allowed: healed", privateendpoints.StateRejected, true, []int{0, 2}, 1},
	} {
		clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
		start := clk.Now()
		opts := Options{Heal: heal.Policy{DisconnectedAfter: 2 * time.Minute, Rejected: c.healRejected}}
		opts.SetDefaults()
		az := &recordingEndpoints{fakeEndpoints: broken(c.state)}
		rec := events.NewFakeRecorder(100)
		// An API server without ASO: the heal goes to Azure, as on the fork.
		r := &WCReconciler{Client: fake.NewClientBuilder().Build(), Opts: opts, Endpoints: az, Recorder: rec}
		r.heal.Clock, r.heal.Grace = clk, opts.Heal.DisconnectedAfter
		u := &unstructured.Unstructured{}
		u.SetNamespace(wc.Namespace)
		u.SetName(wc.Name)
		for _, m := range c.steps {
			clk.SetTime(start.Add(time.Duration(m) * time.Minute))
			o := r.observe(context.Background(), u, wc, mc, nil, toMC, nil, nil)
			if o.result.RequeueAfter <= 0 || o.result.RequeueAfter > 2*time.Minute {
				t.Errorf("%s: at minute %d the next look is in %s; a broken endpoint is looked at within the grace period", c.reason, m, o.result.RequeueAfter)
			}
		}
		if len(az.deleted) != c.wantDeletes {
			t.Errorf("%s: deleted %v, want %d deletions", c.reason, az.deleted, c.wantDeletes)
		}
		healed := 0
		for len(rec.Events) > 0 {
			if e := <-rec.Events; strings.Contains(e, ReasonEndpointHealed) {
				healed++
			}
		}
		if healed != c.wantDeletes {
			t.Errorf("%s: %d %s events, want one per deletion (%d)", c.reason, healed, ReasonEndpointHealed, c.wantDeletes)
		}
	}
}

// TestFirstSeen: the moment from which lists are trusted for a cluster is
// when this process first saw it (its UID under its name), or its
// creation plus clockSkew when that is earlier; a cluster created again
// under its name is seen anew.
func TestFirstSeen(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	at := t0
	now := func() time.Time { return at }
	obj := func(uid string, created time.Time) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetNamespace("org-a")
		u.SetName("wc1")
		u.SetUID(types.UID(uid))
		u.SetCreationTimestamp(metav1.NewTime(created))
		return u
	}
	var f firstSeen
	steps := []struct {
		reason string
		u      *unstructured.Unstructured
		now    time.Time
		want   time.Time
	}{
		{"new, created a second ago: first seen now", obj("a", t0.Add(-time.Second)), t0, t0},
		{"looked at again later: still when first seen", obj("a", t0.Add(-time.Second)), t0.Add(time.Hour), t0},
		{"created again under its name: seen anew", obj("b", t0.Add(2*time.Hour)), t0.Add(2*time.Hour + time.Second), t0.Add(2*time.Hour + time.Second)},
		{"created long before it is first seen (a restart): its creation plus the skew", obj("c", t0.Add(-24*time.Hour)), t0.Add(3 * time.Hour), t0.Add(-24*time.Hour + clockSkew)},
	}
	for _, s := range steps {
		at = s.now
		if got := f.first(s.u, now); !got.Equal(s.want) {
			t.Errorf("%s: %v, want %v", s.reason, got, s.want)
		}
	}
	f.forget(types.NamespacedName{Namespace: "org-a", Name: "wc1"})
	at = t0.Add(4 * time.Hour)
	if got := f.first(obj("b", t0.Add(4*time.Hour)), now); !got.Equal(at) {
		t.Errorf("after forget: %v, want now (%v)", got, at)
	}
}
