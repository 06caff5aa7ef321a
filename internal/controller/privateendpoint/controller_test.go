package privateendpoint_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestTargets connects to a service by resource ID, by alias and by a
// reference to its AzurePrivateLinkService; each endpoint's names resolve
// to its address from the consumer's network, and from nowhere else.
func TestTargets(t *testing.T) {
	var mu sync.Mutex
	read := map[string]string{} // lower NIC ID -> address, as AddressRead was told
	w, svc, _ := world(t, privateendpoint.Options{AddressRead: func(_ *v1alpha1.AzurePrivateEndpoint, nic, ip string) {
		mu.Lock()
		defer mu.Unlock()
		read[strings.ToLower(nic)] = ip
	}})
	byID := ape("by-id", svc.Status.ResourceID)
	byAlias := ape("by-alias", "")
	byAlias.Spec.PrivateLinkServiceAlias = svc.Status.Alias
	byRef := ape("by-ref", "")
	byRef.Spec.PrivateLinkServiceRef = &v1alpha1.LocalObjectReference{Name: "svc"}
	byRef.Spec.DNS.Records = []string{"api", "*.apps", "oauth"}
	for _, o := range []*v1alpha1.AzurePrivateEndpoint{byID, byAlias, byRef} {
		create(t, w, o)
	}
	seen := map[string]bool{}
	for _, name := range []string{"by-id", "by-alias", "by-ref"} {
		obj := ready(t, w, name)
		st := obj.Status
		if st.ConnectionState != "Approved" || len(st.IPAddresses) != 1 || !strings.EqualFold(st.PrivateEndpointID, peResource+name) {
			t.Fatalf("%s: status %+v", name, st)
		}
		ip := st.IPAddresses[0]
		if seen[ip] {
			t.Errorf("%s: address %s given twice", name, ip)
		}
		seen[ip] = true
		if e := endpoint(w, name); e == nil || e.IP != ip {
			t.Errorf("%s: azuresim holds %+v, status says %s", name, e, ip)
		}
		// The address read from Azure is passed on (the wiring's observer
		// keeps it and does not read the interface again).
		mu.Lock()
		told := read[strings.ToLower(st.NetworkInterfaceID)]
		mu.Unlock()
		addressTold(t, name, st, told)
		zone := name + ".hcp.internal"
		want := []string{"api." + zone, "*.apps." + zone}
		if name == "by-ref" {
			want = append(want, "oauth."+zone)
		}
		if !slices.Equal(st.FQDNs, want) {
			t.Errorf("%s: fqdns %v, want %v", name, st.FQDNs, want)
		}
		resolves(t, w, cVNet, "api."+zone, azuresim.ResolveOK, ip)
		resolves(t, w, cVNet, "console.apps."+zone, azuresim.ResolveOK, ip)
		resolves(t, w, cVNet, "nothing."+zone, azuresim.ResolveNXDomain, "")
		resolves(t, w, pVNet, "api."+zone, azuresim.ResolveNotPrivate, "")
		if st.Target == "" || st.DNSZoneID == "" || len(st.VirtualNetworkLinks) != 1 {
			t.Errorf("%s: status %+v", name, st)
		}
	}
	if got := waitCondition(t, w, "by-alias", v1alpha1.ConditionReady, metav1.ConditionTrue, "").Status.Target; got != svc.Status.Alias {
		t.Errorf("by-alias target %q, want the alias", got)
	}

	// Steady state: a second pass writes nothing to Azure.
	before := writes(w)
	touch(t, w, "by-id")
	waitCondition(t, w, "by-id", v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	testworld.Eventually(t, testworld.Timeout, "the touched object was reconciled", func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateEndpoint{}
		_ = w.Client.Get(ctx, key("by-id"), obj)
		return obj.Status.ObservedGeneration == obj.Generation, fmt.Sprint(obj.Generation)
	})
	if n := writes(w) - before; n != 0 {
		t.Errorf("a converged object caused %d writes", n)
	}
}

// addressTold checks that AddressRead was told the object's address for
// its network interface.
func addressTold(t *testing.T, name string, st v1alpha1.AzurePrivateEndpointStatus, told string) {
	t.Helper()
	if st.NetworkInterfaceID == "" || len(st.IPAddresses) == 0 || told != st.IPAddresses[0] {
		t.Errorf("%s: AddressRead was told %q for interface %q, want %v", name, told, st.NetworkInterfaceID, st.IPAddresses)
	}
}

