package wiringdns

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"text/template"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
)

// DNS mode (--wiring-dns): the operator writes the Private DNS records the
// IP annotations feed (docs/design.md, *DNS for the wiring*). This file is
// the pure part: which zone, link and records each side needs.

// DNSNames are the fields the DNS templates may use. BaseDomain is the
// base domain of the cluster whose names they are: the WC's for its API,
// the MC's for its ingress.
type DNSNames struct {
	Cluster, Namespace, ManagementCluster, BaseDomain string
}

// DNSSet is the DNS one side of a WC's wiring needs.
type DNSSet struct {
	Side clusterlink.DNSSide
	// Zone lives in Holder's subscription and resource group, written with
	// Holder's identity.
	Zone   dns.Zone
	Holder *capz.AzureCluster
	// VNet is the network the zone is linked to ("" while CAPZ has not
	// written the subnet IDs: nothing is created yet).
	VNet    string
	Records []string
	// IP is the address the records hold; "" removes the operator's
	// records (not approved, healing, or no endpoint any more).
	IP string
	// Refused: the names are another cluster's (WCSideConflict); the
	// records this cluster wrote there are removed, nothing is written.
	Refused bool
	// Identity writes the zone instead of Holder's (central DNS); nil:
	// Holder's.
	Identity *capz.ObjectRef
	// Owner is the WC ("namespace/name"); its kind-qualified value
	// (owner) marks the records, and the zone and link unless the zone is
	// shared.
	Owner string
}

// owner is whom the set's zone, link and records are marked for: the
// workload cluster's AzureCluster, kind-qualified.
func (s DNSSet) owner() dns.Owner {
	ns, name, _ := strings.Cut(s.Owner, "/")
	return dns.Owner{Kind: dns.KindAzureCluster, Namespace: ns, Name: name}
}

// write is what a pass does with the set's side (clusterlink.DNSPass).
func (s DNSSet) write() clusterlink.DNSWrite {
	return clusterlink.DNSWrite{Side: s.Side, IP: s.IP, Refused: s.Refused}
}

func writesOf(sets []DNSSet) []clusterlink.DNSWrite {
	out := make([]clusterlink.DNSWrite, 0, len(sets))
	for _, s := range sets {
		out = append(out, s.write())
	}
	return out
}

// key is a cluster's namespace/name.
func key(ac *capz.AzureCluster) string { return ac.Namespace + "/" + ac.Name }

// Fingerprint is what the set's DNS depends on: an unchanged fingerprint
// is not read again before the check interval.
func (s DNSSet) Fingerprint(ttl int64) string {
	return fmt.Sprintf("%s|%s|%s|%s|%d", s.Zone.ID(), s.VNet, strings.Join(s.Records, ","), s.IP, ttl)
}

// DesiredDNS returns the DNS sets of a WC: the MC side when the MC has
// endpoints to the WC (toWC), the WC side when the WC has endpoints to the
// MC (toMC). A side without endpoints gets a set without IP only when the
// operator may have written its records before (hadDNS), so they go. ann
// are the WC's IP annotations as the operator writes them now, and prefix
// names an annotation key.
//
// public are the domains of public clusters named like wc that came first
// (PublicNamesakes): in the MC's network they are reserved as the MC's own
// domain is.
func DesiredDNS(mc, wc *capz.AzureCluster, cfg clusterlink.DNSConfig, toWC, toMC []clusterlink.Endpoint, ann map[string]string, prefix func(string) string, hadDNS bool, public ...string) ([]DNSSet, []clusterlink.Problem) {
	var out []DNSSet
	var problems []clusterlink.Problem
	for _, side := range []struct {
		side      clusterlink.DNSSide
		eps       []clusterlink.Endpoint
		holder    *capz.AzureCluster
		namesOf   *capz.AzureCluster // whose base domain
		zoneTmpl  string
		records   []string
		annotated string
	}{
		{clusterlink.DNSSideMC, toWC, mc, wc, cfg.MCZone, cfg.MCRecords, prefix(clusterlink.AnnotationAPIServerIP)},
		{clusterlink.DNSSideWC, toMC, wc, mc, cfg.WCZone, cfg.WCRecords, prefix(clusterlink.AnnotationMCIngressIP)},
	} {
		if len(side.eps) == 0 && !hadDNS {
			continue
		}
		zoneName, records, problem := sideNames(mc, wc, side.namesOf, side.side, side.zoneTmpl, side.records, cfg, prefix)
		if problem == nil && side.side == clusterlink.DNSSideMC {
			problem = shadowsPublic(wc, zoneName, records, side.zoneTmpl, public)
		}
		reserved := problem != nil && problem.Reason == ReasonDNSNameReserved
		if problem != nil {
			problems = append(problems, *problem)
			if !reserved || !hadDNS {
				continue
			}
		}
		set := DNSSet{
			Side: side.side, Holder: side.holder, Records: records, Owner: key(wc),
			Zone: dns.Zone{Subscription: side.holder.SubscriptionID, ResourceGroup: side.holder.ResourceGroup, Name: zoneName,
				Shared: !strings.Contains(side.zoneTmpl, ".Cluster")},
		}
		if side.side == clusterlink.DNSSideMC {
			set.Zone.Subscription = or(cfg.MCZoneSubscription, set.Zone.Subscription)
			set.Zone.ResourceGroup = or(cfg.MCZoneResourceGroup, set.Zone.ResourceGroup)
			set.Identity = cfg.MCZoneIdentity
		}
		if len(side.eps) > 0 {
			set.IP = ann[side.annotated]
			set.VNet = vnetOf(side.holder, side.eps[0].Subnet)
		}
		if reserved {
			// Records an earlier release wrote under the MC's domain go.
			set.IP, set.Refused = "", true
		}
		out = append(out, set)
	}
	return out, problems
}

