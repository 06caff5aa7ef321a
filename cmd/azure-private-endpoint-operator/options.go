package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/identityguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privateendpoint"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsengine"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/dnsguard"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/heal"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/memlimit"
)

// inClusterNamespaceFile exists in every pod that mounts a service account
// token; leader election defaults to that namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// kubeAPIUnlimited is --kube-api-qps's value for no client-side limit:
// client-go makes no rate limiter for a negative QPS, and
// controller-runtime's own configuration uses -1 for the same since
// v0.21 (kubernetes-sigs/controller-runtime#3119, on SIG API Machinery's
// advice to rely on API priority and fairness).
const kubeAPIUnlimited = -1

// options are the operator's command-line settings. docs/flags.md is
// generated from the flag set (flagSet).
type options struct {
	kubeconfig              string
	kubeAPIQPS              float64
	kubeAPIBurst            int
	memoryLimitFraction     float64
	gcPercent               int
	metricsAddr             string
	metricsSecure           bool
	metricsCertDir          string
	enableHTTP2             bool
	probeAddr               string
	pprofAddr               string
	leaderElect             bool
	leaderElectionNamespace string
	leaderElectionID        string
	leaseDuration           time.Duration
	renewDeadline           time.Duration
	retryPeriod             time.Duration
	gracefulShutdownTimeout time.Duration
	zap                     zap.Options

	mcName, mcNamespace       string
	mcLinkNames               string
	wcToMCLayout              string
	mcIngressIPSource         string
	azureClusterGates         string
	dns                       dnsFlags
	annotationPrefix          string
	mcSubnet, wcSubnet        string
	mcEndpointLimit           int
	mcEndpointSubnets         string
	mcEndpointNetworkLimit    int
	mcServiceConnectionLimit  int
	ingressShardFrontends     string
	ingressLoadBalancer       string
	ingressShardNATSubnet     string
	ingressShardSubscriptions string
	gatewayShardFrontends     string
	gatewayLoadBalancer       string
	watchFilter               string
	defaultAzureEnvironment   string
	customCloudFile           string
	customCloud               *azure.CustomCloud
	pendingRecheck            time.Duration
	driftCheck                time.Duration
	terminalRecheck           time.Duration
	mcWriteDelay              time.Duration
	mcConditionInterval       time.Duration
	maxConcurrentReconciles   int
	deleteOrphanedEndpoints   bool
	adoptFieldManagers        string
	capzFieldManagers         string
	healDisconnectedAfter     time.Duration
	healRejected              bool
	protectIdentities         bool
	publishSecrets            bool
	azureTags                 string
	crossplaneProviderConfigs bool
	secretRecheck             time.Duration
	azureObserveTTL           time.Duration
	azureObserveTTLPer1000    time.Duration

	plsController      bool
	plsDrift           time.Duration
	plsRecheck         time.Duration
	plsConcurrency     int
	plsLimit           int
	plsConnectionCheck time.Duration

	apeController      bool
	apeDrift           time.Duration
	apeRecheck         time.Duration
	apeConnectionCheck time.Duration
	apeDNSCheck        time.Duration
	apeConcurrency     int
	managePLS          bool
	operatorCredential string
	ownCredNamespaces  string

	// inCluster reports whether the process runs in a pod; a field so tests
	// can set it.
	inCluster bool
}

// dnsFlags are the flags of the wiring's DNS mode.
type dnsFlags struct {
	enabled, adopt       bool
	baseDomain           string
	mcZone, wcZone       string
	mcRecords, wcRecords string
	// The MC-side zone's place and identity (central DNS).
	mcZoneSub, mcZoneRG, mcZoneIdentity string
	zoneLimit                           int
	ttl                                 int64
	check                               time.Duration
	reads, writes                       int
	allowedBaseDomains                  string
	deniedZones                         string
}

// zoneGuard is the zone-name guard both DNS writers use.
func (o *options) zoneGuard() dnsguard.Guard { return dnsguard.New(commaList(o.dns.deniedZones)) }

// tags are --azure-tags (validate refuses a malformed value).
func (o *options) tags() map[string]string {
	t, err := azure.ParseTags(o.azureTags)
	if err != nil || len(t) == 0 {
		return nil
	}
	return t
}

// guardOptions are the identity guard's options.
func (o *options) guardOptions() identityguard.Options {
	g := identityguard.Options{
		Protect: o.protectIdentities, ManagementCluster: o.linkOptions().ManagementCluster,
		PrivateEndpoints: o.apeController, PrivateLinkServices: o.plsController,
	}
	if id := o.mcZoneIdentity(); id != nil && o.dns.enabled {
		g.WiringIdentities = []types.NamespacedName{{Namespace: id.Namespace, Name: id.Name}}
	}
	return g
}

// mcZoneIdentity is --wiring-dns-mc-zone-identity (nil when unset).
func (o *options) mcZoneIdentity() *capz.ObjectRef {
	ns, name, ok := strings.Cut(o.dns.mcZoneIdentity, "/")
	if !ok {
		return nil
	}
	return &capz.ObjectRef{Namespace: ns, Name: name}
}

// dnsEngine is the process's one Private DNS engine: one budget per
// subscription for both DNS writers, and what is in place read again at
// the shorter of their check intervals.
func (o *options) dnsEngine(reader client.Reader) *dnsengine.Engine {
	return &dnsengine.Engine{
		Budget: &privatedns.Budget{Reads: max(0, o.dns.reads), Writes: max(0, o.dns.writes)},
		Reader: reader, Check: min(o.apeDNSCheck, o.dns.check),
	}
}

// errUsage marks errors caused by the command line, which exit with code 2.
var errUsage = errors.New("invalid command line")

// plsOptions are the AzurePrivateLinkService controller's options.
func (o *options) plsOptions() privatelinkservice.Options {
	return privatelinkservice.Options{
		DriftInterval: o.plsDrift, Recheck: o.plsRecheck, TerminalRecheck: o.terminalRecheck, MaxConcurrentReconciles: o.plsConcurrency,
		ConnectionCheck: o.plsConnectionCheck, Tags: o.tags(), SubscriptionLimit: o.plsLimit,
	}
}

// apeOptions are the AzurePrivateEndpoint controller's options.
func (o *options) apeOptions() privateendpoint.Options {
	return privateendpoint.Options{
		DriftInterval: o.apeDrift, Recheck: o.apeRecheck, TerminalRecheck: o.terminalRecheck, MaxConcurrentReconciles: o.apeConcurrency,
		ConnectionCheck: o.apeConnectionCheck, DNSCheck: o.apeDNSCheck, ZoneGuard: o.zoneGuard(), PublishSecrets: o.publishSecrets, Tags: o.tags(),
		Heal: heal.Policy{DisconnectedAfter: o.healDisconnectedAfter, Rejected: o.healRejected},
	}
}

