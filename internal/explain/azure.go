package explain

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// Azure is what explain reads of Azure, with a cluster's credential: the
// cluster's subscription is where it looks.
type Azure interface {
	// Endpoint reads the private endpoint name in the resource group of
	// as's subscription; nil when Azure has none of that name.
	Endpoint(ctx context.Context, as *capz.AzureCluster, resourceGroup, name string) (*privateendpoints.Observation, error)
	// Record finds the A record set of fqdn in the private zones of as's
	// subscription: the zone whose name is the longest suffix of fqdn, the
	// one in as's resource group first (where DNS mode makes a cluster's
	// zones; another cluster's zone of the same name may hold the same
	// name for its own network).
	Record(ctx context.Context, as *capz.AzureCluster, fqdn string) (Record, error)
}

// Record is what Azure holds for one name.
type Record struct {
	// Zone is the ID of the private zone the name belongs to; "" when no
	// zone of the subscription the credential may read holds the name.
	Zone string
	// Found: the zone has an A record set of the name; IPs are its
	// addresses.
	Found bool
	IPs   []string
}

// AzureClients reads Azure with the operator's client code (the same
// credentials, clouds, retries and pacing).
type AzureClients struct {
	Clients *azure.Clients
	// Own reads every cluster's subscription with the caller's own
	// credential (Clients.Credentials.Own) instead of the cluster's
	// AzureClusterIdentity.
	Own bool

	mu    sync.Mutex
	zones map[string][]*armprivatedns.PrivateZone // by subscription and credential
}

func (a *AzureClients) subject(as *capz.AzureCluster) azure.Subject {
	s := azure.SubjectOf(as)
	if a.Own {
		s.IdentityRef, s.AllowOwn = nil, true
	}
	return s
}

// Endpoint implements Azure with one GET of the endpoint (and one of its
// network interface when Azure leaves customDnsConfigs empty).
func (a *AzureClients) Endpoint(ctx context.Context, as *capz.AzureCluster, resourceGroup, name string) (*privateendpoints.Observation, error) {
	f, _, err := a.Clients.NetworkFor(ctx, a.subject(as), as.SubscriptionID)
	if err != nil {
		return nil, err
	}
	sdk := privateendpoints.NewSDK(f)
	pe, err := sdk.PrivateEndpoint(ctx, resourceGroup, name)
	if azure.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var nicErr error
	ob := privateendpoints.Observe(pe, func(id string) string {
		ip, err := sdk.InterfaceIP(ctx, id)
		nicErr = errors.Join(nicErr, azure.IgnoreNotFound(err))
		return ip
	})
	return &ob, nicErr
}

// Record implements Azure: one list of the subscription's private zones
// (once per subscription and credential), then a GET of the record set.
func (a *AzureClients) Record(ctx context.Context, as *capz.AzureCluster, fqdn string) (Record, error) {
	sub := a.subject(as)
	f, err := a.Clients.PrivateDNSFor(ctx, sub, as.SubscriptionID)
	if err != nil {
		return Record{}, err
	}
	zones, err := a.listZones(ctx, f, strings.ToLower(as.SubscriptionID+"|"+sub.Namespace+"/"+sub.Name))
	if err != nil {
		return Record{}, err
	}
	var r Record
	for _, z := range zonesOf(zones, fqdn, as.ResourceGroup) {
		zone, ok := dns.ZoneFromID(ptr.Deref(z.ID, ""))
		if !ok {
			continue
		}
		if r.Zone == "" {
			r.Zone = zone.ID()
		}
		rs, err := (dns.SDK{Factory: f}).Record(ctx, zone.ResourceGroup, zone.Name, dns.RelativeName(fqdn, zone.Name))
		if err != nil {
			return r, err
		}
		if rs != nil {
			r.Zone, r.Found, r.IPs = zone.ID(), true, addresses(rs)
			return r, nil
		}
	}
	return r, nil
}

func (a *AzureClients) listZones(ctx context.Context, f *armprivatedns.ClientFactory, k string) ([]*armprivatedns.PrivateZone, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if z, ok := a.zones[k]; ok {
		return z, nil
	}
	var zones []*armprivatedns.PrivateZone
	for pager := f.NewPrivateZonesClient().NewListPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		zones = append(zones, page.Value...)
	}
	if a.zones == nil {
		a.zones = map[string][]*armprivatedns.PrivateZone{}
	}
	a.zones[k] = zones
	return zones, nil
}

// zonesOf are the zones fqdn belongs to, the most specific first (a name
// belongs to the zone whose name is its longest suffix), and among zones
// of one name the one in resource group rg first.
func zonesOf(zones []*armprivatedns.PrivateZone, fqdn, rg string) []*armprivatedns.PrivateZone {
	fqdn = strings.ToLower(strings.TrimSuffix(fqdn, "."))
	var out []*armprivatedns.PrivateZone
	for _, z := range zones {
		name := strings.ToLower(ptr.Deref(z.Name, ""))
		if name != "" && (fqdn == name || strings.HasSuffix(fqdn, "."+name)) {
			out = append(out, z)
		}
	}
	inRG := func(z *armprivatedns.PrivateZone) int {
		if zone, ok := dns.ZoneFromID(ptr.Deref(z.ID, "")); ok && strings.EqualFold(zone.ResourceGroup, rg) {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(out, func(x, y *armprivatedns.PrivateZone) int {
		if d := len(ptr.Deref(y.Name, "")) - len(ptr.Deref(x.Name, "")); d != 0 {
			return d
		}
		return inRG(x) - inRG(y)
	})
	return out
}

// addresses are an A record set's addresses.
func addresses(rs *armprivatedns.RecordSet) []string {
	var ips []string
	if rs.Properties == nil {
		return nil
	}
	for _, rec := range rs.Properties.ARecords {
		if rec != nil && rec.IPv4Address != nil {
			ips = append(ips, *rec.IPv4Address)
		}
	}
	return ips
}
