package privateendpoint

import (
	"errors"
	"strings"
	"testing"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/azureobject"
)

// TestLinkCount: a new link fits while the zone's links and the
// network's zones are both below their limits; the refusal names the
// zone's limit first, then the network's, with the figures.
func TestLinkCount(t *testing.T) {
	zone := dns.Zone{Subscription: "s", ResourceGroup: "g", Name: "z.internal"}
	vnet := "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/app"
	for _, tc := range []struct {
		name      string
		c         linkCount
		fits      bool
		reason    string
		inMessage string
	}{
		{"room in both", linkCount{zone: 3, network: 5, zoneLimit: 10, networkLimit: 10}, true, "", ""},
		{"the zone is full", linkCount{zone: 10, network: 5, zoneLimit: 10, networkLimit: 10}, false, ReasonZoneLinkLimit, "it has 10 links, the limit is 10"},
		{"the network is full", linkCount{zone: 3, network: 10, zoneLimit: 10, networkLimit: 10}, false, ReasonNetworkZoneLimit, "the network is linked to 10 private DNS zones, the limit is 10"},
		{"both are full: the zone's first", linkCount{zone: 10, network: 10, zoneLimit: 10, networkLimit: 10}, false, ReasonZoneLinkLimit, "it has 10 links"},
		{"a lowered limit below the count", linkCount{zone: 1, network: 7, zoneLimit: 10, networkLimit: 4}, false, ReasonNetworkZoneLimit, "linked to 7 private DNS zones, the limit is 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.fits(); got != tc.fits {
				t.Fatalf("fits() = %v, want %v", got, tc.fits)
			}
			if tc.fits {
				return
			}
			err := linkRefused(zone, vnet, tc.c)
			var se *azureobject.SpecError
			if !errors.As(err, &se) || se.Reason != tc.reason || !strings.Contains(se.Message, tc.inMessage) || !strings.Contains(se.Message, "virtual network app") {
				t.Errorf("linkRefused = %v, want reason %s with %q", err, tc.reason, tc.inMessage)
			}
		})
	}
}