// linkOptions are the AzureCluster controllers' options from the flags.
func (o *options) linkOptions() clusterlink.Options {
	return clusterlink.Options{
		Config: clusterlink.Config{
			MCLinkNames: commaList(o.mcLinkNames), MCSubnet: o.mcSubnet, WCSubnet: o.wcSubnet, MCEndpointLimit: o.mcEndpointLimit,
			MCServiceConnectionLimit: o.mcServiceConnectionLimit,
			IngressShards: clusterlink.IngressShards{
				LoadBalancer: o.ingressLoadBalancer, Frontends: commaList(o.ingressShardFrontends), NATSubnet: o.ingressShardNATSubnet,
				Subscriptions:       commaList(o.ingressShardSubscriptions),
				GatewayLoadBalancer: o.gatewayLoadBalancer, GatewayFrontends: commaList(o.gatewayShardFrontends),
			},
			Beyond: clusterlink.Beyond{Subnets: commaList(o.mcEndpointSubnets), NetworkLimit: o.mcEndpointNetworkLimit},
			Layout: clusterlink.Layout(o.wcToMCLayout), IngressIPSource: o.ingressIPSource(),
		},
		ManagementCluster:       types.NamespacedName{Namespace: o.mcNamespace, Name: o.mcName},
		AnnotationPrefix:        o.annotationPrefix,
		WatchFilter:             o.watchFilter,
		PendingRecheck:          o.pendingRecheck,
		DriftCheck:              o.driftCheck,
		TerminalRecheck:         o.terminalRecheck,
		MCWriteDelay:            o.mcWriteDelay,
		MCConditionInterval:     offIfZero(o.mcConditionInterval),
		MaxConcurrentReconciles: o.maxConcurrentReconciles,
		DeleteOrphanedEndpoints: o.deleteOrphanedEndpoints,
		ManagedLinks:            clusterlink.ManagedLinks{PrivateLinkServices: o.plsController, ManagePrivateLinkServices: o.managePLS},
		AdoptFieldManagers:      commaList(o.adoptFieldManagers),
		CAPZFieldManagers:       commaList(o.capzFieldManagers),
		Heal:                    heal.Policy{DisconnectedAfter: offIfZero(o.healDisconnectedAfter), Rejected: o.healRejected},
		DNS: clusterlink.DNSConfig{
			Enabled: o.dns.enabled, Adopt: o.dns.adopt, BaseDomain: o.dns.baseDomain,
			MCZone: o.dns.mcZone, WCZone: o.dns.wcZone, MCRecords: commaList(o.dns.mcRecords), WCRecords: commaList(o.dns.wcRecords),
			TTL: o.dns.ttl, Check: o.dns.check, ReadsPer5m: o.dns.reads, WritesPer5m: o.dns.writes,
			AllowedBaseDomains: commaList(o.dns.allowedBaseDomains), Guard: o.zoneGuard(),
			MCZoneSubscription: o.dns.mcZoneSub, MCZoneResourceGroup: o.dns.mcZoneRG, MCZoneIdentity: o.mcZoneIdentity(), ZoneLimit: o.dns.zoneLimit,
			Tags: o.tags(),
		},
	}
}

// ingressIPSource is --mc-ingress-ip-source or its layout's default.
func (o *options) ingressIPSource() string {
	switch {
	case o.mcIngressIPSource != "":
		return o.mcIngressIPSource
	case o.wcToMCLayout == string(clusterlink.LayoutGateway):
		return clusterlink.SourceGateway
	}
	return clusterlink.SourceIngress
}

// offIfZero maps a flag's 0 ("off") to the options' negative "off" (their
// zero means the default).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// ownCredentialNamespaces lists --operator-credential-namespaces.
func (o *options) ownCredentialNamespaces() []string { return commaList(o.ownCredNamespaces) }

// commaList splits a comma-separated flag value, dropping blanks; nil for
// none.
func commaList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// clouds are the clouds clusters may name, from the flags.
func (o *options) clouds() azure.Clouds {
	c := azure.Clouds{Default: o.defaultAzureEnvironment}
	if o.customCloud != nil {
		c.Custom = []azure.CustomCloud{*o.customCloud}
	}
	return c
}

// parseFlags parses and validates args. It returns flag.ErrHelp for -h/--help
// after printing usage to out.
func parseFlags(args []string, out io.Writer) (*options, error) {
	o := &options{inCluster: fileExists(inClusterNamespaceFile)}
	fs := o.flagSet()
	fs.SetOutput(out)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q (every setting is a --flag)", errUsage, fs.Args())
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return o, nil
}

