package azuresim

import (
	"net/http"
	"regexp"
	"strings"
)

// Compute's resource SKU list (GET /subscriptions/{sub}/providers/
// Microsoft.Compute/skus, Azure's "Resource Skus - List"), which CAPZ
// reads for the availability zones of its cluster's location (CAPZ
// v1.27.0's azure/services/resourceskus/cache.go, GetZones: an
// AzureCluster's failure domains; the request, api-version 2021-07-01 with
// $filter=location eq '<location>', was seen from the real CAPZ in
// test/realcapz). It is a catalogue, not modelled state: a few virtual
// machine sizes, each in zones 1, 2 and 3 of whatever location the $filter
// names (every location the emulator is asked about has three zones),
// with no restrictions. The shape is armcompute's ResourceSKU (its JSON
// names: resourceType, name, tier, size, family, locations, locationInfo
// with location, zones and zoneDetails, capabilities, restrictions); the
// sizes and capability values are illustrative, not read from Azure.

var skuLocationFilter = regexp.MustCompile(`(?i)location\s+eq\s+'([^']+)'`)

// skuSizes are the sizes listed: CAPZ's default control plane and node
// sizes in its templates, and one more.
var skuSizes = []struct{ name, family, vcpus, mem string }{
	{"Standard_D2s_v3", "standardDSv3Family", "2", "8"},
	{"Standard_D4s_v3", "standardDSv3Family", "4", "16"},
	{"Standard_B2s", "standardBSFamily", "2", "4"},
}

func isSKUList(p armPath) bool {
	return p.rg == "" && strings.EqualFold(p.provider, "Microsoft.Compute") && len(p.types) == 1 &&
		strings.EqualFold(p.types[0], "skus") && len(p.names) == 0
}

func serveSKUs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, newError(http.StatusMethodNotAllowed, "MethodNotAllowed", "The method '%s' is not allowed on 'Microsoft.Compute/skus'.", r.Method))
		return
	}
	loc := defaultSKULocation
	if m := skuLocationFilter.FindStringSubmatch(r.URL.Query().Get("$filter")); m != nil {
		loc = strings.ToLower(m[1])
	}
	zones := []any{"1", "2", "3"}
	value := make([]any, 0, len(skuSizes))
	for _, s := range skuSizes {
		value = append(value, map[string]any{
			"resourceType": "virtualMachines",
			"name":         s.name,
			"tier":         "Standard",
			"size":         strings.TrimPrefix(s.name, "Standard_"),
			"family":       s.family,
			"locations":    []any{loc},
			"locationInfo": []any{map[string]any{"location": loc, "zones": zones, "zoneDetails": []any{}}},
			"capabilities": []any{
				map[string]any{"name": "vCPUs", "value": s.vcpus},
				map[string]any{"name": "MemoryGB", "value": s.mem},
				map[string]any{"name": "PremiumIO", "value": "True"},
				map[string]any{"name": "AcceleratedNetworkingEnabled", "value": "True"},
			},
			"restrictions": []any{},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": value})
}

// defaultSKULocation is the location of the SKU list when the request
// names none.
const defaultSKULocation = "westeurope"
