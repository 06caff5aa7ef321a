package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// Config is one benchmark run.
type Config struct {
	N             int
	Subscriptions int
	// Schema is the CAPZ capzsim mimics (its AzureCluster schema).
	Schema testenv.Schema
	// OperatorBinary is the operator under test.
	OperatorBinary string
	// OperatorEnv is added to the operator's environment (e.g. GOMEMLIMIT,
	// as the binary sets it from a container's memory limit).
	OperatorEnv []string
	// OperatorFlags are added to the operator's command line (after the
	// scenario's own, so they win).
	OperatorFlags []string
	// AzureLatency is how long Azure's long-running operations take.
	AzureLatency time.Duration
	// SteadyDrift is --drift-check-interval during the steady phase; the
	// default is 10 minutes, so the phase is time-compressed by that ratio.
	SteadyDrift time.Duration
	// SteadyWindow is how long the steady phase is measured.
	SteadyWindow time.Duration
	// Timeout bounds each phase.
	Timeout time.Duration
	// Dir holds the run's files; the operator logs stay there.
	Dir  string
	Logf func(format string, args ...any)
	// DNS runs the operator in DNS mode (--wiring-dns) and, after the
	// wiring converged, watches DNS for DNSWindow (or until every WC has
	// GSDNSZoneReady); the restart, steady and delete phases are not run:
	// under Azure's Private DNS limits the records of N WCs created at once
	// take longer than a benchmark run.
	DNS       bool
	DNSWindow time.Duration
	// DNSPerCluster keeps DNS mode's default layout, a zone per WC in the
	// MC's subscription (at N = 1,000 Azure's limit of zones per
	// subscription and per linked network); otherwise every WC's API name
	// goes into one shared MC-side zone ({{.BaseDomain}}, api.{{.Cluster}}).
	DNSPerCluster bool
	// ProfileDir, when set, receives the operator's heap profile at its
	// peak heap, its CPU profiles while the wiring converges and its
	// metrics when it has converged (profile.go).
	ProfileDir string
	// ScaleOut sets up the world past Azure's 1,000s (scaleout.go): the
	// MC's ingress gets 15 further frontends on two load balancers and
	// the MC's subscription two high-scale networks for endpoints, and
	// the operator the flags that use them (--mc-ingress-shard-frontends,
	// --mc-endpoint-subnets). Below 900 WCs they change nothing.
	ScaleOut bool
}

// DNSBaseDomain is the base domain of the benchmark's DNS mode.
const DNSBaseDomain = "bench.internal"