// touch changes an annotation to get the object reconciled.
func touch(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	obj := &v1alpha1.AzurePrivateEndpoint{}
	if err := w.Client.Get(context.Background(), key(name), obj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(obj.DeepCopy())
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations["test/touched"] = time.Now().String()
	if err := w.Client.Patch(context.Background(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// TestManualApproval asks for a manual connection: no record while it is
// Pending (the zone and its link are ready beforehand); records once the
// provider approves; records removed when it rejects.
func TestManualApproval(t *testing.T) {
	w, _, manual := world(t, privateendpoint.Options{})
	obj := ape("manual", manual.Status.ResourceID)
	obj.Spec.ManualApproval, obj.Spec.RequestMessage = true, "hosted cluster manual, please approve"
	create(t, w, obj)
	waitCondition(t, w, "manual", v1alpha1.ConditionConnectionApproved, metav1.ConditionFalse, privateendpoint.ReasonWaitingForApproval)
	got := waitCondition(t, w, "manual", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonWaitingForApproval)
	if got.Status.ConnectionState != "Pending" || len(got.Status.FQDNs) != 0 {
		t.Errorf("pending: status %+v", got.Status)
	}
	// The zone and its link are made at once (they point nowhere); no
	// record until the provider approves: the linked zone answers NXDOMAIN.
	resolves(t, w, cVNet, "api.manual.hcp.internal", azuresim.ResolveNXDomain, "")
	if recs := resources(w, "Microsoft.Network/privateDnsZones/A", "manual.hcp.internal"); len(recs) != 0 {
		t.Errorf("records exist before approval: %v", recs)
	}
	pe, err := w.Network(t, consumer).NewPrivateEndpointsClient().Get(context.Background(), crg, "manual", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := pe.Properties.ManualPrivateLinkServiceConnections; len(c) != 1 || *c[0].Properties.RequestMessage != obj.Spec.RequestMessage {
		t.Errorf("the manual request is not what the spec asks: %+v", c)
	}

	act := func(status string) {
		t.Helper()
		if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: manual.Status.ResourceID,
			PrivateEndpointID: peResource + "manual", Status: status, Description: status + " by the provider"}); err != nil {
			t.Fatal(err)
		}
	}
	act("Approved")
	ip := ready(t, w, "manual").Status.IPAddresses[0]
	resolves(t, w, cVNet, "api.manual.hcp.internal", azuresim.ResolveOK, ip)

	act("Rejected")
	got = waitCondition(t, w, "manual", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonRejected)
	if len(got.Status.FQDNs) != 0 {
		t.Errorf("rejected: fqdns %v remain in status", got.Status.FQDNs)
	}
	resolves(t, w, cVNet, "api.manual.hcp.internal", azuresim.ResolveNXDomain, "")
	if c := waitCondition(t, w, "manual", v1alpha1.ConditionReady, metav1.ConditionFalse, privateendpoint.ReasonRejected); c.Status.ConnectionState != "Rejected" {
		t.Errorf("rejected: %+v", c.Status)
	}
	if e := endpoint(w, "manual"); e == nil {
		t.Error("a Rejected endpoint was deleted without --heal-rejected")
	}
}

// TestSharedZone puts two objects' records into one shared zone, with a
// record set someone else wrote beside them: deleting one object removes
// only its records and keeps the zone and the link the other needs; the
// foreign record set is never touched, and the zone stays while it is
// there.
func TestSharedZone(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	shared := func(name string) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "hcp.internal", ZoneMode: v1alpha1.ZoneModeShared, Records: []string{"api." + name, "*.apps." + name}}
		return o
	}
	// A spec naming a zone that would shadow Azure's own names in the
	// linked networks (ARM, or a private endpoint zone) is refused: no zone
	// is created or adopted.
	for name, zone := range map[string]string{"evil-arm": "management.azure.com", "evil-pe": "privatelink.blob.core.windows.net"} {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: zone, Records: []string{"@"}}
		create(t, w, o)
		got := waitCondition(t, w, name, v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonZoneNameRefused)
		if !strings.Contains(message(got, v1alpha1.ConditionDNSReady), zone) {
			t.Errorf("%s: the condition does not name the zone: %s", name, message(got, v1alpha1.ConditionDNSReady))
		}
		hasEvent(t, w, name, privateendpoint.ReasonZoneNameRefused)
		if zones := resources(w, "Microsoft.Network/privateDnsZones", "/privateDnsZones/"+zone); len(zones) != 0 {
			t.Errorf("%s: zone %s was created: %v", name, zone, zones)
		}
	}
	// An object that uses another object's zone (Owned mode, the zone made
	// for the first) relies on the first one's link to the same network:
	// deleting the first keeps that link while the second needs it.
	owned := func(name string) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "owned.internal", Records: []string{name}}
		return o
	}
	create(t, w, owned("own-a"))
	ready(t, w, "own-a")
	create(t, w, owned("own-b"))
	ipOwnB := ready(t, w, "own-b").Status.IPAddresses[0]
	resolves(t, w, cVNet, "own-b.owned.internal", azuresim.ResolveOK, ipOwnB)
	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-a"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "own-a")
	resolves(t, w, cVNet, "own-a.owned.internal", azuresim.ResolveNXDomain, "")
	resolves(t, w, cVNet, "own-b.owned.internal", azuresim.ResolveOK, ipOwnB)
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "owned.internal"); len(links) != 1 {
		t.Errorf("the link own-b needs was deleted with own-a: %v", links)
	}

	create(t, w, shared("hc-a"))
	create(t, w, shared("hc-b"))
	ipA, ipB := ready(t, w, "hc-a").Status.IPAddresses[0], ready(t, w, "hc-b").Status.IPAddresses[0]
	resolves(t, w, cVNet, "api.hc-a.hcp.internal", azuresim.ResolveOK, ipA)
	resolves(t, w, cVNet, "x.apps.hc-b.hcp.internal", azuresim.ResolveOK, ipB)
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "hcp.internal"); len(links) != 1 {
		t.Fatalf("one link for one network, got %v", links)
	}

	// A record set in the zone that someone else wrote, and an object that
	// names it: the operator reports it and leaves it as it is.
	records := w.DNS(t, consumer).NewRecordSetsClient()
	if _, err := records.CreateOrUpdate(ctx, crg, "hcp.internal", armprivatedns.RecordTypeA, "api.hc-c", armprivatedns.RecordSet{
		Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new("10.99.0.1")}}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	create(t, w, shared("hc-c"))
	got := waitCondition(t, w, "hc-c", v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonRecordNotOwned)
	if !strings.Contains(message(got, v1alpha1.ConditionDNSReady), "api.hc-c.hcp.internal") {
		t.Errorf("the condition does not name the record set: %s", message(got, v1alpha1.ConditionDNSReady))
	}
	hasEvent(t, w, "hc-c", privateendpoint.ReasonRecordNotOwned)
	resolves(t, w, cVNet, "api.hc-c.hcp.internal", azuresim.ResolveOK, "10.99.0.1")
	resolves(t, w, cVNet, "x.apps.hc-c.hcp.internal", azuresim.ResolveOK, got.Status.IPAddresses[0])
	if err := w.Client.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "hc-c")
	resolves(t, w, cVNet, "api.hc-c.hcp.internal", azuresim.ResolveOK, "10.99.0.1")

	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hc-a"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "hc-a")
	resolves(t, w, cVNet, "api.hc-a.hcp.internal", azuresim.ResolveNXDomain, "")
	resolves(t, w, cVNet, "api.hc-b.hcp.internal", azuresim.ResolveOK, ipB)
	if endpoint(w, "hc-a") != nil {
		t.Error("a's endpoint outlived the object")
	}

	// The last object goes: its link goes; the zone stays, as it still
	// holds the foreign record set.
	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hc-b"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "hc-b")
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "hcp.internal"); len(links) != 0 {
		t.Errorf("links outlived every object: %v", links)
	}
	if zones := resources(w, "Microsoft.Network/privateDnsZones", "/privateDnsZones/hcp.internal"); len(zones) == 0 {
		t.Error("the zone was deleted with a record set the operator does not own in it")
	}
	rs, err := records.Get(ctx, crg, "hcp.internal", armprivatedns.RecordTypeA, "api.hc-c", nil)
	if err != nil || *rs.Properties.ARecords[0].IPv4Address != "10.99.0.1" || len(rs.Properties.Metadata) != 0 {
		t.Errorf("the foreign record set changed: %v %+v", err, rs)
	}
}

