package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
)

// dnsCheck is one name the DNS mode writes, from the network that must
// resolve it to the IP its annotation holds.
type dnsCheck struct {
	name, vnet, want string
}

// wiringDNS, in DNS mode (--dns-base-domain), waits until every name the
// operator writes resolves, from the network it is for, to the endpoint IP
// of its annotation, and prints it. The names are the operator's defaults:
// api.<wc>.<base> in the MC's network, *.<mc>.<base> in each WC's.
func (d *demo) wiringDNS(ctx context.Context) error {
	if d.opts.dnsBaseDomain == "" {
		return nil
	}
	w := newWatcher(d)
	var checks []dnsCheck
	deadline := time.Now().Add(d.opts.timeout)
	for {
		var err error
		if checks, err = d.dnsChecks(ctx, w); err != nil {
			return err
		}
		if len(checks) > 0 && allResolve(d.sb.Sim, checks) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DNS mode: names did not resolve within %s; the operator's log is %s", d.opts.timeout, d.op.LogFile)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	d.say("DNS mode: the operator wrote the records the annotations feed:")
	for _, c := range checks {
		_, _ = fmt.Fprintf(d.out, "  %-45s from %-12s -> %s\n", c.name, c.vnet[strings.LastIndex(c.vnet, "/")+1:], c.want)
	}
	return nil
}

// dnsChecks lists the names DNS mode writes for the annotations the
// workload clusters carry now.
func (d *demo) dnsChecks(ctx context.Context, w *watcher) ([]dnsCheck, error) {
	mc, err := w.view(ctx, d.samples.mc)
	if err != nil {
		return nil, err
	}
	var checks []dnsCheck
	for _, sample := range d.samples.wcs {
		wc, err := w.view(ctx, sample)
		if err != nil {
			return nil, err
		}
		if ip := wc.Annotations[clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.AnnotationAPIServerIP]; ip != "" {
			checks = append(checks, dnsCheck{"api." + wc.Name + "." + d.opts.dnsBaseDomain, network(mc), ip})
		}
		if ip := wc.Annotations[clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.AnnotationMCIngressIP]; ip != "" {
			checks = append(checks, dnsCheck{"grafana." + mc.Name + "." + d.opts.dnsBaseDomain, network(wc), ip})
		}
	}
	return checks, nil
}

func allResolve(sim *azuresim.Server, checks []dnsCheck) bool {
	for _, c := range checks {
		r := sim.Resolve(c.vnet, c.name)
		if r.Status != azuresim.ResolveOK || len(r.Addresses) != 1 || r.Addresses[0] != c.want {
			return false
		}
	}
	return true
}

// network is a cluster's virtual network, from the subnet IDs CAPZ wrote.
func network(ac *capz.AzureCluster) string {
	for _, s := range ac.Subnets {
		if i := strings.Index(strings.ToLower(s.ID), "/subnets/"); i > 0 {
			return s.ID[:i]
		}
	}
	return ""
}
