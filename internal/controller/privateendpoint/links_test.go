package privateendpoint_test

import (
	"testing"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
)

// TestFailedLinkIsWrittenAgain: Azure keeps a virtual network link whose
// operation failed, Failed, until it is written again or deleted. The
// link's first operation fails here; the object becomes Ready and its
// names resolve, because the operator writes its own failed link again
// instead of waiting for it (on the old code it waited forever).
func TestFailedLinkIsWrittenAgain(t *testing.T) {
	w, svc, _ := world(t, privateendpoint.Options{})
	if _, err := w.Sim.AddFault(azuresim.Fault{
		Method: "PUT", PathRegex: `(?i)/privateDnsZones/failing\.hcp\.internal/virtualNetworkLinks/`,
		Operation: true, Count: 1, Status: 500, Code: "InternalServerError", Message: "injected",
	}); err != nil {
		t.Fatal(err)
	}
	create(t, w, ape("failing", svc.Status.ResourceID))
	obj := ready(t, w, "failing")
	if n := faultHits(w, "operation:InternalServerError"); n != 1 {
		t.Fatalf("the link's operation failed %d times, want once", n)
	}
	resolves(t, w, cVNet, "api.failing.hcp.internal", azuresim.ResolveOK, obj.Status.IPAddresses[0])
	if links := resources(w, "Microsoft.Network/privateDnsZones/virtualNetworkLinks", "failing.hcp.internal"); len(links) != 1 {
		t.Errorf("links of the zone: %v, want the one link written again", links)
	}
}