// sideNames derives one side's zone and record names, or the problem that
// keeps them from being written. namesOf is the cluster whose base domain
// the names take: its <prefix>/base-domain annotation overrides the
// configured one, a workload cluster's only within the allow-list (its
// MC-side zone sits in the management cluster's network). Every zone name
// passes the guard.
func sideNames(mc, wc, namesOf *capz.AzureCluster, side clusterlink.DNSSide, zoneTmpl string, recordTmpls []string, cfg clusterlink.DNSConfig, prefix func(string) string) (string, []string, *clusterlink.Problem) {
	names := DNSNames{Cluster: wc.Name, Namespace: wc.Namespace, ManagementCluster: mc.Name, BaseDomain: cfg.BaseDomain}
	if bd := namesOf.Annotations[prefix(clusterlink.BaseDomainAnnotation)]; bd != "" {
		if namesOf == wc && !dnsguard.Under(bd, cfg.AllowedBaseDomains) {
			return "", nil, &clusterlink.Problem{Cluster: key(wc), Reason: ReasonDNSNameRefused, Message: fmt.Sprintf(
				"the annotation %s=%q names a zone in the management cluster's network but is not under a base domain the operator allows (--wiring-dns-allowed-base-domains): no %s-side DNS is written for it",
				prefix(clusterlink.BaseDomainAnnotation), bd, side)}
		}
		names.BaseDomain = bd
	}
	zoneName, err := render(zoneTmpl, names)
	var records []string
	for _, t := range recordTmpls {
		r, rerr := render(t, names)
		if rerr != nil && err == nil {
			err = rerr
		}
		records = append(records, r)
	}
	if err == nil {
		err = validateDNSNames(zoneName, records)
	}
	if err != nil {
		return "", nil, &clusterlink.Problem{Cluster: key(wc), Reason: ReasonInvalidDNS, Message: fmt.Sprintf("the %s-side DNS names cannot be built: %v", side, err)}
	}
	if err := cfg.Guard.Check(zoneName); err != nil {
		return "", nil, &clusterlink.Problem{Cluster: key(wc), Reason: ReasonDNSNameRefused, Message: fmt.Sprintf("the %s-side zone is refused: %v", side, err)}
	}
	if side == clusterlink.DNSSideMC {
		if p := reservedName(wc, zoneName, records, zoneTmpl, mcDomain(mc, cfg, prefix), "the management cluster's own domain, which is reserved in its network"); p != nil {
			return zoneName, records, p
		}
	}
	return zoneName, records, nil
}

// shadowsPublic is the problem of MC-side names that would shadow one of
// public, the domains of public namesakes that came first. The message
// names the domain, which is the cluster's own name, never the other
// cluster's namespace.
func shadowsPublic(wc *capz.AzureCluster, zone string, records []string, zoneTmpl string, public []string) *clusterlink.Problem {
	for _, d := range public {
		if p := reservedName(wc, zone, records, zoneTmpl, d, "the domain of a public cluster of the same name that came first, whose public names would stop resolving in the management cluster's network"); p != nil {
			return p
		}
	}
	return nil
}

// reservedName is the DNSNameReserved problem of MC-side names that
// would shadow reserved (inReserved), which what describes; nil when
// they do not.
func reservedName(wc *capz.AzureCluster, zone string, records []string, zoneTmpl, reserved, what string) *clusterlink.Problem {
	name := inReserved(zone, records, !strings.Contains(zoneTmpl, ".Cluster"), reserved)
	if name == "" {
		return nil
	}
	return &clusterlink.Problem{Cluster: key(wc), Reason: ReasonDNSNameReserved, Message: fmt.Sprintf(
		"the mc-side name %s would shadow %s, %s: no mc-side DNS is written for this cluster; rename the cluster, or use an mc-side zone template that cannot give this name (--wiring-dns-mc-zone)",
		name, reserved, what)}
}