// flagSet binds every flag to o. docs/flags.md is generated from it
// (make generate), and a test keeps the two equal.
func (o *options) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("azure-private-endpoint-operator", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "",
		"Path to a kubeconfig. Only needed out of cluster; otherwise KUBECONFIG, the in-cluster config, then ~/.kube/config are used.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 100,
		"Requests per second the operator may send to the Kubernetes API server through each of its clients: one per resource type, and one per controller for its Events (client-go keeps a limit per client; the API server's priority and fairness limits them too). -1 turns the client-side limit off and leaves the pace to the API server's priority and fairness.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 200,
		"Requests the operator may send to the Kubernetes API server in a burst above --kube-api-qps, through each of its clients (unused with --kube-api-qps=-1).")
	fs.Float64Var(&o.memoryLimitFraction, "memory-limit-fraction", 0.9,
		"Fraction of the container's memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes) set as the Go runtime's soft memory limit, so the garbage collector works harder before the kernel would OOM-kill the process. 0 turns it off; GOMEMLIMIT, when set, wins; without a container limit nothing is set.")
	fs.IntVar(&o.gcPercent, "gc-percent", memlimit.DefaultGCPercent,
		"The Go garbage collector's target: a cycle starts when the heap has grown by this percentage of what the last cycle left live (the Go runtime's GOGC; Go's own default is 100). Lower keeps less memory for more CPU. GOGC, when set, wins.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443",
		"Address (host:port) the Prometheus metrics endpoint (/metrics) binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true,
		"Serve metrics over HTTPS, only to clients the API server authenticates and authorizes for GET /metrics (a TokenReview and a SubjectAccessReview per scrape, cached). false serves plain HTTP to anyone who reaches the port: for local use only.")
	fs.StringVar(&o.metricsCertDir, "metrics-cert-dir", "",
		"Directory with tls.crt and tls.key for the metrics endpoint (reloaded when they change). Default: a self-signed certificate made at start.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false,
		"Allow HTTP/2 on the metrics endpoint. Off by default: HTTP/2 Rapid Reset and stream cancellation attacks (CVE-2023-44487, CVE-2023-39325).")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081",
		"Address (host:port) the /healthz and /readyz endpoints bind to; \"0\" disables them.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "0",
		"Address (host:port) Go's profiler (/debug/pprof/) binds to, plain HTTP without authentication: bind it to localhost (e.g. localhost:6060) and reach it with kubectl port-forward. \"0\", the default, disables it.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica reconciles. Enable when running more than one replica.")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease. Default: the pod's namespace; required out of cluster.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "azure-private-endpoint-operator.giantswarm.io",
		"Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 15*time.Second,
		"How long non-leaders wait before they try to take over an unrenewed lease.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 10*time.Second,
		"How long the leader keeps retrying to renew before it gives up leadership.")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 2*time.Second,
		"How long leader election clients wait between tries.")
	fs.DurationVar(&o.gracefulShutdownTimeout, "graceful-shutdown-timeout", 30*time.Second,
		"How long running reconciles may take to finish after SIGTERM before the process exits.")
	fs.StringVar(&o.mcName, "management-cluster-name", "",
		"Name of the management cluster's AzureCluster. Required.")
	fs.StringVar(&o.mcNamespace, "management-cluster-namespace", "",
		"Namespace of the management cluster's AzureCluster. Required.")
	fs.StringVar(&o.mcLinkNames, "mc-private-link-names", "",
		"Comma-separated MC private link services workload clusters connect to: the first is the ingress link (endpoint <wc>-to-<mc>-privatelink-privateendpoint, see --wc-to-mc-layout), each further one gets an endpoint <wc>-to-<link>-privateendpoint. Default: <mc-name>-ingress-privatelink.")
	fs.StringVar(&o.wcToMCLayout, "wc-to-mc-layout", string(clusterlink.LayoutIngress),
		"Private endpoints each workload cluster gets to the management cluster: ingress (<wc>-to-<mc>-privatelink-privateendpoint to the first --mc-private-link-names link; older operator up to 0.3), ingress+gateway (and <wc>-to-<mc>-gateway-privateendpoint to <mc>-gateway-privatelink; 0.4) or gateway (the gateway one only; 0.5). Changing it switches every cluster: the earlier layout's endpoints are removed only once the new one is approved and the ingress annotation holds its IP.")
	fs.StringVar(&o.mcIngressIPSource, "mc-ingress-ip-source", "",
		"With --wc-to-mc-layout=ingress+gateway, whose IP the private-link-mc-ingress-ip annotation takes: ingress or gateway. Default: ingress, or gateway in the gateway layout.")
	fs.StringVar(&o.azureClusterGates, "azure-cluster-gates", "",
		"Comma-separated AzureCluster condition types (for example GSPrivateLinksReady,GSDNSZoneReady) that must be True before a private workload cluster's KubeadmControlPlane may run: until then the operator pauses it (cluster.x-k8s.io/paused) and later lifts only its own pause. Needs a private management cluster. Default: none (off).")
	fs.BoolVar(&o.dns.enabled, "wiring-dns", false,
		"Write the Private DNS records the IP annotations feed (what a DNS operator does from them): in the management cluster's network, each workload cluster's API name to its MC-side endpoint IP; in each workload cluster's network, the management cluster's ingress names to its WC-side endpoint IP. Sets the condition GSDNSZoneReady. Off: no DNS is read or written, and records stay with whoever owns them.")
	fs.StringVar(&o.dns.baseDomain, "wiring-dns-base-domain", "",
		"Base domain of the clusters' names in DNS mode (required with --wiring-dns); the annotation <annotation-prefix>/base-domain on the management cluster's AzureCluster overrides it for its names, and on a workload cluster's within --wiring-dns-allowed-base-domains.")
	fs.StringVar(&o.dns.mcZone, "wiring-dns-mc-zone", clusterlink.DefaultMCZoneTemplate,
		"Private DNS zone, in the management cluster's resource group and linked to its network, holding a workload cluster's API name (Go template over .Cluster, .Namespace, .ManagementCluster, .BaseDomain, the workload cluster's). A template without .Cluster makes one zone shared by every cluster; such a zone and its link are never deleted.")
	fs.StringVar(&o.dns.mcZoneSub, "wiring-dns-mc-zone-subscription", "",
		"Subscription of the MC-side zone (central DNS in a hub subscription). Default: the management cluster's.")
	fs.StringVar(&o.dns.mcZoneRG, "wiring-dns-mc-zone-resource-group", "",
		"Resource group of the MC-side zone. Default: the management cluster's.")
	fs.StringVar(&o.dns.mcZoneIdentity, "wiring-dns-mc-zone-identity", "",
		"AzureClusterIdentity (namespace/name) that writes the MC-side zone, when the management cluster's identity may not (central DNS another team owns; it must allow the management cluster's namespace). Default: the management cluster's identity.")
	fs.IntVar(&o.dns.zoneLimit, "wiring-dns-zone-limit", clusterlink.AzureZoneLimit,
		"With a zone per workload cluster (--wiring-dns-mc-zone naming .Cluster), how many MC-side zones may be in one subscription and linked to one network: Azure's limit is 1,000 of each. From 90% a Warning Event (DNSZoneLimitNear) says so; beyond it a new cluster gets no MC-side zone (Warning DNSZoneLimit) instead of Azure refusing it. Raise it only after Azure raised your limit.")
	fs.StringVar(&o.dns.mcRecords, "wiring-dns-mc-records", strings.Join(clusterlink.DefaultMCRecords, ","),
		"Comma-separated record names (templates, relative to --wiring-dns-mc-zone; @ for its apex) resolving to a workload cluster's API endpoint in the management cluster's network.")
	fs.StringVar(&o.dns.wcZone, "wiring-dns-wc-zone", clusterlink.DefaultWCZoneTemplate,
		"Private DNS zone, in each workload cluster's resource group and linked to its network, holding the management cluster's ingress names (template as --wiring-dns-mc-zone; .BaseDomain is the management cluster's).")
	fs.StringVar(&o.dns.wcRecords, "wiring-dns-wc-records", strings.Join(clusterlink.DefaultWCRecords, ","),
		"Comma-separated record names (templates, relative to --wiring-dns-wc-zone) resolving to the management cluster's ingress or gateway endpoint in a workload cluster's network.")
	fs.Int64Var(&o.dns.ttl, "wiring-dns-ttl", 300,
		"TTL in seconds of the records of DNS mode (1 to 86400).")
	fs.DurationVar(&o.dns.check, "wiring-dns-check-interval", time.Hour,
		"How often DNS mode reads again records it has written (Azure Private DNS allows 500 reads per 5 minutes per subscription); a changed IP or spec is written at once.")
	fs.IntVar(&o.dns.reads, "private-dns-max-reads-per-5m", 400,
		"The operator sends at most this many Private DNS reads per subscription in any 5 minutes, DNS mode and AzurePrivateEndpoint spec.dns together (Azure allows 500; the rest is left to other tools); -1: no bound. Work beyond it waits.")
	fs.IntVar(&o.dns.writes, "private-dns-max-writes-per-5m", 800,
		"The operator sends at most this many Private DNS writes per subscription in any 5 minutes, DNS mode and AzurePrivateEndpoint spec.dns together, and AzurePrivateEndpoint's private endpoint writes count too (Azure allows 1,000 Microsoft.Network writes, both kinds); -1: no bound.")
	fs.IntVar(&o.dns.reads, "wiring-dns-max-reads-per-5m", 400, "Deprecated: --private-dns-max-reads-per-5m, which it sets.")
	fs.IntVar(&o.dns.writes, "wiring-dns-max-writes-per-5m", 800, "Deprecated: --private-dns-max-writes-per-5m, which it sets.")
	fs.StringVar(&o.dns.allowedBaseDomains, "wiring-dns-allowed-base-domains", "",
		"Comma-separated base domains a workload cluster's <annotation-prefix>/base-domain annotation may name (the domain itself or one under it). That annotation names a zone in the management cluster's network, so it is a tenant's input: outside this list it is refused (Event DNSZoneNameRefused) and no MC-side DNS is written for that cluster. Default: none (the annotation on workload clusters is refused; the management cluster's own is always used).")
	fs.StringVar(&o.dns.deniedZones, "dns-denied-zones", "",
		"Comma-separated domains no Private DNS zone the operator creates or adopts may equal, sit under or sit above, besides the built-in ones (Azure's service and sign-in domains of every cloud) and Azure's privatelink.* zones. Applies to DNS mode and to AzurePrivateEndpoint spec.dns.")
	fs.BoolVar(&o.dns.adopt, "wiring-dns-adopt", false,
		"In DNS mode, take over record sets of the wiring's names that carry no owner (written by another tool, such as dns-operator-azure). Off: such record sets are left alone and reported (Event DNSRecordSetNotOwned).")
	fs.StringVar(&o.annotationPrefix, "annotation-prefix", clusterlink.DefaultAnnotationPrefix,
		"Prefix of the IP annotations written on workload clusters.")
	fs.StringVar(&o.mcSubnet, "mc-private-endpoint-subnet", "",
		"MC subnet that receives private endpoints. Default: the first subnet with role node, else the first subnet.")
	fs.IntVar(&o.mcEndpointLimit, "mc-private-endpoint-limit", clusterlink.AzureEndpointsPerVNet,
		"How many private endpoint entries the management cluster's AzureCluster may hold, everyone's (CAPZ makes a private endpoint in the MC's network for each): Azure allows 1,000 per virtual network, 5,000 with high-scale private endpoints. From 90% a Warning Event on the MC (PrivateEndpointLimitNear) says so; beyond it a new workload cluster gets no endpoint (its GSPrivateLinksReady says PrivateEndpointLimit) instead of Azure refusing it; entries that exist stay. At most 3000 (the object's size: etcd's 1.5 MiB request limit). Raise it only after the MC's network allows more.")
	fs.StringVar(&o.mcEndpointSubnets, "mc-endpoint-subnets", "",
		"Comma-separated subnet resource IDs (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>), in the management cluster's subscription and region, for its private endpoints beyond --mc-private-endpoint-limit. With them a new workload cluster whose endpoints the MC's AzureCluster has no room for gets them as AzurePrivateEndpoint objects in the MC's namespace (label privatelink.giantswarm.io/mc-endpoint-of=<mc-name>), in the first of these subnets whose network has room under --mc-endpoint-network-limit; the endpoint keeps its name and sits in the MC's resource group. Entries that exist never move, nor do objects. Needs the AzurePrivateEndpoint controller. Default: none (beyond the limit a cluster waits, PrivateEndpointLimit).")
	fs.IntVar(&o.mcEndpointNetworkLimit, "mc-endpoint-network-limit", clusterlink.MaxNetworkLimit,
		"At most how many of the operator's private endpoints each virtual network of --mc-endpoint-subnets may hold. Each network takes what Azure allows it, read from the network with the management cluster's identity: 5,000 with high-scale private endpoints (privateEndpointVNetPolicies Basic), 1,000 otherwise or while it cannot be read; this caps both. Lower it by the endpoints others make in those networks. 1 to 5000; from 90% of it in the last network a Warning Event on the MC (PrivateEndpointNetworkLimitNear).")
	fs.StringVar(&o.ingressShardFrontends, "mc-ingress-shard-frontends", "",
		"Comma-separated frontend IP configurations for the management cluster's further ingress private link services, in order: a frontend of the ingress load balancer (--mc-ingress-load-balancer) by its name, or of another load balancer in the management cluster's resource group as <load-balancer>/<frontend>. Azure allows 8 private link services per load balancer, one per frontend: at most 7 on the ingress load balancer (the first service is there), 8 on each other, 31 in all (32,000 workload clusters). With them the operator makes <first>-2, <first>-3, ... as AzurePrivateLinkService objects in the management cluster's namespace, each once every service before it has 90% of --mc-service-connection-limit, and connects each new workload cluster to the first with room; the first service (<mc-name>-ingress-privatelink) is never written, and a connected cluster never moves. Needs the AzurePrivateLinkService controller and a layout with the ingress endpoint. Default: none (one ingress service).")
	fs.StringVar(&o.ingressLoadBalancer, "mc-ingress-load-balancer", "kubernetes-internal",
		"The management cluster's internal load balancer the ingress is on, in its resource group (cloud-provider-azure names it <cluster-name>-internal), for --mc-ingress-shard-frontends.")
	fs.StringVar(&o.ingressShardNATSubnet, "mc-ingress-shard-nat-subnet", "",
		"Subnet of the ingress load balancer's network whose addresses the further ingress private link services' NAT IP configurations take (its private link service network policies are disabled). Default: the subnet the management cluster's private endpoints go in (--mc-private-endpoint-subnet).")
	fs.StringVar(&o.gatewayShardFrontends, "mc-gateway-shard-frontends", "",
		"Comma-separated frontend IP configurations for further gateway private link services <mc-name>-gateway-privatelink-2, -3, ... in the gateway layouts (--wc-to-mc-layout=ingress+gateway or gateway): a frontend of the gateway's load balancer (--mc-gateway-load-balancer) by its name, or <load-balancer>/<frontend>; at most 7 on the gateway's load balancer, 8 on each other, 31 in all; made and assigned as --mc-ingress-shard-frontends says. Default: none (one gateway service).")
	fs.StringVar(&o.gatewayLoadBalancer, "mc-gateway-load-balancer", "kubernetes-internal",
		"The management cluster's internal load balancer the gateway is on, in its resource group, for --mc-gateway-shard-frontends.")
	fs.StringVar(&o.ingressShardSubscriptions, "mc-ingress-shard-subscriptions", "",
		"Comma-separated subscription IDs the further ingress and gateway private link services (--mc-ingress-shard-frontends, --mc-gateway-shard-frontends) show themselves to and auto-approve: the workload clusters' subscriptions, at most 64. Required with either. A workload cluster of another subscription stays on the first service or waits (WaitingForIngressService); the list is never taken from the clusters' specs, where a tenant could name any subscription.")
	fs.IntVar(&o.mcServiceConnectionLimit, "mc-service-connection-limit", clusterlink.AzureEndpointsPerService,
		"How many clusters may connect to each management cluster private link service a workload cluster connects to (<mc>-ingress-privatelink, the gateway's, --mc-private-link-names), counting every AzureCluster with an entry to it: Azure allows 1,000 private endpoints per private link service. From 90% a Warning Event on the MC (PrivateLinkServiceConnectionLimitNear) says so; at the limit a new workload cluster gets no endpoint to it (its GSPrivateLinksReady says PrivateLinkServiceConnectionLimit) instead of Azure refusing it; connections that exist stay. 1 to 1000; lower it by the endpoints other tools connect to the service.")
	fs.StringVar(&o.wcSubnet, "wc-private-endpoint-subnet", "",
		"Workload cluster subnet that receives private endpoints. Default: the first subnet with role node, else the first subnet.")
	fs.StringVar(&o.watchFilter, "watch-filter", "",
		"Only handle objects labelled cluster.x-k8s.io/watch-filter=<value> (Cluster API's convention). Default: all.")
	fs.StringVar(&o.defaultAzureEnvironment, "default-azure-environment", azure.PublicCloud,
		"Cloud for objects whose spec.azureEnvironment is empty (CAPZ defaults AzureClusters' to AzurePublicCloud, so in practice the operator's own objects): AzurePublicCloud, AzureChinaCloud, AzureUSGovernmentCloud or the custom cloud's name.")
	fs.StringVar(&o.customCloudFile, "azure-custom-cloud", "",
		"JSON file describing a custom cloud (name, resourceManagerEndpoint, resourceManagerAudience, activeDirectoryAuthorityHost, caFile); clusters whose spec.azureEnvironment equals its name use it.")
	fs.DurationVar(&o.pendingRecheck, "pending-recheck-interval", 30*time.Second,
		"How soon Azure is read again while a private endpoint is not ready (every cluster's rechecks share ticks of this interval).")
	fs.DurationVar(&o.driftCheck, "drift-check-interval", 10*time.Minute,
		"How often converged clusters are read again from Azure (all on shared ticks of this interval, at a random phase per process).")
	fs.DurationVar(&o.terminalRecheck, "terminal-recheck-interval", 10*time.Minute,
		"How soon a cluster is retried after an Azure error a person must fix (authorization, validation).")
	fs.DurationVar(&o.mcWriteDelay, "mc-write-delay", 2*time.Second,
		"Workload cluster events within this window are written to the management cluster's AzureCluster in one write.")
	fs.DurationVar(&o.mcConditionInterval, "mc-condition-interval", 30*time.Second,
		"How often at most the management cluster's GSWorkloadClusterEndpointsReady condition is written again when only its message changed "+
			"(the counts and clusters it names, which move at nearly every pass while a fleet is wired; each write sends the whole AzureCluster to every watcher). "+
			"A new status or reason is written at once. 0 writes every change at once.")
	fs.IntVar(&o.maxConcurrentReconciles, "max-concurrent-reconciles", 4,
		"Workload clusters reconciled in parallel.")
	fs.BoolVar(&o.deleteOrphanedEndpoints, "delete-orphaned-private-endpoints", true,
		"Delete in Azure the private endpoints the operator removed from spec that CAPZ left behind (upstream CAPZ does).")
	fs.StringVar(&o.adoptFieldManagers, "adopt-field-managers", strings.Join(clusterlink.DefaultAdoptFieldManagers, ","),
		"Comma-separated field managers of the older azure-private-endpoint-operator: private endpoint entries they hold are taken over and, when stale, removed. An entry of the operator's name held by any other field manager is left alone (Event PrivateEndpointNameTaken). Empty: adopt none.")
	fs.StringVar(&o.capzFieldManagers, "capz-field-managers", strings.Join(clusterlink.DefaultCAPZFieldManagers, ","),
		"Comma-separated field managers of CAPZ. CAPZ writes an AzureCluster's spec back whole from its last read, which can put back a private endpoint entry the operator had just removed; such an entry, held only by these managers and named and shaped as the operator (or the older operator) writes them, is taken over and, when stale, removed. Empty: none.")
	fs.DurationVar(&o.healDisconnectedAfter, "heal-disconnected-after", 2*time.Minute,
		"How long a private endpoint the operator asked for (in a cluster's spec, or an AzurePrivateEndpoint) may stay Disconnected (its private link service was deleted or recreated) before it is deleted in Azure so that CAPZ (or the operator) recreates it; retried with backoff, an Event each time. 0 turns healing off.")
	fs.BoolVar(&o.healRejected, "heal-rejected", false,
		"Heal Rejected private endpoints too (delete them in Azure after --heal-disconnected-after so that the request is made again). Off by default: a rejection is usually a person's decision.")
	fs.BoolVar(&o.protectIdentities, "protect-identities", true,
		"Put a finalizer (privatelink.giantswarm.io/identity-in-use) on every AzureClusterIdentity, and on the Secret it reads, while an object the operator manages needs it to delete Azure resources (an AzurePrivateEndpoint, an AzurePrivateLinkService, a cluster the wiring holds), so that deleting a namespace in any order leaves nothing behind in Azure and no object stuck. Off, the finalizers put on earlier are taken off.")
	fs.StringVar(&o.azureTags, "azure-tags", "",
		"Comma-separated name=value tags the operator puts on every Azure resource it creates (private endpoints, private link services, private DNS zones and virtual network links), for policies that require them; an object's spec.tags go over them. Azure's tag rules apply: names of at most 512 characters without < > % & \\ ? /, values of at most 256.")
	fs.BoolVar(&o.crossplaneProviderConfigs, "crossplane-provider-configs", false,
		"Write, for each workload Cluster (AzureCluster, AzureManagedCluster, AzureASOManagedCluster) whose identity is a WorkloadIdentity AzureClusterIdentity or an ASO credential Secret, the Crossplane ProviderConfig (azure.upbound.io/v1beta1, named after the Cluster) that azure-private-endpoint-operator 0.6 and 0.7 generate, with their finalizer azure.giantswarm.io/providerconfig on the Cluster. Off, a deleted Cluster that carries that finalizer still gets its ProviderConfig deleted and is let go.")
	fs.BoolVar(&o.publishSecrets, "publish-secrets", false,
		"Let an AzurePrivateEndpoint's spec.publish.secretName write its addresses and names into a Secret of its namespace (the chart then grants create, patch and delete on Secrets). Off, such an object is reported (Published False, reason SecretsDisabled) and ConfigMaps and Services still work.")
	fs.DurationVar(&o.secretRecheck, "identity-secret-recheck-interval", 5*time.Minute,
		"How often an identity's Secret is read again to notice a rotation.")
	fs.DurationVar(&o.azureObserveTTL, "azure-observe-ttl", 10*time.Second,
		"How long one list of a subscription's (or resource group's) private endpoints answers every reconcile that needs it (for a cluster first seen after the list was asked, what the list holds under its names is read again: one created again under an earlier one's name is not told of the earlier one's endpoints).")
	fs.DurationVar(&o.azureObserveTTLPer1000, "azure-observe-ttl-per-1000", 10*time.Second,
		"A list of more than a thousand private endpoints answers longer than --azure-observe-ttl: this long per 1,000 endpoints it holds (0: never longer). A list reads every page and decodes every endpoint, so with a fixed TTL the management cluster's subscription, which holds an endpoint per workload cluster, costs more reads and CPU per second the more clusters there are; scaled, it costs the same at any size.")
	fs.BoolVar(&o.plsController, "enable-private-link-service-controller", true,
		"Run the AzurePrivateLinkService controller (its CRD must be installed).")
	fs.DurationVar(&o.plsDrift, "private-link-service-drift-interval", 10*time.Minute,
		"How often a ready AzurePrivateLinkService is read again from Azure to repair out-of-band changes (jittered by up to +10%).")
	fs.DurationVar(&o.plsRecheck, "private-link-service-recheck-interval", 10*time.Second,
		"How soon Azure is read again while an AzurePrivateLinkService waits (a long-running operation, a missing load balancer).")
	fs.DurationVar(&o.plsConnectionCheck, "private-link-service-connection-check-interval", time.Minute,
		"How often an AzurePrivateLinkService with spec.connectionApproval is read again to decide new Pending connections (Azure does not notify the provider).")
	fs.IntVar(&o.plsConcurrency, "private-link-service-concurrency", 4,
		"AzurePrivateLinkService objects reconciled in parallel.")
	fs.IntVar(&o.plsLimit, "private-link-service-limit", privatelinkservice.AzureServicesPerSubscription,
		"How many private link services a subscription may hold, whoever made them, before the operator creates none there: Azure allows 800 per subscription. Counted before each creation (a list of the subscription's services); at the limit the AzurePrivateLinkService says PrivateLinkServicesPerSubscriptionLimit instead of Azure refusing it, and from 90% a creation gets the Warning Event PrivateLinkServicesPerSubscriptionLimitNear. 1 to 800.")
	fs.BoolVar(&o.apeController, "enable-private-endpoint-controller", true,
		"Run the AzurePrivateEndpoint controller (its CRD must be installed).")
	fs.DurationVar(&o.apeDrift, "private-endpoint-drift-interval", 10*time.Minute,
		"How often a ready AzurePrivateEndpoint's private endpoint is checked for drift in Azure (jittered by up to +10%): read again, unless a list of its subscription the operator made since with the same credential shows it unchanged (the wiring's list of the management cluster's, for its endpoints beyond its AzureCluster).")
	fs.DurationVar(&o.apeRecheck, "private-endpoint-recheck-interval", 10*time.Second,
		"How soon Azure is read again while an AzurePrivateEndpoint waits (a long-running operation, a link being made).")
	fs.DurationVar(&o.apeConnectionCheck, "private-endpoint-connection-check-interval", time.Minute,
		"How often an AzurePrivateEndpoint whose connection is Pending, Rejected or Disconnected is read again (the provider's decision reaches the consumer only by reading).")
	fs.DurationVar(&o.apeDNSCheck, "private-endpoint-dns-check-interval", time.Hour,
		"How often the private DNS of an AzurePrivateEndpoint whose spec and address did not change is read again to repair out-of-band changes (Private DNS has lower request limits than networking).")
	fs.IntVar(&o.apeConcurrency, "private-endpoint-concurrency", 4,
		"AzurePrivateEndpoint objects reconciled in parallel.")
	fs.BoolVar(&o.managePLS, "manage-private-link-services", false,
		"For every private workload cluster whose AzureCluster declares no privateLinks (upstream CAPZ), create an AzurePrivateLinkService for its API server load balancer. Per cluster: the annotation <annotation-prefix>/manage-private-link-service=true|false.")
	fs.StringVar(&o.operatorCredential, "operator-credential", "default",
		"Credential for AzurePrivateLinkService and AzurePrivateEndpoint objects without spec.identityRef: default (the Azure SDK's DefaultAzureCredential: environment, workload identity, managed identity) or none (such objects are refused).")
	fs.StringVar(&o.ownCredNamespaces, "operator-credential-namespaces", "",
		"Comma-separated namespaces whose AzurePrivateLinkService and AzurePrivateEndpoint objects without spec.identityRef may use the operator's own credential (--operator-credential), or * for every namespace. Default: none; such objects get OperatorCredentialNotAllowed.")
	o.zap.BindFlags(fs)
	return fs
}