// Phase is what the operator did during one phase.
type Phase struct {
	Seconds float64 `json:"seconds"`
	// MCWrites are the operator's writes to the MC AzureCluster (audit log).
	MCWrites int `json:"mcWrites"`
	// WCWrites are its writes to WC AzureClusters (object and status), in
	// all and at most to one WC.
	WCWrites    int `json:"wcWrites"`
	WCWritesMax int `json:"wcWritesMax"`
	// ObjectWrites are its writes to the objects it makes itself
	// (AzurePrivateEndpoint, AzurePrivateLinkService; object and status):
	// the MC's endpoints beyond its AzureCluster and its further ingress
	// services.
	ObjectWrites int `json:"objectWrites,omitempty"`
	// Conflicts are writes the API server refused with 409.
	Conflicts int `json:"conflicts"`
	// ARMReads and ARMWrites are the operator's ARM requests (any status);
	// ARMByOperation splits them by method and resource type.
	ARMReads       int            `json:"armReads"`
	ARMWrites      int            `json:"armWrites"`
	ARMByOperation map[string]int `json:"armByOperation"`
	TokenRequests  int            `json:"tokenRequests"`
	Throttled      int            `json:"throttled"`
	// ThrottledByOperation splits the 429s by method and resource type.
	ThrottledByOperation map[string]int `json:"throttledByOperation,omitempty"`
	// Refused are the requests Azure refused in the phase, of every
	// principal (the operator's, CAPZ's and ASO's), by request and error
	// code; the answers a client expects are left out (refusal).
	Refused []azuresim.ErrorAnswer `json:"refused,omitempty"`
	// CPUSeconds is the operator's CPU time in the phase (both processes'
	// around the restart; the first one's stop counts in no phase).
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Result is one run's figures.
type Result struct {
	N             int    `json:"n"`
	Subscriptions int    `json:"subscriptions"`
	CAPZ          string `json:"capz"`
	// Converge runs from creating the MC and N WCs to every WC annotated and
	// the MC holding N endpoints; CAPZDoneSeconds is when the last endpoint
	// was provisioned in Azure, AfterCAPZSeconds the convergence after that.
	Converge         Phase   `json:"converge"`
	CAPZDoneSeconds  float64 `json:"capzDoneSeconds"`
	AfterCAPZSeconds float64 `json:"afterCapzSeconds"`
	// Restart is the first SteadyDrift after the operator restarted on a
	// converged world, extended until it has read no network interface
	// for a drift interval and 10 s (settle); Steady the SteadyWindow
	// after that.
	Restart Phase `json:"restart"`
	Steady  Phase `json:"steady"`
	// SteadyReadsPerHour scales Steady's reads to an hour at the default
	// 10-minute drift check.
	SteadyReadsPerHour  float64 `json:"steadyReadsPerHourAtDefaults"`
	SteadyWritesPerHour float64 `json:"steadyWritesPerHourAtDefaults"`
	// Delete runs from deleting every WC until every WC is gone (released by
	// the operator and CAPZ); DeleteMCEmptySeconds until the MC held no
	// endpoint.
	Delete               Phase   `json:"delete"`
	DeleteMCEmptySeconds float64 `json:"deleteMCEmptySeconds"`
	// MCObjectBytes is the MC AzureCluster's JSON size when converged.
	MCObjectBytes int `json:"mcObjectBytes"`
	// With ScaleOut: the MC's ingress services (the hand-made first and
	// the operator's) and its endpoints beyond the AzureCluster, as
	// AzurePrivateEndpoint objects, when converged.
	ScaleOut          bool `json:"scaleOut,omitempty"`
	IngressServices   int  `json:"ingressServices,omitempty"`
	MCEndpointObjects int  `json:"mcEndpointObjects,omitempty"`
	// The scale-out world the run had: the further frontends given to
	// --mc-ingress-shard-frontends and the high-scale networks of
	// --mc-endpoint-subnets; the report describes the run from them.
	ShardFrontends   []string `json:"shardFrontends,omitempty"`
	EndpointNetworks int      `json:"endpointNetworks,omitempty"`
	// CPUSeconds over the whole run (both operator processes); PeakRSSMiB
	// (VmHWM: the binary's mapped code included), PeakAnonMiB (the
	// anonymous part, sampled every 2 s) and PeakHeapMiB the highest of
	// either.
	CPUSeconds  float64 `json:"cpuSeconds"`
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	PeakAnonMiB float64 `json:"peakAnonMiB"`
	PeakHeapMiB float64 `json:"peakHeapMiB"`
	// Settings.
	AzureLatencySeconds float64 `json:"azureLatencySeconds"`
	SteadyDriftSeconds  float64 `json:"steadyDriftSeconds"`
	SteadyWindowSeconds float64 `json:"steadyWindowSeconds"`
	// DNS mode: DNSReady WCs had GSDNSZoneReady DNSWatchedSeconds after
	// the wiring converged (DNSDoneSeconds from creation, when all did);
	// DNSRates are each subscription's Private DNS requests from creation
	// to the end of the watch (every principal's: only the operator writes
	// DNS), the MC's first.
	DNS               bool               `json:"dns,omitempty"`
	DNSReady          int                `json:"dnsReady,omitempty"`
	DNSWatchedSeconds float64            `json:"dnsWatchedSeconds,omitempty"`
	DNSDoneSeconds    float64            `json:"dnsDoneSeconds,omitempty"`
	DNSRates          []azuresim.DNSRate `json:"dnsRates,omitempty"`
	// DNSPhase is what the operator did while DNS was watched.
	DNSPhase *Phase `json:"dnsPhase,omitempty"`
}

// bench is one run in progress.
type bench struct {
	cfg       Config
	converged time.Time // when the wiring converged
	sb        *sandbox.Sandbox
	op        *sandbox.Operator
	res       Result
	audits    int // audit events already attributed to a phase

	// objects reads what the harness polls (AzureClusters, the operator's
	// objects) from a watch: listing every object every 2 s took a fifth of
	// this process's CPU in the wiring at N = 1,000 (a quarter in the
	// consumer scenario, and about 8 % of the API server's there), on the
	// cores the operator is measured on.
	objects client.Reader

	pprof string   // the running operator's profiler (http://host:port), with ProfileDir
	subs  []string // the WCs' subscriptions

	mu       sync.Mutex
	peakHeap float64
	profiled float64 // heap in use when the last heap profile was saved
	peakAnon int64
	usage    sandbox.Usage // of processes already stopped
	cpuMark  time.Duration // the operator's CPU when the last phase ended
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.Logf != nil {
		b.cfg.Logf(format, args...)
	}
}

// Run runs the benchmark once.
func Run(ctx context.Context, cfg Config) (Result, error) {
	b := &bench{cfg: cfg, res: Result{CAPZ: string(cfg.Schema),
		N: cfg.N, Subscriptions: cfg.Subscriptions, AzureLatencySeconds: cfg.AzureLatency.Seconds(), DNS: cfg.DNS, ScaleOut: cfg.ScaleOut,
		SteadyDriftSeconds: cfg.SteadyDrift.Seconds(), SteadyWindowSeconds: cfg.SteadyWindow.Seconds(),
	}}
	throttling := azuresim.DefaultThrottling()
	// CAPZ is not what is measured; its requests would only slow the run.
	throttling.Exempt = []string{sandbox.CAPZClientID}
	subs := []string{}
	for i := 0; i < cfg.Subscriptions; i++ {
		subs = append(subs, sandbox.FleetWCSubscription(i, cfg.Subscriptions))
	}
	b.subs = subs
	ingress := capzsim.Ingress{AutoApprovedSubscriptions: subs}
	if cfg.ScaleOut {
		ingress.Frontends = shardFrontendNames()
		b.res.ShardFrontends = ingress.Frontends
		b.res.EndpointNetworks = beyondNetworks
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Dir: cfg.Dir, Schema: cfg.Schema, Audit: true, Latency: cfg.AzureLatency, MaxPollInterval: azureMaxPollInterval, Throttling: throttling,
		CAPZResync: time.Second, CAPZConcurrency: 16,
		Ingress:    map[string]capzsim.Ingress{sandbox.FleetIdentityNS + "/" + sandbox.FleetMCName: ingress},
		Principals: []azuresim.Principal{{TenantID: sandbox.FleetTenantID, ClientID: sandbox.FleetOperatorClient, ClientSecret: sandbox.FleetOperatorSecret}},
		Logf:       cfg.Logf,
	})
	if err != nil {
		return b.res, err
	}
	b.sb = sb
	defer func() { _ = sb.Stop() }()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	azureClusters := &unstructured.Unstructured{}
	azureClusters.SetGroupVersionKind(capz.AzureClusterGVK)
	if b.objects, err = watchObjects(watchCtx, sb, azureClusters, &v1alpha1.AzurePrivateEndpoint{}, &v1alpha1.AzurePrivateLinkService{}); err != nil {
		return b.res, err
	}
	if err := sb.CreateIdentity(ctx, sandbox.FleetIdentity()); err != nil {
		return b.res, err
	}
	if cfg.ScaleOut {
		if err := seedBeyondNetworks(sb.Sim); err != nil {
			return b.res, err
		}
	}
	// Sampling of each operator ends when it exits, or with the run.
	ctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	phases := []func(context.Context) error{b.converge, b.restart, b.steady, b.delete}
	if cfg.DNS {
		phases = []func(context.Context) error{b.converge, b.watchDNS}
	}
	for _, phase := range phases {
		if err := phase(ctx); err != nil {
			if b.op != nil {
				_ = b.op.Stop(30 * time.Second)
			}
			return b.res, err
		}
	}
	stopSampling()
	if err := b.stopOperator(); err != nil {
		return b.res, err
	}
	b.res.CPUSeconds = b.usage.CPU.Seconds()
	b.res.PeakRSSMiB = float64(b.usage.PeakRSS) / (1 << 20)
	b.mu.Lock()
	b.res.PeakHeapMiB = b.peakHeap / (1 << 20)
	b.res.PeakAnonMiB = float64(b.peakAnon) / (1 << 20)
	b.mu.Unlock()
	return b.res, nil
}

