package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// azureMaxPollInterval caps the hint with which azuresim answers the start
// of an operation (the time it has left): Azure's recorded hints are 10 s
// for private endpoints and 30 s for Private DNS zones and links
// (internal/azuresim/conformance/testdata), so with --azure-latency below
// them the hint is exactly when the operation ends.
const azureMaxPollInterval = 30 * time.Second

// ConsumerConfig is one run of the consumer scenario: N AzurePrivateEndpoint
// objects with DNS over Subscriptions consumer subscriptions, all to one
// provider's private link service that auto-approves them.
type ConsumerConfig struct {
	N             int
	Subscriptions int
	// SharedZone puts every object's records into one zone per
	// subscription (hosted clusters sharing a domain); otherwise each object
	// has a zone of its own.
	SharedZone     bool
	OperatorBinary string
	OperatorFlags  []string
	AzureLatency   time.Duration
	// SteadyDrift is --private-endpoint-drift-interval during the steady
	// phase (default 10m); the DNS check (default 1h) is compressed by the
	// same ratio.
	SteadyDrift  time.Duration
	SteadyWindow time.Duration
	Timeout      time.Duration
	Concurrency  int
	// ConvergeOnly stops after the convergence (no restart, steady state or
	// deletion): a quick look while working on the operator.
	ConvergeOnly bool
	Dir          string
	Logf         func(format string, args ...any)
}

// ConsumerResult is one consumer run's figures.
type ConsumerResult struct {
	N             int    `json:"n"`
	Subscriptions int    `json:"subscriptions"`
	Zone          string `json:"zone"` // "own" or "shared"
	// ReadySeconds runs from creating the objects to every object Ready and
	// every name resolving from its consumer network.
	ReadySeconds float64 `json:"readySeconds"`
	// MinWritesPerEndpoint is the fewest ARM writes an endpoint needs
	// (endpoint, records, and for an own zone the zone and its link);
	// WriteFloorSeconds is the time ARM's write limit allows for N of them:
	// per subscription, (writes - burst) / rate, all subscriptions in
	// parallel. ChainSeconds is Azure's operation chain, the operations one
	// object waits for one after the other: an own zone and then its link
	// (the endpoint beside them), two operations; with a shared zone the
	// endpoint, one (the subscription's zone and link are made once, at the
	// start). FloorSeconds is their sum.
	MinWritesPerEndpoint float64 `json:"minWritesPerEndpoint"`
	WriteFloorSeconds    float64 `json:"writeFloorSeconds"`
	ChainSeconds         float64 `json:"chainSeconds"`
	FloorSeconds         float64 `json:"floorSeconds"`
	// KubeFloorSeconds is the time the operator's Kubernetes client limit
	// (--kube-api-qps) allows for the writes it made while converging:
	// KubeWritesPerObject × N / QPS. Where it is above FloorSeconds the
	// client, not Azure, sets the pace.
	KubeFloorSeconds float64 `json:"kubeFloorSeconds"`
	KubeQPS          float64 `json:"kubeQPS"`
	Converge         Phase   `json:"converge"`
	// KubeWritesPerObject are the operator's writes to AzurePrivateEndpoint
	// objects (and their status) while converging, per object.
	KubeWritesPerObject float64 `json:"kubeWritesPerObject"`
	Paced               int     `json:"paced"`
	Restart             Phase   `json:"restart"`
	Steady              Phase   `json:"steady"`
	// SteadyReadsPerHour scales the steady phase's reads (endpoint drift
	// checks) to an hour at the defaults and adds one DNS check of every
	// object (hourly by default), as measured at the restart.
	SteadyReadsPerHour  float64 `json:"steadyReadsPerHourAtDefaults"`
	RestartDNSReads     int     `json:"restartDNSReads"`
	SteadyWritesPerHour float64 `json:"steadyWritesPerHourAtDefaults"`
	DeleteSeconds       float64 `json:"deleteSeconds"`
	Delete              Phase   `json:"delete"`
	PeakRSSMiB          float64 `json:"peakRSSMiB"`
	CPUSeconds          float64 `json:"cpuSeconds"`
	AzureLatencySeconds float64 `json:"azureLatencySeconds"`
}

