package privatelinkservices

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// Factories returns the network clients of a subscription, for one
// identity.
type Factories func(ctx context.Context, subscription string) (*armnetwork.ClientFactory, error)

// SDK talks to ARM through the Azure SDK. Every write only starts its
// long-running operation: the caller re-observes provisioningState later
// instead of waiting (docs/design.md, *Never block on Azure*).
type SDK struct {
	// Primary serves the object's subscription: its private link service
	// and load balancers.
	Primary *armnetwork.ClientFactory
	// Subscription is Primary's; Factories serves others (a virtual network
	// in another subscription).
	Subscription string
	Factories    Factories
}

// factory serves a virtual network's subscription.
func (s SDK) factory(ctx context.Context, sub string) (*armnetwork.ClientFactory, error) {
	if strings.EqualFold(sub, s.Subscription) {
		return s.Primary, nil
	}
	return s.Factories(ctx, sub)
}

// Get returns the private link service, or nil when it does not exist.
func (s SDK) Get(ctx context.Context, rg, name string) (*armnetwork.PrivateLinkService, error) {
	resp, err := s.Primary.NewPrivateLinkServicesClient().Get(ctx, rg, name, nil)
	return orNil(&resp.PrivateLinkService, err)
}

// Count is how many private link services the subscription holds, in
// every resource group and whoever made them: Azure's limit of 800 is per
// subscription.
func (s SDK) Count(ctx context.Context) (int, error) {
	n := 0
	for pager := s.Primary.NewPrivateLinkServicesClient().NewListBySubscriptionPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += len(page.Value)
	}
	return n, nil
}

// Interface returns a network interface of the service by ID, or nil when
// it does not exist.
func (s SDK) Interface(ctx context.Context, id string) (*armnetwork.Interface, error) {
	p, err := parseAny(id, "networkInterfaces")
	if err != nil {
		return nil, err
	}
	f, err := s.factory(ctx, p.sub)
	if err != nil {
		return nil, err
	}
	resp, err := f.NewInterfacesClient().Get(ctx, p.rg, p.names[0], nil)
	return orNil(&resp.Interface, err)
}

// Put starts creating or updating the private link service.
func (s SDK) Put(ctx context.Context, rg, name string, body armnetwork.PrivateLinkService) error {
	_, err := s.Primary.NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, rg, name, body, nil)
	return err
}

// Delete starts deleting the private link service; a missing one is fine.
func (s SDK) Delete(ctx context.Context, rg, name string) error {
	_, err := s.Primary.NewPrivateLinkServicesClient().BeginDelete(ctx, rg, name, nil)
	return azure.IgnoreNotFound(err)
}

// SetConnection sets a connection's state (synchronous in ARM).
func (s SDK) SetConnection(ctx context.Context, rg, pls string, d Decision) error {
	_, err := s.Primary.NewPrivateLinkServicesClient().UpdatePrivateEndpointConnection(ctx, rg, pls, d.Name, armnetwork.PrivateEndpointConnection{
		Name: new(d.Name),
		Properties: &armnetwork.PrivateEndpointConnectionProperties{PrivateLinkServiceConnectionState: &armnetwork.PrivateLinkServiceConnectionState{
			Status: new(d.State), Description: new(d.Description),
		}},
	}, nil)
	return err
}

// DeleteConnection starts removing a connection; a missing one is fine.
func (s SDK) DeleteConnection(ctx context.Context, rg, pls, conn string) error {
	_, err := s.Primary.NewPrivateLinkServicesClient().BeginDeletePrivateEndpointConnection(ctx, rg, pls, conn, nil)
	return azure.IgnoreNotFound(err)
}

// LoadBalancer returns a load balancer, or nil when it does not exist.
func (s SDK) LoadBalancer(ctx context.Context, rg, name string) (*armnetwork.LoadBalancer, error) {
	resp, err := s.Primary.NewLoadBalancersClient().Get(ctx, rg, name, nil)
	return orNil(&resp.LoadBalancer, err)
}

// LoadBalancers lists a resource group's load balancers.
func (s SDK) LoadBalancers(ctx context.Context, rg string) ([]*armnetwork.LoadBalancer, error) {
	return all(ctx, s.Primary.NewLoadBalancersClient().NewListPager(rg, nil), func(p armnetwork.LoadBalancersClientListResponse) []*armnetwork.LoadBalancer {
		return p.Value
	})
}

// all follows every page of a pager.
func all[P, T any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*T) ([]*T, error) {
	var out []*T
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}

// VirtualNetwork returns a virtual network with its subnets, or nil when it
// does not exist.
func (s SDK) VirtualNetwork(ctx context.Context, id string) (*armnetwork.VirtualNetwork, error) {
	p, err := parse(id, 1)
	if err != nil {
		return nil, err
	}
	f, err := s.factory(ctx, p.sub)
	if err != nil {
		return nil, err
	}
	resp, err := f.NewVirtualNetworksClient().Get(ctx, p.rg, p.names[0], nil)
	return orNil(&resp.VirtualNetwork, err)
}

// PutSubnet starts creating or updating a subnet.
func (s SDK) PutSubnet(ctx context.Context, id string, body armnetwork.Subnet) error {
	p, err := parse(id, 2)
	if err != nil {
		return err
	}
	f, err := s.factory(ctx, p.sub)
	if err != nil {
		return err
	}
	_, err = f.NewSubnetsClient().BeginCreateOrUpdate(ctx, p.rg, p.names[0], p.names[1], body, nil)
	return err
}

// DeleteSubnet starts deleting a subnet; a missing one is fine.
func (s SDK) DeleteSubnet(ctx context.Context, id string) error {
	p, err := parse(id, 2)
	if err != nil {
		return err
	}
	f, err := s.factory(ctx, p.sub)
	if err != nil {
		return err
	}
	_, err = f.NewSubnetsClient().BeginDelete(ctx, p.rg, p.names[0], p.names[1], nil)
	return azure.IgnoreNotFound(err)
}

// orNil is a GET's result: nil (and no error) when the resource does not
// exist.
func orNil[T any](v *T, err error) (*T, error) {
	if azure.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

type idParts struct {
	sub, rg string
	names   []string
}

// parse reads /subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v[/subnets/n].
func parse(id string, depth int) (idParts, error) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) != 6+2*depth || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") || !strings.EqualFold(segs[4], "providers") {
		return idParts{}, fmt.Errorf("%q is not a virtual network or subnet resource ID", id)
	}
	p := idParts{sub: segs[1], rg: segs[3]}
	for i := 7; i < len(segs); i += 2 {
		p.names = append(p.names, segs[i])
	}
	if len(p.names) != depth {
		return idParts{}, errors.New("unexpected resource ID shape: " + id)
	}
	return p, nil
}

// parseAny reads /subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/<typ>/name.
func parseAny(id, typ string) (idParts, error) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) != 8 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") || !strings.EqualFold(segs[6], typ) {
		return idParts{}, fmt.Errorf("%q is not a %s resource ID", id, typ)
	}
	return idParts{sub: segs[1], rg: segs[3], names: []string{segs[7]}}, nil
}

// VNetOf is the virtual network ID of a subnet ID.
func VNetOf(subnetID string) string {
	if i := strings.Index(strings.ToLower(subnetID), "/subnets/"); i >= 0 {
		return subnetID[:i]
	}
	return subnetID
}
