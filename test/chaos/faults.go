package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// step is one fault of the schedule, at a fraction of the window.
type step struct {
	at   float64
	what string
	do   func(ctx context.Context) error
}

// faults runs the schedule: ARM errors, dropped connections and slow or
// failing long-running operations for the whole window; on top of them,
// at their moments, PrivateLinksReady flaps, private link services deleted
// out of band, identity secret rotation, the token endpoint down, operator
// SIGKILLs and an API server outage; a concurrent writer edits the MC and
// the WCs throughout.
func (c *chaos) faults(ctx context.Context) error {
	op := sandbox.FleetOperatorClient
	background := []azuresim.Fault{
		{Method: http.MethodGet, PathRegex: "privateEndpoints", Status: 429, Code: "SubscriptionRequestsThrottled", RetryAfter: 2, Probability: 0.08, Principal: op},
		{PathRegex: "Microsoft.Network", Status: 500, Code: "InternalServerError", Probability: 0.04, Principal: op},
		{PathRegex: "Microsoft.Network", Status: 503, Code: "ServiceUnavailable", Probability: 0.04, Principal: op},
		{PathRegex: "Microsoft.Network", Drop: true, Probability: 0.02, Principal: op},
		{Method: http.MethodPut, PathRegex: "privateLinkServices/[^/]+$", Operation: true, Status: 500, Code: "InternalServerError", Count: 3, Principal: op},
		{Method: http.MethodPut, PathRegex: "Microsoft.Network", Status: 500, Code: "InternalServerError", Probability: 0.05, Principal: sandbox.CAPZClientID},
	}
	var ids []string
	for _, f := range background {
		id, err := c.sb.Sim.AddFault(f)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	defer func() {
		for _, id := range ids {
			c.sb.Sim.RemoveFault(id)
		}
	}()

	steps := []step{
		{0.05, "Azure's long-running operations slow (5 s)", func(context.Context) error { c.sb.Sim.SetLatency(5 * time.Second); return nil }},
		{0.30, "Azure's long-running operations back to 0.5 s", func(context.Context) error { c.sb.Sim.SetLatency(500 * time.Millisecond); return nil }},
		{0.15, "PrivateLinksReady flaps", c.flap},
		{0.55, "PrivateLinksReady flaps", c.flap},
		{0.25, "private link services deleted and recreated out of band", c.deleteLinkServices},
		{0.35, "an AzurePrivateLinkService spec changes (its PUTs fail)", c.bumpPLS},
		{0.40, "identity secret rotated", c.rotateSecret},
		{0.60, "token endpoint down", c.tokenDown},
		{0.80, "API server unreachable, every connection cut (as in a restart)", c.apiOutage},
	}
	for k := range c.cfg.Kills {
		at := (float64(k) + 0.2 + 0.6*c.float64()) / float64(c.cfg.Kills)
		steps = append(steps, step{at, "operator SIGKILLed", c.kill})
	}
	sortSteps(steps)

	writerCtx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() { writerDone <- c.writer(writerCtx) }()

	start := time.Now()
	var background2 errgroup.Group
	for _, s := range steps {
		at := start.Add(time.Duration(s.at * float64(c.cfg.Window)))
		select {
		case <-ctx.Done():
			stopWriter()
			return ctx.Err()
		case <-time.After(time.Until(at)):
		}
		c.logf("  fault at %.0fs: %s", time.Since(start).Seconds(), s.what)
		background2.Go(func() error {
			if err := s.do(ctx); err != nil {
				return fmt.Errorf("%s: %w", s.what, err)
			}
			return nil
		})
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(start.Add(c.cfg.Window))):
	}
	stopWriter()
	err := background2.Wait()
	if werr := <-writerDone; werr != nil && err == nil {
		err = werr
	}
	c.sb.Sim.SetLatency(500 * time.Millisecond)
	return err
}

func sortSteps(steps []step) {
	for i := 1; i < len(steps); i++ {
		for j := i; j > 0 && steps[j].at < steps[j-1].at; j-- {
			steps[j], steps[j-1] = steps[j-1], steps[j]
		}
	}
}