type consumerBench struct {
	bench
	ccfg ConsumerConfig
	cres ConsumerResult
	pls  string
}

// consumer subscriptions and networks.
func consumerSub(i int) string { return fmt.Sprintf("00000000-0000-0000-00c0-%012d", i) }
func consumerRG(i int) string  { return fmt.Sprintf("guest-rg-%02d", i) }
func consumerVNet(i int) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/guest-vnet", consumerSub(i), consumerRG(i))
}
func consumerName(i int) string { return fmt.Sprintf("hc%04d", i) }
func consumerNS(i int) string   { return fmt.Sprintf("org-hcp-%02d", i%10) }

const (
	providerSub = "00000000-0000-0000-0000-0000000000f0"
	providerRG  = "hcp-provider-rg"
)

// RunConsumer runs the consumer scenario once.
func RunConsumer(ctx context.Context, cfg ConsumerConfig) (ConsumerResult, error) {
	zone := "own"
	if cfg.SharedZone {
		zone = "shared"
	}
	b := &consumerBench{ccfg: cfg, cres: ConsumerResult{N: cfg.N, Subscriptions: cfg.Subscriptions, Zone: zone, AzureLatencySeconds: cfg.AzureLatency.Seconds()}}
	b.cfg = Config{N: cfg.N, Subscriptions: cfg.Subscriptions, OperatorBinary: cfg.OperatorBinary, OperatorFlags: cfg.OperatorFlags, Timeout: cfg.Timeout, Dir: cfg.Dir, Logf: cfg.Logf,
		SteadyDrift: cfg.SteadyDrift, SteadyWindow: cfg.SteadyWindow}
	throttling := azuresim.DefaultThrottling()
	throttling.Exempt = []string{sandbox.CAPZClientID}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Dir: cfg.Dir, Audit: true, Latency: cfg.AzureLatency, MaxPollInterval: azureMaxPollInterval, Throttling: throttling,
		Principals: []azuresim.Principal{{TenantID: sandbox.FleetTenantID, ClientID: sandbox.FleetOperatorClient, ClientSecret: sandbox.FleetOperatorSecret}},
		Logf:       cfg.Logf,
	})
	if err != nil {
		return b.cres, err
	}
	b.sb = sb
	defer func() { _ = sb.Stop() }()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if b.objects, err = watchObjects(watchCtx, sb, &v1alpha1.AzurePrivateEndpoint{}); err != nil {
		return b.cres, err
	}
	if err := sb.CreateIdentity(ctx, sandbox.FleetIdentity()); err != nil {
		return b.cres, err
	}
	if err := b.seed(); err != nil {
		return b.cres, err
	}
	ctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	phases := []func(context.Context) error{b.converge, b.restart, b.steady, b.delete}
	if cfg.ConvergeOnly {
		phases = phases[:1]
	}
	for _, phase := range phases {
		if err := phase(ctx); err != nil {
			if b.op != nil {
				_ = b.op.Stop(30 * time.Second)
			}
			return b.cres, err
		}
	}
	stopSampling()
	if err := b.stopOperator(); err != nil {
		return b.cres, err
	}
	b.cres.CPUSeconds = b.usage.CPU.Seconds()
	b.cres.PeakRSSMiB = float64(b.usage.PeakRSS) / (1 << 20)
	return b.cres, nil
}

