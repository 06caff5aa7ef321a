package dnsengine_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memo"
)

const (
	tenant   = "72f988bf-0000-0000-0000-000000000001"
	clientID = "operator-client"
	secret   = "s3cret"
	sub      = "22222222-2222-2222-2222-222222222222"
	rg       = "consumer-rg"
	vnet     = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/c-vnet"
	hub      = "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/hub"
)

// counted counts the requests an engine sends, by class, and can act
// between a read and the next write (to play someone else writing).
type counted struct {
	dns.API
	mu            sync.Mutex
	reads, writes int
	beforeWrite   func()
}

func (c *counted) read() { c.mu.Lock(); c.reads++; c.mu.Unlock() }
func (c *counted) write() {
	c.mu.Lock()
	c.writes++
	hook := c.beforeWrite
	c.beforeWrite = nil
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (c *counted) counts() (int, int) { c.mu.Lock(); defer c.mu.Unlock(); return c.reads, c.writes }

func (c *counted) Zone(ctx context.Context, rg, zone string) (*armprivatedns.PrivateZone, error) {
	c.read()
	return c.API.Zone(ctx, rg, zone)
}

func (c *counted) ZoneCount(ctx context.Context) (int, error) {
	c.read()
	return c.API.ZoneCount(ctx)
}

func (c *counted) PutZone(ctx context.Context, rg, zone, etag string, body armprivatedns.PrivateZone) error {
	c.write()
	return c.API.PutZone(ctx, rg, zone, etag, body)
}

func (c *counted) DeleteZone(ctx context.Context, rg, zone string) error {
	c.write()
	return c.API.DeleteZone(ctx, rg, zone)
}

func (c *counted) Links(ctx context.Context, rg, zone string) ([]*armprivatedns.VirtualNetworkLink, error) {
	c.read()
	return c.API.Links(ctx, rg, zone)
}

func (c *counted) PutLink(ctx context.Context, rg, zone, name, etag string, body armprivatedns.VirtualNetworkLink) error {
	c.write()
	return c.API.PutLink(ctx, rg, zone, name, etag, body)
}

func (c *counted) DeleteLink(ctx context.Context, rg, zone, name string) error {
	c.write()
	return c.API.DeleteLink(ctx, rg, zone, name)
}

func (c *counted) Record(ctx context.Context, rg, zone, rel string) (*armprivatedns.RecordSet, error) {
	c.read()
	return c.API.Record(ctx, rg, zone, rel)
}

func (c *counted) Records(ctx context.Context, rg, zone string) ([]*armprivatedns.RecordSet, error) {
	c.read()
	return c.API.Records(ctx, rg, zone)
}

func (c *counted) PutRecord(ctx context.Context, rg, zone, rel, etag string, body armprivatedns.RecordSet) error {
	c.write()
	return c.API.PutRecord(ctx, rg, zone, rel, etag, body)
}

func (c *counted) DeleteRecord(ctx context.Context, rg, zone, rel, etag string) error {
	c.write()
	return c.API.DeleteRecord(ctx, rg, zone, rel, etag)
}

// world is azuresim with a consumer network and a hub network, and the
// real Private DNS SDK client talking to it over HTTPS.
type world struct {
	sim *azuresim.Server
	sdk dns.SDK
}

func newWorld(t *testing.T) *world { return newLimitedWorld(t, azuresim.Limits{}) }

// newLimitedWorld is newWorld with Azure's limits as given.
func newLimitedWorld(t *testing.T, limits azuresim.Limits) *world {
	t.Helper()
	sim := azuresim.New(azuresim.Options{TLS: true, Limits: limits, Principals: []azuresim.Principal{{TenantID: tenant, ClientID: clientID, ClientSecret: secret}}})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	f := factory(t, sim, clientID, secret)
	net := func() json.RawMessage {
		b, _ := json.Marshal(armnetwork.VirtualNetwork{Location: new("westeurope"), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.9.0.0/16")}},
		}})
		return b
	}
	if err := sim.Seed(azuresim.Seed{
		ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: sub, Name: rg, Location: "westeurope"}},
		Resources:      []azuresim.SeedResource{{ID: vnet, Body: net()}, {ID: hub, Body: net()}},
	}); err != nil {
		t.Fatal(err)
	}
	return &world{sim: sim, sdk: dns.SDK{Factory: f}}
}