// flap reports the private links of a tenth of the WCs broken for 15 s,
// as CAPZ does for a transient error or an update in progress.
func (c *chaos) flap(ctx context.Context) error {
	n := max(1, c.cfg.N/10)
	picked := c.perm(c.cfg.N)[:n]
	set := func(v any) error {
		for _, i := range picked {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, capzsim.BrokenLinksAnnotation, v)
			u := sandbox.FleetWC(i, subscriptions(c.cfg.N), testenv.SchemaFork)
			if err := c.sb.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner("chaos-capz")); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	}
	if err := set(`"true"`); err != nil {
		return err
	}
	c.count("PrivateLinksReady flapped False on a WC", n)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(15 * time.Second):
	}
	return set("null")
}

// deleteLinkServices deletes, as their owner would, the private link
// services of a few WCs (connections first, as Azure requires) and one
// AzurePrivateLinkService's; CAPZ and the operator recreate them, and the
// MC's endpoints to the WCs' turn Disconnected until healed.
func (c *chaos) deleteLinkServices(ctx context.Context) error {
	n := max(1, c.cfg.N/50)
	for _, i := range c.perm(c.cfg.N)[:n] {
		name := sandbox.FleetWCName(i)
		c.mu.Lock()
		c.explained[name+"-api-privatelink-privateendpoint"] = true
		c.mu.Unlock()
		if err := c.deleteLinkService(ctx, sandbox.FleetWCSubscription(i, subscriptions(c.cfg.N)), name, name+"-api-privatelink"); err != nil {
			return err
		}
	}
	c.count("WC private link service deleted out of band (CAPZ recreates it)", n)
	if c.cfg.PLS > 0 {
		if err := c.deleteLinkService(ctx, sandbox.FleetMCSubscription, plsGroup, plsName(c.intN(c.cfg.PLS))); err != nil {
			return err
		}
		c.count("AzurePrivateLinkService's service deleted out of band (the operator recreates it)", 1)
	}
	return nil
}

func (c *chaos) deleteLinkService(ctx context.Context, sub, rg, name string) error {
	f, err := c.sb.Network(sub)
	if err != nil {
		return err
	}
	plss := f.NewPrivateLinkServicesClient()
	pls, err := plss.Get(ctx, rg, name, nil)
	if err != nil {
		return err
	}
	for _, conn := range pls.Properties.PrivateEndpointConnections {
		p, err := plss.BeginDeletePrivateEndpointConnection(ctx, rg, name, ptr.Deref(conn.Name, ""), nil)
		if err != nil {
			return err
		}
		if _, err := p.PollUntilDone(ctx, nil); err != nil {
			return err
		}
	}
	p, err := plss.BeginDelete(ctx, rg, name, nil)
	if err != nil {
		return err
	}
	_, err = p.PollUntilDone(ctx, nil)
	return err
}

// bumpPLS changes an AzurePrivateLinkService's spec, so the operator PUTs
// its service while the operation faults make the PUTs fail.
func (c *chaos) bumpPLS(ctx context.Context) error {
	if c.cfg.PLS == 0 {
		return nil
	}
	p := &v1alpha1.AzurePrivateLinkService{}
	if err := c.sb.Client.Get(ctx, types.NamespacedName{Namespace: plsNamespace, Name: plsName(0)}, p); err != nil {
		return err
	}
	before := p.DeepCopy()
	p.Spec.EnableProxyProtocol = !p.Spec.EnableProxyProtocol
	c.count("AzurePrivateLinkService spec changed", 1)
	return c.sb.Client.Patch(ctx, p, client.MergeFrom(before), client.FieldOwner(userManager))
}

// rotateSecret gives the identity a new client secret: Azure AD accepts
// only the new one from now on, and the Secret is updated a moment later.
func (c *chaos) rotateSecret(ctx context.Context) error {
	secret := fmt.Sprintf("operator-secret-rotated-%d", c.intN(1_000_000))
	c.mu.Lock()
	c.secrets = append(c.secrets, secret)
	c.mu.Unlock()
	c.sb.Sim.AddPrincipal(azuresim.Principal{TenantID: sandbox.FleetTenantID, ClientID: sandbox.FleetOperatorClient, ClientSecret: secret})
	time.Sleep(2 * time.Second) // the rotation is not atomic in real life either
	s := &corev1.Secret{}
	if err := c.sb.Client.Get(ctx, types.NamespacedName{Namespace: sandbox.FleetIdentityNS, Name: sandbox.FleetIdentitySecret}, s); err != nil {
		return err
	}
	s.Data["clientSecret"] = []byte(secret)
	c.count("identity secret rotated", 1)
	return c.sb.Client.Update(ctx, s)
}