// seed creates the provider's load balancer and private link service
// (auto-approving every consumer subscription) and each consumer network,
// as CAPZ's principal: the operator's requests are what is measured.
func (b *consumerBench) seed() error {
	raw := func(v any) json.RawMessage {
		r, _ := json.Marshal(v) //nolint:errchkjson // SDK structs always marshal
		return r
	}
	subs := make([]*string, 0, b.ccfg.Subscriptions)
	seed := azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: providerSub, Name: providerRG, Location: sandbox.FleetLocation}}}
	for i := range b.ccfg.Subscriptions {
		subs = append(subs, new(consumerSub(i)))
		seed.ResourceGroups = append(seed.ResourceGroups, azuresim.SeedResourceGroup{SubscriptionID: consumerSub(i), Name: consumerRG(i), Location: sandbox.FleetLocation})
		seed.Resources = append(seed.Resources, azuresim.SeedResource{ID: consumerVNet(i), Body: raw(armnetwork.VirtualNetwork{
			Location: new(sandbox.FleetLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
				AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.80.0.0/16")}},
				Subnets:      []*armnetwork.Subnet{{Name: new("private-endpoints"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.80.0.0/20")}}},
			}})})
	}
	pVNet := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/hcp-vnet", providerSub, providerRG)
	lb := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/loadBalancers/hcp-lb", providerSub, providerRG)
	b.pls = fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/privateLinkServices/hcp-apiserver", providerSub, providerRG)
	seed.Resources = append(seed.Resources,
		azuresim.SeedResource{ID: pVNet, Body: raw(armnetwork.VirtualNetwork{Location: new(sandbox.FleetLocation), Properties: &armnetwork.VirtualNetworkPropertiesFormat{
			AddressSpace: &armnetwork.AddressSpace{AddressPrefixes: []*string{new("10.60.0.0/16")}},
			Subnets: []*armnetwork.Subnet{
				{Name: new("nodes"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.60.0.0/24")}},
				{Name: new("nat"), Properties: &armnetwork.SubnetPropertiesFormat{AddressPrefix: new("10.60.1.0/24"),
					PrivateLinkServiceNetworkPolicies: new(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)}},
			}}})},
		azuresim.SeedResource{ID: lb, Body: raw(armnetwork.LoadBalancer{Location: new(sandbox.FleetLocation), SKU: &armnetwork.LoadBalancerSKU{Name: new(armnetwork.LoadBalancerSKUNameStandard)},
			Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
				Name: new("apiserver"), Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{
					Subnet: &armnetwork.Subnet{ID: new(pVNet + "/subnets/nodes")}, PrivateIPAllocationMethod: new(armnetwork.IPAllocationMethodStatic), PrivateIPAddress: new("10.60.0.4")},
			}}}})},
		azuresim.SeedResource{ID: b.pls, Body: raw(armnetwork.PrivateLinkService{Location: new(sandbox.FleetLocation), Properties: &armnetwork.PrivateLinkServiceProperties{
			LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: new(lb + "/frontendIPConfigurations/apiserver")}},
			IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{{Name: new("nat-0"), Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{
				Subnet: &armnetwork.Subnet{ID: new(pVNet + "/subnets/nat")}, Primary: new(true)}}},
			Visibility:   &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: subs},
			AutoApproval: &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: subs},
		}})},
	)
	return b.sb.Sim.Seed(seed)
}

func (b *consumerBench) object(i int) *v1alpha1.AzurePrivateEndpoint {
	s := i % b.ccfg.Subscriptions
	dns := &v1alpha1.PrivateEndpointDNS{ZoneName: consumerName(i) + ".hypershift.local"}
	if b.ccfg.SharedZone {
		dns = &v1alpha1.PrivateEndpointDNS{ZoneName: "hypershift.local", ZoneMode: v1alpha1.ZoneModeShared,
			Records: []string{"api." + consumerName(i), "*.apps." + consumerName(i)}}
	}
	return &v1alpha1.AzurePrivateEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: consumerNS(i), Name: consumerName(i)},
		Spec: v1alpha1.AzurePrivateEndpointSpec{
			SubscriptionID: consumerSub(s), ResourceGroup: consumerRG(s), Location: sandbox.FleetLocation,
			IdentityRef: &v1alpha1.IdentityReference{Name: sandbox.FleetIdentityName, Namespace: sandbox.FleetIdentityNS},
			SubnetID:    consumerVNet(s) + "/subnets/private-endpoints", PrivateLinkServiceID: b.pls, DNS: dns,
		},
	}
}

