package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

const (
	apiAnnotation     = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingressAnnotation = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
)

// check compares the converged world with the one before the faults:
// endpoints recreated that did not need to be, the user's and CAPZ's fields,
// duplicate entries.
func (c *chaos) check(ctx context.Context, baseline map[string]string, res *Result) error {
	now, err := c.incarnations(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for name, nic := range baseline {
		if now[name] == nic {
			continue
		}
		if c.explained[name] {
			res.RecreatedAsNeeded++
			continue
		}
		res.RecreatedNeedlessly++
		res.Details = append(res.Details, "recreated without need: "+name)
	}
	user := make(map[string]userFields, len(c.user))
	for k, v := range c.user {
		user[k] = v
	}
	c.mu.Unlock()

	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
	if err := c.sb.Client.List(ctx, list); err != nil {
		return err
	}
	for i := range list.Items {
		u := &list.Items[i]
		key := u.GetNamespace() + "/" + u.GetName()
		lost := lostFields(u, user[key])
		res.FieldsLost += len(lost)
		for _, l := range lost {
			res.Details = append(res.Details, key+": lost "+l)
		}
		dups := duplicates(u)
		res.Duplicates += len(dups)
		for _, d := range dups {
			res.Details = append(res.Details, key+": duplicate entry "+d)
		}
	}
	return nil
}

// lostFields lists what the user or CAPZ wrote that is missing: the user's
// label, annotation and endpoint entry (exactly as written), CAPZ's subnet
// and VNet IDs and its finalizer.
func lostFields(u *unstructured.Unstructured, want userFields) []string {
	var lost []string
	if want.Label != "" && u.GetLabels()["chaos.example.com/label"] != want.Label {
		lost = append(lost, "the user's label")
	}
	if want.Annotation != "" && u.GetAnnotations()["chaos.example.com/note"] != want.Annotation {
		lost = append(lost, "the user's annotation")
	}
	view, _ := capz.FromUnstructured(u)
	if want.Entry != "" && !hasUserEntry(view, want.Entry) {
		lost = append(lost, "the user's endpoint entry "+want.Entry)
	}
	for _, s := range view.Subnets {
		if s.ID == "" {
			lost = append(lost, "CAPZ's ID of subnet "+s.Name)
		}
	}
	if id, _, _ := unstructured.NestedString(u.Object, "spec", "networkSpec", "vnet", "id"); id == "" {
		lost = append(lost, "CAPZ's VNet ID")
	}
	found := false
	for _, f := range u.GetFinalizers() {
		found = found || strings.HasPrefix(f, "azurecluster.infrastructure.cluster.x-k8s.io")
	}
	if !found {
		lost = append(lost, "CAPZ's finalizer")
	}
	return lost
}

func hasUserEntry(view *capz.AzureCluster, name string) bool {
	for _, s := range view.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if pe.Name == name {
				return len(pe.Connections) == 1 && pe.Connections[0].Name == "user-connection" &&
					pe.Connections[0].RequestMessage == "the user's own endpoint" && strings.HasSuffix(pe.Connections[0].PrivateLinkServiceID, "-ingress-privatelink")
			}
		}
	}
	return false
}

// duplicates lists endpoint names that appear twice in one object.
func duplicates(u *unstructured.Unstructured) []string {
	view, _ := capz.FromUnstructured(u)
	seen := map[string]bool{}
	var out []string
	for _, s := range view.Subnets {
		for _, pe := range s.PrivateEndpoints {
			if seen[pe.Name] {
				out = append(out, pe.Name)
			}
			seen[pe.Name] = true
		}
	}
	return out
}

