package privateendpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	registryID = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.ContainerRegistry/registries/reg1"
	storageID  = "/subscriptions/" + provider + "/resourceGroups/" + prg + "/providers/Microsoft.Storage/storageAccounts/acct1"
)

// serviceAPE is an endpoint to an Azure service's sub-resource, without
// DNS (an Azure service's names resolve through privatelink zones the
// operator never writes).
func serviceAPE(name, target, group string) *v1alpha1.AzurePrivateEndpoint {
	obj := ape(name, "")
	obj.Spec.PrivateLinkResourceID, obj.Spec.GroupIDs, obj.Spec.DNS = target, []string{group}, nil
	return obj
}

// seedService makes an Azure service in the provider's group.
func seedService(t *testing.T, w *testworld.World, id string) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"location": location, "properties": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{{ID: id, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
}

// TestAzureServiceTargets: an endpoint to a container registry's registry
// sub-resource gets its two static addresses, one per member, each named in
// status.customDNSConfigs and in the published hosts key; a heal after the
// registry was deleted and made again creates the endpoint with the same
// addresses. An endpoint to a storage account's blob gets one address; a
// group ID the service lacks is Azure's refusal, reported as such.
func TestAzureServiceTargets(t *testing.T) {
	w, _, _ := world(t, privateendpoint.Options{Heal: heal.Policy{DisconnectedAfter: time.Second}})
	seedService(t, w, registryID)
	seedService(t, w, storageID)

	reg := serviceAPE("reg1", registryID, "registry")
	reg.Spec.IPConfigurations = []v1alpha1.PrivateEndpointIPConfiguration{
		{MemberName: "registry", PrivateIPAddress: "10.9.2.40"},
		{MemberName: "registry_data_" + location, PrivateIPAddress: "10.9.2.41", Name: "data"},
	}
	reg.Spec.Publish = &v1alpha1.PrivateEndpointPublish{ConfigMapName: "reg1-endpoint"}
	create(t, w, reg)
	blob := serviceAPE("acct1-blob", storageID, "blob")
	create(t, w, blob)
	wrongCase := serviceAPE("acct1-blob-caps", storageID, "BLOB")
	create(t, w, wrongCase)

	wantDNS := []v1alpha1.CustomDNSConfig{
		{FQDN: "reg1.azurecr.io", IPAddresses: []string{"10.9.2.40"}},
		{FQDN: "reg1." + location + ".data.azurecr.io", IPAddresses: []string{"10.9.2.41"}},
	}
	before := ready(t, w, "reg1").Status
	if d := cmp.Diff(wantDNS, before.CustomDNSConfigs); d != "" {
		t.Errorf("reg1 customDNSConfigs (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"10.9.2.40", "10.9.2.41"}, before.IPAddresses); d != "" {
		t.Errorf("reg1 addresses (-want +got):\n%s", d)
	}
	hosts := "10.9.2.40 reg1.azurecr.io\n10.9.2.41 reg1." + location + ".data.azurecr.io\n"
	cm := &corev1.ConfigMap{}
	published(t, w, "reg1-endpoint", cm, func() map[string]string { return cm.Data },
		map[string]string{privateendpoint.KeyHosts: hosts, privateendpoint.KeyIPAddresses: "10.9.2.40,10.9.2.41"})

	b := ready(t, w, "acct1-blob").Status
	if len(b.IPAddresses) != 1 || len(b.CustomDNSConfigs) != 1 || b.CustomDNSConfigs[0].FQDN != "acct1.blob.core.windows.net" || b.Target != storageID {
		t.Errorf("acct1-blob status: %+v", b)
	}
	refused := waitCondition(t, w, "acct1-blob-caps", v1alpha1.ConditionPrivateEndpointReady, metav1.ConditionFalse, azure.ReasonInvalidRequest)
	if m := message(refused, v1alpha1.ConditionPrivateEndpointReady); !strings.Contains(m, "InvalidValuesForRequestParameters") {
		t.Errorf("a group the storage account lacks: %q", m)
	}

	// The registry is deleted and made again (a move, a restore): its
	// connections went with it, so the endpoint reads Disconnected, is
	// healed (the Event stays; the condition passes), and comes back on
	// its addresses.
	if err := w.Sim.Delete(registryID); err != nil {
		t.Fatal(err)
	}
	seedService(t, w, registryID)
	hasEvent(t, w, "reg1", privateendpoint.EventHealed)
	var after v1alpha1.AzurePrivateEndpointStatus
	testworld.Eventually(t, testworld.Timeout, "reg1 is Ready on a new endpoint", func(ctx context.Context) (bool, string) {
		obj := &v1alpha1.AzurePrivateEndpoint{}
		if err := w.Client.Get(ctx, key("reg1"), obj); err != nil {
			return false, err.Error()
		}
		after = obj.Status
		return after.NetworkInterfaceID != before.NetworkInterfaceID && after.ConnectionState == "Approved" && message(obj, v1alpha1.ConditionReady) != "",
			fmt.Sprintf("%+v", after)
	})
	ready(t, w, "reg1")
	if d := cmp.Diff(wantDNS, after.CustomDNSConfigs); d != "" {
		t.Errorf("reg1 after the heal (-want +got):\n%s", d)
	}
	want := map[string]string{"registry": "10.9.2.40", "registry_data_" + location: "10.9.2.41"}
	e := endpoint(w, "reg1")
	if e == nil {
		t.Fatal("azuresim holds no endpoint reg1 after the heal")
	}
	if d := cmp.Diff(want, e.Members); d != "" {
		t.Errorf("azuresim's endpoint after the heal (-want +got):\n%s", d)
	}
}
