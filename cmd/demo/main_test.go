package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(options) bool
	}{
		{name: "defaults", check: func(o options) bool {
			return o.operatorBinary == "bin/azure-private-endpoint-operator" && o.samples == "config/samples" &&
				!o.nonInteractive && o.timeout == 5*time.Minute && o.latency == 3*time.Second
		}},
		{name: "non-interactive", args: []string{"--non-interactive", "--timeout=1m"}, check: func(o options) bool {
			return o.nonInteractive && o.timeout == time.Minute
		}},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--fast"}, wantErr: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil || !tc.check(o) {
				t.Fatalf("parseFlags(%v) = %+v, %v", tc.args, o, err)
			}
		})
	}
}

// TestMain removes the operator binary the tests share after them.
func TestMain(m *testing.M) {
	code := m.Run()
	sandbox.RemoveSharedOperator()
	os.Exit(code)
}

func buildOperator(t *testing.T) string {
	t.Helper()
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// lockedBuffer is written by the demo and read by the test at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var filesLine = regexp.MustCompile(`files in (\S+)`)

// checkCleanedUp asserts that the demo removed its temporary directory.
func checkCleanedUp(t *testing.T, out string) {
	t.Helper()
	m := filesLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the demo did not say where its files are:\n%s", out)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the demo left %s behind (stat: %v)", m[1], err)
	}
}

// TestDemoNonInteractive is `make demo` as CI runs it: the real operator
// binary wires the samples, the demo approves the pending connection, and
// every workload cluster ends up annotated.
func TestDemoNonInteractive(t *testing.T) {
	bin := buildOperator(t)
	var out, errOut lockedBuffer
	code := run(context.Background(), []string{"--non-interactive", "--operator-binary=" + bin, "--samples=../../config/samples"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"Converged after the approval.",
		"az network private-endpoint-connection approve --id /subscriptions/33333333-3333-3333-3333-333333333333/",
		// What the kubectl plugin says of the cluster that waits.
		"$ kubectl apeo explain org-team-a/wc2 --management-cluster org-giantswarm/mc",
		// It read Azure with the cluster's identity: the connection waits.
		"org-team-a/wc2 stops at \"in Azure: wc2-api-privatelink-privateendpoint\".",
		"reason:  PrivateEndpointPendingApproval",
		"AzurePrivateEndpoint org-hosted/hc1-apiserver is Ready",
		"from the provider's network hcp-vnet:   no private zone linked here covers the name",
		"AzurePrivateEndpoint org-hosted/platformacr is Ready: connection Approved",
		"platformacr.azurecr.io                   10.70.1.40",
		"platformacr.westeurope.data.azurecr.io   10.70.1.41",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if !regexp.MustCompile(`from the guest network hc1-vnet:\s+10\.70\.1\.\d+\s+\(zone hc1\.hypershift\.local, record api\)`).MatchString(got) {
		t.Errorf("the demo does not show api.hc1.hypershift.local resolving from the guest network:\n%s", got)
	}
	// The last table: every endpoint approved and annotated.
	final := got[strings.LastIndex(got, "CLUSTER"):]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`org-team-a/wc1\s+mc-to-wc-api\s+wc1-api-privatelink-privateendpoint\s+10\.10\.1\.\d+\s+Approved\s+private-link-apiserver-ip=10\.10\.1\.\d+`),
		regexp.MustCompile(`org-team-a/wc2\s+mc-to-wc-api\s+wc2-api-privatelink-privateendpoint\s+10\.10\.1\.\d+\s+Approved\s+private-link-apiserver-ip=10\.10\.1\.\d+`),
		regexp.MustCompile(`org-team-a/wc3\s+wc-to-mc-ingress\s+wc3-to-mc-privatelink-privateendpoint\s+10\.40\.1\.\d+\s+Approved\s+private-link-mc-ingress-ip=10\.40\.1\.\d+`),
	} {
		if !want.MatchString(final) {
			t.Errorf("final table lacks %s:\n%s", want, final)
		}
	}
	if strings.Contains(final, "org-team-a/wc3  mc-to-wc-api") {
		t.Errorf("the public wc3 got an endpoint from the MC:\n%s", final)
	}
	checkCleanedUp(t, got)
}