func (b *bench) startOperator(ctx context.Context, name string, extra ...string) error {
	args := append([]string{
		"--management-cluster-name=" + sandbox.FleetMCName, "--management-cluster-namespace=" + sandbox.FleetIdentityNS,
	}, extra...)
	if b.cfg.DNS {
		args = append(args, "--wiring-dns", "--wiring-dns-base-domain="+DNSBaseDomain)
		if !b.cfg.DNSPerCluster {
			args = append(args, "--wiring-dns-mc-zone={{.BaseDomain}}", "--wiring-dns-mc-records=api.{{.Cluster}}")
		}
	}
	if b.cfg.ScaleOut {
		args = append(args, scaleOutFlags(b.subs)...)
	}
	pprof := "" // the operator's profiler, with ProfileDir
	if b.cfg.ProfileDir != "" {
		addr, err := sandbox.FreeAddress()
		if err != nil {
			return err
		}
		args = append(args, "--pprof-bind-address="+addr)
		pprof = "http://" + addr
	}
	args = append(args, b.cfg.OperatorFlags...)
	op, err := b.sb.StartOperatorWithEnv(b.cfg.OperatorBinary, filepath.Join(b.cfg.Dir, name+".log"), b.cfg.OperatorEnv, args...)
	if err != nil {
		return err
	}
	b.op = op
	b.pprof = pprof
	go b.sample(ctx, op, pprof, name)
	b.logf("operator %s started (log %s)", name, op.LogFile)
	return nil
}

