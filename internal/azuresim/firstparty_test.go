package azuresim_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/google/go-cmp/cmp"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

const (
	storageID  = "/subscriptions/" + providerSub + "/resourceGroups/data-rg/providers/Microsoft.Storage/storageAccounts/acct1"
	registryID = "/subscriptions/" + providerSub + "/resourceGroups/data-rg/providers/Microsoft.ContainerRegistry/registries/reg1"
)

// serviceEndpoint is an endpoint body to an Azure service.
func serviceEndpoint(subnetID, target string, groups []string, static map[string]string, manual bool) armnetwork.PrivateEndpoint {
	pe := peBody(subnetID, target, manual)
	conns := pe.Properties.PrivateLinkServiceConnections
	if manual {
		conns = pe.Properties.ManualPrivateLinkServiceConnections
	}
	for _, g := range groups {
		conns[0].Properties.GroupIDs = append(conns[0].Properties.GroupIDs, new(g))
	}
	for member, ip := range static {
		pe.Properties.IPConfigurations = append(pe.Properties.IPConfigurations, &armnetwork.PrivateEndpointIPConfiguration{
			Name: new("cfg-" + member),
			Properties: &armnetwork.PrivateEndpointIPConfigurationProperties{
				GroupID: new(groups[0]), MemberName: new(member), PrivateIPAddress: new(ip),
			},
		})
	}
	return pe
}