// deleteAll deletes every WC and AzurePrivateLinkService and waits for
// them to go; then counts finalizers left and Azure resources the operator
// made or asked for that nothing owns any more.
func (c *chaos) deleteAll(ctx context.Context, res *Result) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range c.cfg.N {
		g.Go(func() error {
			return client.IgnoreNotFound(c.sb.Client.Delete(gctx, sandbox.FleetWC(i, subscriptions(c.cfg.N), testenv.SchemaFork)))
		})
	}
	for i := range c.cfg.PLS {
		g.Go(func() error { return client.IgnoreNotFound(c.sb.Client.Delete(gctx, privateLinkService(i))) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	left := func(ctx context.Context) (int, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(capz.AzureClusterGVK.GroupVersion().WithKind("AzureClusterList"))
		if err := c.sb.Client.List(ctx, list); err != nil {
			return 0, err
		}
		plss := &v1alpha1.AzurePrivateLinkServiceList{}
		if err := c.sb.Client.List(ctx, plss); err != nil {
			return 0, err
		}
		return len(list.Items) - 1 + len(plss.Items), nil // the MC stays
	}
	tctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	_ = wait.PollUntilContextCancel(tctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := left(ctx)
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		res.FinalizersLeft = n
		return n == 0, nil
	})
	// What Azure still holds that the operator made or asked for: the
	// clusters' endpoints and the AzurePrivateLinkServices' services. The
	// user's own entries on the MC are the user's, the MC's ingress CAPZ's.
	tctx2, cancel2 := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel2()
	_ = wait.PollUntilContextCancel(tctx2, 2*time.Second, true, func(context.Context) (bool, error) {
		res.AzureLeftovers = 0
		res.Leftovers = nil
		for _, e := range c.sb.Sim.Endpoints() {
			if strings.HasPrefix(e.Name, "wc") {
				res.AzureLeftovers++
				res.Leftovers = append(res.Leftovers, e.ID)
			}
		}
		for _, r := range c.sb.Sim.Resources("Microsoft.Network/privateLinkServices") {
			if strings.Contains(strings.ToLower(r.ID), "/resourcegroups/"+plsGroup+"/") {
				res.AzureLeftovers++
				res.Leftovers = append(res.Leftovers, r.ID)
			}
		}
		return res.AzureLeftovers == 0, nil
	})
	return nil
}

// scanLogsAndEvents counts panics in the operator's logs and secrets or
// tokens in its logs and in Events.
func (c *chaos) scanLogsAndEvents(ctx context.Context, res *Result) error {
	c.mu.Lock()
	logs, secrets := append([]string(nil), c.logs...), append([]string(nil), c.secrets...)
	c.mu.Unlock()
	needles := slices.Concat(secrets, []string{"azuresim."}) // azuresim's access tokens start so
	for _, f := range logs {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		text := string(raw)
		res.Panics += strings.Count(text, "panic:") + strings.Count(text, "Observed a panic")
		for _, n := range needles {
			res.SecretsInLogs += strings.Count(text, n)
		}
	}
	events, err := c.events(ctx)
	if err != nil {
		return err
	}
	for _, e := range events {
		for _, n := range needles {
			res.SecretsInLogs += strings.Count(e, n)
		}
	}
	res.OperatorStarts = len(logs)
	return nil
}

// Result is one chaos run's figures.
type Result struct {
	N, PLS        int
	WindowSeconds float64
	Seed          uint64
	// Faults injected, by kind.
	Faults                     map[string]int
	FirstConvergeSeconds       float64
	ConvergeAfterFaultsSeconds float64
	DeleteSeconds              float64
	OperatorStarts             int
	// OperatorExits are operators that exited by themselves and were
	// started again, as the kubelet would.
	OperatorExits int
	// RecreatedNeedlessly are endpoints whose Azure resource changed
	// without a fault that required it; RecreatedAsNeeded those whose
	// private link service was deleted (healed).
	RecreatedNeedlessly, RecreatedAsNeeded int
	FieldsLost                             int
	Duplicates                             int
	AzureLeftovers                         int
	FinalizersLeft                         int
	Panics                                 int
	SecretsInLogs                          int
	// Details name what missed a target.
	Details   []string
	Leftovers []string
}

// figure is one line of the report: a figure, its target and whether the
// run met it.
type figure struct {
	name, target, value string
	ok                  bool
}

func (r Result) figures(maxConverge time.Duration) []figure {
	zero := func(name string, v int) figure { return figure{name, "0", fmt.Sprint(v), v == 0} }
	return []figure{
		{"time to converge after the last fault (s)", fmt.Sprintf("≤ %.0f", maxConverge.Seconds()), fmt.Sprintf("%.1f", r.ConvergeAfterFaultsSeconds), r.ConvergeAfterFaultsSeconds <= maxConverge.Seconds()},
		zero("endpoints recreated that did not need to be", r.RecreatedNeedlessly),
		{"endpoints recreated because their service was deleted (healed)", "–", fmt.Sprint(r.RecreatedAsNeeded), true},
		zero("user and CAPZ fields lost on any AzureCluster", r.FieldsLost),
		zero("duplicate entries", r.Duplicates),
		zero("Azure resources left without an owner after deletion", r.AzureLeftovers),
		zero("finalizers left (objects not deleted)", r.FinalizersLeft),
		zero("panics", r.Panics),
		zero("client secrets or tokens in logs or Events", r.SecretsInLogs),
	}
}