// TestDemoGatewayLayoutWithDNS runs the demo as the older operator 0.5's
// installations run: the gateway layout, and the operator in DNS mode.
func TestDemoGatewayLayoutWithDNS(t *testing.T) {
	bin := buildOperator(t)
	var out, errOut lockedBuffer
	code := run(context.Background(), []string{"--non-interactive", "--operator-binary=" + bin, "--samples=../../config/samples",
		"--azure-latency=1s", "--layout=gateway", "--dns-base-domain=demo.internal", "--consumer=false"},
		strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	got := out.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`org-team-a/wc3\s+wc-to-mc-ingress\s+wc3-to-mc-gateway-privateendpoint\s+10\.40\.1\.\d+\s+Approved\s+private-link-mc-ingress-ip=10\.40\.1\.\d+`),
		regexp.MustCompile(`api\.wc1\.demo\.internal\s+from mc-vnet\s+-> 10\.10\.1\.\d+`),
		regexp.MustCompile(`grafana\.mc\.demo\.internal\s+from wc3-vnet\s+-> 10\.40\.1\.\d+`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "wc3-to-mc-privatelink-privateendpoint") {
		t.Errorf("the gateway layout made the ingress endpoint:\n%s", got)
	}
	checkCleanedUp(t, got)
}

// TestDemoInteractiveStopsOnInterrupt answers the prompt with Enter, then
// interrupts the demo once it waits: it stops everything and cleans up.
func TestDemoInteractiveStopsOnInterrupt(t *testing.T) {
	bin := buildOperator(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, answer := io.Pipe()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--operator-binary=" + bin, "--samples=../../config/samples"}, stdin, &out, &errOut)
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for !strings.Contains(out.String(), what) {
			select {
			case code := <-done:
				t.Fatalf("the demo exited (%d) before printing %q:\n%s\n%s", code, what, out.String(), errOut.String())
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the demo did not print %q:\n%s", what, out.String())
			}
		}
	}
	waitFor("Press Enter to approve")
	if _, err := answer.Write([]byte("\n")); err != nil {
		t.Fatal(err)
	}
	waitFor("Press Ctrl-C to stop")
	cancel() // what Ctrl-C does through signal.NotifyContext
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d after an interrupt\n%s", code, errOut.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the demo did not stop within 2 minutes of an interrupt")
	}
	got := out.String()
	for _, want := range []string{"Converged after the approval.", "export KUBECONFIG=", "Stopped."} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	checkCleanedUp(t, got)
}

// TestHintsNameAWorkingKubectl: the closing hints name kubectl by a path
// that exists, or say how to build one; they never suggest a command that
// is not there.
func TestHintsNameAWorkingKubectl(t *testing.T) {
	dir := t.TempDir()
	kubectl := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(kubectl, []byte("#!/bin/sh\n"), 0o755); err != nil { //nolint:gosec // a stand-in executable
		t.Fatal(err)
	}
	cases := []struct {
		reason, kubectl string
		want, wantNot   []string
	}{
		{
			reason:  "a built kubectl is named by its path",
			kubectl: kubectl,
			want:    []string{"export KUBECONFIG=/k/config\n", "  " + kubectl + " get azureclusters -A\n", "  " + kubectl + " describe azurecluster -n org-a wc1\n"},
			wantNot: []string{"make kubectl", "if you have it"},
		},
		{
			reason:  "no kubectl: say how to build one",
			kubectl: filepath.Join(dir, "missing"),
			want:    []string{"build one (make kubectl) and use the kubeconfig /k/config"},
			wantNot: []string{"get azureclusters"},
		},
	}
	for _, c := range cases {
		got := hints(c.kubectl, "/k/config", "org-a", "wc1", "/k/operator.log", "http://127.0.0.1:1/metrics", "/k")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hints lack %q:\n%s", c.reason, w, got)
			}
		}
		for _, w := range c.wantNot {
			if strings.Contains(got, w) {
				t.Errorf("%s: hints contain %q:\n%s", c.reason, w, got)
			}
		}
	}
}