func (o *options) validate() error {
	errs := o.validateManager()
	if o.metricsCertDir != "" && !o.metricsSecure {
		errs = append(errs, errors.New("--metrics-cert-dir needs --metrics-secure"))
	}
	if o.operatorCredential != "default" && o.operatorCredential != "none" {
		errs = append(errs, fmt.Errorf("--operator-credential=%q: must be default or none", o.operatorCredential))
	}
	if t, err := azure.ParseTags(o.azureTags); err != nil {
		errs = append(errs, fmt.Errorf("--azure-tags=%q: %w", o.azureTags, err))
	} else if len(t) > 40 {
		errs = append(errs, fmt.Errorf("--azure-tags: %d tags; Azure allows 50 on a resource and objects need room for their own (at most 40 here)", len(t)))
	}
	if o.managePLS && !o.plsController {
		errs = append(errs, errors.New("--manage-private-link-services needs --enable-private-link-service-controller"))
	}
	if o.apeConcurrency < 1 {
		errs = append(errs, fmt.Errorf("--private-endpoint-concurrency=%d: must be at least 1", o.apeConcurrency))
	}
	if o.plsConcurrency < 1 {
		errs = append(errs, fmt.Errorf("--private-link-service-concurrency=%d: must be at least 1", o.plsConcurrency))
	}
	errs = append(errs, positive(map[string]time.Duration{
		"--private-link-service-drift-interval":            o.plsDrift,
		"--private-link-service-recheck-interval":          o.plsRecheck,
		"--private-link-service-connection-check-interval": o.plsConnectionCheck,
		"--private-endpoint-drift-interval":                o.apeDrift,
		"--private-endpoint-recheck-interval":              o.apeRecheck,
		"--private-endpoint-connection-check-interval":     o.apeConnectionCheck,
		"--private-endpoint-dns-check-interval":            o.apeDNSCheck,
	})...)
	errs = append(errs, o.validateWiring()...)
	return errors.Join(errs...)
}

