package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// tenantManager is the field manager of the tenants' and CAPZ's edits.
const tenantManager = "sim-tenant"

// live is a workload cluster the history created and has not deleted.
type live struct {
	spec     wcSpec
	links    bool
	filtered bool
}

// history is one seeded run of operations against one world.
type history struct {
	cfg   *Config
	seed  uint64
	rnd   *rand.Rand
	w     *world
	start time.Time

	mu   sync.Mutex
	k    *checker
	live map[string]*live
	apes map[string]*apeSpec
	// identityGoing: the tenant's identity was deleted (by index).
	identityGoing map[int]bool
	ops           []string
	checks        int
	async         sync.WaitGroup
	asyncMu       sync.Mutex
	errs          []error
}

// HistoryResult is one history's figures.
type HistoryResult struct {
	Seed       uint64  `json:"seed"`
	Operations int     `json:"operations"`
	Checks     int     `json:"checks"`
	Seconds    float64 `json:"seconds"`
	// ObjectAddresses counts the checks of an address an endpoint object
	// published (a ConfigMap's, a record's).
	ObjectAddresses int `json:"objectAddresses"`
	// IngressServices counts the MC's ingress services a cluster's entry
	// connected to during the history (more than one: further services
	// were made and used).
	IngressServices int `json:"ingressServices"`
	// PlacedEndpoints is the most MC endpoints seen beyond the MC's
	// AzureCluster at once (AzurePrivateEndpoints in declared subnets).
	PlacedEndpoints int         `json:"placedEndpoints"`
	Violations      []violation `json:"violations"`
	// Ops is the history as it ran, for replaying a failing seed.
	Ops []string `json:"ops"`
}

func (h *history) logOp(format string, args ...any) {
	line := fmt.Sprintf("%7.1fs ", time.Since(h.start).Seconds()) + fmt.Sprintf(format, args...)
	h.mu.Lock()
	h.ops = append(h.ops, line)
	h.mu.Unlock()
	h.cfg.logf("  [seed %d] %s", h.seed, line)
}

func (h *history) excuse(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.k.excuse(key, time.Now())
}

// runHistory runs one history: the operations, a quiet period, then every
// workload cluster deleted; the checker looks every Config.Every
// throughout.
func runHistory(ctx context.Context, cfg *Config, seed uint64, dir string) (HistoryResult, error) {
	res := HistoryResult{Seed: seed}
	w, err := startWorld(ctx, cfg, dir)
	if err != nil {
		return res, err
	}
	defer w.stop()
	h := &history{
		cfg: cfg, seed: seed, rnd: rand.New(rand.NewPCG(seed, 0x5e11)), w: w, start: time.Now(), //nolint:gosec // G404: a replayable history
		live: map[string]*live{}, apes: map[string]*apeSpec{}, identityGoing: map[int]bool{},
	}
	h.k = newChecker(names(), h.start, cfg.Grace)

	checkCtx, stopChecking := context.WithCancel(ctx)
	checked := make(chan struct{})
	go func() { defer close(checked); h.checkLoop(checkCtx) }()

	err = h.run(ctx)
	h.async.Wait()
	if err == nil {
		err = h.finish(ctx)
	}
	stopChecking()
	<-checked

	h.mu.Lock()
	defer h.mu.Unlock()
	res.Operations, res.Checks, res.Seconds = len(h.ops), h.checks, time.Since(h.start).Seconds()
	res.ObjectAddresses = h.k.objectAddresses
	res.IngressServices = len(h.k.servicesUsed)
	res.PlacedEndpoints = h.k.placedMax
	res.Ops = slices.Clone(h.ops)
	res.Violations = slices.Clone(h.k.found)
	h.asyncMu.Lock()
	err = errors.Join(append([]error{err}, h.errs...)...)
	h.asyncMu.Unlock()
	return res, err
}

