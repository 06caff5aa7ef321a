package privatelinkservices

import (
	"encoding/json"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
)

// FuzzObserved feeds what Azure might return for a private link service
// (any JSON: missing properties, null list items, empty frontends) to every
// function that reads an observed service. None may panic, and a service
// Azure would return after a PUT of Body is up to date.
func FuzzObserved(f *testing.F) {
	seed := func(pls *armnetwork.PrivateLinkService) {
		b, err := json.Marshal(pls)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 2, "10.1.0.9")
	}
	seed(observedAs(desired()))
	seed(&armnetwork.PrivateLinkService{})
	seed(&armnetwork.PrivateLinkService{Properties: &armnetwork.PrivateLinkServiceProperties{}})
	f.Add([]byte(`{"properties":{"loadBalancerFrontendIpConfigurations":[null],"ipConfigurations":[null,{"properties":null}],"visibility":{"subscriptions":[null]},"fqdns":[null]},"tags":{"x":null}}`), 1, "")
	f.Add([]byte(`{"properties":{"ipConfigurations":[{"name":"nat-ipconfig-0","properties":{"primary":true,"subnet":null}}],"privateEndpointConnections":[null,{"properties":{"privateEndpoint":null,"privateLinkServiceConnectionState":null}}]}}`), 3, "10.0.0.4")
	f.Fuzz(func(t *testing.T, raw []byte, natCount int, staticIP string) {
		var observed armnetwork.PrivateLinkService
		if json.Unmarshal(raw, &observed) != nil {
			return
		}
		d := desired()
		d.NATCount = natCount%9 + 1
		if d.NATCount < 1 {
			d.NATCount = 1
		}
		if staticIP != "" {
			d.StaticIPs = []string{staticIP}
		}
		_ = Diff(d, &observed)
		_ = PrimaryLocked(d, &observed)
		_ = NATAddresses(&observed, nil)
		_, _ = OwnerOf(&observed, d.Owner)
		_ = Connections(&observed)
		body := Body(d, &observed)
		// What Azure returns after a PUT of that body needs no further PUT,
		// unless the primary NAT configuration is one Azure keeps.
		after := body
		if diff := Diff(d, &after); len(diff) > 0 && !PrimaryLocked(d, &observed) {
			t.Errorf("a service as PUT still differs on %v", diff)
		}
	})
}