// validateManager checks the manager's flags: addresses, leader election.
func (o *options) validateManager() []error {
	var errs []error
	for _, a := range []struct{ flag, value string }{
		{"--metrics-bind-address", o.metricsAddr},
		{"--health-probe-bind-address", o.probeAddr},
		{"--pprof-bind-address", o.pprofAddr},
	} {
		if err := validateBindAddress(a.value); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", a.flag, a.value, err))
		}
	}
	errs = append(errs, positive(map[string]time.Duration{
		"--leader-election-lease-duration": o.leaseDuration,
		"--leader-election-renew-deadline": o.renewDeadline,
		"--leader-election-retry-period":   o.retryPeriod,
		"--graceful-shutdown-timeout":      o.gracefulShutdownTimeout,
	})...)
	if o.memoryLimitFraction < 0 || o.memoryLimitFraction > 1 {
		errs = append(errs, fmt.Errorf("--memory-limit-fraction=%g: must be between 0 (off) and 1", o.memoryLimitFraction))
	}
	if o.gcPercent < 1 {
		errs = append(errs, fmt.Errorf("--gc-percent=%d: must be at least 1 (GOGC=off in the environment turns the collector off)", o.gcPercent))
	}
	if !o.leaderElect {
		return errs
	}
	if o.renewDeadline >= o.leaseDuration {
		errs = append(errs, fmt.Errorf("--leader-election-renew-deadline (%s) must be shorter than --leader-election-lease-duration (%s)",
			o.renewDeadline, o.leaseDuration))
	}
	if o.retryPeriod >= o.renewDeadline {
		errs = append(errs, fmt.Errorf("--leader-election-retry-period (%s) must be shorter than --leader-election-renew-deadline (%s)",
			o.retryPeriod, o.renewDeadline))
	}
	if o.leaderElectionNamespace == "" && !o.inCluster {
		errs = append(errs, errors.New("--leader-election-namespace is required with --leader-elect when running outside a cluster"))
	}
	if o.leaderElectionID == "" {
		errs = append(errs, errors.New("--leader-election-id must not be empty with --leader-elect"))
	}
	return errs
}

