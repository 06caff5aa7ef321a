package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

// runMainEnv makes the test binary behave as the operator binary, so the
// lifecycle test exercises the real main (signal handling, exit codes)
// without a separate go build.
const runMainEnv = "APEO_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	defaults := func() options {
		return options{
			metricsAddr:             ":8080",
			probeAddr:               ":8081",
			leaderElectionID:        "azure-private-endpoint-operator.giantswarm.io",
			leaseDuration:           15 * time.Second,
			renewDeadline:           10 * time.Second,
			retryPeriod:             2 * time.Second,
			gracefulShutdownTimeout: 30 * time.Second,
			mcName:                  "mc",
			mcNamespace:             "org-giantswarm",
			annotationPrefix:        "azure-private-endpoint-operator.giantswarm.io",
			defaultAzureEnvironment: "AzurePublicCloud",
			pendingRecheck:          30 * time.Second,
			driftCheck:              10 * time.Minute,
			terminalRecheck:         10 * time.Minute,
			mcWriteDelay:            2 * time.Second,
			maxConcurrentReconciles: 4,
			deleteOrphanedEndpoints: true,
			secretRecheck:           5 * time.Minute,
			azureObserveTTL:         10 * time.Second,
			kubeAPIQPS:              50,
			kubeAPIBurst:            100,
			plsController:           true,
			plsDrift:                10 * time.Minute,
			plsRecheck:              10 * time.Second,
			plsConcurrency:          4,
			plsConnectionCheck:      time.Minute,
			operatorCredential:      "default",
		}
	}
	tests := []struct {
		reason  string
		args    []string
		want    func() options
		wantErr string
	}{
		{
			reason: "no flags gives documented defaults",
			want:   defaults,
		},
		{
			reason: "leader election out of cluster with a namespace is accepted",
			args:   []string{"--leader-elect", "--leader-election-namespace=giantswarm", "--metrics-bind-address=0"},
			want: func() options {
				o := defaults()
				o.leaderElect, o.leaderElectionNamespace, o.metricsAddr = true, "giantswarm", "0"
				return o
			},
		},
		{
			reason:  "the management cluster is required",
			args:    []string{"--management-cluster-name="},
			wantErr: "--management-cluster-name and --management-cluster-namespace are required",
		},
		{
			reason:  "a custom cloud file that does not exist is refused",
			args:    []string{"--azure-custom-cloud=/does/not/exist.json"},
			wantErr: "--azure-custom-cloud=/does/not/exist.json: reading custom cloud",
		},
		{
			reason:  "an unknown operator credential is refused",
			args:    []string{"--operator-credential=msi"},
			wantErr: `--operator-credential="msi": must be default or none`,
		},
		{
			reason:  "the upstream-CAPZ loop needs the AzurePrivateLinkService controller",
			args:    []string{"--manage-private-link-services", "--enable-private-link-service-controller=false"},
			wantErr: "--manage-private-link-services needs --enable-private-link-service-controller",
		},
		{
			reason:  "a zero private link service drift interval is refused",
			args:    []string{"--private-link-service-drift-interval=0s"},
			wantErr: "--private-link-service-drift-interval",
		},
		{
			reason:  "a positional argument is refused",
			args:    []string{"mc-name"},
			wantErr: `unexpected arguments ["mc-name"]`,
		},
		{
			reason:  "an unknown flag is refused",
			args:    []string{"--no-such-flag"},
			wantErr: "flag provided but not defined: -no-such-flag",
		},
		{
			reason:  "a bind address without a port is refused",
			args:    []string{"--metrics-bind-address=localhost"},
			wantErr: `--metrics-bind-address="localhost": want host:port`,
		},
		{
			reason:  "a bind address with a non-numeric port is refused",
			args:    []string{"--health-probe-bind-address=:http"},
			wantErr: `port "http" is not a number`,
		},
		{
			reason:  "a zero duration is refused",
			args:    []string{"--graceful-shutdown-timeout=0s"},
			wantErr: "--graceful-shutdown-timeout=0s: must be positive",
		},
		{
			reason:  "a client-side API limit of zero is refused",
			args:    []string{"--kube-api-qps=0"},
			wantErr: "--kube-api-qps=0 and --kube-api-burst=100: both must be positive",
		},
		{
			reason:  "leader election out of cluster needs a namespace",
			args:    []string{"--leader-elect"},
			wantErr: "--leader-election-namespace is required",
		},
		{
			reason:  "renew deadline must be shorter than the lease",
			args:    []string{"--leader-elect", "--leader-election-namespace=x", "--leader-election-renew-deadline=20s"},
			wantErr: "--leader-election-renew-deadline (20s) must be shorter than --leader-election-lease-duration (15s)",
		},
	}
	mcFlags := []string{"--management-cluster-name=mc", "--management-cluster-namespace=org-giantswarm"}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			got, err := parseFlags(append(append([]string{}, mcFlags...), tc.args...), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s: want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
				if !errors.Is(err, errUsage) {
					t.Errorf("%s: error %v is not a usage error", tc.reason, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: unexpected error: %v", tc.reason, err)
			}
			got.zap = options{}.zap // zap's own flag defaults are not ours to test.
			got.inCluster = false
			if diff := cmp.Diff(tc.want(), *got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("%s: options (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		reason     string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{
			reason:     "help prints usage and succeeds",
			args:       []string{"--help"},
			wantCode:   exitOK,
			wantStderr: "-leader-election-namespace",
		},
		{
			reason:     "a bad flag fails fast with code 2 and says what to do",
			args:       []string{"--metrics-bind-address=nonsense", "--management-cluster-name=mc", "--management-cluster-namespace=ns"},
			wantCode:   exitUsage,
			wantStderr: "Run with --help for the list of flags.",
		},
		{
			reason:     "an unreadable kubeconfig fails with code 1",
			args:       []string{"--kubeconfig=" + filepath.Join(t.TempDir(), "missing"), "--metrics-bind-address=0", "--health-probe-bind-address=0", "--management-cluster-name=mc", "--management-cluster-namespace=ns"},
			wantCode:   exitError,
			wantStderr: "Unable to set up the manager",
		},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stderr)
			if code != tc.wantCode {
				t.Errorf("%s: exit code: want %d, got %d; stderr:\n%s", tc.reason, tc.wantCode, code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("%s: stderr does not contain %q:\n%s", tc.reason, tc.wantStderr, stderr.String())
			}
		})
	}
}