func (h *history) checkLoop(ctx context.Context) {
	n := names()
	vnets := map[string]string{}
	t := time.NewTicker(h.cfg.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := h.w.look(ctx, n, vnets)
		if err != nil {
			continue // the API server may be busy; look again
		}
		h.mu.Lock()
		h.checks++
		for _, v := range h.k.check(s) {
			h.cfg.logf("  [seed %d] VIOLATION %s", h.seed, v)
		}
		h.mu.Unlock()
		for _, c := range s.Clusters {
			vnets[c.Key] = c.VNetID
		}
	}
}

// opWeights are the relative frequencies of the operations.
var opWeights = []struct {
	name   string
	weight int
}{
	{"create", 26}, {"delete", 12}, {"withdraw-or-restore-link", 8}, {"approve", 12}, {"reject", 4},
	{"remove-connection", 6}, {"flap", 6}, {"watch-filter", 6}, {"azure-faults", 5},
	{"create-endpoint", 12}, {"delete-endpoint", 5}, {"endpoint-connection", 7}, {"delete-identity-first", 2},
}

func (h *history) pick() string {
	total := 0
	for _, o := range opWeights {
		total += o.weight
	}
	n := h.rnd.IntN(total)
	for _, o := range opWeights {
		if n < o.weight {
			return o.name
		}
		n -= o.weight
	}
	return opWeights[0].name
}

// forcedOps places every kind of operation at least once, at a random
// position after the first third (when there is something to act on).
func (h *history) forcedOps() map[int]string {
	forced := map[int]string{}
	lo := h.cfg.Operations / 3
	for _, o := range opWeights {
		if len(forced) >= h.cfg.Operations-lo {
			break
		}
		for {
			if i := lo + h.rnd.IntN(h.cfg.Operations-lo); forced[i] == "" {
				forced[i] = o.name
				break
			}
		}
	}
	return forced
}