// validateWiring checks the flags of the AzureCluster controllers.
func (o *options) validateWiring() []error {
	var errs []error
	if o.mcName == "" || o.mcNamespace == "" {
		errs = append(errs, errors.New("--management-cluster-name and --management-cluster-namespace are required: the operator wires workload clusters to that management cluster"))
	}
	errs = append(errs, positive(map[string]time.Duration{
		"--pending-recheck-interval":         o.pendingRecheck,
		"--drift-check-interval":             o.driftCheck,
		"--terminal-recheck-interval":        o.terminalRecheck,
		"--identity-secret-recheck-interval": o.secretRecheck,
		"--azure-observe-ttl":                o.azureObserveTTL,
	})...)
	if o.mcConditionInterval < 0 {
		errs = append(errs, fmt.Errorf("--mc-condition-interval=%s: must not be negative (0 writes every change at once)", o.mcConditionInterval))
	}
	if o.mcWriteDelay < 0 {
		errs = append(errs, fmt.Errorf("--mc-write-delay=%s: must not be negative", o.mcWriteDelay))
	}
	if o.azureObserveTTLPer1000 < 0 {
		errs = append(errs, fmt.Errorf("--azure-observe-ttl-per-1000=%s: must not be negative (0 turns it off)", o.azureObserveTTLPer1000))
	}
	if o.healDisconnectedAfter < 0 {
		errs = append(errs, fmt.Errorf("--heal-disconnected-after=%s: must not be negative (0 turns healing off)", o.healDisconnectedAfter))
	}
	if o.healRejected && o.healDisconnectedAfter == 0 {
		errs = append(errs, errors.New("--heal-rejected needs --heal-disconnected-after above 0"))
	}
	switch {
	case o.kubeAPIQPS == kubeAPIUnlimited:
	case o.kubeAPIQPS <= 0 || o.kubeAPIBurst < 1:
		// 0 would be client-go's own default, 5 per second, in silence.
		errs = append(errs, fmt.Errorf("--kube-api-qps=%g and --kube-api-burst=%d: both must be positive, or --kube-api-qps=-1 for no client-side limit", o.kubeAPIQPS, o.kubeAPIBurst))
	}
	if o.maxConcurrentReconciles < 1 {
		errs = append(errs, fmt.Errorf("--max-concurrent-reconciles=%d: must be at least 1", o.maxConcurrentReconciles))
	}
	if !slices.Contains(clusterlink.Layouts, clusterlink.Layout(o.wcToMCLayout)) {
		errs = append(errs, fmt.Errorf("--wc-to-mc-layout=%q: must be ingress, ingress+gateway or gateway", o.wcToMCLayout))
	}
	switch {
	case o.mcIngressIPSource != "" && o.mcIngressIPSource != clusterlink.SourceIngress && o.mcIngressIPSource != clusterlink.SourceGateway:
		errs = append(errs, fmt.Errorf("--mc-ingress-ip-source=%q: must be ingress or gateway", o.mcIngressIPSource))
	case o.mcIngressIPSource == clusterlink.SourceGateway && o.wcToMCLayout == string(clusterlink.LayoutIngress):
		errs = append(errs, errors.New("--mc-ingress-ip-source=gateway needs a layout with the gateway endpoint: --wc-to-mc-layout=ingress+gateway or gateway"))
	case o.mcIngressIPSource == clusterlink.SourceIngress && o.wcToMCLayout == string(clusterlink.LayoutGateway):
		errs = append(errs, errors.New("--mc-ingress-ip-source=ingress needs a layout with the ingress endpoint: --wc-to-mc-layout=ingress or ingress+gateway"))
	}
	errs = append(errs, o.validateDNS()...)
	errs = append(errs, o.validateLimits()...)
	errs = append(errs, o.validateShards()...)
	errs = append(errs, o.validateBeyond()...)
	if o.customCloudFile != "" {
		cc, err := azure.LoadCustomCloud(o.customCloudFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--azure-custom-cloud=%s: %w", o.customCloudFile, err))
		} else {
			o.customCloud = &cc
		}
	}
	return errs
}

