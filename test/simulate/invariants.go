package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
)

// The invariants the checker holds every snapshot to (docs/design.md,
// "Shared names have one owner"; docs/reliability.md, "The simulation").
const (
	// InvEntryRetargeted: an MC entry name (shared by every tenant) kept
	// its name but changed the service it connects to while the cluster
	// holding it still existed.
	InvEntryRetargeted = "MC entry re-targeted"
	// InvEndpointRetargeted: an Azure private endpoint changed the service
	// it connects to.
	InvEndpointRetargeted = "Azure endpoint re-targeted"
	// InvForeignAddress: a published address (annotation or record) is
	// held by an endpoint that connects to another cluster's service.
	InvForeignAddress = "address of another owner published"
	// InvGoneAddress: a published address is held by no endpoint at all
	// (its endpoint was deleted before it was unpublished; Azure hands the
	// address to the next endpoint in the subnet).
	InvGoneAddress = "address of no endpoint published"
	// InvUnapprovedAddress: a published address is held by the owner's
	// endpoint whose connection is not Approved, beyond the grace an
	// out-of-band change gives the operator to notice.
	InvUnapprovedAddress = "address of an unapproved endpoint published"
	// InvRecordRetargeted: a name in the MC's network kept resolving but
	// moved from one cluster to another while the first still existed.
	InvRecordRetargeted = "record re-targeted to another owner"
	// InvShadow: a name the platform owns (the MC's own domain) resolves
	// through a private zone in the MC's network.
	InvShadow = "platform name shadowed in the MC's network"
	// InvPublicShadowed: a public cluster's API name resolves from the MC's
	// network through a private zone, though no private cluster of its
	// name came before it (docs/dns.md, "A public cluster's domain is its
	// own").
	InvPublicShadowed = "public cluster's name shadowed in the MC's network"
	// InvPersonsEditChanged: an annotation or label a person put on an
	// AzureCluster (a workload cluster's or the MC's) was changed or
	// removed: the operator writes only the fields it owns.
	InvPersonsEditChanged = "a person's annotation or label changed"
	// InvServiceOverfilled: more clusters hold an entry to one of the MC's
	// ingress services than --mc-service-connection-limit (serviceLimit
	// in the simulation, so that histories fill services and the operator
	// makes further ones across restarts: docs/operations.md, "Ingress
	// services beyond the first").
	InvServiceOverfilled = "MC ingress service over the connection limit"
	// InvClusterMoved: a cluster's ingress entry connected to one of the
	// MC's ingress services, then to another, while the cluster existed.
	InvClusterMoved = "cluster moved to another ingress service"
	// InvPlacedTwice: one MC endpoint name is both an entry in the MC's
	// AzureCluster and an AzurePrivateEndpoint beyond it: one of them would
	// ask Azure for an endpoint the other has (docs/operations.md,
	// "Endpoints beyond the management cluster's AzureCluster").
	InvPlacedTwice = "MC endpoint both an entry and an object"
	// InvNetworkOverfilled: a network of --mc-endpoint-subnets holds more
	// of the MC's endpoints than --mc-endpoint-network-limit
	// (networkLimit in the simulation, so that histories fill networks
	// across restarts).
	InvNetworkOverfilled = "MC endpoint network over its limit"
	// InvDeletionStuck: a deleted cluster was not gone in time.
	InvDeletionStuck = "deletion did not complete"
	// InvLeftover: something the operator made is in Azure after every
	// workload cluster was deleted.
	InvLeftover = "left in Azure after every cluster was deleted"
	// InvLimitRefused: Azure refused a Private DNS zone, link or record set for a
	// limit the operator counts before it asks (the MC network's zones
	// are lowered to zoneLimit in the simulation, and the operator's
	// --wiring-dns-zone-limit with them, so that histories with restarts
	// reach it).
	InvLimitRefused = "refused by a Private DNS limit the operator counts"
	// InvThrottled: Azure answered the operator 429.
	InvThrottled = "operator throttled (429)"
	// InvPanic: the operator panicked.
	InvPanic = "operator panicked"
)

// cluster is one workload cluster as a snapshot sees it.
type cluster struct {
	// Key is namespace/name.
	Key, Name string
	// Scope is "/subscriptions/<sub>/resourcegroups/<rg>/", lower case:
	// every Azure resource of the cluster sits under it.
	Scope    string
	VNetID   string
	Deleting bool
	// APIIP and IngressIP are the operator's annotations.
	APIIP, IngressIP string
	// IngressService is the service, lower case, its entry to the MC's
	// ingress connects to ("" without one).
	IngressService string
	// Public: its API server load balancer is not Internal. Created is
	// its creation time (seconds, as the API server keeps it).
	Public  bool
	Created time.Time
	// PersonNote and PersonLabel are what a person put on the cluster
	// (personNote, personLabel), "" when absent.
	PersonNote, PersonLabel string
}

