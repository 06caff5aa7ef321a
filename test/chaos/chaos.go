package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// Config is one chaos run.
type Config struct {
	// N workload clusters and PLS AzurePrivateLinkService objects.
	N, PLS int
	// Window is how long faults are injected.
	Window time.Duration
	// Kills is how many times the operator is SIGKILLed during Window.
	Kills int
	// Seed makes the schedule repeatable.
	Seed           uint64
	OperatorBinary string
	// Timeout bounds convergence and deletion.
	Timeout time.Duration
	Dir     string
	Logf    func(format string, args ...any)
}

// chaos is one run in progress.
type chaos struct {
	cfg Config
	sb  *sandbox.Sandbox
	rnd *rand.Rand

	mu     sync.Mutex
	op     *sandbox.Operator
	starts int
	// killing is set while kill has stopped the operator and not yet
	// started the next one, so that supervise leaves that restart to it.
	killing bool
	// exits counts operators that exited by themselves (restarted by
	// supervise).
	exits    int
	logs     []string
	injected map[string]int // harness-level faults by kind
	// explained are endpoint names whose recreation a fault asked for
	// (their private link service was deleted out of band).
	explained map[string]bool
	// user is what the concurrent writer last wrote, by object.
	user map[string]userFields
	// secrets are every client secret the identity had.
	secrets []string
}

// userFields is what the concurrent writer owns on one AzureCluster.
type userFields struct {
	Label, Annotation string
	// Entry is a private endpoint entry of the user's in the node subnet.
	Entry string
}

func (c *chaos) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(format, args...)
	}
}

// intN, float64 and perm draw from the run's seeded source; the schedule,
// the writer and the faults draw from several goroutines.
func (c *chaos) intN(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rnd.IntN(n)
}

func (c *chaos) float64() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rnd.Float64()
}

func (c *chaos) perm(n int) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rnd.Perm(n)
}

func (c *chaos) count(kind string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.injected[kind] += n
}

// operatorFlags are the operator's flags in the run: short intervals so
// that a run of minutes sees many rechecks, heals and drift checks.
func operatorFlags() []string {
	return []string{
		"--management-cluster-name=" + sandbox.FleetMCName, "--management-cluster-namespace=" + sandbox.FleetIdentityNS,
		"--pending-recheck-interval=5s", "--drift-check-interval=30s", "--terminal-recheck-interval=15s",
		"--mc-write-delay=1s", "--heal-disconnected-after=10s", "--identity-secret-recheck-interval=15s",
		"--azure-observe-ttl=3s", "--private-link-service-drift-interval=20s", "--private-link-service-recheck-interval=2s",
		"--leader-elect=false",
	}
}

func (c *chaos) startOperator() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts++
	log := filepath.Join(c.cfg.Dir, fmt.Sprintf("operator-%d.log", c.starts))
	op, err := c.sb.StartOperator(c.cfg.OperatorBinary, log, operatorFlags()...)
	if err != nil {
		return err
	}
	c.op, c.logs = op, append(c.logs, log)
	return nil
}

// kill SIGKILLs the operator and starts it again after a moment.
func (c *chaos) kill(ctx context.Context) error {
	c.mu.Lock()
	op := c.op
	c.killing = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.killing = false
		c.mu.Unlock()
	}()
	if err := op.Kill(); err != nil {
		return err
	}
	c.count("operator SIGKILLed", 1)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(1+c.intN(3)) * time.Second):
	}
	return c.startOperator()
}

// supervise does what the kubelet does for the operator's pod
// (restartPolicy Always): an operator that exits by itself — one started
// while the API server is unreachable exits because it cannot set up its
// controllers — is started again after a back-off (1 s, doubling, at most
// 10 s; the kubelet's starts at 10 s and caps at 5 min, shortened here as
// the rest of the run is). It returns when ctx is done.
func (c *chaos) supervise(ctx context.Context) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		c.mu.Lock()
		op, killing := c.op, c.killing
		c.mu.Unlock()
		if op == nil || killing {
			continue
		}
		exited, err := op.Exited()
		if !exited {
			continue
		}
		c.logf("  the operator exited by itself (%v); starting it again in %s, as the kubelet would", err, backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
		c.mu.Lock()
		again := c.op == op && !c.killing
		if again {
			c.exits++
		}
		c.mu.Unlock()
		if again {
			if err := c.startOperator(); err != nil {
				c.logf("  starting the operator again: %v", err)
			}
		}
	}
}

