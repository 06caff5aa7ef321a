package clusterlink

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

func TestASOTrust(t *testing.T) {
	target := PrivateLinkServiceID(mcSub, "mc-rg", "mc-ingress-privatelink")
	w := wc("wc1", func(a *capz.AzureCluster) {
		a.ClusterName = "wc1"
		a.Subnets[1].PrivateEndpoints = []capz.PrivateEndpoint{{Name: "wc1-to-mc-privatelink-privateendpoint",
			Connections: []capz.PrivateLinkServiceConnection{{Name: "c", PrivateLinkServiceID: target}}}}
	})
	capzs := capz.ASOObject{Namespace: "org-a", Name: "wc1-to-mc-privatelink-privateendpoint", AzureName: "wc1-to-mc-privatelink-privateendpoint",
		Controller: "wc1", ClusterName: "wc1", PrivateLinkServiceIDs: []string{target}, Ready: true}
	with := func(f func(*capz.ASOObject)) capz.ASOObject { o := capzs; f(&o); return o }
	for _, tc := range []struct {
		reason string
		obj    capz.ASOObject
		want   bool
	}{
		{"CAPZ's object for the entry", capzs, true},
		{"no cluster-name label (a tenant's object with an owner reference)", with(func(o *capz.ASOObject) { o.ClusterName = "" }), false},
		{"another cluster's label", with(func(o *capz.ASOObject) { o.ClusterName = "wc2" }), false},
		{"a name no entry of the cluster has", with(func(o *capz.ASOObject) { o.AzureName = "wc1-to-mc-evil-privateendpoint" }), false},
		{"the entry's name but another target", with(func(o *capz.ASOObject) {
			o.PrivateLinkServiceIDs = []string{PrivateLinkServiceID(mcSub, "mc-rg", "evil")}
		}), false},
		{"controlled by another AzureCluster", with(func(o *capz.ASOObject) { o.Controller = "wc2" }), false},
	} {
		if got := ASOOfCluster(tc.obj, w); got != tc.want {
			t.Errorf("ASOOfCluster: %s: got %v", tc.reason, got)
		}
	}

	id := "/subscriptions/" + wcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
	good := privateendpoints.Observation{ID: id, Name: "wc1-to-mc-privatelink-privateendpoint", PrivateLinkServiceID: target, IP: "10.1.1.4", ProvisioningState: "Succeeded"}
	withOb := func(f func(*privateendpoints.Observation)) privateendpoints.Observation { o := good; f(&o); return o }
	for _, tc := range []struct {
		reason string
		ob     privateendpoints.Observation
		want   bool
	}{
		{"the entry's endpoint in the cluster's subscription and group", good, true},
		{"status.id in another subscription", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + mcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
		}), false},
		{"status.id in another resource group", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + wcSub + "/resourceGroups/other/providers/Microsoft.Network/privateEndpoints/wc1-to-mc-privatelink-privateendpoint"
		}), false},
		{"status.id of another endpoint", withOb(func(o *privateendpoints.Observation) {
			o.ID = "/subscriptions/" + wcSub + "/resourceGroups/wc1-resources/providers/Microsoft.Network/privateEndpoints/other"
		}), false},
		{"a connection to another service", withOb(func(o *privateendpoints.Observation) {
			o.PrivateLinkServiceID = PrivateLinkServiceID(mcSub, "mc-rg", "evil")
		}), false},
		{"no status yet", privateendpoints.Observation{}, false},
	} {
		if _, got := ASOObservationOf(capzs, tc.ob, w); got != tc.want {
			t.Errorf("ASOObservationOf: %s: got %v", tc.reason, got)
		}
	}
}

