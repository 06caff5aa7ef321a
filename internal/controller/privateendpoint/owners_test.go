package privateendpoint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestOwnersByKind: DNS owner values name the owner's kind. An
// AzurePrivateEndpoint never takes what was written for the workload
// cluster of its namespace and name — neither the kind-qualified value nor
// the bare "namespace/name" that earlier versions wrote while such a
// cluster exists — and never deletes its link. A bare value of its own
// (no cluster has the name) is read as its own on upgrade: the record is
// taken over with the new value, and the zone goes with the object.
func TestOwnersByKind(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	zones := w.DNS(t, consumer)

	// Workload cluster hcp/wc1 (paused: capzsim leaves it alone).
	wc := testworld.Cluster{Namespace: ns, Name: "wc1", Subscription: consumer, CIDR16: 50}.Object(testenv.SchemaUpstream)
	wc.SetAnnotations(map[string]string{capz.PausedAnnotation: "true"})
	if err := w.Client.Create(ctx, wc); err != nil {
		t.Fatal(err)
	}
	putZone(t, zones, "wiring.internal", "")
	putZone(t, zones, "old.internal", ns+"/old")
	putLink(t, zones, "wiring.internal", "wc1-link", ns+"/wc1")
	record := func(zone, rel, owner, ip string) {
		t.Helper()
		if _, err := zones.NewRecordSetsClient().CreateOrUpdate(ctx, crg, zone, armprivatedns.RecordTypeA, rel, armprivatedns.RecordSet{
			Properties: &armprivatedns.RecordSetProperties{TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new(ip)}},
				Metadata: map[string]*string{dns.OwnerMetadata: new(owner)}},
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	record("wiring.internal", "wc1", ns+"/wc1", "10.99.0.11")                          // earlier versions' value, cluster wc1's
	record("wiring.internal", "wc2", dns.KindAzureCluster+":"+ns+"/wc2", "10.99.0.12") // cluster wc2's
	record("old.internal", "api", ns+"/old", "10.99.0.13")                             // earlier versions' value, object old's

	named := func(name, zone, rel string) *v1alpha1.AzurePrivateEndpoint {
		o := ape(name, svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: zone, Records: []string{rel}}
		return o
	}
	create(t, w, named("wc1", "wiring.internal", "wc1"))
	create(t, w, named("wc2", "wiring.internal", "wc2"))
	create(t, w, named("old", "old.internal", "api"))
	for _, name := range []string{"wc1", "wc2"} {
		waitCondition(t, w, name, v1alpha1.ConditionDNSReady, metav1.ConditionFalse, privateendpoint.ReasonRecordNotOwned)
	}
	ipOld := ready(t, w, "old").Status.IPAddresses[0]
	resolves(t, w, cVNet, "api.old.internal", azuresim.ResolveOK, ipOld)
	if got := recordOwner(t, zones, "old.internal", "api"); got != dns.KindAzurePrivateEndpoint+":"+ns+"/old" {
		t.Errorf("old's record carries owner %q after the take-over", got)
	}
	for rel, want := range map[string]string{"wc1": "10.99.0.11", "wc2": "10.99.0.12"} {
		resolves(t, w, cVNet, rel+".wiring.internal", azuresim.ResolveOK, want)
	}

	// Deleting the objects leaves the cluster's records and link.
	for _, name := range []string{"wc2", "wc1", "old"} {
		if err := w.Client.Delete(ctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, w, name)
	}
	if got := recordOwner(t, zones, "wiring.internal", "wc1"); got != ns+"/wc1" {
		t.Errorf("cluster wc1's record carries owner %q", got)
	}
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "wiring.internal"); len(links) != 1 {
		t.Errorf("cluster wc1's link went with object wc1: %v", links)
	}
	testworld.Eventually(t, testworld.Timeout, "old's zone (earlier versions' owner value) deleted with it", func(context.Context) (bool, string) {
		z := resources(w, "Microsoft.Network/privateDnsZones", "/privateDnsZones/old.internal")
		return len(z) == 0, fmt.Sprint(z)
	})
}

func putZone(t *testing.T, f *armprivatedns.ClientFactory, zone, owner string) {
	t.Helper()
	tags := map[string]*string{}
	if owner != "" {
		tags[dns.OwnerTag] = new(owner)
	}
	testworld.Eventually(t, testworld.Timeout, "zone "+zone, func(ctx context.Context) (bool, string) {
		p, err := f.NewPrivateZonesClient().BeginCreateOrUpdate(ctx, crg, zone, armprivatedns.PrivateZone{Location: new("global"), Tags: tags}, nil)
		if err != nil {
			return false, err.Error()
		}
		_, err = p.PollUntilDone(ctx, nil)
		return err == nil, fmt.Sprint(err)
	})
}

func putLink(t *testing.T, f *armprivatedns.ClientFactory, zone, name, owner string) {
	t.Helper()
	p, err := f.NewVirtualNetworkLinksClient().BeginCreateOrUpdate(context.Background(), crg, zone, name, armprivatedns.VirtualNetworkLink{
		Location: new("global"), Tags: map[string]*string{dns.OwnerTag: new(owner)},
		Properties: &armprivatedns.VirtualNetworkLinkProperties{VirtualNetwork: &armprivatedns.SubResource{ID: new(cVNet)}, RegistrationEnabled: new(false)},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.PollUntilDone(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
}

func recordOwner(t *testing.T, f *armprivatedns.ClientFactory, zone, rel string) string {
	t.Helper()
	rs, err := f.NewRecordSetsClient().Get(context.Background(), crg, zone, armprivatedns.RecordTypeA, rel, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(rs.Properties.Metadata[dns.OwnerMetadata], "")
}