// run draws and runs Config.Operations operations, with Config.Kills
// SIGKILLs of the operator among them.
func (h *history) run(ctx context.Context) error {
	kills := map[int]bool{}
	for len(kills) < min(h.cfg.Kills, h.cfg.Operations) {
		kills[h.rnd.IntN(h.cfg.Operations)] = true
	}
	forced := h.forcedOps()
	for i := range h.cfg.Operations {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(500+h.rnd.IntN(3500)) * time.Millisecond):
		}
		if kills[i] {
			pause := time.Duration(1+h.rnd.IntN(3)) * time.Second
			h.logOp("SIGKILL the operator, a new one after %s", pause)
			if err := h.w.kill(ctx, pause); err != nil {
				return err
			}
		}
		op := forced[i]
		if op == "" {
			op = h.pick()
		}
		if err := h.do(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

func (h *history) do(ctx context.Context, op string) error {
	switch {
	case strings.HasSuffix(op, "-endpoint") || op == "endpoint-connection":
		if len(h.apes) == 0 {
			op = "create-endpoint"
		}
	case op == "delete-identity-first":
	case op != "create" && len(h.live) == 0:
		op = "create"
	}
	switch op {
	case "create-endpoint":
		return h.createEndpoint(ctx)
	case "delete-endpoint":
		return h.deleteEndpoint(ctx, h.anyEndpoint())
	case "endpoint-connection":
		return h.endpointConnection(ctx, h.anyEndpoint())
	case "delete-identity-first":
		return h.deleteIdentityFirst(ctx)
	case "create":
		return h.create(ctx)
	case "delete":
		return h.delete(ctx, h.anyLive())
	case "withdraw-or-restore-link":
		return h.toggleLink(ctx, h.anyLive())
	case "approve":
		return h.connections(ctx, h.anyLive(), azuresim.ConnectionApproved)
	case "reject":
		return h.connections(ctx, h.anyLive(), azuresim.ConnectionRejected)
	case "remove-connection":
		return h.connections(ctx, h.anyLive(), "remove")
	case "flap":
		return h.flap(ctx, h.anyLive())
	case "watch-filter":
		return h.toggleFilter(ctx, h.anyLive())
	case "azure-faults":
		return h.azureFaults()
	}
	return fmt.Errorf("unknown operation %q", op)
}

func (h *history) anyLive() *live {
	keys := sortedKeys(h.live)
	return h.live[keys[h.rnd.IntN(len(keys))]]
}

// create creates a workload cluster in a random tenant, named from the
// shared pool; a quarter of them name their link like another cluster's.
func (h *history) create(ctx context.Context) error {
	for range 8 {
		spec := wcSpec{Tenant: h.rnd.IntN(len(tenants)), Name: clusterNames[h.rnd.IntN(len(clusterNames))], Manual: h.rnd.IntN(10) < 3}
		spec.Link = spec.Name + "-api-privatelink"
		if h.rnd.IntN(4) == 0 {
			spec.Link = clusterNames[h.rnd.IntN(len(clusterNames)-1)] + "-api-privatelink"
		}
		// One in six is public: its domain must not be shadowed by a
		// private namesake that comes later.
		if spec.Public = h.rnd.IntN(6) == 0; spec.Public {
			spec.Link, spec.Manual = "", false
		}
		if h.live[spec.Key()] != nil {
			continue
		}
		exists, err := h.w.exists(ctx, spec)
		if err != nil {
			return err
		}
		if exists {
			continue // still being deleted
		}
		approval := "auto-approves the MC"
		if spec.Manual {
			approval = "manual approval"
		}
		if spec.Public {
			h.logOp("create %s (public)", spec.Key())
		} else {
			h.logOp("create %s (link %s, %s)", spec.Key(), spec.Link, approval)
		}
		if err := h.w.sb.Client.Create(ctx, spec.object(!spec.Public)); err != nil {
			return fmt.Errorf("creating %s: %w", spec.Key(), err)
		}
		h.live[spec.Key()] = &live{spec: spec, links: !spec.Public}
		return nil
	}
	h.logOp("create a cluster: every name drawn is taken, none")
	return nil
}

func (h *history) delete(ctx context.Context, l *live) error {
	h.logOp("delete %s", l.spec.Key())
	h.excuseService(l) // CAPZ deletes its service: the endpoints to it turn Disconnected
	delete(h.live, l.spec.Key())
	return client.IgnoreNotFound(h.w.sb.Client.Delete(ctx, l.spec.object(false)))
}

// excuseService gives the grace of an out-of-band change to everything
// that connects to the cluster's service: the cluster (the MC's endpoint
// to it) and every endpoint object that asks for it.
func (h *history) excuseService(l *live) {
	h.excuse(l.spec.Key())
	for _, a := range h.apes {
		if a.Target == l.spec.PLSID() {
			h.excuse(a.excuseKey())
		}
	}
}

func (h *history) patch(ctx context.Context, l *live, patch string) error {
	err := h.w.sb.Client.Patch(ctx, l.spec.object(false), client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(tenantManager))
	return client.IgnoreNotFound(err)
}

// toggleLink withdraws the cluster's private link (CAPZ deletes its
// service) or declares it again.
func (h *history) toggleLink(ctx context.Context, l *live) error {
	if l.spec.Public {
		return nil // a public cluster declares no private link
	}
	if l.links {
		h.logOp("withdraw the private link of %s", l.spec.Key())
		h.excuseService(l)
		l.links = false
		return h.patch(ctx, l, `{"spec":{"networkSpec":{"apiServerLB":{"privateLinks":null}}}}`)
	}
	h.logOp("declare the private link of %s again", l.spec.Key())
	l.links = true
	u := l.spec.object(true)
	lb, _, _ := unstructured.NestedMap(u.Object, "spec", "networkSpec", "apiServerLB")
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"networkSpec": map[string]any{"apiServerLB": map[string]any{"privateLinks": lb["privateLinks"]}}}})
	if err != nil {
		return err
	}
	return h.patch(ctx, l, string(body))
}