// validateLimits checks the limits of Azure's ceilings (each from 1 to
// what Azure, or the MC object's size, allows).
func (o *options) validateLimits() []error {
	var errs []error
	for _, l := range []struct {
		flag       string
		value, max int
		why        string
	}{
		{"--mc-private-endpoint-limit", o.mcEndpointLimit, clusterlink.MaxMCEndpointLimit,
			"beyond, the management cluster's AzureCluster nears etcd's 1.5 MiB request limit"},
		{"--mc-service-connection-limit", o.mcServiceConnectionLimit, clusterlink.AzureEndpointsPerService,
			"Azure's private endpoints per private link service"},
		{"--private-link-service-limit", o.plsLimit, privatelinkservice.AzureServicesPerSubscription,
			"Azure's private link services per subscription"},
	} {
		if l.value < 1 || l.value > l.max {
			errs = append(errs, fmt.Errorf("%s=%d: must be between 1 and %d (%s)", l.flag, l.value, l.max, l.why))
		}
	}
	return errs
}

// subnetID is a subnet's resource ID (the AzurePrivateEndpoint CRD's
// pattern for spec.subnetID).
var subnetID = regexp.MustCompile(`(?i)^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/virtualNetworks/[^/]+/subnets/[^/]+$`)

// validateBeyond checks the flags of the MC's endpoints beyond its
// AzureCluster.
func (o *options) validateBeyond() []error {
	var errs []error
	if o.mcEndpointNetworkLimit < 1 || o.mcEndpointNetworkLimit > clusterlink.MaxNetworkLimit {
		errs = append(errs, fmt.Errorf("--mc-endpoint-network-limit=%d: must be between 1 and %d (Azure's private endpoints per virtual network with high-scale private endpoints)",
			o.mcEndpointNetworkLimit, clusterlink.MaxNetworkLimit))
	}
	subnets := commaList(o.mcEndpointSubnets)
	seen := map[string]bool{}
	for _, s := range subnets {
		if !subnetID.MatchString(s) {
			errs = append(errs, fmt.Errorf("--mc-endpoint-subnets: %q is not a subnet resource ID (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>)", s))
		}
		if seen[strings.ToLower(s)] {
			errs = append(errs, fmt.Errorf("--mc-endpoint-subnets names %s twice", s))
		}
		seen[strings.ToLower(s)] = true
	}
	if len(subnets) > 0 && !o.apeController {
		errs = append(errs, errors.New("--mc-endpoint-subnets needs --enable-private-endpoint-controller: the endpoints beyond the management cluster's AzureCluster are AzurePrivateEndpoint objects"))
	}
	return errs
}

