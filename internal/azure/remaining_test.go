package azure_test

import (
	"context"
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// TestBudgetFollowsAzuresCount: a restarted operator's budget is empty
// while Azure's window still holds what the process before it read.
// Through the operator's clients (the real SDK against azuresim, with
// Private DNS's 500 reads in 5 minutes enforced) the earlier process reads
// 300 times; the new one, with a budget of 400 reads, reads until its
// budget holds it back. It stops where Azure's count says only the
// budget's reserve (100) is left, and Azure refuses nothing; its budget
// alone would have sent 200 requests Azure refuses.
func TestBudgetFollowsAzuresCount(t *testing.T) {
	ce := newCredEnvWith(t, azuresim.Options{})
	throttling := azuresim.DefaultThrottling()
	throttling.Reads = azuresim.Bucket{Burst: 10000, PerSecond: 1000} // only Private DNS's window is tested
	ce.sim.SetThrottling(throttling)
	ce.servicePrincipal(t)
	clients := &azure.Clients{Credentials: ce.creds}
	ctx := context.Background()
	factory, err := clients.PrivateDNSFor(ctx, azure.SubjectOf(cluster("sp")), simSubscribed)
	if err != nil {
		t.Fatal(err)
	}
	sdk := privatedns.SDK{Factory: factory}
	if err := sdk.PutZone(ctx, "rg", "example.internal", "", armprivatedns.PrivateZone{Location: new("global")}); err != nil {
		t.Fatal(err)
	}

	const earlier = 300
	before := &privatedns.Budget{Reads: 400, Writes: 800}
	read := func(api privatedns.API) error {
		_, err := api.Zone(ctx, "rg", "example.internal")
		return err
	}
	for i := range earlier {
		if err := read(before.Paced(sdk, simSubscribed)); err != nil {
			t.Fatalf("the earlier process's read %d: %v", i+1, err)
		}
	}

	after := &privatedns.Budget{Reads: 400, Writes: 800}
	api := after.Paced(sdk, simSubscribed)
	sent := 0
	var held error
	for sent < 400 {
		if held = read(api); held != nil {
			break
		}
		sent++
	}
	var refused *azcore.ResponseError
	if errors.As(held, &refused) {
		t.Fatalf("Azure refused read %d of the restarted process: %v", sent+1, held)
	}
	c := azure.Classify(held)
	if held == nil || c.Reason != azure.ReasonThrottled || c.RetryAfter <= 0 || c.RetryAfter > privatedns.AzureCountFresh {
		t.Fatalf("after %d reads: %v (%+v), want the budget to hold back for at most %s", sent, held, c, privatedns.AzureCountFresh)
	}
	want := azuresim.PrivateDNSReadsLimit - earlier - (privatedns.AzureReadsPer5m - 400)
	if sent != want {
		t.Errorf("the restarted process read %d times, want %d: what Azure's count leaves above the reserve", sent, want)
	}
	if n := ce.sim.Counters().Throttled; n != 0 {
		t.Errorf("Azure answered 429 %d times", n)
	}

	// Azure's count is followed while it is fresh; the wait it asks is
	// when the next answer may bring a new one.
	if wait := after.Take(simSubscribed, false); wait <= 0 || wait > privatedns.AzureCountFresh {
		t.Errorf("the next read waits %s", wait)
	}
	if wait := after.Take(simSubscribed, true); wait != 0 {
		t.Errorf("a write waits %s on the count of reads", wait)
	}
}
