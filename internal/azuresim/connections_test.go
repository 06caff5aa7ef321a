package azuresim_test

import (
	"context"
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestConnectionStateMatrix covers how a private endpoint's connection
// starts (automatic or manual, visible or not, by ID or alias) and how the
// endpoint's view follows the provider's actions.
func TestConnectionStateMatrix(t *testing.T) {
	tests := []connectionCase{
		{reason: "automatic, auto-approved: approved at once", visibility: []string{consumerSub}, autoApproval: []string{consumerSub}, wantStatus: azuresim.ConnectionApproved},
		{reason: "automatic by alias, auto-approved", visibility: []string{consumerSub}, autoApproval: []string{consumerSub}, byAlias: true, wantStatus: azuresim.ConnectionApproved},
		{reason: "automatic, visible to all, auto-approved", visibility: []string{"*"}, autoApproval: []string{consumerSub}, wantStatus: azuresim.ConnectionApproved},
		{reason: "automatic, visible but not auto-approved: Azure's authorization error", visibility: []string{consumerSub}, wantCreate: "LinkedAuthorizationFailed"},
		{reason: "automatic, not visible", visibility: []string{"33333333-3333-3333-3333-333333333333"}, autoApproval: []string{consumerSub}, wantCreate: "ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible"},
		{reason: "manual, visible: pending", visibility: []string{consumerSub}, manual: true, wantStatus: azuresim.ConnectionPending},
		{reason: "manual by alias, visible: pending", visibility: []string{consumerSub}, manual: true, byAlias: true, wantStatus: azuresim.ConnectionPending},
		{reason: "manual, not visible", manual: true, wantCreate: "ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible"},
		{reason: "manual, approved by the owner", visibility: []string{consumerSub}, manual: true, act: approve, wantStatus: azuresim.ConnectionApproved},
		{reason: "manual, rejected by the owner", visibility: []string{consumerSub}, manual: true, act: reject, wantStatus: azuresim.ConnectionRejected},
		{reason: "automatic, rejected later by the owner", visibility: []string{consumerSub}, autoApproval: []string{consumerSub}, act: reject, wantStatus: azuresim.ConnectionRejected},
		{reason: "manual, removed by the owner: disconnected", visibility: []string{consumerSub}, manual: true, act: remove, wantStatus: azuresim.ConnectionDisconnected},
		{reason: "approved, removed and the service deleted: disconnected", visibility: []string{consumerSub}, autoApproval: []string{consumerSub}, act: removeThenDeleteService, wantStatus: azuresim.ConnectionDisconnected},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) { runConnectionCase(t, tc) })
	}
}

// connectionCase is one row of TestConnectionStateMatrix.
type connectionCase struct {
	reason       string
	visibility   []string
	autoApproval []string
	manual       bool
	byAlias      bool
	act          action
	wantCreate   string // error code of the create, "" for success
	wantStatus   string // the endpoint's view after act
}