// connections acts, as the tenant owning the cluster's service, on the
// connections of endpoints to it: approve the pending ones, reject or
// remove one.
func (h *history) connections(ctx context.Context, l *live, action string) error {
	var eps []azuresim.EndpointInfo
	for _, e := range h.w.sb.Sim.Endpoints() {
		if strings.EqualFold(e.PrivateLinkService, l.spec.PLSID()) {
			eps = append(eps, e)
		}
	}
	acted := false
	for _, e := range eps {
		a := azuresim.ConnectionAction{PrivateLinkServiceID: l.spec.PLSID(), PrivateEndpointID: e.ID}
		switch action {
		case azuresim.ConnectionApproved:
			if e.ConnectionState != azuresim.ConnectionPending {
				continue
			}
			a.Status = azuresim.ConnectionApproved
		case azuresim.ConnectionRejected:
			if e.ConnectionState == azuresim.ConnectionRejected {
				continue
			}
			a.Status, a.Description = azuresim.ConnectionRejected, "the tenant rejects it"
			h.excuseService(l)
		default:
			a.Remove = true
			h.excuseService(l)
		}
		h.logOp("%s the connection of %s on %s's service", action, e.Name, l.spec.Key())
		if err := h.w.sb.Sim.ActOnConnection(a); err != nil {
			h.cfg.logf("  [seed %d] %v (it went meanwhile)", h.seed, err)
		}
		acted = true
		if action != azuresim.ConnectionApproved {
			return nil // one is enough
		}
	}
	if !acted {
		h.logOp("%s a connection on %s's service: none to act on", action, l.spec.Key())
	}
	_ = ctx
	return nil
}

// flap makes CAPZ report the cluster's private links broken for 10 s.
func (h *history) flap(ctx context.Context, l *live) error {
	h.logOp("PrivateLinksReady of %s False for 10s", l.spec.Key())
	set := func(v string) error {
		return h.patch(ctx, l, fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, capzsim.BrokenLinksAnnotation, v))
	}
	if err := set(`"true"`); err != nil {
		return err
	}
	h.goAsync(ctx, 10*time.Second, func() error { return set("null") })
	return nil
}

// toggleFilter takes the watch-filter label off the cluster (this
// operator stops handling it) or puts it back.
func (h *history) toggleFilter(ctx context.Context, l *live) error {
	if !l.filtered {
		h.logOp("take the watch-filter label off %s", l.spec.Key())
		l.filtered = true
		return h.patch(ctx, l, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, watchFilterLabel))
	}
	h.logOp("put the watch-filter label back on %s", l.spec.Key())
	l.filtered = false
	return h.patch(ctx, l, fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, watchFilterLabel, watchFilter))
}

