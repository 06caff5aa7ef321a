// Package privateendpoints observes private endpoints in Azure: their IP,
// connection state and provisioning state, with as few reads as Azure
// allows (docs/design.md, *Read Azure sparingly*).
package privateendpoints

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
)

// Connection states as Azure reports them.
const (
	StatePending      = "Pending"
	StateApproved     = "Approved"
	StateRejected     = "Rejected"
	StateDisconnected = "Disconnected"
)

// Observation is what Azure says about one private endpoint.
type Observation struct {
	Name                  string
	ID                    string
	ProvisioningState     string
	IP                    string
	ConnectionState       string
	ConnectionDescription string
	PrivateLinkServiceID  string
	ManualApproval        bool
	// NICIDs are the endpoint's network interfaces, to find its IP when Azure
	// does not put it in customDnsConfigs.
	NICIDs []string
	// Tags are the endpoint's Azure tags.
	Tags map[string]string
	// ETag is the endpoint's etag: Azure gives the resource a new one
	// with every write to it.
	ETag string
}

// DNSConfig is one of an endpoint's customDnsConfigs.
type DNSConfig struct {
	FQDN string
	IPs  []string
}

// Ready says the endpoint can carry traffic: provisioned, approved, with an
// IP. Pointing DNS at anything less fails silently.
func (o Observation) Ready() bool {
	return o.ProvisioningState == string(armnetwork.ProvisioningStateSucceeded) && o.ConnectionState == StateApproved && o.IP != ""
}

// Observe reads an SDK private endpoint. The IP comes from customDnsConfigs
// when Azure fills it, else from nicIP (a NIC address lookup).
func Observe(pe *armnetwork.PrivateEndpoint, nicIP func(nicID string) string) Observation {
	o := Observation{Name: ptr.Deref(pe.Name, ""), ID: ptr.Deref(pe.ID, ""), ETag: ptr.Deref(pe.Etag, "")}
	for k, v := range pe.Tags {
		if o.Tags == nil {
			o.Tags = map[string]string{}
		}
		o.Tags[k] = ptr.Deref(v, "")
	}
	p := pe.Properties
	if p == nil {
		return o
	}
	if p.ProvisioningState != nil {
		o.ProvisioningState = string(*p.ProvisioningState)
	}
	readConnection(&o, p)
	for _, nic := range p.NetworkInterfaces {
		if nic != nil && nic.ID != nil {
			o.NICIDs = append(o.NICIDs, *nic.ID)
		}
	}
	o.IP = address(p, o.NICIDs, nicIP)
	return o
}

// DNSConfigs reads an endpoint's customDnsConfigs: the names Azure says it
// serves, each with its addresses, and every address once in Azure's order
// (one per member of an Azure service's sub-resource; one for a private
// link service).
func DNSConfigs(pe *armnetwork.PrivateEndpoint) (configs []DNSConfig, ips []string) {
	if pe == nil || pe.Properties == nil {
		return nil, nil
	}
	for _, c := range pe.Properties.CustomDNSConfigs {
		if c == nil {
			continue
		}
		dc := DNSConfig{FQDN: ptr.Deref(c.Fqdn, "")}
		for _, ip := range c.IPAddresses {
			if a := ptr.Deref(ip, ""); a != "" {
				dc.IPs = append(dc.IPs, a)
				if !slices.Contains(ips, a) {
					ips = append(ips, a)
				}
			}
		}
		configs = append(configs, dc)
	}
	return configs, ips
}

// readConnection reads the endpoint's one connection, manual or automatic.
func readConnection(o *Observation, p *armnetwork.PrivateEndpointProperties) {
	conns := p.PrivateLinkServiceConnections
	if len(p.ManualPrivateLinkServiceConnections) > 0 {
		conns, o.ManualApproval = p.ManualPrivateLinkServiceConnections, true
	}
	if len(conns) == 0 || conns[0] == nil || conns[0].Properties == nil {
		return
	}
	cp := conns[0].Properties
	o.PrivateLinkServiceID = ptr.Deref(cp.PrivateLinkServiceID, "")
	if st := cp.PrivateLinkServiceConnectionState; st != nil {
		o.ConnectionState, o.ConnectionDescription = ptr.Deref(st.Status, ""), ptr.Deref(st.Description, "")
	}
}