// snapshot is one look at the world from outside, in the order that
// keeps a correct operator free of false alarms: DNS first, then Azure's
// endpoints, then the API server (whatever is published after it is
// backed, and whatever is withdrawn is withdrawn before it is deleted).
type snapshot struct {
	At time.Time
	// MCResolve are the answers for names asked from the MC's network;
	// WCResolve those asked from each workload cluster's (by key).
	MCResolve map[string]azuresim.Resolution
	WCResolve map[string]azuresim.Resolution
	Endpoints []azuresim.EndpointInfo
	Clusters  []cluster
	// MCEntries are the MC's private endpoint entries: name → the service
	// their first connection names, lower case.
	MCEntries map[string]string
	// MCPlaced are the MC's endpoints beyond its AzureCluster: name →
	// the subnet of their AzurePrivateEndpoint, lower case.
	MCPlaced map[string]string
	// MCPersonNote and MCPersonLabel are what a person put on the MC.
	MCPersonNote, MCPersonLabel string
	// AppResolve are the answers for the tenants' record names asked from
	// each tenant's application network ("<namespace> <name>"); APEs the
	// tenants' AzurePrivateEndpoints; Published the ConfigMaps of their
	// namespaces that carry an address.
	AppResolve map[string]azuresim.Resolution
	APEs       []endpointObject
	Published  []publishedMap
}

// worldNames are the fixed names of the simulated world.
type worldNames struct {
	// MCScope is the MC's resource group scope, lower case.
	MCScope string
	// IngressPLS is the MC's first ingress private link service, lower
	// case; IngressServices are it and the further ones.
	IngressPLS      string
	IngressServices []string
	// ServiceLimit is the operator's --mc-service-connection-limit.
	ServiceLimit int
	// PlacedNetworks are the networks of --mc-endpoint-subnets, lower
	// case; NetworkLimit is --mc-endpoint-network-limit.
	PlacedNetworks []string
	NetworkLimit   int
	// MCNames are names only the platform may answer in the MC's network.
	MCNames []string
	// APIName is the MC-side name of a workload cluster's API server.
	APIName func(cluster string) string
	// IngressName is a name of the MC's ingress asked from a workload
	// cluster's network.
	IngressName string
}

// violation is one breach of an invariant.
type violation struct {
	At        time.Duration `json:"at"`
	Invariant string        `json:"invariant"`
	Subject   string        `json:"subject"`
	Detail    string        `json:"detail"`
}

func (v violation) String() string {
	return fmt.Sprintf("%7.1fs %s: %s (%s)", v.At.Seconds(), v.Invariant, v.Subject, v.Detail)
}

// checker holds each snapshot to the invariants. A breach counts once it
// is seen in two snapshots in a row (the reads of one snapshot are not
// atomic) and, where an out-of-band change excuses it, after the grace;
// it counts once per episode.
type checker struct {
	names worldNames
	start time.Time
	// grace is how long an out-of-band change (a connection removed or
	// rejected by the service's owner, a service deleted by CAPZ) excuses
	// an unapproved published address: the operator sees it at its next
	// drift check.
	grace time.Duration
	// excused are cluster keys and until when.
	excused map[string]time.Time

	checks     int
	entryOwner map[string]string // MC entry name → service
	epTarget   map[string]string // endpoint ID → service
	nameOwner  map[string]string // MC-side name → cluster key
	ingressOf  map[string]string // cluster key → the ingress service its entry connects to
	// appRecordOwner: a tenant's record ("<namespace> <name>") → the key
	// of the endpoint object it resolves for.
	appRecordOwner map[string]string
	// objectAddresses counts the addresses of endpoint objects checked.
	objectAddresses int
	// servicesUsed are the MC's ingress services a cluster's entry
	// connected to; placedMax is the most MC endpoints seen beyond the
	// MC's AzureCluster at once.
	servicesUsed map[string]bool
	placedMax    int
	open         map[string]*episode
	found        []violation
}

type episode struct {
	first     time.Time
	lastCheck int
	reported  bool
}