// TestASOObservation: what ASO's status says of an endpoint, read from the
// cache's object in place (nothing of it changes), in each shape ASO
// writes; a status of another shape says nothing.
func TestASOObservation(t *testing.T) {
	status := func() map[string]any {
		return map[string]any{
			"id": "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/privateEndpoints/pe", "name": "pe",
			"provisioningState": "Succeeded", "tags": map[string]any{"Name": "pe"},
			"networkInterfaces": []any{map[string]any{"id": "/nic-1"}, "not an object", map[string]any{}},
			"customDnsConfigs":  []any{map[string]any{"ipAddresses": []any{"10.0.0.4"}}},
			"privateLinkServiceConnections": []any{map[string]any{
				"privateLinkServiceId":              "/pls",
				"privateLinkServiceConnectionState": map[string]any{"status": "Approved", "description": "Auto Approved"},
			}},
		}
	}
	want := privateendpoints.Observation{
		Name: "pe", ID: "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/privateEndpoints/pe", ProvisioningState: "Succeeded",
		Tags: map[string]string{"Name": "pe"}, NICIDs: []string{"/nic-1"}, IP: "10.0.0.4",
		PrivateLinkServiceID: "/pls", ConnectionState: "Approved", ConnectionDescription: "Auto Approved",
	}
	u := capz.Object(capz.ASOPrivateEndpointGVK)
	u.Object["status"] = status()
	before := u.DeepCopy()
	if diff := cmp.Diff(want, asoObservation(u)); diff != "" {
		t.Errorf("observation (-want +got):\n%s", diff)
	}
	if !cmp.Equal(before.Object, u.Object) {
		t.Error("reading the observation changed the object")
	}

	manual := status()
	manual["manualPrivateLinkServiceConnections"] = []any{map[string]any{
		"privateLinkServiceId":              "/pls-2",
		"privateLinkServiceConnectionState": map[string]any{"status": "Pending"},
	}}
	u.Object["status"] = manual
	if got := asoObservation(u); !got.ManualApproval || got.PrivateLinkServiceID != "/pls-2" || got.ConnectionState != "Pending" {
		t.Errorf("manual connection: %+v", got)
	}

	for _, st := range []any{nil, "a string", map[string]any{"networkInterfaces": "x", "privateLinkServiceConnections": 7}} {
		u.Object["status"] = st
		if got := asoObservation(u); !cmp.Equal(got, privateendpoints.Observation{}) {
			t.Errorf("status %v: %+v, want nothing", st, got)
		}
	}
}

// TestTrimASOKeepsObservation: the cache's ASO object (trimASO) reads as
// the whole one does (asoObservation, capz.ReadASO), and keeps nothing of
// the status beyond that. The whole status is shaped as ASO v2.20 writes a
// PrivateEndpoint's: every field of PrivateEndpoint_STATUS and of its
// connections' PrivateLinkServiceConnection_STATUS (ASO v2.20.0,
// api/network/v1api20220701/private_endpoint_types_gen.go, the version
// CAPZ v1.27 writes: capz.ASOPrivateEndpointGVK) that the operator does
// not read, beside those it does.
// TestObservationTextFromTheWire: the text the cache keeps of an ASO
// object's status is made by the transform from what the API server sent;
// a status that comes with such a key (ASO's schema has none) is read
// for its fields, not for the key.
func TestObservationTextFromTheWire(t *testing.T) {
	u := capz.Object(capz.ASOPrivateEndpointGVK)
	u.SetNamespace("org-a")
	u.SetName("pe")
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "aso", Operation: metav1.ManagedFieldsOperationUpdate}})
	u.Object["status"] = map[string]any{
		"provisioningState":  "Succeeded",
		cachedObservationKey: `{"ip":"10.9.9.9","connectionState":"Approved","provisioningState":"Succeeded"}`,
	}
	if ob := asoObservation(u); ob.IP != "" || ob.ProvisioningState != "Succeeded" {
		t.Errorf("the object as sent: %+v; want its status's fields, not the key's", ob)
	}
	trimmed := trimASO(u)
	if ob := asoObservation(trimmed); ob.IP != "" || ob.ProvisioningState != "Succeeded" {
		t.Errorf("the cache's object: %+v; want its status's fields, not the key's", ob)
	}
}