// address is the endpoint's IP: from customDnsConfigs, else from a NIC.
func address(p *armnetwork.PrivateEndpointProperties, nicIDs []string, nicIP func(string) string) string {
	for _, dns := range p.CustomDNSConfigs {
		if dns != nil && len(dns.IPAddresses) > 0 && ptr.Deref(dns.IPAddresses[0], "") != "" {
			return *dns.IPAddresses[0]
		}
	}
	if nicIP == nil {
		return ""
	}
	for _, id := range nicIDs {
		if ip := nicIP(id); ip != "" {
			return ip
		}
	}
	return ""
}

// API is the part of Azure the observer needs.
type API interface {
	// ListPrivateEndpoints lists every private endpoint of a resource group,
	// following pages.
	ListPrivateEndpoints(ctx context.Context, resourceGroup string) ([]*armnetwork.PrivateEndpoint, error)
	// ListSubscriptionPrivateEndpoints lists every private endpoint of the
	// subscription, following pages.
	ListSubscriptionPrivateEndpoints(ctx context.Context) ([]*armnetwork.PrivateEndpoint, error)
	// PrivateEndpoint reads one private endpoint.
	PrivateEndpoint(ctx context.Context, resourceGroup, name string) (*armnetwork.PrivateEndpoint, error)
	// InterfaceIP returns the primary private IP of a network interface.
	InterfaceIP(ctx context.Context, nicID string) (string, error)
}

// Observer lists private endpoints and shares each list for TTL among every
// caller. It lists a whole subscription at once, so that the reconciles of
// many clusters whose endpoints live in one subscription (the management
// cluster's, or workload clusters sharing a subscription) cost one paged
// list per subscription and TTL. Where the identity may not list the
// subscription (its role is scoped to resource groups), it lists resource
// groups instead and tries the subscription again after SubscriptionRetry.
type Observer struct {
	// TTL is how long a list answers callers; default 10 seconds.
	TTL time.Duration
	// TTLPer1000 makes a large list answer longer: this long per 1,000
	// endpoints it holds, when that is longer than TTL (0: never longer).
	// A list costs a read per page and a decode per endpoint, so with a
	// fixed TTL a subscription holding N endpoints (the MC's, one per
	// workload cluster) costs N/TTL of both while callers wait: 100 pages
	// every 10 s at N = 10,000, 10 of ARM's 25 reads per second. Scaled,
	// one page of 100 endpoints per second per subscription with 10 s per
	// 1,000, at any N. (It does not bound the lists of workload cluster
	// subscriptions holding fewer than 1,000 each, however many there
	// are: docs/benchmarks.md, At b845f22 to 23fa78f.)
	TTLPer1000 time.Duration
	// SubscriptionRetry is how long a scope whose subscription-wide list was
	// refused is read per resource group; default 1 hour.
	SubscriptionRetry time.Duration
	// Clock tells the time; default the real clock.
	Clock clock.PassiveClock

	mu       sync.Mutex
	lists    map[string]*listing
	dropped  map[string]bool      // keys Invalidate dropped, until listed again (listsTotal's reason)
	perGroup map[string]time.Time // lower scope -> until when to list resource groups
	nicIPs   map[string]string    // lower NIC ID -> IP; a NIC's IP never changes
	nicBusy  map[string]chan struct{}
}

// Why a list was asked of Azure (the reason label of listsTotal).
const (
	listFirst       = "first"       // the observer held none under its key
	listExpired     = "expired"     // the one it held was older than its TTL
	listInvalidated = "invalidated" // Invalidate dropped it: the operator changed what exists
	listRetry       = "retry"       // the one it held had failed or was held back
)