// azureFaults makes 30 % of the operator's Network requests fail for 8 s.
func (h *history) azureFaults() error {
	h.logOp("Azure answers 30%% of the operator's requests 500 or 503 for 8s")
	var ids []string
	for _, principal := range operatorPrincipals() {
		for _, f := range []azuresim.Fault{
			{PathRegex: "Microsoft.Network", Status: http.StatusInternalServerError, Code: "InternalServerError", Probability: 0.15, Principal: principal},
			{PathRegex: "Microsoft.Network", Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Probability: 0.15, Principal: principal},
		} {
			id, err := h.w.sb.Sim.AddFault(f)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
	}
	h.goAsync(context.Background(), 8*time.Second, func() error {
		for _, id := range ids {
			h.w.sb.Sim.RemoveFault(id)
		}
		return nil
	})
	return nil
}

func (h *history) goAsync(ctx context.Context, after time.Duration, f func() error) {
	h.async.Go(func() {
		select {
		case <-ctx.Done():
		case <-time.After(after):
		}
		if err := f(); err != nil {
			h.asyncMu.Lock()
			h.errs = append(h.errs, err)
			h.asyncMu.Unlock()
		}
	})
}

// finish gives the operator a quiet period, puts back every watch-filter
// label (an operator that does not watch a cluster cannot release it),
// deletes every workload cluster and checks that the deletions complete
// and leave nothing in Azure, and that the operator was never throttled.
func (h *history) finish(ctx context.Context) error {
	for _, key := range sortedKeys(h.live) {
		if l := h.live[key]; l.filtered {
			if err := h.toggleFilter(ctx, l); err != nil {
				return err
			}
		}
	}
	h.logOp("quiet for %s", h.cfg.Settle)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(h.cfg.Settle):
	}
	for _, key := range sortedKeys(h.live) {
		if err := h.delete(ctx, h.live[key]); err != nil {
			return err
		}
	}
	if err := h.finishEndpoints(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(h.cfg.Timeout)
	var stuck, published, leftovers []string
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Until(deadline), true, func(ctx context.Context) (bool, error) {
		s, err := h.clustersLeft(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		objects, cms, err := h.endpointsLeft(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		stuck, published = slices.Concat(s, objects), cms
		return len(stuck)+len(published) == 0, nil
	})
	h.logOp("every workload cluster, endpoint object and tenant identity deleted (%d not gone)", len(stuck))
	_ = wait.PollUntilContextTimeout(ctx, time.Second, max(time.Until(deadline), 30*time.Second), true, func(context.Context) (bool, error) {
		leftovers = append(h.leftInAzure(), published...)
		return len(leftovers) == 0, nil
	})
	h.endChecks(stuck, leftovers)
	return nil
}

// clustersLeft are the workload clusters' AzureClusters still there.
func (h *history) clustersLeft(ctx context.Context) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := h.w.sb.Client.List(ctx, list); err != nil {
		return nil, err
	}
	var out []string
	for _, u := range list.Items {
		if u.GetNamespace() != sandbox.FleetIdentityNS {
			out = append(out, u.GetNamespace()+"/"+u.GetName())
		}
	}
	return out, nil
}

// leftInAzure is what the operator made or asked for that Azure still
// holds: endpoints (the MC has none of its own), zones and links.
func (h *history) leftInAzure() []string {
	var out []string
	for _, e := range h.w.sb.Sim.Endpoints() {
		out = append(out, e.ID)
	}
	for _, typ := range []string{"Microsoft.Network/privateDnsZones", "Microsoft.Network/privateDnsZones/virtualNetworkLinks"} {
		for _, r := range h.w.sb.Sim.Resources(typ) {
			out = append(out, r.ID)
		}
	}
	return out
}

// endChecks counts what the end of a history breaks: deletions that did
// not complete, leftovers, 429s, panics.
func (h *history) endChecks(stuck, leftovers []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := len(h.k.found)
	at := time.Since(h.start)
	add := func(inv, subject, detail string) {
		h.k.found = append(h.k.found, violation{At: at, Invariant: inv, Subject: subject, Detail: detail})
	}
	for _, s := range stuck {
		add(InvDeletionStuck, s, "still there after "+h.cfg.Timeout.String())
	}
	for _, id := range leftovers {
		add(InvLeftover, id, "")
	}
	for _, code := range azuresim.PrivateDNSLimitCodes() {
		if n := h.w.sb.Sim.Counters().Errors[code]; n > 0 {
			add(InvLimitRefused, fmt.Sprintf("%d requests answered %s", n, code), "")
		}
	}
	for _, principal := range operatorPrincipals() {
		if n := h.w.sb.Sim.Counters().SumFor(principal, "", "", http.StatusTooManyRequests, http.StatusTooManyRequests); n > 0 {
			add(InvThrottled, fmt.Sprintf("%d requests as %s", n, principal), "")
		}
	}
	for _, f := range h.w.logFiles() {
		raw, err := os.ReadFile(f)
		if err == nil && (strings.Contains(string(raw), "panic:") || strings.Contains(string(raw), "Observed a panic")) {
			add(InvPanic, f, "")
		}
	}
	for _, v := range h.k.found[before:] {
		h.cfg.logf("  [seed %d] VIOLATION %s", h.seed, v)
	}
}