func (b *consumerBench) startOperator(ctx context.Context, name string, extra ...string) error {
	return b.bench.startOperator(ctx, name, append([]string{
		fmt.Sprintf("--private-endpoint-concurrency=%d", b.ccfg.Concurrency), "--operator-credential=none",
	}, extra...)...)
}

// converge creates every object at once and waits until all are Ready
// and every object's API name resolves to its endpoint from its network.
func (b *consumerBench) converge(ctx context.Context) error {
	if err := b.startOperator(ctx, "operator-1"); err != nil {
		return err
	}
	b.sb.Sim.ResetCounters()
	start := time.Now()
	for i := range min(10, b.ccfg.N) {
		if err := b.sb.EnsureNamespace(ctx, consumerNS(i)); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range b.ccfg.N {
		g.Go(func() error { return b.sb.Client.Create(gctx, b.object(i)) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating objects: %w", err)
	}
	b.logf("created %d AzurePrivateEndpoints (%s zones) in %.1fs", b.ccfg.N, b.cres.Zone, time.Since(start).Seconds())
	if err := b.pollReady(ctx, start); err != nil {
		return err
	}
	b.cres.ReadySeconds = time.Since(start).Seconds()
	var err error
	if b.cres.Converge, err = b.phase(time.Since(start)); err != nil {
		return err
	}
	b.fill()
	b.logf("all Ready and resolving after %.1fs (floor %.1fs): %+v", b.cres.ReadySeconds, b.cres.FloorSeconds, b.cres.Converge)
	return nil
}

// fill computes the write floor and the Kubernetes writes per object.
func (b *consumerBench) fill() {
	perSub := float64(b.ccfg.N) / float64(b.ccfg.Subscriptions)
	minWrites := 3.0 // endpoint, two records
	extra := 0.0     // writes once per subscription
	if b.ccfg.SharedZone {
		extra = 2 // the shared zone and its link
	} else {
		minWrites = 5 // and a zone and a link per object
	}
	chain := 1.0 // the endpoint
	if !b.ccfg.SharedZone {
		chain = 2 // the zone, then its link
	}
	lim := azuresim.DefaultThrottling().Writes
	b.cres.MinWritesPerEndpoint = minWrites
	b.cres.WriteFloorSeconds = max(0, (perSub*minWrites+extra-float64(lim.Burst))/lim.PerSecond)
	b.cres.ChainSeconds = chain * b.ccfg.AzureLatency.Seconds()
	b.cres.FloorSeconds = b.cres.WriteFloorSeconds + b.cres.ChainSeconds
	b.cres.KubeQPS = kubeQPS(b.ccfg.OperatorFlags)
	b.cres.KubeFloorSeconds = b.cres.KubeWritesPerObject * float64(b.ccfg.N) / b.cres.KubeQPS
}

// defaultKubeQPS is the operator's --kube-api-qps default
// (cmd/azure-private-endpoint-operator).
const defaultKubeQPS = 100

// kubeQPS is the last --kube-api-qps of the operator's flags (as
// --kube-api-qps=N or --kube-api-qps N), or its default.
func kubeQPS(flags []string) float64 {
	qps := float64(defaultKubeQPS)
	for i, f := range flags {
		v, ok := strings.CutPrefix(f, "--kube-api-qps=")
		if !ok && f == "--kube-api-qps" && i+1 < len(flags) {
			v, ok = flags[i+1], true
		}
		if q, err := strconv.ParseFloat(v, 64); ok && err == nil && q > 0 {
			qps = q
		}
	}
	return qps
}

// pollReady waits for every object Ready and resolving. It reads the
// watch's cache, which costs nothing, every half second: the time is
// measured to that.
func (b *consumerBench) pollReady(ctx context.Context, start time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, b.ccfg.Timeout)
	defer cancel()
	lastLog, ready, allReadyLogged := time.Now(), 0, false
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if exited, err := b.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w (log %s)", err, b.op.LogFile)
		}
		list := &v1alpha1.AzurePrivateEndpointList{}
		if err := b.objects.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, nil //nolint:nilerr // the API server may be busy; read again
		}
		ready = 0
		for i := range list.Items {
			if c := meta.FindStatusCondition(list.Items[i].Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue {
				ready++
			}
		}
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			b.logf("  %.0fs: %d of %d Ready", time.Since(start).Seconds(), ready, b.ccfg.N)
		}
		if ready < b.ccfg.N {
			return false, nil
		}
		err := b.allResolve(list)
		if err != nil && !allReadyLogged {
			allReadyLogged = true
			b.logf("  %.0fs: all %d Ready, not all resolving yet: %v", time.Since(start).Seconds(), b.ccfg.N, err)
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("convergence: %w (%d of %d Ready; resolution: %w)", err, ready, b.ccfg.N, b.lastResolveError())
	}
	return nil
}

