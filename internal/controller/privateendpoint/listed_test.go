package privateendpoint

import (
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
)

// TestListedUnchanged: after a full read that found the endpoint Ready, a
// drift check skips the read only when a list Azure answered since shows
// the endpoint as that read did, for the same generation and the status
// that read left; then the list's time is what the next check needs a
// newer list than. Anything else forgets the read, so the check reads.
func TestListedUnchanged(t *testing.T) {
	const (
		nic = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/n1"
		id  = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/p"
		pls = "/subscriptions/w/resourceGroups/wrg/providers/Microsoft.Network/privateLinkServices/s"
	)
	read := &armnetwork.PrivateEndpoint{ID: new(id), Name: new("p"), Etag: new(`W/"1"`), Properties: &armnetwork.PrivateEndpointProperties{
		ProvisioningState: new(armnetwork.ProvisioningStateSucceeded),
		PrivateLinkServiceConnections: []*armnetwork.PrivateLinkServiceConnection{{Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(pls), PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{Status: new("Approved")},
		}}},
		NetworkInterfaces: []*armnetwork.Interface{{ID: new(nic)}},
	}}
	object := func() *v1alpha1.AzurePrivateEndpoint {
		o := &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Generation: 3}}
		o.Status = v1alpha1.AzurePrivateEndpointStatus{PrivateEndpointID: id, ProvisioningState: "Succeeded", ConnectionState: "Approved",
			NetworkInterfaceID: nic, IPAddresses: []string{"10.0.0.4"},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionPrivateEndpointReady, Status: metav1.ConditionTrue, Reason: ReasonReady}}}
		return o
	}
	listed := pe.Observe(read, nil)
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	tests := []struct {
		reason string
		change func(o *v1alpha1.AzurePrivateEndpoint, l *pe.Observation)
		noList bool // no list answered since
		want   bool
	}{
		{reason: "the list shows what the read found", want: true},
		{reason: "no list since the read", noList: true},
		{reason: "a new etag: written since", change: func(_ *v1alpha1.AzurePrivateEndpoint, l *pe.Observation) { l.ETag = `W/"2"` }},
		{reason: "no etag", change: func(_ *v1alpha1.AzurePrivateEndpoint, l *pe.Observation) { l.ETag = "" }},
		{reason: "the provider disconnected it", change: func(_ *v1alpha1.AzurePrivateEndpoint, l *pe.Observation) { l.ConnectionState = "Disconnected" }},
		{reason: "another interface", change: func(_ *v1alpha1.AzurePrivateEndpoint, l *pe.Observation) { l.NICIDs = []string{nic + "x"} }},
		{reason: "provisioning", change: func(_ *v1alpha1.AzurePrivateEndpoint, l *pe.Observation) { l.ProvisioningState = "Updating" }},
		{reason: "a new generation", change: func(o *v1alpha1.AzurePrivateEndpoint, _ *pe.Observation) { o.Generation++ }},
		{reason: "a status someone else wrote", change: func(o *v1alpha1.AzurePrivateEndpoint, _ *pe.Observation) { o.Status.IPAddresses = []string{"10.9.9.9"} }},
		{reason: "not Ready", change: func(o *v1alpha1.AzurePrivateEndpoint, _ *pe.Observation) {
			o.Status.Conditions[0].Status = metav1.ConditionFalse
		}},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			l := listed
			l.NICIDs = append([]string(nil), listed.NICIDs...)
			obj := object()
			r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(t0)}
			r.sawRead(obj, read, t0)
			if tc.change != nil {
				tc.change(obj, &l)
			}
			checkListed(t, r, obj, l, !tc.noList, t0, tc.want)
		})
	}

	t.Run("without an observer", func(t *testing.T) {
		r := &Reconciler{}
		obj := object()
		r.sawRead(obj, read, t0)
		if r.listedUnchanged(obj, azureAPI{}, "rg", "p") {
			t.Error("skipped the read without a list")
		}
	})
	t.Run("a read without an etag is not remembered", func(t *testing.T) {
		r := &Reconciler{}
		obj := object()
		noETag := *read
		noETag.Etag = nil
		r.sawRead(obj, &noETag, t0)
		if _, _, known := r.dnsSeen.Entry(readKey(obj)); known {
			t.Error("remembered")
		}
	})
}

// checkListed runs listedUnchanged for obj, read at t0, with a list
// answered a minute later that shows l (or none, without ok), and checks
// the answer and what the reconciler remembers after it.
func checkListed(t *testing.T, r *Reconciler, obj *v1alpha1.AzurePrivateEndpoint, l pe.Observation, ok bool, t0 time.Time, want bool) {
	t.Helper()
	var asked time.Time
	api := azureAPI{listed: func(rg, name string, since time.Time) (pe.Observation, time.Time, bool) {
		asked = since
		if rg != "rg" || name != "p" {
			t.Errorf("asked for %s/%s", rg, name)
		}
		return l, t0.Add(time.Minute), ok
	}}
	if got := r.listedUnchanged(obj, api, "rg", "p"); got != want {
		t.Fatalf("listedUnchanged = %v, want %v", got, want)
	}
	_, at, known := r.dnsSeen.Entry(readKey(obj))
	switch {
	case want && (!known || !at.Equal(t0.Add(time.Minute))):
		t.Errorf("confirmed as of %v (known %v), want the list's time", at, known)
	case !want && known:
		t.Error("the read is still remembered: the next check would not read")
	}
	if !asked.IsZero() && !asked.Equal(t0) {
		t.Errorf("asked for a list since %v, want since the read at %v", asked, t0)
	}
}
