package privateendpoints

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// listAPIVersion is the api-version armnetwork v11.0.0's private endpoint
// lists send (its version20250901); TestListerAsksAsTheSDKDoes checks that
// they still agree.
const listAPIVersion = "2025-09-01"

// Lister lists private endpoints through the ARM pipeline of a
// subscription's network clients (the same credential, retries, pacing and
// counting as every other request), decoding of each endpoint only what
// Observe reads. The SDK's own list decodes every field of every endpoint,
// each level of the document twice: 9.2 ms and 1.6 MB per page of 100
// against 1.2 ms and 157 KB (BenchmarkListDecode), and the lists of the
// management cluster's subscription, an endpoint per workload cluster,
// were the operator's largest CPU cost in a fleet of 2,000
// (docs/benchmarks.md, At b845f22 to 23fa78f).
type Lister struct {
	// Client is an ARM client made with the options of the subscription's
	// network clients (azure.Clients.RawNetwork).
	Client *arm.Client
	// Subscription is the subscription listed.
	Subscription string
}

// listPage is one page of a private endpoint list, as ARM sends it.
type listPage struct {
	Value    []*listedEndpoint `json:"value"`
	NextLink *string           `json:"nextLink"`
}

// listedEndpoint is what Observe reads of a private endpoint. Pointers keep
// Azure's absent and null apart from empty, as the SDK's model does.
type listedEndpoint struct {
	ID         *string            `json:"id"`
	Name       *string            `json:"name"`
	Etag       *string            `json:"etag"`
	Tags       map[string]*string `json:"tags"`
	Properties *struct {
		ProvisioningState                   *armnetwork.ProvisioningState `json:"provisioningState"`
		PrivateLinkServiceConnections       []*listedConnection           `json:"privateLinkServiceConnections"`
		ManualPrivateLinkServiceConnections []*listedConnection           `json:"manualPrivateLinkServiceConnections"`
		CustomDNSConfigs                    []*struct {
			IPAddresses []*string `json:"ipAddresses"`
		} `json:"customDnsConfigs"`
		NetworkInterfaces []*struct {
			ID *string `json:"id"`
		} `json:"networkInterfaces"`
	} `json:"properties"`
}

type listedConnection struct {
	Properties *struct {
		PrivateLinkServiceID              *string `json:"privateLinkServiceId"`
		PrivateLinkServiceConnectionState *struct {
			Status      *string `json:"status"`
			Description *string `json:"description"`
		} `json:"privateLinkServiceConnectionState"`
	} `json:"properties"`
}

// SubscriptionEndpoints lists every private endpoint of the subscription.
func (l Lister) SubscriptionEndpoints(ctx context.Context) ([]*armnetwork.PrivateEndpoint, error) {
	if l.Subscription == "" {
		return nil, errors.New("listing private endpoints: no subscription")
	}
	return l.list(ctx, "/subscriptions/"+url.PathEscape(l.Subscription)+"/providers/Microsoft.Network/privateEndpoints")
}

// ResourceGroupEndpoints lists every private endpoint of a resource group.
func (l Lister) ResourceGroupEndpoints(ctx context.Context, resourceGroup string) ([]*armnetwork.PrivateEndpoint, error) {
	if l.Subscription == "" || resourceGroup == "" {
		return nil, errors.New("listing private endpoints: no subscription or resource group")
	}
	return l.list(ctx, "/subscriptions/"+url.PathEscape(l.Subscription)+"/resourceGroups/"+url.PathEscape(resourceGroup)+"/providers/Microsoft.Network/privateEndpoints")
}

// list follows every page from path, as the SDK's pagers do: the first
// request with the api-version, the next ones to Azure's nextLink as it
// is (it carries its own query).
func (l Lister) list(ctx context.Context, path string) ([]*armnetwork.PrivateEndpoint, error) {
	var out []*armnetwork.PrivateEndpoint
	// Every page may spend into the pacer's reserve and waits there for
	// a token: held back midway the list would start over, and held back
	// at its first page every caller sharing it waits on (azure.WithList).
	ctx = azure.WithList(ctx)
	req, err := l.firstRequest(ctx, path)
	for err == nil {
		var page listPage
		if page, err = l.fetch(req); err != nil {
			break
		}
		for _, pe := range page.Value {
			if pe != nil {
				out = append(out, pe.model())
			}
		}
		if page.NextLink == nil || *page.NextLink == "" {
			return out, nil
		}
		req, err = runtime.NewRequestForNextLink(ctx, http.MethodGet, l.Client.Endpoint(), *page.NextLink)
	}
	return nil, err
}