func message(obj *v1alpha1.AzurePrivateEndpoint, typ string) string {
	for _, c := range obj.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// TestHealsDisconnected: the provider removes the connection; after the
// grace period the operator deletes the endpoint, creates it again, and
// the records follow its new address.
func TestHealsDisconnected(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{Heal: heal.Policy{DisconnectedAfter: time.Second}})
	ctx := context.Background()
	// Another endpoint holds the subnet's first address until the heal, so
	// that the recreated endpoint gets a different one.
	blocker := w.Network(t, consumer).NewPrivateEndpointsClient()
	poller, err := blocker.BeginCreateOrUpdate(ctx, crg, "blocker", armnetwork.PrivateEndpoint{Location: new(location), Properties: &armnetwork.PrivateEndpointProperties{
		Subnet: &armnetwork.Subnet{ID: new(cSubnet)},
		PrivateLinkServiceConnections: []*armnetwork.PrivateLinkServiceConnection{{Name: new("blocker"), Properties: &armnetwork.PrivateLinkServiceConnectionProperties{
			PrivateLinkServiceID: new(svc.Status.ResourceID)}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	healme := ape("healme", svc.Status.ResourceID)
	healme.Spec.Publish = &v1alpha1.PrivateEndpointPublish{ConfigMapName: "healme-endpoint"}
	create(t, w, healme)
	old := ready(t, w, "healme").Status
	resolves(t, w, cVNet, "api.healme.hcp.internal", azuresim.ResolveOK, old.IPAddresses[0])
	// From here to the end, the name may only ever resolve to the address
	// of an endpoint of healme that exists in Azure: a freed address goes
	// back to the subnet and to whoever asks next.
	violations := watchRecords(t, w, "api.healme.hcp.internal", "healme")

	if err := w.Sim.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: svc.Status.ResourceID, PrivateEndpointID: peResource + "healme", Remove: true}); err != nil {
		t.Fatal(err)
	}
	dp, err := blocker.BeginDelete(ctx, crg, "blocker", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dp.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	hasEvent(t, w, "healme", privateendpoint.EventHealed)
	var now v1alpha1.AzurePrivateEndpointStatus
	testworld.Eventually(t, testworld.Timeout, "healme is Ready on a new endpoint", func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateEndpoint{}
		if err := w.Client.Get(ctx, key("healme"), obj); err != nil {
			return false, err.Error()
		}
		now = obj.Status
		return now.NetworkInterfaceID != old.NetworkInterfaceID && message(obj, v1alpha1.ConditionReady) != "" &&
			now.ConnectionState == "Approved" && len(now.IPAddresses) == 1 && now.IPAddresses[0] != old.IPAddresses[0], fmt.Sprintf("%+v", now)
	})
	ready(t, w, "healme")
	resolves(t, w, cVNet, "api.healme.hcp.internal", azuresim.ResolveOK, now.IPAddresses[0])
	if e := endpoint(w, "healme"); e == nil || e.IP != now.IPAddresses[0] {
		t.Errorf("azuresim holds %+v", e)
	}
	// What applications read follows the new endpoint.
	cm := &corev1.ConfigMap{}
	published(t, w, "healme-endpoint", cm, func() map[string]string { return cm.Data }, map[string]string{privateendpoint.KeyIPAddress: now.IPAddresses[0]})
	if v := violations(); len(v) > 0 {
		t.Errorf("the record pointed at an address no endpoint of healme held (%d times), first: %s", len(v), v[0])
	}
}

// watchRecords looks at name from the consumer network every 20 ms until
// the returned function is called, and records each time it resolves to an
// address that no existing endpoint of the object holds.
func watchRecords(t *testing.T, w *testworld.World, name, object string) func() []string {
	return testworld.Watch(t, func() string {
		r := w.Sim.Resolve(cVNet, name)
		if r.Status != azuresim.ResolveOK {
			return ""
		}
		if e := endpoint(w, object); e == nil || len(r.Addresses) != 1 || r.Addresses[0] != e.IP {
			return fmt.Sprintf("%v while the endpoint is %+v", r.Addresses, e)
		}
		return ""
	})
}

// TestDeletion: Delete removes the records, then the link, then the zone,
// and only then the endpoint (an endpoint delete that keeps failing shows
// the DNS already gone); Orphan leaves everything working in Azure; an
// object whose identity is missing says how to release it, and is released
// once its policy is Orphan.
func TestDeletion(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	create(t, w, ape("ordered", svc.Status.ResourceID))
	orphan := ape("orphan", svc.Status.ResourceID)
	orphan.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	create(t, w, orphan)
	ready(t, w, "ordered")
	orphanIP := ready(t, w, "orphan").Status.IPAddresses[0]

	id, err := w.Sim.AddFault(azuresim.Fault{Method: "DELETE", PathRegex: "(?i)/privateEndpoints/ordered$", Status: 500, Code: "InternalServerError", Message: "injected"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ordered"}}); err != nil {
		t.Fatal(err)
	}
	testworld.Eventually(t, testworld.Timeout, "ordered's DNS is gone while its endpoint stays", func(context.Context) (bool, string) {
		zones := resources(w, "Microsoft.Network/privateDnsZones", "ordered.hcp.internal")
		return len(zones) == 0 && endpoint(w, "ordered") != nil && faultHits(w, "InternalServerError") > 0, fmt.Sprint(zones)
	})
	if err := w.Client.Get(ctx, key("ordered"), &v1alpha1.AzurePrivateEndpoint{}); err != nil {
		t.Fatalf("the object went before its endpoint: %v", err)
	}
	w.Sim.RemoveFault(id)
	waitGone(t, w, "ordered")
	if e := endpoint(w, "ordered"); e != nil {
		t.Errorf("the endpoint outlived the object: %+v", e)
	}

	if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "orphan")
	resolves(t, w, cVNet, "api.orphan.hcp.internal", azuresim.ResolveOK, orphanIP)
	if endpoint(w, "orphan") == nil {
		t.Error("Orphan deleted the endpoint")
	}

	lost := ape("lost", svc.Status.ResourceID)
	lost.Spec.IdentityRef = &v1alpha1.IdentityReference{Name: "no-such-identity", Namespace: testworld.IdentityNS}
	create(t, w, lost)
	waitCondition(t, w, "lost", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, "")
	if err := w.Client.Delete(ctx, lost); err != nil {
		t.Fatal(err)
	}
	hasEvent(t, w, "lost", privateendpoint.EventIdentity)
	if err := w.Client.Get(ctx, key("lost"), lost); err != nil {
		t.Fatalf("the object went without its Azure resources deleted: %v", err)
	}
	patch := client.MergeFrom(lost.DeepCopy())
	lost.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
	if err := w.Client.Patch(ctx, lost, patch); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "lost")
}

// writes counts the ARM requests that are not reads.
func writes(w *testworld.World) int {
	n := 0
	for _, r := range w.Sim.Counters().Requests {
		if r.Method != "GET" {
			n += r.Count
		}
	}
	return n
}

func faultHits(w *testworld.World, kind string) int {
	n := 0
	for _, f := range w.Sim.Counters().Faults {
		if f.Kind == kind {
			n += f.Count
		}
	}
	return n
}

// TestEndpointDeletedOutOfBand: an endpoint deleted behind the operator's
// back is made again, and its names resolve again, also when the new
// endpoint gets the address the old one had (the records were removed in
// between: what the object knew of them must not outlive them).
func TestEndpointDeletedOutOfBand(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	create(t, w, ape("gone", svc.Status.ResourceID))
	before := ready(t, w, "gone").Status
	resolves(t, w, cVNet, "api.gone.hcp.internal", azuresim.ResolveOK, before.IPAddresses[0])
	poller, err := w.Network(t, consumer).NewPrivateEndpointsClient().BeginDelete(ctx, crg, "gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := poller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	hasEvent(t, w, "gone", privateendpoint.EventRecreated)
	testworld.Eventually(t, testworld.Timeout, "a new endpoint", func(context.Context) (bool, string) {
		e := endpoint(w, "gone")
		return e != nil && e.NIC != before.NetworkInterfaceID && e.ConnectionState == "Approved", fmt.Sprintf("%+v", e)
	})
	now := ready(t, w, "gone").Status
	if now.IPAddresses[0] != before.IPAddresses[0] {
		t.Logf("the new endpoint got another address (%s, was %s)", now.IPAddresses[0], before.IPAddresses[0])
	}
	resolves(t, w, cVNet, "api.gone.hcp.internal", azuresim.ResolveOK, now.IPAddresses[0])
}