var (
	listsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_private_endpoint_lists_total",
		Help: "Lists of private endpoints the operator started (each one or more pages, shared by every reconcile that needs it), by subscription, what was listed (subscription, resource_group), why (first, expired, invalidated, retry) and how it ended (ok; failed; held_back: the operator's own pacing kept a page from Azure, see azure_requests_paced_total).",
	}, []string{"subscription", "scope", "reason", "result"})
	listedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "azure_private_endpoint_operator_private_endpoints_listed_total",
		Help: "Private endpoints Azure returned in the operator's lists, by subscription: what the lists cost in pages (100 endpoints each) and decoding.",
	}, []string{"subscription"})
)

func init() { metrics.Registry.MustRegister(listsTotal, listedTotal) }

// failedListRetry is the least time a failed list answers its callers
// with its error before it is asked of Azure again (longer when the error
// says to wait longer). Every reconcile that needs a subscription's list
// used to ask again at once: at N = 3,000 the management cluster's list,
// held back by the pacer, was asked 398,149 times in 12 minutes, each
// time held back again (docs/benchmarks.md, At 23fa78f to 9565629, run e).
const failedListRetry = time.Second

// listTimeout bounds one shared list, which runs without its first
// caller's cancellation.
const listTimeout = 5 * time.Minute

type listing struct {
	// started is when the list was asked of Azure, at is when it answered
	// (its age counts from there).
	started, at time.Time
	obs         map[string]map[string]Observation // lower resource group -> lower name -> observation; never changed once done
	// learned holds what Learn was told since, over obs, in the same
	// shape; guarded by Observer.mu. An overlay rather than a new copy
	// of obs per Learn: an ASO event costs one entry, not the N
	// endpoints of the management cluster's subscription.
	learned map[string]map[string]Observation
	n       int // endpoints Azure listed (ttlOf)
	err     error
	// retryAt is when a failed list may be asked of Azure again; until
	// then its callers get its error (failedListRetry).
	retryAt time.Time
	done    chan struct{}
}

// Scope is the observer's scope of a credential in a subscription: what
// ResourceGroup, Learn, Invalidate and Listed take. Lists are shared only
// under one scope, so that a caller learns nothing its own credential
// could not read; every caller builds it here, so that two callers with
// the same credential meet under the same scope.
func Scope(cred *azure.Credential, subscription string) string {
	return cred.Key + "|" + subscription
}

// ResourceGroup returns the observations of the private endpoints of a
// resource group, by lower-case name: those of names, or every one when
// names is empty. scope identifies the credential and subscription the API
// uses, so callers with other credentials never share. The IP of an
// endpoint Azure lists without customDnsConfigs is read from its network
// interface (once per interface) for the names asked for; with no names
// every IP is as Azure lists it.
//
// Only the names asked for: a workload cluster's pass asks for one or two
// endpoints of the management cluster's group, which holds one per
// cluster, and a copy of the whole group to add an IP to was 3 MiB per
// pass at 1,000 clusters (make bench's heap profile).
//
// notBefore (on the observer's clock; the zero time for none) is when the
// caller's object was first seen. A list asked of Azure before then may
// hold endpoints that went before the object came — an object created
// again under an earlier one's name would be told of the earlier one's
// endpoints, which bear the names its own will bear. Of such a list, the
// names asked for that it holds are read again one by one (and dropped
// when Azure no longer has them); a name it lacks stays absent until the
// list expires, as for every caller (an endpoint made since is seen late,
// never wrongly). A new object whose endpoints do not exist yet costs
// nothing. The map is shared: callers must not modify it.
func (o *Observer) ResourceGroup(ctx context.Context, api API, scope, resourceGroup string, notBefore time.Time, names ...string) (map[string]Observation, error) {
	l, err := o.listing(ctx, api, scope, resourceGroup)
	if err != nil {
		return nil, err
	}
	group := o.view(l, strings.ToLower(resourceGroup), names)
	if l.started.Before(notBefore) {
		if group, err = o.confirm(ctx, api, resourceGroup, group, names); err != nil {
			return nil, err
		}
	}
	return o.resolveIPs(ctx, api, group, names)
}