func runConnectionCase(t *testing.T, tc connectionCase) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	pls := prov.pls(t, e, "svc", tc.visibility, tc.autoApproval)
	target := *pls.ID
	if tc.byAlias {
		target = *pls.Properties.Alias
	}
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	p, err := pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", peBody(cons.nodeSubnetID, target, tc.manual), nil)
	if tc.wantCreate != "" {
		if code, _ := errorCode(err); code != tc.wantCreate {
			t.Fatalf("%s: create: want %s, got %v", tc.reason, tc.wantCreate, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: create: %v", tc.reason, err)
	}
	if _, err := p.PollUntilDone(ctx, pollOpts); err != nil {
		t.Fatalf("%s: create: %v", tc.reason, err)
	}
	plsClient := e.network(t, providerSub).NewPrivateLinkServicesClient()
	conns := listConnections(t, plsClient)
	if len(conns) != 1 {
		t.Fatalf("%s: provider sees %d connections, want 1", tc.reason, len(conns))
	}
	if tc.manual && tc.act == none {
		if d := ptr.Deref(conns[0].Properties.PrivateLinkServiceConnectionState.Description, ""); d != "please approve" {
			t.Errorf("%s: the owner sees request message %q, want the endpoint's", tc.reason, d)
		}
	}
	ownerActs(t, plsClient, conns[0], tc.act)
	got, err := pes.Get(ctx, "mc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	conns2 := slices.Concat(got.Properties.PrivateLinkServiceConnections, got.Properties.ManualPrivateLinkServiceConnections)
	if status := *conns2[0].Properties.PrivateLinkServiceConnectionState.Status; status != tc.wantStatus {
		t.Errorf("%s: endpoint sees %s, want %s", tc.reason, status, tc.wantStatus)
	}
}

type action int

const (
	none action = iota
	approve
	reject
	remove
	removeThenDeleteService
)

// ownerActs does what the private link service's owner does to a connection
// of service "svc" in "wc-rg".
func ownerActs(t *testing.T, plsClient *armnetwork.PrivateLinkServicesClient, conn *armnetwork.PrivateEndpointConnection, act action) {
	t.Helper()
	ctx := context.Background()
	setStatus := func(status string) {
		conn.Properties.PrivateLinkServiceConnectionState.Status = new(status)
		conn.Properties.PrivateLinkServiceConnectionState.Description = new("decided by the owner")
		if _, err := plsClient.UpdatePrivateEndpointConnection(ctx, "wc-rg", "svc", *conn.Name, *conn, nil); err != nil {
			t.Fatalf("owner sets %s: %v", status, err)
		}
	}
	removeConn := func() {
		mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientDeletePrivateEndpointConnectionResponse], error) {
			return plsClient.BeginDeletePrivateEndpointConnection(ctx, "wc-rg", "svc", *conn.Name, nil)
		})
	}
	switch act {
	case none:
	case approve:
		setStatus(azuresim.ConnectionApproved)
	case reject:
		setStatus(azuresim.ConnectionRejected)
	case remove:
		removeConn()
	case removeThenDeleteService:
		removeConn()
		mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientDeleteResponse], error) {
			return plsClient.BeginDelete(ctx, "wc-rg", "svc", nil)
		})
	}
}

// listConnections lists the connections of service "svc" in "wc-rg".
func listConnections(t *testing.T, c *armnetwork.PrivateLinkServicesClient) []*armnetwork.PrivateEndpointConnection {
	t.Helper()
	var out []*armnetwork.PrivateEndpointConnection
	pager := c.NewListPrivateEndpointConnectionsPager("wc-rg", "svc", nil)
	for pager.More() {
		page, err := pager.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Value...)
	}
	return out
}