func (l Lister) firstRequest(ctx context.Context, path string) (*policy.Request, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, runtime.JoinPaths(l.Client.Endpoint(), path))
	if err != nil {
		return nil, err
	}
	q := req.Raw().URL.Query()
	q.Set("api-version", listAPIVersion)
	req.Raw().URL.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	req.Raw().Header["Accept"] = []string{"application/json"}
	return req, nil
}

// fetch sends one page's request through the pipeline and decodes the
// answer; any status but 200 is the SDK's ResponseError.
func (l Lister) fetch(req *policy.Request) (listPage, error) {
	var page listPage
	resp, err := l.Client.Pipeline().Do(req)
	if err != nil {
		return page, err
	}
	defer func() { _ = resp.Body.Close() }()
	if !runtime.HasStatusCode(resp, http.StatusOK) {
		return page, runtime.NewResponseError(resp)
	}
	err = runtime.UnmarshalAsJSON(resp, &page)
	return page, err
}

// model is the SDK's model of what was decoded: the fields Observe reads,
// nothing else.
func (e *listedEndpoint) model() *armnetwork.PrivateEndpoint {
	pe := &armnetwork.PrivateEndpoint{ID: e.ID, Name: e.Name, Etag: e.Etag, Tags: e.Tags}
	p := e.Properties
	if p == nil {
		return pe
	}
	pe.Properties = &armnetwork.PrivateEndpointProperties{
		ProvisioningState:                   p.ProvisioningState,
		PrivateLinkServiceConnections:       connections(p.PrivateLinkServiceConnections),
		ManualPrivateLinkServiceConnections: connections(p.ManualPrivateLinkServiceConnections),
	}
	for _, d := range p.CustomDNSConfigs {
		var dns *armnetwork.CustomDNSConfigPropertiesFormat
		if d != nil {
			dns = &armnetwork.CustomDNSConfigPropertiesFormat{IPAddresses: d.IPAddresses}
		}
		pe.Properties.CustomDNSConfigs = append(pe.Properties.CustomDNSConfigs, dns)
	}
	for _, n := range p.NetworkInterfaces {
		var nic *armnetwork.Interface
		if n != nil {
			nic = &armnetwork.Interface{ID: n.ID}
		}
		pe.Properties.NetworkInterfaces = append(pe.Properties.NetworkInterfaces, nic)
	}
	return pe
}

func connections(in []*listedConnection) []*armnetwork.PrivateLinkServiceConnection {
	if in == nil {
		return nil
	}
	out := make([]*armnetwork.PrivateLinkServiceConnection, len(in))
	for i, c := range in {
		if c == nil {
			continue
		}
		out[i] = &armnetwork.PrivateLinkServiceConnection{}
		if c.Properties == nil {
			continue
		}
		props := &armnetwork.PrivateLinkServiceConnectionProperties{PrivateLinkServiceID: c.Properties.PrivateLinkServiceID}
		if st := c.Properties.PrivateLinkServiceConnectionState; st != nil {
			props.PrivateLinkServiceConnectionState = &armnetwork.PrivateLinkServiceConnectionState{Status: st.Status, Description: st.Description}
		}
		out[i].Properties = props
	}
	return out
}

// ListerFor is the Lister of a factory clients made (azure.Clients.Network
// or NetworkFor); nil for any other, whose lists the SDK makes.
func ListerFor(clients *azure.Clients, f *armnetwork.ClientFactory) *Lister {
	if clients == nil {
		return nil
	}
	raw, sub, ok := clients.RawNetwork(f)
	if !ok {
		return nil
	}
	return &Lister{Client: raw, Subscription: sub}
}
