package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/utils/ptr"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// row is one private endpoint the wiring needs, as the demo sees it.
type row struct {
	cluster    string // the workload cluster, namespace/name
	direction  clusterlink.Direction
	endpoint   string
	holder     *capz.AzureCluster // the cluster whose spec and resource group hold it
	inSpec     bool
	observed   *privateendpoints.Observation
	annotation string // key
	value      string // the annotation's value on the workload cluster, "" if none
}

// waitingFor says what the row waits for, or "" when it is done.
func (r row) waitingFor() string {
	switch {
	case !r.inSpec:
		return fmt.Sprintf("the operator to add %s to %s's spec", r.endpoint, r.holder.Name)
	case r.observed == nil:
		return fmt.Sprintf("CAPZ to create %s in Azure", r.endpoint)
	case r.observed.ProvisioningState != "Succeeded":
		return fmt.Sprintf("Azure to provision %s (%s)", r.endpoint, r.observed.ProvisioningState)
	case r.observed.ConnectionState == privateendpoints.StatePending:
		return fmt.Sprintf("the private link service's owner to approve %s", r.endpoint)
	case r.observed.ConnectionState != privateendpoints.StateApproved:
		return fmt.Sprintf("%s to be approved (it is %s)", r.endpoint, r.observed.ConnectionState)
	case r.observed.IP == "":
		return fmt.Sprintf("Azure to give %s an IP address", r.endpoint)
	case r.annotation != "" && r.value != r.observed.IP:
		return fmt.Sprintf("the operator to annotate %s with %s=%s", r.cluster, r.annotation, r.observed.IP)
	}
	return ""
}

func (r row) pending() bool {
	return r.observed != nil && r.observed.ConnectionState == privateendpoints.StatePending
}

type watcher struct {
	d        *demo
	observer *privateendpoints.Observer
	last     map[string]string // cluster → last progress line
	rows     []row
}

func newWatcher(d *demo) *watcher {
	return &watcher{d: d, observer: &privateendpoints.Observer{}, last: map[string]string{}}
}

// until re-reads the world every second, prints each cluster's progress when
// it changes, and returns when done reports true. It fails early if the
// operator exits.
func (w *watcher) until(ctx context.Context, timeout time.Duration, done func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if exited, err := w.d.op.Exited(); exited {
			return false, fmt.Errorf("the operator exited (%w); last lines of %s:\n%s", err, w.d.op.LogFile, tail(w.d.op.LogFile, 30))
		}
		lastErr = w.refresh(ctx)
		return lastErr == nil && done(), nil
	})
	if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
		if lastErr == nil {
			lastErr = errors.New("none")
		}
		return fmt.Errorf("not converged after %s (last error: %w); the operator's log is %s:\n%s",
			timeout, lastErr, w.d.op.LogFile, tail(w.d.op.LogFile, 30))
	}
	return err
}

func (w *watcher) convergedBeforeApproval() bool {
	pending := 0
	for _, r := range w.rows {
		if r.pending() {
			pending++
			continue
		}
		if r.waitingFor() != "" {
			return false
		}
	}
	return len(w.rows) > 0 && pending <= 1
}

func (w *watcher) convergedAfterApproval() bool {
	for _, r := range w.rows {
		if r.waitingFor() != "" {
			return false
		}
	}
	return len(w.rows) > 0
}

func (w *watcher) pendingEndpoint() *row {
	for i := range w.rows {
		if w.rows[i].pending() {
			return &w.rows[i]
		}
	}
	return nil
}

// refresh reads the clusters and Azure and reports progress.
func (w *watcher) refresh(ctx context.Context) error {
	mc, err := w.view(ctx, w.d.samples.mc)
	if err != nil {
		return err
	}
	var rows []row
	for _, sample := range w.d.samples.wcs {
		wc, err := w.view(ctx, sample)
		if err != nil {
			return err
		}
		wcRows, problems, err := w.rowsFor(ctx, mc, wc)
		if err != nil {
			return err
		}
		rows = append(rows, wcRows...)
		w.progress(wc, wcRows, problems)
	}
	w.rows = rows
	return nil
}

func (w *watcher) rowsFor(ctx context.Context, mc, wc *capz.AzureCluster) ([]row, []clusterlink.Problem, error) {
	cfg := clusterlink.Config{Layout: clusterlink.Layout(w.d.opts.layout)}
	if cfg.Layout == clusterlink.LayoutGateway {
		cfg.IngressIPSource = clusterlink.SourceGateway
	}
	toWC, p1 := clusterlink.MCToWC(mc, wc, cfg, nil)
	toMC, p2 := clusterlink.WCToMC(mc, wc, cfg)
	var rows []row
	for _, set := range []struct {
		eps    []clusterlink.Endpoint
		holder *capz.AzureCluster
		ann    string
	}{{toWC, mc, clusterlink.AnnotationAPIServerIP}, {toMC, wc, clusterlink.AnnotationMCIngressIP}} {
		for i, ep := range set.eps {
			key := clusterlink.DefaultAnnotationPrefix + "/" + set.ann
			if i > 0 {
				key = "" // only a direction's first endpoint feeds its annotation
			}
			r := row{
				cluster: wc.Namespace + "/" + wc.Name, direction: ep.Direction, endpoint: ep.Name, holder: set.holder,
				inSpec: inSpec(set.holder, ep.Name), annotation: key, value: wc.Annotations[key],
			}
			obs, err := w.observe(ctx, set.holder, ep.Name)
			if err != nil {
				return nil, nil, err
			}
			if o, ok := obs[strings.ToLower(ep.Name)]; ok {
				r.observed = &o
			}
			rows = append(rows, r)
		}
	}
	return rows, append(p1, p2...), nil
}