func (b *consumerBench) lastResolveError() error {
	list := &v1alpha1.AzurePrivateEndpointList{}
	if err := b.sb.Client.List(context.Background(), list); err != nil {
		return err
	}
	return b.allResolve(list)
}

// allResolve checks from azuresim that each object's API name resolves to
// its endpoint's address from its consumer network.
func (b *consumerBench) allResolve(list *v1alpha1.AzurePrivateEndpointList) error {
	for i := range list.Items {
		o := &list.Items[i]
		if len(o.Status.IPAddresses) == 0 || len(o.Status.FQDNs) == 0 {
			return fmt.Errorf("%s/%s has no address or names", o.Namespace, o.Name)
		}
		vnet, _, _ := strings.Cut(o.Spec.SubnetID, "/subnets/")
		r := b.sb.Sim.Resolve(vnet, o.Status.FQDNs[0])
		if r.Status != azuresim.ResolveOK || len(r.Addresses) != 1 || r.Addresses[0] != o.Status.IPAddresses[0] {
			return fmt.Errorf("%s from %s: %+v, want %s", o.Status.FQDNs[0], vnet, r, o.Status.IPAddresses[0])
		}
	}
	return nil
}

// restart replaces the operator with one whose drift and DNS checks are
// compressed by the same ratio, and measures its first drift interval.
func (b *consumerBench) restart(ctx context.Context) error {
	if err := b.stopOperator(); err != nil {
		return err
	}
	if _, err := b.phase(0); err != nil {
		return err
	}
	ratio := float64(10*time.Minute) / float64(b.ccfg.SteadyDrift)
	dnsCheck := time.Duration(float64(time.Hour) / ratio)
	if err := b.startOperator(ctx, "operator-2", "--private-endpoint-drift-interval="+b.ccfg.SteadyDrift.String(),
		"--private-endpoint-dns-check-interval="+dnsCheck.String()); err != nil {
		return err
	}
	start := time.Now()
	if err := b.idle(ctx, b.ccfg.SteadyDrift+b.ccfg.SteadyDrift/10); err != nil {
		return err
	}
	var err error
	b.cres.Restart, err = b.phase(time.Since(start))
	for op, n := range b.cres.Restart.ARMByOperation {
		if strings.Contains(op, "privateDnsZones") {
			b.cres.RestartDNSReads += n
		}
	}
	b.logf("restart: %+v", b.cres.Restart)
	return err
}

// steady measures SteadyWindow with nothing changing, scaled to an hour at
// the default intervals.
func (b *consumerBench) steady(ctx context.Context) error {
	start := time.Now()
	if err := b.idle(ctx, b.ccfg.SteadyWindow); err != nil {
		return err
	}
	var err error
	if b.cres.Steady, err = b.phase(time.Since(start)); err != nil {
		return err
	}
	scale := float64(time.Hour) / (float64(b.ccfg.SteadyWindow) * float64(10*time.Minute) / float64(b.ccfg.SteadyDrift))
	b.cres.SteadyReadsPerHour = float64(b.cres.Steady.ARMReads)*scale + float64(b.cres.RestartDNSReads)
	b.cres.SteadyWritesPerHour = float64(b.cres.Steady.ARMWrites+b.kubeWrites()) * scale
	b.logf("steady: %+v", b.cres.Steady)
	return nil
}