func newChecker(names worldNames, start time.Time, grace time.Duration) *checker {
	return &checker{
		names: names, start: start, grace: grace, excused: map[string]time.Time{},
		entryOwner: map[string]string{}, epTarget: map[string]string{}, nameOwner: map[string]string{}, open: map[string]*episode{},
		ingressOf: map[string]string{}, servicesUsed: map[string]bool{},
		appRecordOwner: map[string]string{},
	}
}

// excuse gives cluster key the grace from at.
func (k *checker) excuse(key string, at time.Time) {
	if until := at.Add(k.grace); until.After(k.excused[key]) {
		k.excused[key] = until
	}
}

func (k *checker) isExcused(key string, at time.Time) bool {
	return !at.After(k.excused[key])
}

// look is one check of one snapshot in progress.
type look struct {
	k       *checker
	s       snapshot
	seen    map[string]bool
	byScope map[string]cluster
	// holders are the endpoints by address.
	holders map[string][]azuresim.EndpointInfo
}

// check holds one snapshot to the invariants and returns the breaches it
// newly counts.
func (k *checker) check(s snapshot) []violation {
	k.checks++
	before := len(k.found)
	l := &look{k: k, s: s, seen: map[string]bool{}, byScope: map[string]cluster{}, holders: map[string][]azuresim.EndpointInfo{}}
	for _, c := range s.Clusters {
		l.byScope[c.Scope] = c
	}
	l.endpoints()
	for _, c := range s.Clusters {
		l.published(c)
	}
	l.endpointObjects()
	for _, name := range sortedKeys(s.MCResolve) {
		l.mcName(name, s.MCResolve[name])
	}
	for _, c := range s.Clusters {
		l.publicName(c)
	}
	l.entries()
	l.placed()
	l.ingressServices()
	for _, c := range s.Clusters {
		l.personsEdits(c.Key, c.PersonNote, c.PersonLabel)
	}
	l.personsEdits(mcKey, s.MCPersonNote, s.MCPersonLabel)
	for id := range k.open {
		if !l.seen[id] {
			delete(k.open, id)
		}
	}
	return k.found[before:]
}

// flag notes a breach in this look; it counts once seen in two looks in a
// row, and, when excusable, after the owner's grace.
func (l *look) flag(inv, subject, detail string, excusable bool, owner string) {
	k, at := l.k, l.s.At
	id := inv + "|" + subject
	l.seen[id] = true
	ep := k.open[id]
	if ep == nil || ep.lastCheck != k.checks-1 {
		ep = &episode{first: at}
		k.open[id] = ep
	}
	ep.lastCheck = k.checks
	if ep.reported || ep.first.Equal(at) {
		return
	}
	if excusable && owner != "" && k.isExcused(owner, at) {
		return
	}
	ep.reported = true
	k.found = append(k.found, violation{At: at.Sub(k.start), Invariant: inv, Subject: subject, Detail: detail})
}

// ownerOf is the cluster whose resource group holds a service.
func (l *look) ownerOf(pls string) (cluster, bool) {
	for scope, c := range l.byScope {
		if strings.HasPrefix(pls, scope) {
			return c, true
		}
	}
	return cluster{}, false
}

// endpoints indexes the endpoints by address and holds each to its
// service.
func (l *look) endpoints() {
	present := map[string]bool{}
	for _, e := range l.s.Endpoints {
		id, target := strings.ToLower(e.ID), strings.ToLower(e.PrivateLinkService)
		present[id] = true
		if was, ok := l.k.epTarget[id]; ok && was != target {
			l.flag(InvEndpointRetargeted, e.ID, "from "+was+" to "+target, false, "")
		} else {
			l.k.epTarget[id] = target
		}
		if e.IP != "" {
			l.holders[e.IP] = append(l.holders[e.IP], e)
		}
	}
	for id := range l.k.epTarget {
		if !present[id] {
			delete(l.k.epTarget, id)
		}
	}
}

// address checks that ip, published for cluster c, is held by an
// Approved endpoint under scope that connects to a service want accepts.
func (l *look) address(what, ip, scope string, c cluster, want func(pls string) bool) {
	subject := c.Key + " " + what + " " + ip
	var mine *azuresim.EndpointInfo
	for _, e := range l.holders[ip] {
		if !strings.HasPrefix(strings.ToLower(e.ID), scope) {
			continue
		}
		if !want(strings.ToLower(e.PrivateLinkService)) {
			l.flag(InvForeignAddress, subject, "held by "+e.Name+", which connects to "+e.PrivateLinkService, false, "")
			return
		}
		mine = &e
	}
	switch {
	case mine == nil:
		l.flag(InvGoneAddress, subject, "no endpoint in "+scope+" holds it", false, "")
	case mine.ConnectionState != azuresim.ConnectionApproved:
		l.flag(InvUnapprovedAddress, subject, mine.Name+" is "+mine.ConnectionState, true, c.Key)
	}
}