// TestRejectionIsFinalForTheProvider: the owner cannot approve a Rejected
// connection (Azure refuses it by design); the consumer asks again by
// writing its manual connection back as Pending, and then the owner can
// approve it. Any other state the consumer sends changes nothing.
func TestRejectionIsFinalForTheProvider(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	pls := prov.pls(t, e, "svc", []string{consumerSub}, nil)
	pes := e.network(t, consumerSub).NewPrivateEndpointsClient()
	put := func(body armnetwork.PrivateEndpoint) {
		t.Helper()
		mustPoll(t, func() (*poller[armnetwork.PrivateEndpointsClientCreateOrUpdateResponse], error) {
			return pes.BeginCreateOrUpdate(ctx, "mc-rg", "pe", body, nil)
		})
	}
	put(peBody(cons.nodeSubnetID, *pls.ID, true))
	plsClient := e.network(t, providerSub).NewPrivateLinkServicesClient()
	conn := listConnections(t, plsClient)[0]
	ownerActs(t, plsClient, conn, reject)

	conn = listConnections(t, plsClient)[0]
	conn.Properties.PrivateLinkServiceConnectionState.Status = new(azuresim.ConnectionApproved)
	_, err := plsClient.UpdatePrivateEndpointConnection(ctx, "wc-rg", "svc", *conn.Name, *conn, nil)
	if code, status := errorCode(err); code != "BadRequest" || status != 400 {
		t.Fatalf("approving a Rejected connection: want 400 BadRequest, got %v", err)
	}

	state := func() (string, string) {
		c := listConnections(t, plsClient)[0].Properties.PrivateLinkServiceConnectionState
		return *c.Status, ptr.Deref(c.Description, "")
	}
	// The consumer sends its connection back as Approved: ignored.
	got, err := pes.Get(ctx, "mc-rg", "pe", nil)
	if err != nil {
		t.Fatal(err)
	}
	body := got.PrivateEndpoint
	body.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status = new(azuresim.ConnectionApproved)
	put(body)
	if s, _ := state(); s != azuresim.ConnectionRejected {
		t.Fatalf("a consumer set its connection %s", s)
	}
	// As Pending, with a new message: the owner sees it Pending again.
	body.Properties.ManualPrivateLinkServiceConnections[0].Properties.PrivateLinkServiceConnectionState.Status = new(azuresim.ConnectionPending)
	body.Properties.ManualPrivateLinkServiceConnections[0].Properties.RequestMessage = new("ticket 7: please look again")
	put(body)
	if s, d := state(); s != azuresim.ConnectionPending || d != "ticket 7: please look again" {
		t.Fatalf("after asking again: %s %q", s, d)
	}
	ownerActs(t, plsClient, listConnections(t, plsClient)[0], approve)
	if s, _ := state(); s != azuresim.ConnectionApproved {
		t.Fatalf("the owner could not approve the request made again: %s", s)
	}
}

// TestAccessMode: a Restricted service admits the subscriptions its
// visibility lists and no others, "*" admitting none; a PUT that leaves
// accessMode out keeps the stored mode, so Default comes back only when a
// client sends it.
func TestAccessMode(t *testing.T) {
	e := newEnv(t, azuresim.Options{})
	ctx := context.Background()
	prov := newProvider(t, e, providerSub, "wc-rg", "10.1")
	cons := newProvider(t, e, consumerSub, "mc-rg", "10.2")
	plsClient := e.network(t, providerSub).NewPrivateLinkServicesClient()
	put := func(mode *armnetwork.AccessMode) armnetwork.PrivateLinkService {
		body := prov.plsBody([]string{"*"}, nil)
		body.Properties.AccessMode = mode
		return mustPoll(t, func() (*poller[armnetwork.PrivateLinkServicesClientCreateOrUpdateResponse], error) {
			return plsClient.BeginCreateOrUpdate(ctx, prov.rg, "svc", body, nil)
		}).PrivateLinkService
	}
	restricted := put(new(armnetwork.AccessModeRestricted))
	if m := restricted.Properties.AccessMode; ptr.Deref(m, "") != armnetwork.AccessModeRestricted {
		t.Fatalf("stored access mode %v, want Restricted", m)
	}
	connect := func(name string) error {
		p, err := e.network(t, consumerSub).NewPrivateEndpointsClient().BeginCreateOrUpdate(ctx, "mc-rg", name, peBody(cons.nodeSubnetID, *restricted.ID, true), nil)
		if err == nil {
			_, err = p.PollUntilDone(ctx, pollOpts)
		}
		return err
	}
	if code, _ := errorCode(connect("pe-restricted")); code != "ThirdPartyPrivateLinkServiceProvidedDuringPrivateEndpointCreationDoesNotExistOrIsNotVisible" {
		t.Errorf("Restricted, visibility \"*\": a subscription it does not list connected (%s)", code)
	}
	if m := put(nil).Properties.AccessMode; ptr.Deref(m, "") != armnetwork.AccessModeRestricted {
		t.Errorf("a PUT without accessMode changed the stored mode to %v", m)
	}
	put(new(armnetwork.AccessModeDefault))
	if err := connect("pe-default"); err != nil {
		t.Errorf("Default, visibility \"*\": %v", err)
	}
}