// stopOperator stops the operator and adds its usage to the run's.
func (b *bench) stopOperator() error {
	if b.op == nil {
		return nil
	}
	u, uerr := b.op.Usage()
	err := b.op.Stop(30 * time.Second)
	b.op = nil
	if uerr != nil {
		return uerr
	}
	b.usage.CPU += u.CPU
	b.usage.PeakRSS = max(b.usage.PeakRSS, u.PeakRSS)
	return err
}

// converge creates the MC and N WCs at once and waits for the wiring.
func (b *bench) converge(ctx context.Context) error {
	if err := b.startOperator(ctx, "operator-1"); err != nil {
		return err
	}
	b.sb.Sim.ResetCounters()
	b.sb.Sim.ResetPrivateDNSRates()
	start := time.Now()
	objs := []*unstructured.Unstructured{sandbox.FleetMC()}
	for i := 0; i < b.cfg.N; i++ {
		objs = append(objs, sandbox.FleetWC(i, b.cfg.Subscriptions, b.cfg.Schema))
	}
	for i := 0; i < 10 && i < b.cfg.N; i++ {
		if err := b.sb.EnsureNamespace(ctx, sandbox.FleetWCNamespace(i)); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		g.Go(func() error { return b.sb.Client.Create(gctx, o) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("creating clusters: %w", err)
	}
	b.logf("created 1 MC and %d WCs in %.1fs", b.cfg.N, time.Since(start).Seconds())
	defer b.profilePhase(ctx, "operator-1")()
	var capzDone time.Time
	err := b.poll(ctx, "convergence", func(s state) bool {
		if capzDone.IsZero() && b.endpointsProvisioned() >= 2*b.cfg.N {
			capzDone = time.Now()
			b.logf("all %d endpoints provisioned in Azure after %.1fs", 2*b.cfg.N, capzDone.Sub(start).Seconds())
		}
		return s.annotated == b.cfg.N && s.ready == b.cfg.N && s.mcEndpoints == b.cfg.N
	})
	if err != nil {
		return err
	}
	end := time.Now()
	if err := b.mcConditionSettled(ctx); err != nil {
		return err
	}
	if capzDone.IsZero() {
		capzDone = end
	}
	b.res.CAPZDoneSeconds = capzDone.Sub(start).Seconds()
	b.res.AfterCAPZSeconds = end.Sub(capzDone).Seconds()
	b.converged = end
	if b.cfg.ProfileDir != "" {
		b.saveMetrics(ctx, "operator-1", "converged")
	}
	b.res.Converge, err = b.phase(end.Sub(start))
	if err != nil {
		return err
	}
	if err := b.recordConverged(ctx); err != nil {
		return err
	}
	b.logf("converged after %.1fs (%.1fs after capzsim): %+v", end.Sub(start).Seconds(), b.res.AfterCAPZSeconds, b.res.Converge)
	return nil
}

// mcConditionSettle is how long after the operator's last write to the
// MC its condition can still be written with news of the convergence: the
// operator writes a new message only (its counts) --mc-condition-interval
// (30 s) after its last write, and then at the MC's next pass.
const mcConditionSettle = 35 * time.Second

// mcConditionSettled waits, after the WCs converged, until the operator
// has not written the MC for mcConditionSettle, so that the converge
// phase counts the MC's last paced condition write. Without it, a write
// still due when the WCs were done was lost with the first process, and
// the restarted one made it after its own wait of the interval, in the
// steady window (TestScaleOutSmoke failed so in CI: the restart wrote
// nothing, the steady window the MC's status once). The phase's time
// stays the WCs'; its counts (writes, reads, CPU) take in the wait.
func (b *bench) mcConditionSettled(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, mcConditionSettle+b.cfg.Timeout)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(context.Context) (bool, error) {
		events, err := b.sb.AuditEvents()
		if err != nil {
			return false, err
		}
		var last time.Time
		for _, e := range events {
			if strings.HasPrefix(e.UserAgent, "azure-private-endpoint-operator") && e.ObjectRef.Resource == "azureclusters" &&
				e.ObjectRef.Name == sandbox.FleetMCName && e.ObjectRef.Namespace == sandbox.FleetIdentityNS && e.StageTimestamp.After(last) {
				last = e.StageTimestamp
			}
		}
		return time.Since(last) >= mcConditionSettle, nil
	})
}

