package azure

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Requests counts the operator's Azure Resource Manager requests.
var Requests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "azure_private_endpoint_operator_azure_requests_total",
	Help: "Azure Resource Manager requests made by the operator, by HTTP method, resource type and status code (0: no response).",
}, []string{"method", "resource_type", "code"})

func init() {
	metrics.Registry.MustRegister(Requests)
}

// Defaults for every ARM client. Retries are short: a Retry-After longer
// than MaxRetryDelay comes back as an error, which the controllers turn
// into a requeue instead of blocking a worker (azcore returns such a 429).
var defaultRetry = policy.RetryOptions{
	MaxRetries:    3,
	TryTimeout:    30 * time.Second,
	RetryDelay:    time.Second,
	MaxRetryDelay: 5 * time.Second,
}

// Clients caches ARM clients per credential and subscription, so no
// reconcile builds a client (or a credential).
type Clients struct {
	Credentials *Credentials
	// Retry overrides the retry options (tests make them faster).
	Retry *policy.RetryOptions

	mu      sync.Mutex
	network map[string]cachedNetwork
	dns     map[string]cachedDNS
	pacers  map[string]*pacer
	due     *dueOperations
}

// cachedDNS is cachedNetwork for Private DNS clients.
type cachedDNS struct {
	factory *armprivatedns.ClientFactory
	cred    azcore.TokenCredential
}

// cachedNetwork remembers the credential a factory was built with: a rebuilt
// credential (a rotated secret) gets new clients.
type cachedNetwork struct {
	factory *armnetwork.ClientFactory
	cred    azcore.TokenCredential
	// raw is an ARM client with the factory's options (RawNetwork).
	raw          *arm.Client
	subscription string
}

// The module armnetwork's clients name in their User-Agent (its
// version.go); RawNetwork's client names the same.
const (
	networkModule        = "github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork"
	networkModuleVersion = "v11.0.0"
)

// RawNetwork returns an ARM client made with the options of f's clients —
// the same credential, retries, pacing and counting — and f's
// subscription, for requests made without the SDK's typed clients (the
// private endpoint lists, which decode only what they read); false for a
// factory NetworkFor did not make.
func (c *Clients) RawNetwork(f *armnetwork.ClientFactory) (*arm.Client, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.network {
		if e.factory == f {
			return e.raw, e.subscription, e.raw != nil
		}
	}
	return nil, "", false
}

// Network returns the network clients for a subscription, authenticated
// with the identity of the cluster.
func (c *Clients) Network(ctx context.Context, ac *capz.AzureCluster, subscription string) (*armnetwork.ClientFactory, *Credential, error) {
	return c.NetworkFor(ctx, SubjectOf(ac), subscription)
}

// NetworkFor returns the network clients for a subscription, authenticated
// with the subject's identity.
func (c *Clients) NetworkFor(ctx context.Context, sub Subject, subscription string) (*armnetwork.ClientFactory, *Credential, error) {
	cred, err := c.Credentials.ForSubject(ctx, sub)
	if err != nil {
		return nil, nil, err
	}
	k := cred.Key + "|" + strings.ToLower(subscription)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.network[k]; ok && e.cred == cred.TokenCredential {
		return e.factory, cred, nil
	}
	opts := c.options(cred, c.pacer(k))
	f, err := armnetwork.NewClientFactory(subscription, cred, opts)
	if err != nil {
		return nil, nil, err
	}
	raw, err := arm.NewClient(networkModule, networkModuleVersion, cred, opts)
	if err != nil {
		return nil, nil, err
	}
	if c.network == nil {
		c.network = map[string]cachedNetwork{}
	}
	c.network[k] = cachedNetwork{factory: f, cred: cred.TokenCredential, raw: raw, subscription: subscription}
	return f, cred, nil
}

// PrivateDNSFor returns the Private DNS clients for a subscription,
// authenticated with the subject's identity.
func (c *Clients) PrivateDNSFor(ctx context.Context, sub Subject, subscription string) (*armprivatedns.ClientFactory, error) {
	cred, err := c.Credentials.ForSubject(ctx, sub)
	if err != nil {
		return nil, err
	}
	k := cred.Key + "|" + strings.ToLower(subscription)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.dns[k]; ok && e.cred == cred.TokenCredential {
		return e.factory, nil
	}
	f, err := armprivatedns.NewClientFactory(subscription, cred, c.options(cred, c.pacer(k)))
	if err != nil {
		return nil, err
	}
	if c.dns == nil {
		c.dns = map[string]cachedDNS{}
	}
	c.dns[k] = cachedDNS{factory: f, cred: cred.TokenCredential}
	return f, nil
}

// pacer is the one pacer of an identity in a subscription, shared by its
// network and Private DNS clients: ARM counts their requests together.
// The caller holds c.mu.
func (c *Clients) pacer(k string) *pacer {
	if c.pacers == nil {
		c.pacers = map[string]*pacer{}
	}
	p := c.pacers[k]
	if p == nil {
		p = newPacer()
		c.pacers[k] = p
	}
	return p
}

// options are an ARM client's options. The caller holds c.mu.
func (c *Clients) options(cred *Credential, pace *pacer) *arm.ClientOptions {
	if c.due == nil {
		c.due = &dueOperations{}
	}
	retry := defaultRetry
	if c.Retry != nil {
		retry = *c.Retry
	}
	return &arm.ClientOptions{ClientOptions: azcore.ClientOptions{
		Cloud:            cred.Cloud,
		Transport:        cred.Transport,
		Retry:            retry,
		Telemetry:        policy.TelemetryOptions{ApplicationID: "azure-private-endpoint-operator"},
		PerCallPolicies:  []policy.Policy{pace, deleteLog{}, operationHintPolicy{due: c.due}, remainingPolicy{}},
		PerRetryPolicies: []policy.Policy{countingPolicy{}},
	}}
}

// countingPolicy counts every try of every request in Requests.
type countingPolicy struct{}

func (countingPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	code := "0"
	if resp != nil {
		code = strconv.Itoa(resp.StatusCode)
	}
	Requests.WithLabelValues(req.Raw().Method, ResourceType(req.Raw().URL.Path), code).Inc()
	return resp, err
}

// ResourceType names the resource type of an ARM path, e.g.
// "Microsoft.Network/privateEndpoints", for metrics.
func ResourceType(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if !strings.EqualFold(s, "providers") || i+2 >= len(segs) {
			continue
		}
		typ := segs[i+1]
		for j := i + 2; j < len(segs); j += 2 {
			typ += "/" + segs[j]
		}
		return typ
	}
	if len(segs) >= 3 && strings.EqualFold(segs[2], "resourceGroups") {
		return "Microsoft.Resources/resourceGroups"
	}
	return "other"
}