func TestTrimASOKeepsObservation(t *testing.T) {
	conn := func(pls, state string) map[string]any {
		return map[string]any{
			"id": "/pe/conn", "name": "conn", "etag": "W/\"1\"", "type": "Microsoft.Network/privateEndpoints/privateLinkServiceConnections",
			"groupIds": []any{}, "privateLinkServiceId": pls, "provisioningState": "Succeeded", "requestMessage": "hello",
			"privateLinkServiceConnectionState": map[string]any{"status": state, "description": "Auto Approved", "actionsRequired": "None"},
		}
	}
	whole := func() map[string]any {
		return map[string]any{
			"id": "/subscriptions/s/resourceGroups/mc/providers/Microsoft.Network/privateEndpoints/pe", "name": "pe",
			"type": "Microsoft.Network/privateEndpoints", "etag": "W/\"2\"", "location": "westeurope",
			"provisioningState": "Succeeded", "tags": map[string]any{"Name": "pe"},
			"subnet":            map[string]any{"id": "/subnets/nodes"},
			"ipConfigurations":  []any{},
			"networkInterfaces": []any{map[string]any{"id": "/nic-1"}, "not an object", map[string]any{}, map[string]any{"id": "/nic-2"}},
			"customDnsConfigs": []any{
				map[string]any{"fqdn": "none.example"},
				map[string]any{"fqdn": "pe.example", "ipAddresses": []any{"10.0.0.4", "10.0.0.5"}},
			},
			"privateLinkServiceConnections": []any{conn("/pls", "Approved"), conn("/pls-other", "Pending")},
			"conditions": []any{
				map[string]any{"type": "Other", "status": "True"},
				map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "severity": "", "message": "", "observedGeneration": int64(2)},
			},
		}
	}
	manual := whole()
	manual["manualPrivateLinkServiceConnections"] = []any{"not an object"}
	twoReady := whole()
	twoReady["conditions"] = append(twoReady["conditions"].([]any), map[string]any{"type": "Ready", "status": "False", "reason": "Reconciling"})
	noState := whole()
	noState["privateLinkServiceConnections"] = []any{map[string]any{"privateLinkServiceId": "/pls"}}
	for name, st := range map[string]any{
		"as ASO writes it":           whole(),
		"a manual connection":        manual,
		"a connection without state": noState,
		"two Ready conditions":       twoReady,
		"no status":                  nil,
		"a malformed status":         map[string]any{"networkInterfaces": "x", "privateLinkServiceConnections": int64(7), "conditions": "y", "tags": int64(3)},
		"a status that is a string":  "a string",
	} {
		t.Run(name, func(t *testing.T) { checkTrimmedASO(t, st) })
	}
}

// checkTrimmedASO checks that the cache's copy of an ASO endpoint whose
// status is st reads as the endpoint does, also when the transform sees
// its own object again, and keeps nothing else of the status.
func checkTrimmedASO(t *testing.T, st any) {
	t.Helper()
	u := capz.Object(capz.ASOPrivateEndpointGVK)
	u.SetNamespace("org-a")
	u.SetName("pe")
	_ = unstructured.SetNestedField(u.Object, "pe", "spec", "azureName")
	if st != nil {
		u.Object["status"] = st
	}
	trimmed := trimASO(u.DeepCopy())
	if diff := cmp.Diff(asoObservation(u), asoObservation(trimmed)); diff != "" {
		t.Errorf("observation of the cached object (-whole +cached):\n%s", diff)
	}
	// client-go may pass the cache's object to the transform again.
	if diff := cmp.Diff(asoObservation(u), asoObservation(trimASO(trimmed.DeepCopy()))); diff != "" {
		t.Errorf("observation of the object transformed twice (-whole +cached):\n%s", diff)
	}
	if diff := cmp.Diff(capz.ReadASO(u), capz.ReadASO(trimmed)); diff != "" {
		t.Errorf("ReadASO of the cached object (-whole +cached):\n%s", diff)
	}
	raw, err := json.Marshal(trimmed.Object)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"etag", "ipConfigurations", "subnet", "fqdn", "requestMessage", "actionsRequired", "10.0.0.5", "/pls-other", "/nic-1\"},\"not", "Other", "observedGeneration"} {
		if strings.Contains(string(raw), gone) {
			t.Errorf("the cached object keeps %q: %s", gone, raw)
		}
	}
}
