package privateendpoint_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
)

// TestSharedZoneDeletedWithItsLastObject: every object on a shared zone is
// deleted at once while Azure throttles a share of the Private DNS
// requests, as it does under load (the consumer benchmark's deletion). The
// zone and its link go with the last object: no object is released while
// another one, also being deleted, still has records or links in the zone
// the released one would have had to wait for. The old code released an
// object that saw another's records still in the zone ("it stays") and
// could so release every object and leave the zone behind.
func TestSharedZoneDeletedWithItsLastObject(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{MaxConcurrentReconciles: 4})
	ctx := context.Background()
	const n = 8
	name := func(i int) string { return fmt.Sprintf("burst-%d", i) }
	for i := range n {
		o := ape(name(i), svc.Status.ResourceID)
		o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "burst.internal", ZoneMode: v1alpha1.ZoneModeShared, Records: []string{"api." + name(i)}}
		create(t, w, o)
	}
	for i := range n {
		ready(t, w, name(i))
	}
	// Azure throttles: a third of the Private DNS requests in the zone are
	// refused with 429 TooManyRequests, the code of Private DNS's request
	// limits in azuresim; Retry-After is 1 s here (Azure's is 10) so that
	// the test stays short.
	if _, err := w.Sim.AddFault(azuresim.Fault{
		PathRegex: `(?i)/privateDnsZones/burst\.internal`, Probability: 0.33,
		Status: http.StatusTooManyRequests, Code: "TooManyRequests", RetryAfter: 1,
	}); err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() error {
			return w.Client.Delete(gctx, &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		waitGone(t, w, name(i))
	}
	// The last object waits for the zone's delete to finish before it is
	// released: nothing is left once every object is gone.
	zones := resources(w, "Microsoft.Network/privateDnsZones", "/privateDnsZones/burst.internal")
	links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "burst.internal")
	if len(zones)+len(links) != 0 {
		t.Errorf("every object is gone, Azure still holds zones %v and links %v", zones, links)
	}
}

// TestUnusedSharedZoneSweepsLeftRecords: a shared zone holds, besides the
// records of its last object, one the operator wrote for an
// AzurePrivateEndpoint that no status names any more (one that is gone).
// Once nobody uses the zone, the last object deletes that record and then
// the zone; a record set without the operator's mark would keep it (see
// TestSharedZone). The old code kept the zone for good ("it stays"), as the
// consumer benchmark found with 1,000 objects.
func TestUnusedSharedZoneSweepsLeftRecords(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	ctx := context.Background()
	o := ape("last", svc.Status.ResourceID)
	o.Spec.DNS = &v1alpha1.PrivateEndpointDNS{ZoneName: "sweep.internal", ZoneMode: v1alpha1.ZoneModeShared, Records: []string{"api.last"}}
	create(t, w, o)
	ready(t, w, "last")
	records := w.DNS(t, consumer).NewRecordSetsClient()
	if _, err := records.CreateOrUpdate(ctx, crg, "sweep.internal", armprivatedns.RecordTypeA, "api.gone", armprivatedns.RecordSet{
		Properties: &armprivatedns.RecordSetProperties{
			TTL: new(int64(60)), ARecords: []*armprivatedns.ARecord{{IPv4Address: new("10.9.2.200")}},
			Metadata: map[string]*string{dns.OwnerMetadata: new(dns.Owner{Kind: dns.KindAzurePrivateEndpoint, Namespace: ns, Name: "gone"}.Value())},
		},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Client.Delete(ctx, o); err != nil {
		t.Fatal(err)
	}
	waitGone(t, w, "last")
	if zones := resources(w, "Microsoft.Network/privateDnsZones", "/privateDnsZones/sweep.internal"); len(zones) != 0 {
		t.Errorf("the unused shared zone stayed: %v (records %v)", zones, resources(w, "Microsoft.Network/privateDnsZones/A", "sweep.internal"))
	}
}