// tokenDown takes the token endpoint down for the operator for a quarter
// of the window (at most a minute), and kills the operator inside it so
// that it must ask for a token.
func (c *chaos) tokenDown(ctx context.Context) error {
	d := min(time.Minute, c.cfg.Window/4)
	id, err := c.sb.Sim.AddFault(azuresim.Fault{Method: http.MethodPost, PathRegex: "/oauth2/", Status: 503, Code: "temporarily_unavailable", Principal: sandbox.FleetOperatorClient})
	if err != nil {
		return err
	}
	defer c.sb.Sim.RemoveFault(id)
	c.count("token endpoint down (s)", int(d.Seconds()))
	if err := c.kill(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	return nil
}

// apiOutage cuts the operator off the API server for a tenth of the window
// (10-30 s): every connection is closed and new ones are refused, then the
// same objects are there again, as after a kube-apiserver restart with
// etcd kept.
func (c *chaos) apiOutage(context.Context) error {
	d := min(30*time.Second, max(10*time.Second, c.cfg.Window/10))
	c.count("API server unreachable, connections cut (s)", int(d.Seconds()))
	return c.sb.APIOutage(d)
}

// writer is the concurrent writer: every second it changes a label and an
// annotation of the MC or a WC, and now and then adds or rewrites a private
// endpoint entry of its own there; all with server-side apply under its
// own field manager, as GitOps tools do.
func (c *chaos) writer(ctx context.Context) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		i := c.intN(c.cfg.N + 1)
		u := sandbox.FleetMC()
		if i < c.cfg.N {
			u = sandbox.FleetWC(i, subscriptions(c.cfg.N), testenv.SchemaFork)
		}
		if err := c.userWrite(ctx, u, n, n%5 == 0); err != nil && !isTransient(err) {
			return err
		}
	}
}

// userWrite applies the user's fields to one cluster.
func (c *chaos) userWrite(ctx context.Context, target *unstructured.Unstructured, n int, withEntry bool) error {
	key := target.GetNamespace() + "/" + target.GetName()
	c.mu.Lock()
	f := c.user[key]
	c.mu.Unlock()
	f.Label, f.Annotation = fmt.Sprintf("v%d", n), fmt.Sprintf("edit %d", n)
	view, _ := capz.FromUnstructured(target)
	if withEntry || f.Entry != "" {
		f.Entry = "user-" + target.GetName() + "-privateendpoint"
	}
	apply := &unstructured.Unstructured{Object: map[string]any{}}
	apply.SetGroupVersionKind(capz.AzureClusterGVK)
	apply.SetNamespace(target.GetNamespace())
	apply.SetName(target.GetName())
	apply.SetLabels(map[string]string{"chaos.example.com/label": f.Label})
	apply.SetAnnotations(map[string]string{"chaos.example.com/note": f.Annotation})
	if f.Entry != "" {
		nodes := view.Subnets[1].Name
		apply.Object["spec"] = map[string]any{"networkSpec": map[string]any{"subnets": []any{map[string]any{
			"name": nodes,
			"privateEndpoints": []any{map[string]any{
				"name": f.Entry,
				"privateLinkServiceConnections": []any{map[string]any{
					"name":                 "user-connection",
					"privateLinkServiceID": "/subscriptions/" + sandbox.FleetMCSubscription + "/resourceGroups/" + sandbox.FleetMCName + "/providers/Microsoft.Network/privateLinkServices/" + sandbox.FleetMCName + "-ingress-privatelink",
					"requestMessage":       "the user's own endpoint",
				}},
			}},
		}}}}
	}
	if err := c.sb.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply), client.FieldOwner(userManager), client.ForceOwnership); err != nil {
		return err
	}
	c.mu.Lock()
	c.user[key] = f
	c.mu.Unlock()
	c.count("user edits of an AzureCluster (labels, annotations, own endpoint entries)", 1)
	return nil
}

// isTransient tells errors of a restarting API server from real ones.
func isTransient(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "EOF") || strings.Contains(s, "i/o timeout") ||
		strings.Contains(s, "connection reset") || azure.Classify(err).Class == azure.ClassTransient && strings.Contains(s, "context")
}
