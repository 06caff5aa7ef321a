package azuresim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLimitsDefaults: an emulator given no limits enforces Azure's
// published ones, and a test that lowers one keeps Azure's for the rest.
func TestLimitsDefaults(t *testing.T) {
	azure := Limits{
		PrivateDNSZonesPerSubscription: 1000, RecordSetsPerZone: 25000, RecordsPerRecordSet: 20,
		VirtualNetworkLinksPerZone: 1000, ZonesPerVirtualNetwork: 1000, PrivateEndpointsPerVirtualNetwork: 1000,
		PrivateLinkServicesPerSubscription: 800, PrivateEndpointsPerPrivateLinkService: 1000, PrivateEndpointsPerHighScaleVirtualNetwork: 5000,
	}
	lowered := azure
	lowered.RecordsPerRecordSet = 2
	for _, c := range []struct {
		reason string
		given  Limits
		want   Limits
	}{
		{"none given: Azure's", Limits{}, azure},
		{"one lowered: Azure's for the rest", Limits{RecordsPerRecordSet: 2}, lowered},
	} {
		if diff := cmp.Diff(c.want, New(Options{Limits: c.given}).st.limits); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}
