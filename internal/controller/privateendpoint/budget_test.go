package privateendpoint

import (
	"context"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// countingEndpoints counts the writes that reach it.
type countingEndpoints struct {
	endpointAPI
	writes int
}

func (c *countingEndpoints) Put(context.Context, string, string, armnetwork.PrivateEndpoint) error {
	c.writes++
	return nil
}

func (c *countingEndpoints) Delete(context.Context, string, string) error {
	c.writes++
	return nil
}

// TestEndpointWritesShareTheBudget: an endpoint's writes take from the
// subscription's write budget that the Private DNS writes take from (Azure
// counts them together); over it, nothing is sent and the error is a
// transient one with the wait; another subscription is not held back.
func TestEndpointWritesShareTheBudget(t *testing.T) {
	now := time.Unix(0, 0)
	budget := &privatedns.Budget{Writes: 3, Now: func() time.Time { return now }}
	api := &countingEndpoints{}
	eps := budgetedEndpoints{endpointAPI: api, budget: budget, sub: "sub-1"}
	ctx := context.Background()
	if err := eps.Put(ctx, "rg", "pe", armnetwork.PrivateEndpoint{}); err != nil {
		t.Fatal(err)
	}
	if wait := budget.Take("sub-1", true); wait != 0 {
		t.Fatalf("a Private DNS write after one endpoint write of a budget of 3 waits %s", wait)
	}
	if err := eps.Delete(ctx, "rg", "pe"); err != nil {
		t.Fatal(err)
	}
	err := eps.Put(ctx, "rg", "pe", armnetwork.PrivateEndpoint{})
	c := azure.Classify(err)
	if err == nil || c.Class != azure.ClassTransient || c.Reason != azure.ReasonThrottled || c.RetryAfter <= 0 {
		t.Fatalf("a fourth write of a budget of 3: %v (%+v), want a transient wait", err, c)
	}
	if api.writes != 2 {
		t.Errorf("%d writes reached Azure, want 2", api.writes)
	}
	other := budgetedEndpoints{endpointAPI: api, budget: budget, sub: "sub-2"}
	if err := other.Put(ctx, "rg", "pe", armnetwork.PrivateEndpoint{}); err != nil {
		t.Errorf("another subscription's write: %v", err)
	}
	now = now.Add(6 * time.Minute)
	if err := eps.Put(ctx, "rg", "pe", armnetwork.PrivateEndpoint{}); err != nil {
		t.Errorf("after the window: %v", err)
	}
}
