package privateendpoint_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
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
	// refused with 429 and Retry-After 1 (ARM's answer, as the limits in
	// azuresim give it).
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