// factory is the Private DNS SDK's client factory for sim with a
// principal's credential.
func factory(t *testing.T, sim *azuresim.Server, id, password string) *armprivatedns.ClientFactory {
	t.Helper()
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: sim.CertPool(), MinVersion: tls.VersionTLS12}}}
	copts := azcore.ClientOptions{
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: sim.URL() + "/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Endpoint: sim.URL(), Audience: sim.URL()},
		}},
		Transport: httpc,
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}
	cred, err := azidentity.NewClientSecretCredential(tenant, id, password, &azidentity.ClientSecretCredentialOptions{ClientOptions: copts, DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := armprivatedns.NewClientFactory(sub, cred, &arm.ClientOptions{ClientOptions: copts})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func owner(name string) dns.Owner {
	return dns.Owner{Kind: dns.KindAzurePrivateEndpoint, Namespace: "ns", Name: name}
}

func target(api dns.API, zone string, shared bool, o dns.Owner) dnsengine.Target {
	return dnsengine.Target{API: api, Zone: dns.Zone{Subscription: sub, ResourceGroup: rg, Name: zone, Shared: shared}, Owner: o}
}

// converge runs one object's DNS as a controller does, pass after pass,
// until the zone, its link to vnet and the records are in place.
func converge(t *testing.T, e *dnsengine.Engine, tg dnsengine.Target, written bool) {
	converge2(t, e, tg, dns.DefaultRecords, "10.9.2.4", written)
}

// converge2 is converge with the record names.
func converge2(t *testing.T, e *dnsengine.Engine, tg dnsengine.Target, rels []string, ip string, written bool) {
	t.Helper()
	ctx := context.Background()
	for pass := 0; pass < 10; pass++ {
		st, err := e.EnsureZone(ctx, tg, written)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Ready {
			continue
		}
		l, err := e.EnsureLink(ctx, tg, vnet, tg.Zone.Owner(tg.Owner))
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range rels {
			if taken, err := e.WriteRecord(ctx, tg, rel, []string{ip}, 300, written); err != nil || taken != nil {
				t.Fatalf("%s: %v %+v", rel, err, taken)
			}
		}
		written = true
		if l.Ready {
			return
		}
	}
	t.Fatal("not in place after 10 passes")
}

// TestReadFreeCreation: an object's zone, link and records are created
// without reading first; only the zone's and the link's provisioning are
// read (a long-running operation's outcome is known only by reading), and
// the subscription's zones are listed once to count them (zonelimit.go). A
// second object in the same zone reads nothing and writes only its
// records; an object whose status says its DNS is in place is read once.
func TestReadFreeCreation(t *testing.T) {
	w := newWorld(t)
	e := &dnsengine.Engine{}
	api := &counted{API: w.sdk}
	converge(t, e, target(api, "hc1.example.internal", false, owner("hc1")), false)
	if r, wr := api.counts(); r != 3 || wr != 4 {
		t.Errorf("own zone: %d reads and %d writes, want 3 (the subscription's zones, counted once per check interval; zone and link provisioning) and 4 (zone, link, 2 records)", r, wr)
	}
	if res := w.sim.Resolve(vnet, "api.hc1.example.internal"); res.Status != azuresim.ResolveOK || res.Addresses[0] != "10.9.2.4" {
		t.Errorf("api.hc1.example.internal from the consumer network: %+v", res)
	}

	shared := &counted{API: w.sdk}
	converge2(t, e, target(shared, "hcp.example.internal", true, owner("a")), []string{"api.a", "*.apps.a"}, "10.9.2.5", false)
	r0, w0 := shared.counts()
	converge2(t, e, target(shared, "hcp.example.internal", true, owner("b")), []string{"api.b", "*.apps.b"}, "10.9.2.6", false)
	if r, wr := shared.counts(); r != r0 || wr != w0+2 {
		t.Errorf("second object in a shared zone: %d reads and %d writes, want 0 and 2 (its records)", r-r0, wr-w0)
	}

	// A new process (a restart) that the status tells the DNS is there
	// reads it instead of writing: zone, links, and each record.
	restarted := &counted{API: w.sdk}
	converge(t, &dnsengine.Engine{}, target(restarted, "hc1.example.internal", false, owner("hc1")), true)
	if r, wr := restarted.counts(); r != 4 || wr != 0 {
		t.Errorf("restarted check: %d reads and %d writes, want 4 and 0", r, wr)
	}
}

// TestNeverOverwrites: a record set someone else wrote is not overwritten,
// whether the object tries to create it (Azure's 412) or update it (the
// ETag read no longer matches); one without an owner is taken over only
// when the target adopts.
func TestNeverOverwrites(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	e := &dnsengine.Engine{}
	api := &counted{API: w.sdk}
	tg := target(api, "z.example.internal", false, owner("a"))
	converge(t, e, tg, false)
	put := func(rel, ip, by string) {
		t.Helper()
		body := dns.RecordBody(nil, []string{ip}, 300, by)
		if by == "" {
			delete(body.Properties.Metadata, dns.OwnerMetadata)
		}
		if _, err := w.sdk.Factory.NewRecordSetsClient().CreateOrUpdate(ctx, rg, tg.Zone.Name, armprivatedns.RecordTypeA, rel, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	get := func(rel string) *armprivatedns.RecordSet {
		t.Helper()
		rs, err := w.sdk.Record(ctx, rg, tg.Zone.Name, rel)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	put("other", "10.9.9.9", "AzureCluster:ns/x")
	taken, err := e.WriteRecord(ctx, tg, "other", []string{"10.9.2.4"}, 300, false)
	if err != nil || taken == nil || taken.Owner != "AzureCluster:ns/x" {
		t.Fatalf("someone else's record set: taken %+v, err %v", taken, err)
	}
	if ip := ptr.Deref(get("other").Properties.ARecords[0].IPv4Address, ""); ip != "10.9.9.9" {
		t.Errorf("someone else's record set was overwritten: %s", ip)
	}

	put("loose", "10.9.9.8", "")
	if taken, err := e.WriteRecord(ctx, tg, "loose", []string{"10.9.2.4"}, 300, false); err != nil || taken == nil {
		t.Fatalf("a record set without owner, no adoption: taken %+v, err %v", taken, err)
	}
	adopt := tg
	adopt.AdoptRecords = true
	if taken, err := e.WriteRecord(ctx, adopt, "loose", []string{"10.9.2.4"}, 300, false); err != nil || taken != nil {
		t.Fatalf("adopting a record set without owner: taken %+v, err %v", taken, err)
	}
	if dns.RecordOwner(get("loose")) != owner("a").Value() {
		t.Error("the adopted record set does not carry its new owner")
	}

	// The object's own record, changed by someone between the engine's
	// read and its write: the write is refused (412), nothing is lost.
	// (Another process, which did not create the zone, reads first.)
	api.beforeWrite = func() { put("api", "10.9.7.7", "AzureCluster:ns/intruder") }
	_, err = (&dnsengine.Engine{}).WriteRecord(ctx, tg, "api", []string{"10.9.2.8"}, 300, true)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("a record changed between read and write: want 412, got %v", err)
	}
	if dns.RecordOwner(get("api")) != "AzureCluster:ns/intruder" {
		t.Error("the record written meanwhile was overwritten")
	}
}

// reader answers Get for the objects it holds, NotFound otherwise.
type reader struct {
	client.Reader
	has map[string]bool // "Kind ns/name"
}

func (r reader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	kind := "AzurePrivateEndpoint"
	if obj.GetObjectKind().GroupVersionKind().Kind == "AzureCluster" {
		kind = "AzureCluster"
	}
	if r.has[kind+" "+key.String()] {
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: kind}, key.Name)
}

// TestClaims: the kind-qualified value is its owner's only; the value of
// earlier versions is claimed while no object of the other kind has the
// namespace and name.
func TestClaims(t *testing.T) {
	ape, wc := owner("wc1"), dns.Owner{Kind: dns.KindAzureCluster, Namespace: "ns", Name: "wc1"}
	cases := []struct {
		name  string
		owner dns.Owner
		value string
		has   map[string]bool
		want  bool
	}{
		{"own value", ape, ape.Value(), nil, true},
		{"the other kind's value", ape, wc.Value(), nil, false},
		{"shared is nobody's", ape, dns.SharedOwner, nil, false},
		{"a kind's shared value is nobody's", ape, dns.SharedValue(dns.KindAzurePrivateEndpoint), nil, false},
		{"no owner is nobody's", wc, "", nil, false},
		{"earlier value, no cluster of that name", ape, "ns/wc1", nil, true},
		{"earlier value, a cluster of that name", ape, "ns/wc1", map[string]bool{"AzureCluster ns/wc1": true}, false},
		{"earlier value, for a cluster, no endpoint object of that name", wc, "ns/wc1", map[string]bool{"AzureCluster ns/wc1": true}, true},
		{"earlier value, for a cluster, an endpoint object of that name", wc, "ns/wc1", map[string]bool{"AzurePrivateEndpoint ns/wc1": true}, false},
		{"another name's earlier value", ape, "ns/wc2", nil, false},
	}
	for _, c := range cases {
		e := &dnsengine.Engine{Reader: reader{has: c.has}}
		if got, err := e.Claims(context.Background(), c.owner, c.value); err != nil || got != c.want {
			t.Errorf("%s: claims %v (err %v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestDropZone: a zone goes with the last thing in it, and only if the
// operator made it for the owner or shared; an unused shared zone first
// loses the records of owners that are gone.
func TestDropZone(t *testing.T) {
	w := newWorld(t)
	gone := func(context.Context, dns.Owner) (bool, error) { return false, nil }
	live := func(context.Context, dns.Owner) (bool, error) { return true, nil }
	cases := []struct {
		name      string
		shared    bool
		others    []string // other owners that wrote records
		live      func(context.Context, dns.Owner) (bool, error)
		othersUse bool
		wantGone  bool
	}{
		{name: "own zone, empty", wantGone: true},
		{name: "own zone, another owner's record in it", others: []string{"b"}, live: gone, wantGone: false},
		{name: "shared zone, another live object uses it", shared: true, othersUse: true, wantGone: false},
		{name: "shared zone, unused, records of gone owners", shared: true, others: []string{"b", "c"}, live: gone, wantGone: true},
		{name: "shared zone, unused, a live owner's record", shared: true, others: []string{"b"}, live: live, wantGone: false},
	}
	for i, c := range cases {
		zone := "z" + string(rune('a'+i)) + ".example.internal"
		e := &dnsengine.Engine{}
		e.Register(dns.KindAzurePrivateEndpoint, fakeUsers{others: dnsengine.ZoneUsers{Live: c.othersUse}, live: c.live})
		z, done := releaseZone(t, w, e, zone, c.shared, c.others)
		if (z == nil) != c.wantGone || !done {
			t.Errorf("%s: zone gone %v (release done %v), want gone %v", c.name, z == nil, done, c.wantGone)
		}
	}
}

// releaseZone puts object a's DNS in a zone, records of others beside,
// then releases a's DNS as a controller does; it returns the zone as left
// and whether the release finished.
func releaseZone(t *testing.T, w *world, e *dnsengine.Engine, zone string, shared bool, others []string) (*armprivatedns.PrivateZone, bool) {
	t.Helper()
	ctx := context.Background()
	tg := target(w.sdk, zone, shared, owner("a"))
	converge(t, e, tg, false)
	for _, o := range others {
		if _, err := e.WriteRecord(ctx, target(w.sdk, zone, shared, owner(o)), "api-"+o, []string{"10.9.2.9"}, 300, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range dns.DefaultRecords {
		if err := e.DeleteRecord(ctx, tg, rel, ""); err != nil {
			t.Fatal(err)
		}
	}
	links, err := e.Links(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if _, err := e.DropLink(ctx, tg, l); err != nil {
			t.Fatal(err)
		}
	}
	done := false
	for pass := 0; pass < 10 && !done; pass++ {
		if done, err = e.DropZone(ctx, tg, -1); err != nil {
			t.Fatal(err)
		}
	}
	z, err := w.sdk.Zone(ctx, rg, zone)
	if err != nil {
		t.Fatal(err)
	}
	return z, done
}

// TestSpread: a restarted process's first checks of what is in place fall
// at random points of one check interval, not at once.
func TestSpread(t *testing.T) {
	e := &dnsengine.Engine{Check: time.Hour}
	var m memo.Memo
	due := 0
	for i := range 1000 {
		e.Spread(&m, fmt.Sprint("k", i), "fp")
		if !e.Fresh(&m, fmt.Sprint("k", i), "fp") {
			due++
		}
	}
	if due > 10 {
		t.Errorf("%d of 1000 spread checks are due at once", due)
	}
}

// TestReleaseReads: an object's own zone is released with few reads — its
// records with one list, its link with one list and no watching (the
// zone's own link count says when the link is gone) — and a link whose
// delete was never sent is deleted by the zone's release instead of
// keeping the zone for good.
func TestReleaseReads(t *testing.T) {
	w := newWorld(t)
	for _, c := range []struct {
		zone      string
		dropLinks bool
		maxReads  int
	}{{"records-links-zone.example.internal", true, 5}, {"a-link-never-deleted.example.internal", false, 6}} {
		reads, gone := release(t, w, c.zone, c.dropLinks)
		if !gone || reads > c.maxReads {
			t.Errorf("%s: zone gone %v after %d reads, want gone within %d", c.zone, gone, reads, c.maxReads)
		}
	}
}

// release converges object a's DNS in an own zone, then releases it as
// the AzurePrivateEndpoint controller does (dropping its links first, or
// not); it returns the reads the release made and whether the zone is gone.
func release(t *testing.T, w *world, zone string, dropLinks bool) (int, bool) {
	t.Helper()
	ctx := context.Background()
	e := &dnsengine.Engine{}
	api := &counted{API: w.sdk}
	tg := target(api, zone, false, owner("a"))
	converge(t, e, tg, false)
	r0, _ := api.counts()
	if err := e.DeleteRecords(ctx, tg, dns.DefaultRecords, ""); err != nil {
		t.Fatal(err)
	}
	if dropLinks {
		links, err := e.Links(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if _, err := e.DropLink(ctx, tg, l); err != nil {
				t.Fatal(err)
			}
		}
	}
	done := false
	for pass := 0; pass < 10 && !done; pass++ {
		var err error
		if done, err = e.DropZone(ctx, tg, -1); err != nil {
			t.Fatal(err)
		}
	}
	z, err := w.sdk.Zone(ctx, rg, zone)
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := api.counts()
	return r1 - r0, z == nil && done
}

// TestSharedIsPerKind: a zone the wiring shares ("shared:AzureCluster") is
// someone else's for an AzurePrivateEndpoint that names it: its records go
// in, but it never deletes the zone or its link — the wiring's clusters
// need them. A zone of earlier versions ("shared") stays shared for both.
func TestSharedIsPerKind(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	wiring := dns.Owner{Kind: dns.KindAzureCluster, Namespace: "org-a", Name: "wc1"}
	e := &dnsengine.Engine{}
	converge2(t, e, target(w.sdk, "wired.example.internal", true, wiring), []string{"api.wc1"}, "10.9.2.7", false)

	other := &dnsengine.Engine{}
	tg := target(w.sdk, "wired.example.internal", true, owner("hc1"))
	st, err := other.EnsureZone(ctx, tg, false)
	if err != nil || !st.Ready || !st.Foreign {
		t.Fatalf("the wiring's shared zone for an AzurePrivateEndpoint: %+v, %v; want ready and someone else's", st, err)
	}
	links, err := other.Links(ctx, tg)
	if err != nil || len(links) != 1 {
		t.Fatalf("links: %d, %v", len(links), err)
	}
	other.Register(dns.KindAzurePrivateEndpoint, fakeUsers{})
	if going, err := other.DropLink(ctx, tg, links[0]); err != nil || going {
		t.Errorf("an AzurePrivateEndpoint deletes the wiring's shared link: going %v, %v", going, err)
	}
	if done, err := other.DropZone(ctx, tg, -1); err != nil || !done {
		t.Errorf("release of the wiring's shared zone: done %v, %v", done, err)
	}
	if z, err := w.sdk.Zone(ctx, rg, "wired.example.internal"); err != nil || z == nil {
		t.Errorf("the wiring's shared zone was deleted by an AzurePrivateEndpoint (%v)", err)
	}
}

// fakeUsers answers, for every zone, that the other objects of the kind
// need others of it, and whether an owner is live with live (gone when
// nil).
type fakeUsers struct {
	others dnsengine.ZoneUsers
	live   func(context.Context, dns.Owner) (bool, error)
}

func (f fakeUsers) Others(context.Context, dns.Owner, dns.Zone) (dnsengine.ZoneUsers, error) {
	return f.others, nil
}

func (f fakeUsers) Live(ctx context.Context, o dns.Owner) (bool, error) {
	if f.live == nil {
		return false, nil
	}
	return f.live(ctx, o)
}

// TestSharedGoesOnlyByTheEngine: whether a zone or link others may rely on
// goes is the engine's decision, from what the owner kind's registered
// Users says of the others: a link stays while another live object needs
// its network (an own link too: another object may use this one's zone),
// and goes when none does; without a registered Users, every shared link
// and zone of the kind stays (nobody can tell who needs it), and an own
// one goes.
func TestSharedGoesOnlyByTheEngine(t *testing.T) {
	w := newWorld(t)
	needs := fakeUsers{others: dnsengine.ZoneUsers{Live: true, Networks: []string{strings.ToUpper(vnet)}}}
	for i, c := range []struct {
		name     string
		shared   bool
		users    dnsengine.Users // nil: none registered
		wantGone bool
	}{
		{name: "shared, another live object needs the network", shared: true, users: needs},
		{name: "shared, no other live object", shared: true, users: fakeUsers{}, wantGone: true},
		{name: "shared, no Users registered for the kind", shared: true},
		{name: "own, another live object relies on its link", users: needs},
		{name: "own, no Users registered for the kind", wantGone: true},
	} {
		zone := fmt.Sprintf("release-%d.example.internal", i)
		t.Run(c.name, func(t *testing.T) {
			e := &dnsengine.Engine{}
			if c.users != nil {
				e.Register(dns.KindAzurePrivateEndpoint, c.users)
			}
			going, gone := releaseOne(t, w, e, target(w.sdk, zone, c.shared, owner("a")))
			if going != c.wantGone || gone != c.wantGone {
				t.Errorf("the link going %v, the zone gone %v; want both %v", going, gone, c.wantGone)
			}
		})
	}
}

// releaseOne converges the target's DNS, deletes its records and releases
// its one link and its zone as a controller does; it returns whether the
// link went and whether the zone is gone (the release finished).
func releaseOne(t *testing.T, w *world, e *dnsengine.Engine, tg dnsengine.Target) (bool, bool) {
	t.Helper()
	ctx := context.Background()
	converge(t, e, tg, false)
	if err := e.DeleteRecords(ctx, tg, dns.DefaultRecords, ""); err != nil {
		t.Fatal(err)
	}
	links, err := e.Links(ctx, tg)
	if err != nil || len(links) != 1 {
		t.Fatalf("links: %d, %v", len(links), err)
	}
	going, err := e.DropLink(ctx, tg, links[0])
	if err != nil {
		t.Fatal(err)
	}
	done := false
	for pass := 0; pass < 10 && !done; pass++ {
		if done, err = e.DropZone(ctx, tg, -1); err != nil {
			t.Fatal(err)
		}
	}
	z, err := w.sdk.Zone(ctx, rg, tg.Zone.Name)
	if err != nil || !done {
		t.Fatalf("the zone after its release: done %v, %v", done, err)
	}
	return going, z == nil
}