// delete deletes every object and waits until they are gone and Azure holds
// none of their endpoints and zones.
func (b *consumerBench) delete(ctx context.Context) error {
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range b.ccfg.N {
		g.Go(func() error { return client.IgnoreNotFound(b.sb.Client.Delete(gctx, b.object(i))) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, b.ccfg.Timeout)
	defer cancel()
	left := ""
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		list := &v1alpha1.AzurePrivateEndpointList{}
		if err := b.objects.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return false, nil //nolint:nilerr // read again
		}
		pes, zones := len(b.sb.Sim.Resources("Microsoft.Network/privateEndpoints")), len(b.sb.Sim.Resources("Microsoft.Network/privateDnsZones"))
		left = fmt.Sprintf("%d objects, %d endpoints, %d zones", len(list.Items), pes, zones)
		return len(list.Items) == 0 && pes == 0 && zones == 0, nil
	})
	if err != nil {
		return fmt.Errorf("deletion: %w (left: %s)", err, left)
	}
	b.cres.DeleteSeconds = time.Since(start).Seconds()
	b.cres.Delete, err = b.phase(time.Since(start))
	b.logf("deleted after %.1fs: %+v", b.cres.DeleteSeconds, b.cres.Delete)
	return err
}

// phase is bench.phase with the operator's writes to AzurePrivateEndpoint
// objects counted as Kubernetes writes, and paced requests counted.
func (b *consumerBench) phase(d time.Duration) (Phase, error) {
	kube := b.kubeWritesSince()
	p, err := b.bench.phase(d)
	p.WCWrites = kube
	if d > 0 && b.cres.Converge.Seconds == 0 {
		b.cres.KubeWritesPerObject = float64(kube) / float64(b.ccfg.N)
		if v, err := scrape(context.Background(), b.op.MetricsURL, `azure_private_endpoint_operator_azure_requests_paced_total{class="writes"}`); err == nil {
			b.cres.Paced = int(v)
		}
	}
	return p, err
}

// kubeWritesSince counts the operator's writes to AzurePrivateEndpoint
// objects in the audit log since the last phase (bench.phase advances the
// mark).
func (b *consumerBench) kubeWritesSince() int {
	events, err := b.sb.AuditEvents()
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range events[min(b.audits, len(events)):] {
		if strings.HasPrefix(e.UserAgent, "azure-private-endpoint-operator") && e.ObjectRef.Resource == "azureprivateendpoints" && e.ResponseStatus.Code < http.StatusBadRequest {
			n++
		}
	}
	return n
}

func (b *consumerBench) kubeWrites() int { return b.cres.Steady.WCWrites }

// runConsumers runs the consumer scenario for each zone layout.
func runConsumers(ctx context.Context, opts options, bin string, logf func(string, ...any)) ([]ConsumerResult, error) {
	var out []ConsumerResult
	for _, zone := range opts.consumerZones {
		shared := zone == "shared"
		dir, err := os.MkdirTemp("", fmt.Sprintf("apeo-consumer-%d-", opts.consumerN))
		if err != nil {
			return nil, err
		}
		res, err := RunConsumer(ctx, ConsumerConfig{
			N: opts.consumerN, Subscriptions: opts.subscriptions, SharedZone: shared, OperatorBinary: bin, OperatorFlags: opts.operatorFlags, AzureLatency: opts.latency,
			SteadyDrift: opts.steadyDrift, SteadyWindow: opts.steadyWindow, Timeout: opts.timeout, Concurrency: opts.consumerConcurrency,
			ConvergeOnly: opts.consumerConvergeOnly, Dir: dir, Logf: logf,
		})
		if err != nil {
			return nil, fmt.Errorf("consumer run (shared zone %v): %w (files kept in %s)", shared, err, dir)
		}
		out = append(out, res)
		if !opts.keep {
			_ = os.RemoveAll(dir)
		}
	}
	return out, nil
}