// recordConverged records the converged world's MC: its object's size and
// what the operator made for it.
func (b *bench) recordConverged(ctx context.Context) error {
	mc, err := b.get(ctx, sandbox.FleetIdentityNS, sandbox.FleetMCName)
	if err != nil {
		return err
	}
	raw, err := mc.MarshalJSON()
	if err != nil {
		return err
	}
	b.res.MCObjectBytes = len(raw)
	if b.cfg.ScaleOut {
		services, objects, err := b.scaleOutObjects(ctx)
		if err != nil {
			return err
		}
		b.res.IngressServices, b.res.MCEndpointObjects = 1+services, objects
		b.logf("the MC has %d ingress services and %d endpoints beyond its AzureCluster", b.res.IngressServices, objects)
	}
	return nil
}

// watchDNS watches DNS mode after the wiring converged, for DNSWindow or
// until every WC has GSDNSZoneReady, and records the Private DNS requests
// of each subscription against Azure's limits.
func (b *bench) watchDNS(ctx context.Context) error {
	start := b.converged
	deadline := start.Add(b.cfg.DNSWindow)
	var last state
	err := wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		if exited, err := b.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w (log %s)", err, b.op.LogFile)
		}
		s, err := b.read(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // the API server may be busy; read again
		}
		if s.dnsReady != last.dnsReady && time.Since(start) > 0 {
			b.logf("  DNS: %d of %d WCs GSDNSZoneReady %.0fs after the wiring", s.dnsReady, b.cfg.N, time.Since(start).Seconds())
		}
		last = s
		return s.dnsReady == b.cfg.N || time.Now().After(deadline), nil
	})
	if err != nil {
		return err
	}
	b.res.DNSReady, b.res.DNSWatchedSeconds = last.dnsReady, time.Since(start).Seconds()
	if last.dnsReady == b.cfg.N {
		b.res.DNSDoneSeconds = b.res.Converge.Seconds + b.res.DNSWatchedSeconds
	}
	b.res.DNSRates = dnsRates(b.sb.Sim.PrivateDNSRates())
	b.logf("DNS: %d of %d WCs ready %.0fs after the wiring; Private DNS requests: %+v", last.dnsReady, b.cfg.N, b.res.DNSWatchedSeconds, b.res.DNSRates)
	p, err := b.phase(time.Since(start))
	if err != nil {
		return err
	}
	b.res.DNSPhase = &p
	return nil
}

// restart replaces the operator with one whose drift check is compressed,
// and measures its first drift interval on the converged world.
func (b *bench) restart(ctx context.Context) error {
	if err := b.stopOperator(); err != nil {
		return fmt.Errorf("stopping the first operator: %w", err)
	}
	if _, err := b.phase(0); err != nil { // attribute the stop to no phase
		return err
	}
	if err := b.startOperator(ctx, "operator-2", steadyDriftFlags(b.cfg.SteadyDrift)...); err != nil {
		return err
	}
	start := time.Now()
	defer b.profilePhase(ctx, "operator-2-restart")()
	if err := b.settle(ctx, start.Add(b.cfg.SteadyDrift)); err != nil {
		return err
	}
	var err error
	b.res.Restart, err = b.phase(time.Since(start))
	b.logf("restart: %+v", b.res.Restart)
	return err
}

// steadyDriftFlags compress the drift intervals of the restarted
// operator to d: the wiring's, and that of the AzurePrivateEndpoints it
// makes beyond the MC's AzureCluster (each checks its endpoint once per
// --private-endpoint-drift-interval, against the wiring's list of the
// MC's subscription). Without the list, compressing theirs read 16.7
// endpoints a second at N = 3,000 (run i, docs/benchmarks.md), and the
// harness left it at its default, outside the steady window. The few
// AzurePrivateLinkServices of the MC's ingress keep theirs: each reads
// its interface at every drift check, and compressed, those reads alone
// kept the restart from settling (settle waits for a quiet minute of
// interface reads; runs i and k).
func steadyDriftFlags(d time.Duration) []string {
	return []string{"--drift-check-interval=" + d.String(), "--private-endpoint-drift-interval=" + d.String()}
}

// restartSettled is how long past a drift interval the restarted
// operator must have read no network interface for its restart to be
// over.
const restartSettled = 10 * time.Second