// view is what l says of a resource group (lower case): the observations
// of names, or all of them when names is empty, with what Learn put in
// over what Azure listed.
func (o *Observer) view(l *listing, rg string, names []string) map[string]Observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	base, learned := l.obs[rg], l.learned[rg]
	switch {
	case len(names) > 0:
		out := only(base, names)
		for _, n := range names {
			if ob, ok := learned[strings.ToLower(n)]; ok {
				out[strings.ToLower(n)] = ob
			}
		}
		return out
	case len(learned) == 0:
		return base
	default:
		out := maps.Clone(base)
		if out == nil {
			out = make(map[string]Observation, len(learned))
		}
		maps.Copy(out, learned)
		return out
	}
}

// only is a new map of the observations of names that obs holds.
func only(obs map[string]Observation, names []string) map[string]Observation {
	out := make(map[string]Observation, len(names))
	for _, n := range names {
		name := strings.ToLower(n)
		if ob, ok := obs[name]; ok {
			out[name] = ob
		}
	}
	return out
}

// listing is the list that answers for a resource group: the
// subscription's, or the group's where the scope may not list its
// subscription.
func (o *Observer) listing(ctx context.Context, api API, scope, resourceGroup string) (*listing, error) {
	if o.subscriptionWide(scope) {
		l, err := o.get(ctx, scope+"|*", api.ListSubscriptionPrivateEndpoints)
		if err == nil {
			return l, nil
		}
		if azure.Classify(err).StatusCode != http.StatusForbidden {
			return nil, err
		}
		o.listGroups(scope)
	}
	return o.get(ctx, scope+"|"+strings.ToLower(resourceGroup), func(ctx context.Context) ([]*armnetwork.PrivateEndpoint, error) {
		return api.ListPrivateEndpoints(ctx, resourceGroup)
	})
}

// confirm reads again, one by one, the endpoints of names that obs holds,
// and returns a copy with what Azure says of them now (without those
// Azure no longer has); obs itself when it holds none of them.
func (o *Observer) confirm(ctx context.Context, api API, resourceGroup string, obs map[string]Observation, names []string) (map[string]Observation, error) {
	var out map[string]Observation
	read := map[string]bool{}
	for _, n := range names {
		name := strings.ToLower(n)
		if _, ok := obs[name]; !ok || read[name] {
			continue
		}
		read[name] = true
		if out == nil {
			out = maps.Clone(obs)
		}
		pe, err := api.PrivateEndpoint(ctx, resourceGroup, n)
		switch {
		case azure.IsNotFound(err):
			delete(out, name)
		case err != nil:
			return nil, err
		default:
			out[name] = Observe(pe, o.cachedNICIP)
		}
	}
	if out == nil {
		return obs, nil
	}
	return out, nil
}

func (o *Observer) subscriptionWide(scope string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	until, ok := o.perGroup[strings.ToLower(scope)]
	return !ok || o.now().After(until)
}

// listGroups remembers that scope may not list its subscription.
func (o *Observer) listGroups(scope string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.perGroup == nil {
		o.perGroup = map[string]time.Time{}
	}
	retry := o.SubscriptionRetry
	if retry <= 0 {
		retry = time.Hour
	}
	o.perGroup[strings.ToLower(scope)] = o.now().Add(retry)
}