// seedServices makes a storage account and a container registry in the
// provider's subscription. (The consumer's node subnet has its load
// balancer at .4: endpoints start at .5.)
func seedServices(t *testing.T, e *env) {
	t.Helper()
	e.seedGroup(t, providerSub, "data-rg")
	raw, _ := json.Marshal(map[string]any{"location": location, "properties": map[string]any{}})
	if err := e.srv.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{{ID: storageID, Body: raw}, {ID: registryID, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceEndpoints covers endpoints to Azure services (a storage
// account, a container registry): group IDs checked as Azure does, one
// address per required member (static or allocated) with its FQDN in
// customDnsConfigs and on the NIC, approval, and Disconnected once the
// service is deleted.
func TestServiceEndpoints(t *testing.T) {
	tests := []serviceCase{
		{reason: "blob, automatic: approved, one FQDN", target: storageID, groups: []string{"blob"},
			wantDNS: map[string]string{"acct1.blob.core.windows.net": "10.2.0.5"}, wantStatus: azuresim.ConnectionApproved},
		{reason: "no group ID", target: storageID, wantCreate: "MissingParameterOnPrivateLinkServiceConnection"},
		{reason: "two group IDs", target: storageID, groups: []string{"blob", "file"}, wantCreate: "OnlyOneGroupIdPermitted"},
		{reason: "a group the service lacks (case-sensitive)", target: storageID, groups: []string{"BLOB"}, wantCreate: "InvalidValuesForRequestParameters"},
		{reason: "registry: two members, two addresses", target: registryID, groups: []string{"registry"},
			wantDNS:    map[string]string{"reg1.azurecr.io": "10.2.0.5", "reg1.westeurope.data.azurecr.io": "10.2.0.6"},
			wantStatus: azuresim.ConnectionApproved},
		{reason: "registry: static addresses for both members", target: registryID, groups: []string{"registry"},
			static:     map[string]string{"registry": "10.2.0.40", "registry_data_westeurope": "10.2.0.41"},
			wantDNS:    map[string]string{"reg1.azurecr.io": "10.2.0.40", "reg1.westeurope.data.azurecr.io": "10.2.0.41"},
			wantStatus: azuresim.ConnectionApproved},
		{reason: "registry: a static address for one member only", target: registryID, groups: []string{"registry"},
			static: map[string]string{"registry": "10.2.0.40"}, wantCreate: "PrivateEndpointIpConfigurationMissingMemberNamesRequiredByFps"},
		{reason: "a static address for a member the group lacks", target: storageID, groups: []string{"blob"},
			static: map[string]string{"file": "10.2.0.40"}, wantCreate: "PrivateEndpointIpConfigurationMemberNameNotRequired"},
		{reason: "manual: pending", target: storageID, groups: []string{"blob"}, manual: true,
			wantDNS: map[string]string{"acct1.blob.core.windows.net": "10.2.0.5"}, wantStatus: azuresim.ConnectionPending},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) { runServiceCase(t, tc) })
	}
}

// serviceCase is one row of TestServiceEndpoints.
type serviceCase struct {
	reason     string
	target     string
	groups     []string
	static     map[string]string
	manual     bool
	wantCreate string
	wantDNS    map[string]string // FQDN -> address
	wantStatus string
}

func runServiceCase(t *testing.T, tc serviceCase) {
	e := newEnv(t, azuresim.Options{})
	seedServices(t, e)
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	err := pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(context.Background(), "mc-rg", "pe", serviceEndpoint(cons.nodeSubnetID, tc.target, tc.groups, tc.static, tc.manual), nil)
	})
	if code, _ := errorCode(err); code != tc.wantCreate {
		t.Fatalf("create: want %q, got %v", tc.wantCreate, err)
	}
	if tc.wantCreate != "" {
		if left := e.srv.Endpoints(); len(left) != 0 {
			t.Errorf("a refused endpoint left %+v", left)
		}
		return
	}
	got, err := pes.Get(context.Background(), "mc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	dns := map[string]string{}
	for _, c := range got.Properties.CustomDNSConfigs {
		dns[*c.Fqdn] = *c.IPAddresses[0]
	}
	if d := cmp.Diff(tc.wantDNS, dns); d != "" {
		t.Errorf("customDnsConfigs (-want +got):\n%s", d)
	}
	conn := append(got.Properties.PrivateLinkServiceConnections, got.Properties.ManualPrivateLinkServiceConnections...)[0]
	if s := *conn.Properties.PrivateLinkServiceConnectionState.Status; s != tc.wantStatus {
		t.Errorf("connection %s, want %s", s, tc.wantStatus)
	}
	if d := cmp.Diff(tc.groups, derefs(conn.Properties.GroupIDs)); d != "" {
		t.Errorf("groupIds (-want +got):\n%s", d)
	}
	checkMemberNIC(t, e, got.PrivateEndpoint, tc.wantDNS)
}

// checkMemberNIC checks that the endpoint's NIC has one IP configuration
// per member, with the member's FQDN and address.
func checkMemberNIC(t *testing.T, e *env, pe armnetwork.PrivateEndpoint, want map[string]string) {
	t.Helper()
	nic, err := e.network(t, consumerSub).NewInterfacesClient().Get(context.Background(), "mc-rg", lastSegment(*pe.Properties.NetworkInterfaces[0].ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range nic.Properties.IPConfigurations {
		plc := c.Properties.PrivateLinkConnectionProperties
		if plc == nil || len(plc.Fqdns) != 1 {
			t.Fatalf("NIC configuration %s: privateLinkConnectionProperties %+v", *c.Name, plc)
		}
		got[*plc.Fqdns[0]] = *c.Properties.PrivateIPAddress
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("NIC configurations (-want +got):\n%s", d)
	}
}

func lastSegment(id string) string {
	for i := len(id) - 1; i >= 0; i-- {
		if id[i] == '/' {
			return id[i+1:]
		}
	}
	return id
}

// TestServiceEndpointLifecycle: a manual connection to an Azure service
// is approved by its owner; the service deleted, the endpoint sees
// Disconnected and its static addresses stay its own until it is deleted,
// when an endpoint made again gets them back.
func TestServiceEndpointLifecycle(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	seedServices(t, e)
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	ctx := context.Background()
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	static := map[string]string{"registry": "10.2.0.40", "registry_data_westeurope": "10.2.0.41"}
	body := serviceEndpoint(cons.nodeSubnetID, registryID, []string{"registry"}, static, true)
	created := mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", body, nil)
	})
	state := func() string {
		t.Helper()
		got, err := pes.Get(ctx, "mc-rg", "pe", nil)
		if err != nil {
			t.Fatal(err)
		}
		return *got.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status
	}
	if err := e.srv.ActOnConnection(azuresim.ConnectionAction{PrivateLinkServiceID: registryID, PrivateEndpointID: *created.ID, Status: azuresim.ConnectionApproved}); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != azuresim.ConnectionApproved {
		t.Fatalf("after the owner's approval: %s", s)
	}
	if err := e.srv.Delete(registryID); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != azuresim.ConnectionDisconnected {
		t.Fatalf("after the registry was deleted: %s, want Disconnected", s)
	}
	// The addresses are the old endpoint's until it goes.
	other := serviceEndpoint(cons.nodeSubnetID, storageID, []string{"blob"}, map[string]string{"blob": "10.2.0.40"}, false)
	if code, _ := errorCode(pollErr(func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "other", other, nil)
	})); code != "PrivateIPAddressInUse" {
		t.Fatalf("another endpoint on a held address: %s, want PrivateIPAddressInUse", code)
	}
	mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientDeleteResponse], error) {
		return pes.BeginDelete(ctx, "mc-rg", "pe", nil)
	})
	raw, _ := json.Marshal(map[string]any{"location": location})
	if err := e.srv.Seed(azuresim.Seed{Resources: []azuresim.SeedResource{{ID: registryID, Body: raw}}}); err != nil {
		t.Fatal(err)
	}
	again := mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
		return pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", body, nil)
	})
	var members map[string]string
	for _, ep := range e.srv.Endpoints() {
		if ep.ID == *again.ID {
			members = ep.Members
		}
	}
	if d := cmp.Diff(static, members); d != "" {
		t.Errorf("the endpoint made again (-want +got):\n%s", d)
	}
	if s := state(); s != azuresim.ConnectionPending {
		t.Errorf("the endpoint made again: %s, want Pending", s)
	}
}

func derefs(in []*string) []string {
	var out []string
	for _, s := range in {
		out = append(out, *s)
	}
	return out
}

// TestServiceEndpointsHaveNoServiceLimit: Azure's limit of endpoints per
// private link service is not applied to an Azure service (none is on
// record for one).
func TestServiceEndpointsHaveNoServiceLimit(t *testing.T) {
	e := newEnv(t, azuresim.Options{Limits: azuresim.Limits{PrivateEndpointsPerPrivateLinkService: 1}})
	seedServices(t, e)
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	for _, name := range []string{"pe-a", "pe-b"} {
		mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
			return pes.BeginCreateOrUpdate(context.Background(), "mc-rg", name, serviceEndpoint(cons.nodeSubnetID, storageID, []string{"blob"}, nil, false), nil)
		})
	}
}