// Run runs the chaos scenario once and returns its figures.
func Run(ctx context.Context, cfg Config) (Result, error) {
	c := &chaos{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 42)), injected: map[string]int{}, explained: map[string]bool{}, //nolint:gosec // G404: a repeatable fault schedule
		user: map[string]userFields{}, secrets: []string{sandbox.FleetOperatorSecret}}
	res := Result{N: cfg.N, PLS: cfg.PLS, WindowSeconds: cfg.Window.Seconds(), Seed: cfg.Seed}
	subs := make([]string, 0, subscriptions(cfg.N))
	for i := range subscriptions(cfg.N) {
		subs = append(subs, sandbox.FleetWCSubscription(i, subscriptions(cfg.N)))
	}
	throttling := azuresim.DefaultThrottling()
	throttling.Exempt = []string{sandbox.CAPZClientID}
	sb, err := sandbox.Start(ctx, sandbox.Options{
		Dir: cfg.Dir, APIProxy: true, Throttling: throttling, CAPZResync: time.Second, CAPZConcurrency: 8, CAPZSyncPeriod: 10 * time.Second,
		Ingress:    map[string]capzsim.Ingress{sandbox.FleetIdentityNS + "/" + sandbox.FleetMCName: {AutoApprovedSubscriptions: subs}},
		Principals: []azuresim.Principal{{TenantID: sandbox.FleetTenantID, ClientID: sandbox.FleetOperatorClient, ClientSecret: sandbox.FleetOperatorSecret}},
		Logf:       cfg.Logf,
	})
	if err != nil {
		return res, err
	}
	c.sb = sb
	defer func() { _ = sb.Stop() }()
	defer func() {
		c.mu.Lock()
		op := c.op
		c.mu.Unlock()
		if op != nil {
			_ = op.Stop(30 * time.Second)
		}
	}()
	if err := sb.CreateIdentity(ctx, sandbox.FleetIdentity()); err != nil {
		return res, err
	}
	if err := c.createPLSWorld(ctx); err != nil {
		return res, fmt.Errorf("private link service world: %w", err)
	}
	sb.Sim.SetLatency(500 * time.Millisecond)
	if err := c.startOperator(); err != nil {
		return res, err
	}
	// The supervisor stops before the deferred Stop of the last operator.
	superviseCtx, stopSupervising := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() { defer close(supervised); c.supervise(superviseCtx) }()
	defer func() { stopSupervising(); <-supervised }()
	start := time.Now()
	if err := c.create(ctx); err != nil {
		return res, err
	}
	if err := c.converged(ctx, "first convergence"); err != nil {
		return res, err
	}
	res.FirstConvergeSeconds = time.Since(start).Seconds()
	c.logf("converged after %.1fs", res.FirstConvergeSeconds)
	baseline, err := c.incarnations(ctx)
	if err != nil {
		return res, err
	}

	if err := c.faults(ctx); err != nil {
		return res, fmt.Errorf("fault schedule: %w", err)
	}
	lastFault := time.Now()
	if err := c.converged(ctx, "convergence after the faults"); err != nil {
		return res, err
	}
	res.ConvergeAfterFaultsSeconds = time.Since(lastFault).Seconds()
	c.logf("converged %.1fs after the last fault", res.ConvergeAfterFaultsSeconds)
	if err := c.check(ctx, baseline, &res); err != nil {
		return res, err
	}
	deleteStart := time.Now()
	if err := c.deleteAll(ctx, &res); err != nil {
		return res, err
	}
	res.DeleteSeconds = time.Since(deleteStart).Seconds()
	stopSupervising()
	<-supervised
	c.mu.Lock()
	op, exits := c.op, c.exits
	c.mu.Unlock()
	res.OperatorExits = exits
	if err := op.Stop(30 * time.Second); err != nil {
		c.logf("the last operator stopped with %v", err)
	}
	if err := c.scanLogsAndEvents(ctx, &res); err != nil {
		return res, err
	}
	res.Faults = c.faultCounts()
	return res, nil
}

func subscriptions(n int) int { return max(1, min(10, n/20)) }

// create creates the MC, the WCs and the AzurePrivateLinkService objects.
func (c *chaos) create(ctx context.Context) error {
	for i := range min(10, c.cfg.N) {
		if err := c.sb.EnsureNamespace(ctx, sandbox.FleetWCNamespace(i)); err != nil {
			return err
		}
	}
	objs := []client.Object{sandbox.FleetMC()}
	for i := range c.cfg.N {
		objs = append(objs, sandbox.FleetWC(i, subscriptions(c.cfg.N), testenv.SchemaFork))
	}
	for i := range c.cfg.PLS {
		objs = append(objs, privateLinkService(i))
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		g.Go(func() error { return c.sb.Client.Create(gctx, o) })
	}
	return g.Wait()
}

// world is what one read of the API server and Azure shows.
type world struct {
	wcs, annotated, ready, mcEntries int
	plsReady                         int
	disconnected                     []string
	wrongIP                          []string
}