// mcDomain is the management cluster's own domain, <mc>.<its base domain>
// (its base-domain annotation, else the configured one): the names its
// ingress, OIDC issuer and the rest live under. In the MC's network it is
// reserved: no workload cluster's MC-side zone or record may equal it, sit
// under it, or (a zone of its own) sit above it. "" without a base domain.
func mcDomain(mc *capz.AzureCluster, cfg clusterlink.DNSConfig, prefix func(string) string) string {
	base := cfg.BaseDomain
	if bd := mc.Annotations[prefix(clusterlink.BaseDomainAnnotation)]; bd != "" {
		base = bd
	}
	base = strings.ToLower(strings.TrimSuffix(base, "."))
	if base == "" {
		return ""
	}
	return strings.ToLower(mc.Name) + "." + base
}

// inReserved returns the first of a set's names that shadows reserved: a
// zone of one cluster's own that equals it, is under it or above it (a
// zone answers for every name below it in the networks it is linked to);
// a shared zone under or equal to it; a record at or under it. "" when
// none does. A shared zone above it (the base domain) is the layout's
// choice, documented in docs/dns.md.
func inReserved(zone string, records []string, shared bool, reserved string) string {
	if reserved == "" {
		return ""
	}
	under := func(n string) bool { return n == reserved || strings.HasSuffix(n, "."+reserved) }
	if under(zone) || !shared && strings.HasSuffix(reserved, "."+zone) {
		return zone
	}
	for _, fqdn := range dns.FQDNs(records, zone) {
		if under(strings.ToLower(fqdn)) {
			return fqdn
		}
	}
	return ""
}

// vnetOf is the ID of the network of a cluster's subnet, from the subnet ID
// CAPZ writes back into spec ("" until it has).
func vnetOf(ac *capz.AzureCluster, subnet string) string {
	for _, s := range ac.Subnets {
		if s.Name == subnet {
			if i := strings.Index(strings.ToLower(s.ID), "/subnets/"); i > 0 {
				return s.ID[:i]
			}
		}
	}
	return ""
}

func render(tmpl string, names DNSNames) (string, error) {
	t, err := parsed(tmpl)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, names); err != nil {
		return "", err
	}
	return strings.ToLower(strings.TrimSuffix(b.String(), ".")), nil
}

// parsed is tmpl parsed, once per process: the templates are the flags'
// (a handful), and parsing them at every render was 1–3 % of the
// operator's CPU in DNS mode (test/scale --wiring-dns --n=1000
// --profile-dir). A parsed template may be executed concurrently (package
// text/template). A template that does not parse is not kept.
func parsed(tmpl string) (*template.Template, error) {
	if t, ok := templates.Load(tmpl); ok {
		return t.(*template.Template), nil //nolint:forcetypeassert // only *template.Template is stored
	}
	t, err := template.New("dns").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return nil, err
	}
	templates.Store(tmpl, t)
	return t, nil
}

// templates are parsed's, by text.
var templates sync.Map

// ParseDNSTemplates checks the templates at start, so that a typo is a
// flag error, not an Event on every cluster.
func ParseDNSTemplates(templates ...string) error {
	for _, t := range templates {
		if _, err := render(t, DNSNames{Cluster: "c", Namespace: "n", ManagementCluster: "m", BaseDomain: "example.com"}); err != nil {
			return fmt.Errorf("template %q: %w", t, err)
		}
	}
	return nil
}

// validateDNSNames checks what Azure would refuse: a zone of fewer than two
// labels (or an empty label, say from an unset base domain), a label that
// is not letters, digits, hyphens and underscores (names come in part from
// tenants: a cluster's name, namespace and annotations), a record name
// with an empty or malformed label ("*" and "@" are names of their own).
func validateDNSNames(zone string, records []string) error {
	labels := strings.Split(zone, ".")
	if len(labels) < 2 || len(zone) > 253 {
		return fmt.Errorf("zone %q needs two labels or more (is --wiring-dns-base-domain set?)", zone)
	}
	for _, l := range labels {
		if !dnsLabel.MatchString(l) {
			return fmt.Errorf("zone %q has an empty, too long or malformed label %q (letters, digits, '-' and '_'; is --wiring-dns-base-domain set?)", zone, l)
		}
	}
	for _, r := range records {
		if r == "@" {
			continue
		}
		for l := range strings.SplitSeq(r, ".") {
			if l != "*" && !dnsLabel.MatchString(l) {
				return fmt.Errorf("record %q has an empty, too long or malformed label %q", r, l)
			}
		}
	}
	return nil
}

// dnsLabel is one label of a Private DNS name (names are lower-cased
// before they are checked).
var dnsLabel = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$`)

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