// subscriptionID is a subscription ID, in either case.
var subscriptionID = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// validateShards checks the flags of the MC's further ingress services.
func (o *options) validateShards() []error {
	ingress, gateway := commaList(o.ingressShardFrontends), commaList(o.gatewayShardFrontends)
	if len(ingress)+len(gateway) == 0 {
		return nil
	}
	errs := checkFrontends("--mc-ingress-shard-frontends", o.ingressLoadBalancer, ingress)
	errs = append(errs, checkFrontends("--mc-gateway-shard-frontends", o.gatewayLoadBalancer, gateway)...)
	ingressAt := qualifiedFrontends(o.ingressLoadBalancer, ingress)
	for _, fe := range qualifiedFrontends(o.gatewayLoadBalancer, gateway) {
		if slices.Contains(ingressAt, fe) {
			errs = append(errs, fmt.Errorf("--mc-ingress-shard-frontends and --mc-gateway-shard-frontends both name frontend %s: a frontend takes one private link service", fe))
		}
	}
	errs = append(errs, checkShardSubscriptions(commaList(o.ingressShardSubscriptions))...)
	if !o.plsController {
		errs = append(errs, errors.New("further ingress services need --enable-private-link-service-controller: they are AzurePrivateLinkService objects"))
	}
	if len(o.ingressShardNATSubnet) > 80 {
		errs = append(errs, fmt.Errorf("--mc-ingress-shard-nat-subnet: %q is longer than Azure's 80 characters", o.ingressShardNATSubnet))
	}
	if len(ingress) > 0 && o.ingressLoadBalancer == "" {
		errs = append(errs, errors.New("--mc-ingress-shard-frontends needs --mc-ingress-load-balancer"))
	}
	if len(gateway) > 0 && o.gatewayLoadBalancer == "" {
		errs = append(errs, errors.New("--mc-gateway-shard-frontends needs --mc-gateway-load-balancer"))
	}
	if len(ingress) > 0 && o.wcToMCLayout == string(clusterlink.LayoutGateway) {
		errs = append(errs, errors.New("--mc-ingress-shard-frontends needs a layout with the ingress endpoint (--wc-to-mc-layout=ingress or ingress+gateway); the gateway's further services are --mc-gateway-shard-frontends"))
	}
	if len(gateway) > 0 && o.wcToMCLayout == string(clusterlink.LayoutIngress) {
		errs = append(errs, errors.New("--mc-gateway-shard-frontends needs a layout with the gateway endpoint (--wc-to-mc-layout=ingress+gateway or gateway)"))
	}
	return errs
}

// checkShardSubscriptions checks the subscriptions further services
// auto-approve.
func checkShardSubscriptions(subs []string) []error {
	var errs []error
	for _, s := range subs {
		if !subscriptionID.MatchString(s) {
			errs = append(errs, fmt.Errorf("--mc-ingress-shard-subscriptions: %q is not a subscription ID", s))
		}
	}
	switch {
	case len(subs) == 0:
		errs = append(errs, errors.New("further ingress services (--mc-ingress-shard-frontends, --mc-gateway-shard-frontends) need --mc-ingress-shard-subscriptions: the workload clusters' subscriptions they auto-approve"))
	case len(subs) > clusterlink.MaxShardSubscriptions:
		errs = append(errs, fmt.Errorf("--mc-ingress-shard-subscriptions names %d subscriptions: at most %d", len(subs), clusterlink.MaxShardSubscriptions))
	}
	return errs
}

// checkFrontends checks one of the shard frontend lists, whose plain
// entries are frontends of load balancer lb (the first service's):
// Azure takes 8 private link services per load balancer, the first
// service counted on lb, and the operator at most MaxShardFrontends
// further services per list.
func checkFrontends(flag, lb string, fes []string) []error {
	var errs []error
	if len(fes) > clusterlink.MaxShardFrontends {
		errs = append(errs, fmt.Errorf("%s names %d frontends: at most %d", flag, len(fes), clusterlink.MaxShardFrontends))
	}
	perLB := map[string]int{strings.ToLower(lb): 1}
	seen := map[string]bool{}
	for i, fe := range fes {
		l, name := clusterlink.SplitShardFrontend(lb, fe)
		if name == "" || strings.Contains(fe, "/") && l == "" || strings.Count(fe, "/") > 1 {
			errs = append(errs, fmt.Errorf("%s: %q is neither <frontend> nor <load-balancer>/<frontend>", flag, fe))
			continue
		}
		key := qualifiedFrontends(lb, fes[i:i+1])[0]
		if seen[key] {
			errs = append(errs, fmt.Errorf("%s names %s twice: a frontend takes one private link service", flag, key))
		}
		seen[key] = true
		if perLB[strings.ToLower(l)]++; perLB[strings.ToLower(l)] == clusterlink.MaxIngressShards+1 {
			errs = append(errs, fmt.Errorf("%s puts more than %d private link services on load balancer %s (the first service counted on %s): Azure allows %d per load balancer; name frontends of another load balancer as <load-balancer>/<frontend>",
				flag, clusterlink.MaxIngressShards, l, lb, clusterlink.MaxIngressShards))
		}
		if len(l) > 80 || len(name) > 80 {
			errs = append(errs, fmt.Errorf("%s: %q is longer than Azure's 80 characters", flag, fe))
		}
	}
	return errs
}

// qualifiedFrontends are a shard frontend list's entries as
// <load-balancer>/<frontend>, in lower case (Azure's names are
// case-insensitive).
func qualifiedFrontends(lb string, fes []string) []string {
	out := make([]string, 0, len(fes))
	for _, fe := range fes {
		l, name := clusterlink.SplitShardFrontend(lb, fe)
		out = append(out, strings.ToLower(l+"/"+name))
	}
	return out
}

// validateDNS checks the DNS mode's flags.
func (o *options) validateDNS() []error {
	var errs []error
	if o.dns.enabled && o.dns.baseDomain == "" {
		errs = append(errs, errors.New("--wiring-dns needs --wiring-dns-base-domain"))
	}
	if o.dns.ttl < 1 || o.dns.ttl > 86400 {
		errs = append(errs, fmt.Errorf("--wiring-dns-ttl=%d: must be from 1 to 86400", o.dns.ttl))
	}
	for _, f := range []struct {
		flag  string
		value int
	}{{"--private-dns-max-reads-per-5m", o.dns.reads}, {"--private-dns-max-writes-per-5m", o.dns.writes}} {
		if f.value == 0 || f.value < -1 {
			errs = append(errs, fmt.Errorf("%s=%d: must be positive, or -1 for no bound", f.flag, f.value))
		}
	}
	if id := o.dns.mcZoneIdentity; id != "" {
		if ns, name, ok := strings.Cut(id, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			errs = append(errs, fmt.Errorf("--wiring-dns-mc-zone-identity=%q: want namespace/name", id))
		}
	}
	if o.dns.zoneLimit < 1 {
		errs = append(errs, fmt.Errorf("--wiring-dns-zone-limit=%d: must be at least 1", o.dns.zoneLimit))
	}
	if o.dns.check <= 0 {
		errs = append(errs, fmt.Errorf("--wiring-dns-check-interval=%s: must be positive", o.dns.check))
	}
	for _, f := range []struct{ flag, value string }{{"--wiring-dns-mc-records", o.dns.mcRecords}, {"--wiring-dns-wc-records", o.dns.wcRecords}} {
		if len(commaList(f.value)) == 0 {
			errs = append(errs, fmt.Errorf("%s is empty", f.flag))
		}
	}
	templates := append([]string{o.dns.mcZone, o.dns.wcZone}, commaList(o.dns.mcRecords)...)
	if err := wiringdns.ParseDNSTemplates(append(templates, commaList(o.dns.wcRecords)...)...); err != nil {
		errs = append(errs, fmt.Errorf("DNS mode: %w", err))
	}
	return errs
}

// positive reports the durations that are not positive, in flag order.
func positive(flags map[string]time.Duration) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if flags[name] <= 0 {
			errs = append(errs, fmt.Errorf("%s=%s: must be positive", name, flags[name]))
		}
	}
	return errs
}

// validateBindAddress accepts "0" (disabled) or host:port with a numeric port.
func validateBindAddress(addr string) error {
	if addr == "0" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New(`want host:port, ":port" or "0" to disable`)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