// settle waits until not before and until the operator has read no
// network interface for a whole drift interval and restartSettled (at
// most Timeout): the restart phase is the first drift interval, extended
// until the restarted operator's reads are done. A new process reads each
// endpoint's interface once for its address (privateendpoints.Observer
// keeps it), within its read budget: at the default 10-minute drift check
// that fits in the first interval, at the compressed one it did not, and
// the steady window counted the rest (at N = 3,000: 3,000 interface reads
// there, "8,682 reads per hour", docs/benchmarks.md). A quiet spell of 30
// s was not enough: at N = 3,000 the restarted operator read 3,065
// interfaces, none for 30 s, and 2,938 more in the steady window (run g,
// docs/benchmarks.md); a whole drift interval without one means every
// cluster's drift check passed finding each address known.
func (b *bench) settle(ctx context.Context, notBefore time.Time) error {
	nicReads := func() int {
		n := 0
		for _, r := range b.sb.Sim.Counters().Requests {
			if r.Principal == sandbox.FleetOperatorClient && r.Method == http.MethodGet && r.ResourceType == "Microsoft.Network/networkInterfaces" {
				n += r.Count
			}
		}
		return n
	}
	ctx, cancel := context.WithTimeout(ctx, time.Until(notBefore)+b.cfg.Timeout)
	defer cancel()
	last, quiet := nicReads(), time.Now()
	return wait.PollUntilContextCancel(ctx, time.Second, false, func(context.Context) (bool, error) {
		if exited, err := b.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w (log %s)", err, b.op.LogFile)
		}
		if n := nicReads(); n != last {
			last, quiet = n, time.Now()
		}
		return time.Now().After(notBefore) && time.Since(quiet) >= b.cfg.SteadyDrift+restartSettled, nil
	})
}

// steady measures SteadyWindow with nothing changing.
func (b *bench) steady(ctx context.Context) error {
	start := time.Now()
	defer b.profilePhase(ctx, "operator-2-steady")()
	if err := b.idle(ctx, b.cfg.SteadyWindow); err != nil {
		return err
	}
	var err error
	b.res.Steady, err = b.phase(time.Since(start))
	if err != nil {
		return err
	}
	// At the default 10-minute drift check, an hour holds 6 checks; the
	// window held SteadyWindow/SteadyDrift of them.
	checks := b.cfg.SteadyWindow.Seconds() / b.cfg.SteadyDrift.Seconds()
	b.res.SteadyReadsPerHour = float64(b.res.Steady.ARMReads) / checks * 6
	b.res.SteadyWritesPerHour = float64(b.res.Steady.ARMWrites+b.res.Steady.MCWrites+b.res.Steady.WCWrites+b.res.Steady.ObjectWrites) / checks * 6
	b.logf("steady: %+v", b.res.Steady)
	return nil
}

// delete deletes every WC and waits until the MC holds no endpoint.
func (b *bench) delete(ctx context.Context) error {
	start := time.Now()
	defer b.profilePhase(ctx, "operator-2-delete")()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := 0; i < b.cfg.N; i++ {
		g.Go(func() error {
			return client.IgnoreNotFound(b.sb.Client.Delete(gctx, sandbox.FleetWC(i, b.cfg.Subscriptions, b.cfg.Schema)))
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("deleting clusters: %w", err)
	}
	var mcEmpty time.Time
	if err := b.poll(ctx, "deletion", func(s state) bool {
		if mcEmpty.IsZero() && s.mcEndpoints == 0 {
			mcEmpty = time.Now()
		}
		return s.mcEndpoints == 0 && s.wcs == 0
	}); err != nil {
		return err
	}
	b.res.DeleteMCEmptySeconds = mcEmpty.Sub(start).Seconds()
	var err error
	b.res.Delete, err = b.phase(time.Since(start))
	b.logf("deleted: %+v", b.res.Delete)
	return err
}

// idle waits d, failing early if the operator exits.
func (b *bench) idle(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d)
	return wait.PollUntilContextCancel(ctx, time.Second, false, func(context.Context) (bool, error) {
		if exited, err := b.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w (log %s)", err, b.op.LogFile)
		}
		return time.Now().After(deadline), nil
	})
}

// state is what one poll of the API server saw.
type state struct {
	wcs         int // WCs that exist
	annotated   int // WCs with both IP annotations
	ready       int // WCs with the GSPrivateLinksReady condition True
	dnsReady    int // WCs with the GSDNSZoneReady condition True
	mcEndpoints int // the MC's private endpoints: entries in its spec and objects beyond it
	mcObjects   int // of which objects (ScaleOut)
}

// poll reads the world every 2 seconds until done, for at most Timeout.
func (b *bench) poll(ctx context.Context, what string, done func(state) bool) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	var last state
	lastLog := time.Now()
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if exited, err := b.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited: %w (log %s)", err, b.op.LogFile)
		}
		s, err := b.read(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // the API server may be busy; read again
		}
		last = s
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			b.logf("  %s: %d WCs, %d annotated, %d ready, %d DNS ready; MC has %d endpoints (%d beyond its AzureCluster)", what, s.wcs, s.annotated, s.ready, s.dnsReady, s.mcEndpoints, s.mcObjects)
		}
		return done(s), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %d WCs annotated, MC holds %d endpoints)", what, err, last.annotated, last.mcEndpoints)
	}
	return nil
}