func (w world) done(n, pls int) bool {
	return w.wcs == n && w.annotated == n && w.ready == n && w.mcEntries == n && w.plsReady == pls && len(w.disconnected) == 0 && len(w.wrongIP) == 0
}

// converged waits until every WC is annotated with its endpoints' current
// IPs and ready, the MC holds one entry per WC, every private link service
// is Ready and no endpoint is Disconnected.
func (c *chaos) converged(ctx context.Context, what string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var last world
	lastLog := time.Now()
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		w, err := c.read(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting; read again
		}
		last = w
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			c.logf("  %s: %d WCs, %d annotated, %d ready, MC entries %d, PLS ready %d, disconnected %d, wrong IPs %d",
				what, w.wcs, w.annotated, w.ready, w.mcEntries, w.plsReady, len(w.disconnected), len(w.wrongIP))
		}
		return w.done(c.cfg.N, c.cfg.PLS), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last: %+v)", what, err, last)
	}
	return nil
}

func (c *chaos) read(ctx context.Context) (world, error) {
	var w world
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.sb.Client.List(ctx, list); err != nil {
		return w, err
	}
	ips, states := c.azureEndpoints()
	for i := range list.Items {
		c.readCluster(&w, &list.Items[i], ips)
	}
	for name, st := range states {
		if st == azuresim.ConnectionDisconnected {
			w.disconnected = append(w.disconnected, name)
		}
	}
	plss := &v1alpha1.AzurePrivateLinkServiceList{}
	if err := c.sb.Client.List(ctx, plss); err != nil {
		return w, err
	}
	for _, p := range plss.Items {
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation {
			w.plsReady++
		}
	}
	return w, nil
}

// readCluster adds one AzureCluster to w: the MC's entries, or a WC's
// annotations (checked against the endpoints' IPs in Azure) and readiness.
func (c *chaos) readCluster(w *world, u *unstructured.Unstructured, ips map[string]string) {
	if u.GetName() == sandbox.FleetMCName && u.GetNamespace() == sandbox.FleetIdentityNS {
		view, _ := capz.FromUnstructured(u)
		for _, s := range view.Subnets {
			for _, pe := range s.PrivateEndpoints {
				if strings.HasSuffix(pe.Name, "-api-privatelink-privateendpoint") {
					w.mcEntries++
				}
			}
		}
		return
	}
	w.wcs++
	api, ing := u.GetAnnotations()[apiAnnotation], u.GetAnnotations()[ingressAnnotation]
	if api != "" && ing != "" {
		w.annotated++
		for name, ann := range map[string]string{u.GetName() + "-api-privatelink-privateendpoint": api, u.GetName() + "-to-mc-privatelink-privateendpoint": ing} {
			if ips[name] != ann {
				w.wrongIP = append(w.wrongIP, name)
			}
		}
	}
	if conditionTrue(u, "GSPrivateLinksReady") {
		w.ready++
	}
}

// azureEndpoints returns, by endpoint name, each private endpoint's IP and
// connection state as azuresim holds them.
func (c *chaos) azureEndpoints() (ips, states map[string]string) {
	ips, states = map[string]string{}, map[string]string{}
	for _, r := range c.sb.Sim.Endpoints() {
		ips[r.Name], states[r.Name] = r.IP, r.ConnectionState
	}
	return ips, states
}

// incarnations identifies each operator endpoint's current Azure resource
// by its network interface (a recreated endpoint gets a new one).
func (c *chaos) incarnations(context.Context) (map[string]string, error) {
	out := map[string]string{}
	for _, r := range c.sb.Sim.Endpoints() {
		if strings.HasPrefix(r.Name, "wc") && strings.HasSuffix(r.Name, "-privateendpoint") {
			out[r.Name] = r.NIC
		}
	}
	if len(out) != 2*c.cfg.N {
		return nil, fmt.Errorf("%d operator endpoints in Azure, want %d", len(out), 2*c.cfg.N)
	}
	return out, nil
}

func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, cond := range conds {
		if m, ok := cond.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// faultCounts merges the emulator's counted faults with the harness's.
func (c *chaos) faultCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.injected {
		out[k] = n
	}
	for _, f := range c.sb.Sim.Counters().Faults {
		who := f.Principal
		if who == "" {
			who = "any"
		}
		out[fmt.Sprintf("ARM %s (%s)", f.Kind, who)] += f.Count
	}
	return out
}

var errFigures = errors.New("figures missed their targets")

// events lists every Event of the API server.
func (c *chaos) events(ctx context.Context) ([]string, error) {
	list := &corev1.EventList{}
	if err := c.sb.Client.List(ctx, list); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, e.Reason+" "+e.Message)
	}
	return out, nil
}