// published checks what a live cluster publishes: its annotations and
// the records its network resolves the MC's ingress names with.
func (l *look) published(c cluster) {
	if c.Deleting {
		return // its annotations go with it
	}
	n := l.k.names
	toOwn := func(pls string) bool { return strings.HasPrefix(pls, c.Scope) }
	toIngress := func(pls string) bool { return slices.Contains(n.IngressServices, pls) }
	if c.APIIP != "" {
		l.address("api annotation", c.APIIP, n.MCScope, c, toOwn)
	}
	if c.IngressIP != "" {
		l.address("ingress annotation", c.IngressIP, c.Scope, c, toIngress)
	}
	if r, ok := l.s.WCResolve[c.Key]; ok && r.Status == azuresim.ResolveOK {
		for _, ip := range r.Addresses {
			l.address("record "+r.Name, ip, c.Scope, c, toIngress)
		}
	}
}

// mcName checks one name asked from the MC's network: the MC's own names
// answer from no private zone; a cluster's API name resolves to an
// Approved endpoint to a service of a cluster of that name, and does not
// move to another cluster while the first exists.
func (l *look) mcName(name string, r azuresim.Resolution) {
	k := l.k
	if slices.Contains(k.names.MCNames, name) && r.Status != azuresim.ResolveNotPrivate {
		l.flag(InvShadow, name, "answered "+r.Status+" by zone "+r.Zone, false, "")
	}
	if r.Status != azuresim.ResolveOK {
		delete(k.nameOwner, name)
		return
	}
	for _, ip := range r.Addresses {
		owner, ok := l.recordOwner(name, ip)
		if !ok {
			continue
		}
		l.address("record "+name, ip, k.names.MCScope, owner, func(pls string) bool { return strings.HasPrefix(pls, owner.Scope) })
		if was, ok := k.nameOwner[name]; ok && was != owner.Key && clusterExists(l.s, was) {
			// The first owner stays recorded while it exists: the breach
			// lasts as long as the name points elsewhere.
			l.flag(InvRecordRetargeted, name, "from "+was+" to "+owner.Key, false, "")
			continue
		}
		k.nameOwner[name] = owner.Key
	}
}

// publicName checks that a public cluster's API name is answered from no
// private zone in the MC's network, unless a private cluster of its name
// came first (created earlier; in the same second, first by key): that
// one holds the name.
func (l *look) publicName(c cluster) {
	if !c.Public || c.Deleting {
		return
	}
	name := l.k.names.APIName(c.Name)
	r, asked := l.s.MCResolve[name]
	if !asked || r.Status == azuresim.ResolveNotPrivate {
		return
	}
	for _, o := range l.s.Clusters {
		if o.Name == c.Name && !o.Public && (o.Created.Before(c.Created) || o.Created.Equal(c.Created) && o.Key < c.Key) {
			return
		}
	}
	l.flag(InvPublicShadowed, name, c.Key+"'s name answered "+r.Status+" by zone "+r.Zone, false, "")
}

// recordOwner is the cluster whose service the MC's endpoint holding ip
// connects to, when it is a cluster the name belongs to.
func (l *look) recordOwner(name, ip string) (cluster, bool) {
	hs := l.holders[ip]
	for _, e := range hs {
		if !strings.HasPrefix(strings.ToLower(e.ID), l.k.names.MCScope) {
			continue
		}
		owner, found := l.ownerOf(strings.ToLower(e.PrivateLinkService))
		switch {
		case !found:
			l.flag(InvForeignAddress, "record "+name+" "+ip, "held by "+e.Name+", which connects to no workload cluster", false, "")
		case l.k.names.APIName(owner.Name) != name:
			l.flag(InvForeignAddress, "record "+name+" "+ip, "held by the endpoint to "+owner.Key+"'s service", false, "")
		default:
			return owner, true
		}
		return cluster{}, false
	}
	if len(hs) == 0 {
		l.flag(InvGoneAddress, "record "+name+" "+ip, "no endpoint in the MC's network holds it", false, "")
	}
	return cluster{}, false
}