func (b *bench) read(ctx context.Context) (state, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := b.objects.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return state{}, err
	}
	var s state
	api := clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingress := clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
	for i := range list.Items {
		u := &list.Items[i]
		if u.GetName() == sandbox.FleetMCName && u.GetNamespace() == sandbox.FleetIdentityNS {
			subnets, _, _ := unstructured.NestedSlice(u.Object, "spec", "networkSpec", "subnets")
			for _, sn := range subnets {
				snm, _ := sn.(map[string]any)
				pes, _, _ := unstructured.NestedSlice(snm, "privateEndpoints")
				s.mcEndpoints += len(pes)
			}
			continue
		}
		s.wcs++
		if a := u.GetAnnotations(); a[api] != "" && a[ingress] != "" {
			s.annotated++
		}
		s.ready += boolInt(conditionTrue(u, clusterlink.ConditionGSPrivateLinksReady))
		s.dnsReady += boolInt(conditionTrue(u, clusterlink.ConditionGSDNSZoneReady))
	}
	if b.cfg.ScaleOut {
		_, objects, err := b.scaleOutObjects(ctx)
		if err != nil {
			return state{}, err
		}
		s.mcObjects = objects
		s.mcEndpoints += objects
	}
	return s, nil
}

// watchObjects is a cache of the sandbox's objects of the given kinds,
// synced, until ctx ends.
func watchObjects(ctx context.Context, sb *sandbox.Sandbox, kinds ...client.Object) (client.Reader, error) {
	c, err := cache.New(sb.Env.Config, cache.Options{Scheme: sb.Env.Scheme})
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if _, err := c.GetInformer(ctx, k); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, errors.New("the harness's watch did not sync")
	}
	return c, nil
}

func (b *bench) get(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	return u, b.sb.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
}

func (b *bench) endpointsProvisioned() int {
	n := 0
	for _, r := range b.sb.Sim.Resources("Microsoft.Network/privateEndpoints") {
		if r.ProvisioningState == "Succeeded" {
			n++
		}
	}
	return n
}

// throttled counts n 429s of an operation.
func (p *Phase) throttled(op string, n int) {
	p.Throttled += n
	if p.ThrottledByOperation == nil {
		p.ThrottledByOperation = map[string]int{}
	}
	p.ThrottledByOperation[op] += n
}

// phase collects the operator's figures since the last phase and starts
// counting afresh.
func (b *bench) phase(d time.Duration) (Phase, error) {
	p := Phase{Seconds: d.Seconds(), ARMByOperation: map[string]int{}}
	c := b.sb.Sim.Counters()
	b.sb.Sim.ResetCounters()
	for _, r := range c.Requests {
		if r.Principal != sandbox.FleetOperatorClient {
			continue
		}
		op := r.Method + " " + r.ResourceType
		if r.Status >= http.StatusBadRequest {
			// Refused requests apart, with Azure's status: a retry's
			// cause shows in the report.
			op += fmt.Sprintf(" (%d)", r.Status)
		}
		p.ARMByOperation[op] += r.Count
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			p.ARMReads += r.Count
		} else {
			p.ARMWrites += r.Count
		}
		if r.Status == http.StatusTooManyRequests {
			p.throttled(r.Method+" "+r.ResourceType, r.Count)
		}
	}
	p.Refused = refused(c.ErrorAnswers)
	p.TokenRequests = c.TokensByClient[sandbox.FleetOperatorClient]
	cpu, err := b.cpuSoFar()
	if err != nil {
		return p, err
	}
	p.CPUSeconds, b.cpuMark = (cpu - b.cpuMark).Seconds(), cpu
	return p, b.countWrites(&p)
}

// refusal tells a request Azure refused from an error answer a client
// expects and acts on: 404 (how a client learns that a resource is
// absent), 412 (a create-only write, If-None-Match: *, that finds the
// resource there: the DNS engine writes a link so instead of reading it
// first) and 429 (counted as throttling).
func refusal(a azuresim.ErrorAnswer) bool {
	switch a.Status {
	case http.StatusNotFound, http.StatusPreconditionFailed, http.StatusTooManyRequests:
		return false
	}
	return true
}

// refused are the refusals among error answers.
func refused(answers []azuresim.ErrorAnswer) []azuresim.ErrorAnswer {
	return slices.DeleteFunc(slices.Clone(answers), func(a azuresim.ErrorAnswer) bool { return !refusal(a) })
}

// RefusedOf counts the requests of one principal Azure refused.
func (p Phase) RefusedOf(principal string) int {
	n := 0
	for _, a := range p.Refused {
		if a.Principal == principal {
			n += a.Count
		}
	}
	return n
}