// get returns the listing under k, listing anew when it is older than TTL
// or failed; concurrent callers share one list.
func (o *Observer) get(ctx context.Context, k string, list func(context.Context) ([]*armnetwork.PrivateEndpoint, error)) (*listing, error) {
	k = strings.ToLower(k)
	o.mu.Lock()
	if o.lists == nil {
		o.lists = map[string]*listing{}
	}
	if o.nicIPs == nil {
		o.nicIPs = map[string]string{}
	}
	l := o.lists[k]
	reason := listFirst
	if l != nil {
		select {
		case <-l.done:
			if l.err == nil && o.now().Sub(l.at) < o.ttlOf(l) {
				o.mu.Unlock()
				return l, nil
			}
			if l.err != nil && o.now().Before(l.retryAt) {
				o.mu.Unlock()
				return l, l.err
			}
			reason = listExpired
			if l.err != nil {
				reason = listRetry
			}
		default:
			o.mu.Unlock()
			return wait(ctx, l)
		}
	} else if o.dropped[k] {
		reason = listInvalidated
	}
	delete(o.dropped, k)
	l = &listing{started: o.now(), done: make(chan struct{})}
	o.lists[k] = l
	o.mu.Unlock()

	// The list serves every caller waiting for it: the first caller going
	// away must not fail the others, so it runs on its own deadline.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listTimeout)
	defer cancel()
	pes, err := list(lctx)
	// Every waiting caller gets this error: classify it once, here.
	l.err = azure.Freeze(err)
	if err == nil {
		l.obs, l.n = o.group(pes), len(pes)
	}
	countList(k, reason, err, len(pes))
	o.mu.Lock()
	l.at = o.now()
	if err != nil {
		l.retryAt = l.at.Add(max(azure.Classify(l.err).RetryAfter, failedListRetry))
	}
	o.mu.Unlock()
	close(l.done)
	return l, l.err
}

// countList counts a list under key k that ended with err, having
// returned n endpoints.
func countList(k, reason string, err error, n int) {
	sub, what, result := subscriptionOf(k), "resource_group", "ok"
	if strings.HasSuffix(k, "|*") {
		what = "subscription"
	}
	switch {
	case err == nil:
		listedTotal.WithLabelValues(sub).Add(float64(n))
	case azure.Classify(err).HeldBack:
		result = "held_back"
	default:
		result = "failed"
	}
	listsTotal.WithLabelValues(sub, what, reason, result).Inc()
}

// group observes endpoints by resource group, with the NIC IPs known so far.
func (o *Observer) group(pes []*armnetwork.PrivateEndpoint) map[string]map[string]Observation {
	out := map[string]map[string]Observation{}
	for _, pe := range pes {
		obs := Observe(pe, o.cachedNICIP)
		rg, _, _ := splitID(obs.ID)
		rg = strings.ToLower(rg)
		if out[rg] == nil {
			out[rg] = map[string]Observation{}
		}
		out[rg][strings.ToLower(obs.Name)] = obs
	}
	return out
}

// resolveIPs reads, once per NIC, the IP of the endpoints asked for (names)
// that Azure listed without customDnsConfigs. It returns the shared map
// when nothing is missing and a copy otherwise.
func (o *Observer) resolveIPs(ctx context.Context, api API, obs map[string]Observation, names []string) (map[string]Observation, error) {
	var out map[string]Observation
	for _, n := range names {
		name := strings.ToLower(n)
		ob, ok := obs[name]
		if !ok || ob.IP != "" || len(ob.NICIDs) == 0 {
			continue
		}
		ip, err := o.nicIP(ctx, api, ob.NICIDs[0])
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = maps.Clone(obs)
		}
		ob.IP = ip
		out[name] = ob
	}
	if out == nil {
		return obs, nil
	}
	return out, nil
}