// entries holds the MC's entries to their first holders.
func (l *look) entries() {
	k := l.k
	for name, target := range l.s.MCEntries {
		if was, ok := k.entryOwner[name]; ok && was != target {
			if prev, ok := l.ownerOf(was); ok && clusterExists(l.s, prev.Key) {
				l.flag(InvEntryRetargeted, name, "from "+was+" to "+target, false, "")
				continue // the holder stays recorded while it exists
			}
		}
		k.entryOwner[name] = target
	}
	for name := range k.entryOwner {
		if _, ok := l.s.MCEntries[name]; !ok {
			delete(k.entryOwner, name)
		}
	}
}

// placed holds the MC's endpoints beyond its AzureCluster: no name both
// an entry and an object, and no declared network holding more of the
// MC's endpoints, in Azure, than the limit.
func (l *look) placed() {
	l.k.placedMax = max(l.k.placedMax, len(l.s.MCPlaced))
	for _, name := range sortedKeys(l.s.MCPlaced) {
		if _, ok := l.s.MCEntries[name]; ok {
			l.flag(InvPlacedTwice, name, "an entry, and an object in "+l.s.MCPlaced[name], false, "")
		}
	}
	n := l.k.names
	in := map[string][]string{}
	for _, ep := range l.s.Endpoints {
		id := strings.ToLower(ep.ID)
		if !strings.HasPrefix(id, n.MCScope) {
			continue
		}
		if net := networkOfSubnet(ep.Subnet); slices.Contains(n.PlacedNetworks, net) {
			in[net] = append(in[net], ep.Name)
		}
	}
	for _, net := range sortedKeys(in) {
		if n.NetworkLimit > 0 && len(in[net]) > n.NetworkLimit {
			slices.Sort(in[net])
			l.flag(InvNetworkOverfilled, net, fmt.Sprintf("%d endpoints (%s), the limit is %d", len(in[net]), strings.Join(in[net], ", "), n.NetworkLimit), false, "")
		}
	}
}

// networkOfSubnet is a subnet's network ID, lower case.
func networkOfSubnet(subnet string) string {
	s := strings.ToLower(subnet)
	if i := strings.LastIndex(s, "/subnets/"); i >= 0 {
		return s[:i]
	}
	return s
}

// ingressServices holds the clusters' ingress entries: no service with
// more clusters than the limit, and no cluster moved from one service to
// another while it exists.
func (l *look) ingressServices() {
	k := l.k
	count := map[string][]string{}
	present := map[string]bool{}
	for _, c := range l.s.Clusters {
		present[c.Key] = true
		if c.IngressService == "" {
			continue
		}
		count[c.IngressService] = append(count[c.IngressService], c.Key)
		k.servicesUsed[c.IngressService] = true
		if was := k.ingressOf[c.Key]; was != "" && was != c.IngressService {
			l.flag(InvClusterMoved, c.Key, "from "+was+" to "+c.IngressService, false, "")
			continue // the first service stays recorded while the cluster exists
		}
		k.ingressOf[c.Key] = c.IngressService
	}
	for key := range k.ingressOf {
		if !present[key] {
			delete(k.ingressOf, key)
		}
	}
	for _, svc := range sortedKeys(count) {
		if k.names.ServiceLimit > 0 && len(count[svc]) > k.names.ServiceLimit {
			slices.Sort(count[svc])
			l.flag(InvServiceOverfilled, svc, fmt.Sprintf("%d clusters (%s), the limit is %d", len(count[svc]),
				strings.Join(count[svc], ", "), k.names.ServiceLimit), false, "")
		}
	}
}

func clusterExists(s snapshot, key string) bool {
	for _, c := range s.Clusters {
		if c.Key == key {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// What a person puts on every AzureCluster, beside what the tenant and the
// operator write: an annotation whose value is the cluster's key and a
// label. Nothing may change or remove them.
const (
	personNote  = "ops.sim.example.com/note"
	personLabel = "ops.sim.example.com/on-call"
	// personLabelValue is the label's value.
	personLabelValue = "team-" + "platform"
	// mcKey is the MC's key in violations.
	mcKey = "the MC"
)

// personsEdits checks that a cluster still carries what a person put on it.
func (l *look) personsEdits(key, note, label string) {
	want := key
	if key == mcKey {
		want = "the management cluster"
	}
	if note != want {
		l.flag(InvPersonsEditChanged, key+" annotation "+personNote, fmt.Sprintf("%q, want %q", note, want), false, "")
	}
	if label != personLabelValue {
		l.flag(InvPersonsEditChanged, key+" label "+personLabel, fmt.Sprintf("%q, want %q", label, personLabelValue), false, "")
	}
}
