package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

// TestChaosShort is make chaos in small, as make test runs it: the real
// operator binary, 12 WCs and 2 AzurePrivateLinkServices, every kind of
// fault in a 75-second window with two SIGKILLs (and one inside the token
// outage); every figure must meet its target.
func TestChaosShort(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	dir := t.TempDir()
	bin, err := sandbox.BuildOperator(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{N: 12, PLS: 2, Window: 75 * time.Second, Kills: 2, Seed: 7, OperatorBinary: bin,
		Timeout: 6 * time.Minute, Dir: t.TempDir(), Logf: t.Logf}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table(res, cfg))
	if err := verdict(res, cfg); err != nil {
		t.Error(err)
	}
	for _, kind := range []string{"operator SIGKILLed", "identity secret rotated", "API server unreachable, connections cut (s)",
		"PrivateLinksReady flapped False on a WC", "WC private link service deleted out of band (CAPZ recreates it)"} {
		if res.Faults[kind] == 0 {
			t.Errorf("fault %q was not injected: %v", kind, res.Faults)
		}
	}
	if res.RecreatedAsNeeded == 0 {
		t.Errorf("no endpoint was healed after its service was deleted: %+v", res)
	}
	armFaults := 0
	for k, n := range res.Faults {
		if strings.HasPrefix(k, "ARM ") {
			armFaults += n
		}
	}
	if armFaults == 0 {
		t.Errorf("no ARM fault hit the operator or CAPZ: %v", res.Faults)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.cfg.N != 200 || o.cfg.PLS != 20 || o.cfg.Kills != 5 {
		t.Errorf("defaults: %+v, %v", o.cfg, err)
	}
	if _, err := parseFlags([]string{"--window=1s"}, io.Discard); err == nil {
		t.Error("a window too short to hold the schedule was accepted")
	}
}