// refusals lists a phase's refused requests by principal, request and
// code, most frequent first.
func refusals(p Phase) string {
	list := slices.Clone(p.Refused)
	slices.SortStableFunc(list, func(a, b azuresim.ErrorAnswer) int { return cmp.Compare(b.Count, a.Count) })
	parts := make([]string, 0, len(list))
	for _, a := range list {
		parts = append(parts, fmt.Sprintf("%s: %s %s (%d %s): %d", principalName(a.Principal), a.Method,
			strings.Replace(a.ResourceType, "Microsoft.Network/", "", 1), a.Status, a.Code, a.Count))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// refusalsOf is refusals of one principal's requests.
func refusalsOf(p Phase, principal string) string {
	return refusals(Phase{Refused: slices.DeleteFunc(slices.Clone(p.Refused), func(a azuresim.ErrorAnswer) bool { return a.Principal != principal })})
}

// principalName names a principal of the test world in a report.
func principalName(id string) string {
	switch id {
	case sandbox.FleetOperatorClient:
		return "operator"
	case sandbox.CAPZClientID:
		return "CAPZ"
	case "":
		return "anonymous"
	}
	return id
}

// cpuSoFar is the CPU time of every operator process of the run so far:
// those stopped and the running one.
func (b *bench) cpuSoFar() (time.Duration, error) {
	cpu := b.usage.CPU
	if b.op != nil {
		u, err := b.op.Usage()
		if err != nil {
			return 0, err
		}
		cpu += u.CPU
	}
	return cpu, nil
}

// countWrites adds the operator's Kubernetes writes since the last phase,
// from the audit log, to p.
func (b *bench) countWrites(p *Phase) error {
	events, err := b.sb.AuditEvents()
	if err != nil {
		return err
	}
	perWC := map[string]int{}
	for _, e := range events[min(b.audits, len(events)):] {
		if !strings.HasPrefix(e.UserAgent, "azure-private-endpoint-operator") {
			continue
		}
		if e.ObjectRef.Resource != "azureclusters" {
			p.ObjectWrites++
			continue
		}
		if e.ResponseStatus.Code == http.StatusConflict {
			p.Conflicts++
		}
		if e.ObjectRef.Name == sandbox.FleetMCName && e.ObjectRef.Namespace == sandbox.FleetIdentityNS {
			p.MCWrites++
			continue
		}
		p.WCWrites++
		perWC[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]++
	}
	b.audits = len(events)
	for _, n := range perWC {
		p.WCWritesMax = max(p.WCWritesMax, n)
	}
	return nil
}

// sample records the operator's peak Go heap from its metrics every 2s.
// With pprof (the operator's profiler), the heap is profiled at each new
// peak.
func (b *bench) sample(ctx context.Context, op *sandbox.Operator, pprof, name string) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		if v, err := scrape(ctx, op.MetricsURL, "go_memstats_heap_inuse_bytes"); err == nil {
			b.mu.Lock()
			b.peakHeap = max(b.peakHeap, v)
			// A new peak 5 % above the last profiled one is profiled.
			profile := pprof != "" && v > 1.05*b.profiled
			if profile {
				b.profiled = v
			}
			b.mu.Unlock()
			if profile {
				b.profileHeap(ctx, pprof, name)
			}
		}
		if v, err := op.AnonRSS(); err == nil {
			b.mu.Lock()
			b.peakAnon = max(b.peakAnon, v)
			b.mu.Unlock()
		}
		if exited, _ := op.Exited(); exited {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// scrape reads one gauge from a Prometheus text endpoint.
func scrape(ctx context.Context, url, metric string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), metric+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	return 0, errors.New(metric + " not found")
}

// operations lists a phase's ARM operations, most frequent first.
func operations(p Phase) string {
	type op struct {
		name string
		n    int
	}
	ops := make([]op, 0, len(p.ARMByOperation))
	for k, n := range p.ARMByOperation {
		ops = append(ops, op{k, n})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].n > ops[j].n || ops[i].n == ops[j].n && ops[i].name < ops[j].name })
	parts := make([]string, 0, len(ops))
	for _, o := range ops {
		parts = append(parts, fmt.Sprintf("%s: %d", strings.Replace(o.name, "Microsoft.Network/", "", 1), o.n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// dnsRates orders the subscriptions' Private DNS rates: the MC's first,
// then the busiest WC subscription's reads first.
func dnsRates(rates []azuresim.DNSRate) []azuresim.DNSRate {
	sort.Slice(rates, func(i, j int) bool {
		mi, mj := strings.EqualFold(rates[i].Subscription, sandbox.FleetMCSubscription), strings.EqualFold(rates[j].Subscription, sandbox.FleetMCSubscription)
		if mi != mj {
			return mi
		}
		if rates[i].PeakReads != rates[j].PeakReads {
			return rates[i].PeakReads > rates[j].PeakReads
		}
		return rates[i].Subscription < rates[j].Subscription
	})
	return rates
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
			return true
		}
	}
	return false
}