// TestBinaryLifecycle runs the operator as a separate process against a real
// API server: it must become ready, take the leader election lease, and on
// SIGTERM stop with exit code 0 and release the lease.
func TestBinaryLifecycle(t *testing.T) {
	env := testenv.StartT(t, testenv.Options{})
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	probe := freeAddr(t)
	const leaseName = "apeo-lifecycle-test"

	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0],
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+freeAddr(t),
		"--health-probe-bind-address="+probe,
		"--leader-elect",
		"--leader-election-namespace=default",
		"--leader-election-id="+leaseName,
		"--management-cluster-name=mc",
		"--management-cluster-namespace=org-giantswarm",
	)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			t.Logf("operator killed at cleanup: %v", <-exited)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("operator exited before becoming ready: %w", err)
		default:
		}
		return httpOK(ctx, "http://"+probe+"/readyz"), nil
	})
	if err != nil {
		t.Fatalf("waiting for /readyz: %v\noperator output:\n%s", err, stderr.String())
	}
	if !httpOK(ctx, "http://"+probe+"/healthz") {
		t.Errorf("/healthz is not OK while /readyz is")
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		return leaseHolder(ctx, env.Client, leaseName) != "", nil
	})
	if err != nil {
		t.Fatalf("waiting for the operator to take the lease: %v\noperator output:\n%s", err, stderr.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("operator did not exit cleanly on SIGTERM: %v\noutput:\n%s", err, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("operator did not exit within the timeout after SIGTERM\noutput:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "Manager stopped cleanly") {
		t.Errorf("operator output does not report a clean stop:\n%s", stderr.String())
	}
	if holder := leaseHolder(context.Background(), env.Client, leaseName); holder != "" {
		t.Errorf("lease still held by %q after a clean stop; it should be released for a fast handover", holder)
	}
}

func leaseHolder(ctx context.Context, c client.Client, name string) string {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, lease); err != nil {
		return ""
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func httpOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestREADMEDocumentsEveryFlag keeps the README's flag table complete.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	var usage strings.Builder
	if _, err := parseFlags([]string{"--help"}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage.String(), -1)
	if len(names) < 30 {
		t.Fatalf("found only %d flags in the usage text:\n%s", len(names), usage.String())
	}
	for _, m := range names {
		if !strings.Contains(string(readme), "`--"+m[1]+"`") {
			t.Errorf("README.md does not document --%s", m[1])
		}
	}
}