func (w *watcher) observe(ctx context.Context, holder *capz.AzureCluster, names ...string) (map[string]privateendpoints.Observation, error) {
	f, err := w.d.sb.Network(holder.SubscriptionID)
	if err != nil {
		return nil, err
	}
	obs, err := w.observer.ResourceGroup(ctx, privateendpoints.NewSDK(f), holder.SubscriptionID, holder.ResourceGroup, time.Time{}, names...)
	if err != nil && strings.Contains(err.Error(), "ResourceGroupNotFound") {
		return nil, nil // CAPZ has not created it yet
	}
	return obs, err
}

func inSpec(holder *capz.AzureCluster, name string) bool {
	for _, sn := range holder.Subnets {
		for _, pe := range sn.PrivateEndpoints {
			if strings.EqualFold(pe.Name, name) {
				return true
			}
		}
	}
	return false
}

func (w *watcher) view(ctx context.Context, sample *unstructured.Unstructured) (*capz.AzureCluster, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterGVK)
	if err := w.d.sb.Client.Get(ctx, client.ObjectKeyFromObject(sample), u); err != nil {
		return nil, err
	}
	v, errs := capz.FromUnstructured(u)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return v, nil
}

// progress prints a cluster's state when it changes.
func (w *watcher) progress(wc *capz.AzureCluster, rows []row, problems []clusterlink.Problem) {
	id := wc.Namespace + "/" + wc.Name
	var line string
	for _, r := range rows {
		if what := r.waitingFor(); what != "" {
			line = "waiting for " + what
			break
		}
	}
	switch {
	case line != "":
	case len(rows) == 0 && len(problems) > 0:
		line = "waiting: " + problems[0].Message
	case len(rows) == 0:
		line = "no private endpoints needed"
	default:
		line = fmt.Sprintf("wired (%d private endpoint(s), annotations written)", len(rows))
	}
	if w.last[id] != line {
		w.last[id] = line
		w.d.say("%-22s %s", id, line)
	}
}

func (w *watcher) printTable() {
	tw := tabwriter.NewWriter(w.d.out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w.d.out)
	_, _ = fmt.Fprintln(tw, "CLUSTER\tDIRECTION\tPRIVATE ENDPOINT\tIP\tCONNECTION\tANNOTATION")
	for _, r := range w.rows {
		ip, state := "-", "-"
		if r.observed != nil {
			ip, state = orDash(r.observed.IP), orDash(r.observed.ConnectionState)
		}
		ann := "-"
		if r.value != "" {
			ann = strings.TrimPrefix(r.annotation, clusterlink.DefaultAnnotationPrefix+"/") + "=" + r.value
		}
		_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.cluster, r.direction, r.endpoint, ip, state, ann)
	}
	_ = tw.Flush()
	_, _ = fmt.Fprintln(w.d.out)
}

// connection is a private endpoint's connection on the private link service.
type connection struct {
	client  *armnetwork.PrivateLinkServicesClient
	rg, pls string
	conn    *armnetwork.PrivateEndpointConnection
}

// connection finds the row's connection on its private link service, as the
// service's owner sees it.
func (w *watcher) connection(ctx context.Context, r *row) (*connection, error) {
	sub, rg, name, err := splitPLS(r.observed.PrivateLinkServiceID)
	if err != nil {
		return nil, err
	}
	f, err := w.d.sb.Network(sub)
	if err != nil {
		return nil, err
	}
	c := f.NewPrivateLinkServicesClient()
	pager := c.NewListPrivateEndpointConnectionsPager(rg, name, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, conn := range page.Value {
			if p := conn.Properties; p != nil && p.PrivateEndpoint != nil && strings.EqualFold(ptr.Deref(p.PrivateEndpoint.ID, ""), r.observed.ID) {
				return &connection{client: c, rg: rg, pls: name, conn: conn}, nil
			}
		}
	}
	return nil, fmt.Errorf("no connection of %s comes from %s", r.observed.PrivateLinkServiceID, r.observed.ID)
}

// approve approves the connection, as the private link service's owner.
func (c *connection) approve(ctx context.Context) error {
	body := *c.conn
	if body.Properties == nil {
		body.Properties = &armnetwork.PrivateEndpointConnectionProperties{}
	}
	body.Properties.PrivateLinkServiceConnectionState = &armnetwork.PrivateLinkServiceConnectionState{
		Status: new("Approved"), Description: new("Approved in the demo"),
	}
	_, err := c.client.UpdatePrivateEndpointConnection(ctx, c.rg, c.pls, ptr.Deref(c.conn.Name, ""), body, nil)
	return err
}

func splitPLS(id string) (sub, rg, name string, err error) {
	parts := strings.Split(strings.Trim(id, "/"), "/")
	if len(parts) != 8 || !strings.EqualFold(parts[6], "privateLinkServices") {
		return "", "", "", fmt.Errorf("not a private link service ID: %q", id)
	}
	return parts[1], parts[3], parts[7], nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
