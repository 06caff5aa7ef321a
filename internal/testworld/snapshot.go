package testworld

import (
	"maps"
	"slices"
	"strings"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// AzureState is what a test compares to prove nothing in Azure was
// recreated: every resource's ID and provisioning state, and every
// endpoint's network interface, address and connection state (a
// recreated endpoint gets a new interface).
func AzureState(sim *azuresim.Server) map[string]string {
	out := map[string]string{}
	for _, r := range sim.Resources("") {
		out[strings.ToLower(r.ID)] = r.ProvisioningState
	}
	for _, e := range sim.Endpoints() {
		out[strings.ToLower(e.ID)+"#nic"] = e.NIC + " " + e.IP + " " + e.ConnectionState
	}
	return out
}

// DiffMaps lists what differs between two snapshots, one line per key in
// key order: "- key before" (gone), "~ key: before\n  -> after"
// (changed), "+ key after" (new); "" when they are equal.
func DiffMaps(before, after map[string]string) string {
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if a, ok := after[k]; !ok {
			lines = append(lines, "- "+k+" "+before[k])
		} else if a != before[k] {
			lines = append(lines, "~ "+k+": "+before[k]+"\n  -> "+a)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			lines = append(lines, "+ "+k+" "+after[k])
		}
	}
	return strings.Join(lines, "\n")
}