// nicIP reads a network interface's IP once: concurrent callers for one NIC
// share the read, and the answer is kept (a NIC's IP never changes; a
// recreated endpoint gets a new NIC).
func (o *Observer) nicIP(ctx context.Context, api API, id string) (string, error) {
	k := strings.ToLower(id)
	for {
		o.mu.Lock()
		if ip, ok := o.nicIPs[k]; ok {
			o.mu.Unlock()
			return ip, nil
		}
		if busy, ok := o.nicBusy[k]; ok {
			o.mu.Unlock()
			select {
			case <-busy:
				continue // read by the other caller, or failed: look again
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if o.nicBusy == nil {
			o.nicBusy = map[string]chan struct{}{}
		}
		busy := make(chan struct{})
		o.nicBusy[k] = busy
		o.mu.Unlock()
		ip, err := api.InterfaceIP(ctx, id)
		o.mu.Lock()
		if err == nil && ip != "" { // an interface without an address yet is read again
			o.nicIPs[k] = ip
		}
		delete(o.nicBusy, k)
		close(busy)
		o.mu.Unlock()
		return ip, err
	}
}

// Learn puts what another source (CAPZ's ASO object, whose status ASO
// fills from Azure) says of one endpoint into the lists of scope
// ("<credential>|<subscription>", as ResourceGroup takes it) that are done,
// until they expire: a reconcile right after the event sees it without
// reading Azure. Only the lists of that credential learn, and only an
// endpoint whose ID is in scope's subscription: another credential's view
// of Azure is never changed by what one cluster's objects say. The lists
// keep their age, so the next drift check or recheck reads Azure as
// before. A report that the same endpoint (same network interface) is
// Pending again is not learned over Approved: no path from Approved back
// to Pending is known (a consumer asks again only from Rejected; whether a
// provider may set Pending is not verified, and nothing here does), so
// such a status is ASO's from before the approval, which ASO keeps until
// its next sync of the object. It returns whether a list took it.
func (o *Observer) Learn(scope string, ob Observation) bool {
	rg, _, _ := splitID(ob.ID)
	rg, name := strings.ToLower(rg), strings.ToLower(ob.Name)
	scope = strings.ToLower(scope)
	if rg == "" || name == "" || subscriptionOfID(ob.ID) != subscriptionOf(scope+"|") {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	learned := false
	for k, l := range o.lists {
		if !strings.HasPrefix(k, scope+"|") || !strings.HasSuffix(k, "|*") && !strings.HasSuffix(k, "|"+rg) {
			continue
		}
		select {
		case <-l.done:
		default:
			continue // in flight: its callers get Azure's answer
		}
		if l.err != nil {
			continue
		}
		if ob.IP == "" {
			ob.IP = o.nicIPs[strings.ToLower(firstOf(ob.NICIDs))]
		}
		if l.learn(rg, name, ob) {
			learned = true
		}
	}
	return learned
}

// learn puts ob into l's overlay unless it is stale against what l says
// of the endpoint. The caller holds Observer.mu. l.obs is shared with
// callers and never changes: the overlay takes what is learned (view
// reads both under Observer.mu).
func (l *listing) learn(rg, name string, ob Observation) bool {
	had, ok := l.learned[rg][name]
	if !ok {
		had = l.obs[rg][name]
	}
	if stale(had, ob) {
		return false
	}
	if l.learned == nil {
		l.learned = map[string]map[string]Observation{}
	}
	if l.learned[rg] == nil {
		l.learned[rg] = map[string]Observation{}
	}
	l.learned[rg][name] = ob
	return true
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// subscriptionOf is the subscription of a list key
// ("<credential>|<subscription>|<resource group or *>").
func subscriptionOf(k string) string {
	parts := strings.Split(k, "|")
	if len(parts) < 3 {
		return ""
	}
	return parts[len(parts)-2]
}

// Invalidate makes the next ResourceGroup call read Azure again, for
// example after the caller changed what should exist.
func (o *Observer) Invalidate(scope, resourceGroup string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped == nil {
		o.dropped = map[string]bool{}
	}
	for _, k := range []string{strings.ToLower(scope + "|" + resourceGroup), strings.ToLower(scope + "|*")} {
		if _, ok := o.lists[k]; ok {
			delete(o.lists, k)
			o.dropped[k] = true
		}
	}
}

// Know keeps ip as the address of the network interface id, as another of
// the operator's readers had it from Azure (the AzurePrivateEndpoint
// controller reads the interface of each endpoint it makes, among them
// the management cluster's endpoints beyond its AzureCluster, whose
// address the wiring then needs too): the wiring does not read the same
// interface again. Only an address Azure answered belongs here, never one
// from an object's status, which whoever may write that status could make
// up for an interface of the management cluster.
func (o *Observer) Know(id, ip string) {
	if id == "" || ip == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.nicIPs == nil {
		o.nicIPs = map[string]string{}
	}
	o.nicIPs[strings.ToLower(id)] = ip
}

// Listed is what the newest list the observer holds says of one endpoint
// of a resource group, when Azure answered that list without error and it
// was asked of Azure after since; it never asks Azure anything. scope is
// ResourceGroup's: only lists made with the same credential in the same
// subscription answer. started is when the list was asked of Azure. ok is
// false when no such list holds the endpoint, and when Learn has told the
// observer something of it since (that overlay is not Azure's list, and
// carries no etag).
//
// The AzurePrivateEndpoint controller's drift check of an endpoint the
// wiring lists anyway (the management cluster's beyond its AzureCluster,
// in the management cluster's subscription) reads it again only when
// such a list shows it changed (its etag, states or interfaces): at N =
// 3,000, 2,000 endpoints read once per --private-endpoint-drift-interval
// were 11,400 reads an hour beside the wiring's own 360
// (docs/benchmarks.md, *Drift checks from the wiring's list*).
func (o *Observer) Listed(scope, resourceGroup, name string, since time.Time) (ob Observation, started time.Time, ok bool) {
	scope, rg, name := strings.ToLower(scope), strings.ToLower(resourceGroup), strings.ToLower(name)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, k := range []string{scope + "|*", scope + "|" + rg} {
		l := o.lists[k]
		if l == nil || !l.started.After(since) || (ok && !l.started.After(started)) {
			continue
		}
		select {
		case <-l.done:
		default:
			continue // in flight
		}
		if l.err != nil {
			continue
		}
		if _, learned := l.learned[rg][name]; learned {
			continue
		}
		if got, has := l.obs[rg][name]; has {
			ob, started, ok = got, l.started, true
		}
	}
	return ob, started, ok
}

func (o *Observer) cachedNICIP(id string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.nicIPs[strings.ToLower(id)]
}

func wait(ctx context.Context, l *listing) (*listing, error) {
	select {
	case <-l.done:
		return l, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Answered says, for each list the observer holds (by its key,
// "<credential>|<subscription>|<resource group or *>"), when Azure
// answered it on the observer's clock; the zero time while it is asked.
// It tells how old what the operator believes is.
func (o *Observer) Answered() map[string]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]time.Time, len(o.lists))
	for k, l := range o.lists {
		select {
		case <-l.done:
			out[k] = l.at
		default:
			out[k] = time.Time{}
		}
	}
	return out
}

// Now is the time on the observer's clock, the clock of ResourceGroup's
// notBefore.
func (o *Observer) Now() time.Time {
	return o.now()
}

func (o *Observer) now() time.Time {
	if o.Clock != nil {
		return o.Clock.Now()
	}
	return time.Now()
}

// ttlOf is how long l answers callers: TTL, or TTLPer1000 per 1,000
// endpoints it holds when that is longer.
func (o *Observer) ttlOf(l *listing) time.Duration {
	ttl := o.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	if scaled := time.Duration(int64(o.TTLPer1000) * int64(l.n) / 1000); scaled > ttl {
		return scaled
	}
	return ttl
}

// SDK adapts armnetwork clients to API.
type SDK struct {
	Endpoints  *armnetwork.PrivateEndpointsClient
	Interfaces *armnetwork.InterfacesClient
	// Lister, when set, makes the lists (WithLister).
	Lister *Lister
}

// NewSDK returns the API of a client factory.
func NewSDK(f *armnetwork.ClientFactory) SDK {
	return SDK{Endpoints: f.NewPrivateEndpointsClient(), Interfaces: f.NewInterfacesClient()}
}

// WithLister makes the lists with l, which decodes only what Observe reads
// (nil: the SDK's pagers).
func (s SDK) WithLister(l *Lister) SDK {
	s.Lister = l
	return s
}

// ListPrivateEndpoints implements API with one paged list.
func (s SDK) ListPrivateEndpoints(ctx context.Context, resourceGroup string) ([]*armnetwork.PrivateEndpoint, error) {
	if s.Lister != nil {
		return s.Lister.ResourceGroupEndpoints(ctx, resourceGroup)
	}
	return all(ctx, s.Endpoints.NewListPager(resourceGroup, nil), func(p armnetwork.PrivateEndpointsClientListResponse) []*armnetwork.PrivateEndpoint {
		return p.Value
	})
}

// PrivateEndpoint implements API with one GET.
func (s SDK) PrivateEndpoint(ctx context.Context, resourceGroup, name string) (*armnetwork.PrivateEndpoint, error) {
	got, err := s.Endpoints.Get(ctx, resourceGroup, name, nil)
	if err != nil {
		return nil, err
	}
	return &got.PrivateEndpoint, nil
}

// ListSubscriptionPrivateEndpoints implements API with one paged list.
func (s SDK) ListSubscriptionPrivateEndpoints(ctx context.Context) ([]*armnetwork.PrivateEndpoint, error) {
	if s.Lister != nil {
		return s.Lister.SubscriptionEndpoints(ctx)
	}
	return all(ctx, s.Endpoints.NewListBySubscriptionPager(nil), func(p armnetwork.PrivateEndpointsClientListBySubscriptionResponse) []*armnetwork.PrivateEndpoint {
		return p.Value
	})
}

// all follows every page of a pager.
func all[P any](ctx context.Context, pager *runtime.Pager[P], items func(P) []*armnetwork.PrivateEndpoint) ([]*armnetwork.PrivateEndpoint, error) {
	var out []*armnetwork.PrivateEndpoint
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
}

// InterfaceIP implements API with one GET.
func (s SDK) InterfaceIP(ctx context.Context, nicID string) (string, error) {
	rg, name, ok := splitID(nicID)
	if !ok {
		return "", nil
	}
	nic, err := s.Interfaces.Get(ctx, rg, name, nil)
	if err != nil {
		return "", err
	}
	if nic.Properties == nil {
		return "", nil
	}
	for _, ipc := range nic.Properties.IPConfigurations {
		if ipc != nil && ipc.Properties != nil && ipc.Properties.PrivateIPAddress != nil {
			return *ipc.Properties.PrivateIPAddress, nil
		}
	}
	return "", nil
}

// splitID returns the resource group and name of a resource ID.
// subscriptionOfID is the lower-case subscription of a resource ID.
func subscriptionOfID(id string) string {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	if len(segs) < 2 || !strings.EqualFold(segs[0], "subscriptions") {
		return ""
	}
	return strings.ToLower(segs[1])
}

func splitID(id string) (string, string, bool) {
	segs := strings.Split(strings.Trim(id, "/"), "/")
	var rg string
	for i := 0; i+1 < len(segs); i++ {
		if strings.EqualFold(segs[i], "resourceGroups") {
			rg = segs[i+1]
		}
	}
	if rg == "" || len(segs) == 0 {
		return "", "", false
	}
	return rg, segs[len(segs)-1], true
}

// stale says that learned describes the endpoint had before: Pending,
// while had (the same endpoint: same NIC) is Approved.
func stale(had, learned Observation) bool {
	return had.ConnectionState == StateApproved && learned.ConnectionState == StatePending &&
		len(had.NICIDs) > 0 && len(learned.NICIDs) > 0 && strings.EqualFold(had.NICIDs[0], learned.NICIDs[0])
}
