package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/docgen"
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
			metricsAddr:              ":8443",
			metricsSecure:            true,
			probeAddr:                ":8081",
			pprofAddr:                "0",
			leaderElectionID:         "azure-private-endpoint-operator.giantswarm.io",
			leaseDuration:            15 * time.Second,
			renewDeadline:            10 * time.Second,
			retryPeriod:              2 * time.Second,
			gracefulShutdownTimeout:  30 * time.Second,
			mcName:                   "mc",
			mcNamespace:              "org-giantswarm",
			annotationPrefix:         "azure-private-endpoint-operator.giantswarm.io",
			defaultAzureEnvironment:  "AzurePublicCloud",
			pendingRecheck:           30 * time.Second,
			driftCheck:               10 * time.Minute,
			terminalRecheck:          10 * time.Minute,
			mcWriteDelay:             2 * time.Second,
			mcConditionInterval:      30 * time.Second,
			maxConcurrentReconciles:  4,
			deleteOrphanedEndpoints:  true,
			adoptFieldManagers:       "manager",
			capzFieldManagers:        "cluster-api-provider-azure-manager",
			healDisconnectedAfter:    2 * time.Minute,
			protectIdentities:        true,
			publishSecrets:           false,
			secretRecheck:            5 * time.Minute,
			azureObserveTTL:          10 * time.Second,
			azureObserveTTLPer1000:   10 * time.Second,
			kubeAPIQPS:               100,
			kubeAPIBurst:             200,
			memoryLimitFraction:      0.9,
			gcPercent:                50,
			plsController:            true,
			plsDrift:                 10 * time.Minute,
			plsRecheck:               10 * time.Second,
			plsConcurrency:           4,
			plsLimit:                 800,
			plsConnectionCheck:       time.Minute,
			apeController:            true,
			apeDrift:                 10 * time.Minute,
			apeRecheck:               10 * time.Second,
			apeConnectionCheck:       time.Minute,
			apeDNSCheck:              time.Hour,
			apeConcurrency:           4,
			operatorCredential:       "default",
			wcToMCLayout:             "ingress",
			mcEndpointLimit:          1000,
			mcEndpointNetworkLimit:   5000,
			mcServiceConnectionLimit: 1000,
			ingressLoadBalancer:      "kubernetes-internal",
			gatewayLoadBalancer:      "kubernetes-internal",
			dns: dnsFlags{
				mcZone: "{{.Cluster}}.{{.BaseDomain}}", wcZone: "{{.ManagementCluster}}.{{.BaseDomain}}",
				mcRecords: "api", wcRecords: "*", ttl: 300, check: time.Hour, reads: 400, writes: 800, zoneLimit: 1000,
			},
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
			reason: "further ingress services on two load balancers: 7 beside the first on the ingress's, 8 on another",
			args: []string{"--mc-ingress-shard-frontends=" + strings.Join(shardFrontendsOn(7, "second-lb"), ","),
				"--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			want: func() options {
				o := defaults()
				o.ingressShardFrontends = strings.Join(shardFrontendsOn(7, "second-lb"), ",")
				o.ingressShardSubscriptions = "22222222-2222-2222-2222-222222222222"
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
			reason: "the older operator 0.4's layout with the gateway's IP, and its gates",
			args:   []string{"--wc-to-mc-layout=ingress+gateway", "--mc-ingress-ip-source=gateway", "--azure-cluster-gates=GSPrivateLinksReady,GSDNSZoneReady"},
			want: func() options {
				o := defaults()
				o.wcToMCLayout, o.mcIngressIPSource, o.azureClusterGates = "ingress+gateway", "gateway", "GSPrivateLinksReady,GSDNSZoneReady"
				return o
			},
		},
		{
			reason:  "DNS mode without base domain is refused",
			args:    []string{"--wiring-dns"},
			wantErr: "--wiring-dns needs --wiring-dns-base-domain",
		},
		{
			reason:  "a DNS template that does not parse is refused",
			args:    []string{"--wiring-dns-mc-zone={{.Clustr}}.{{.BaseDomain}}"},
			wantErr: `DNS mode: template "{{.Clustr}}.{{.BaseDomain}}"`,
		},
		{
			reason:  "an unknown layout is refused",
			args:    []string{"--wc-to-mc-layout=gateway+ingress"},
			wantErr: `--wc-to-mc-layout="gateway+ingress": must be ingress, ingress+gateway or gateway`,
		},
		{
			reason:  "the gateway's IP without a gateway endpoint is refused",
			args:    []string{"--mc-ingress-ip-source=gateway"},
			wantErr: "--mc-ingress-ip-source=gateway needs a layout with the gateway endpoint",
		},
		{
			reason:  "the ingress IP in the gateway layout is refused",
			args:    []string{"--wc-to-mc-layout=gateway", "--mc-ingress-ip-source=ingress"},
			wantErr: "--mc-ingress-ip-source=ingress needs a layout with the ingress endpoint",
		},
		{
			reason:  "an unknown operator credential is refused",
			args:    []string{"--operator-credential=msi"},
			wantErr: `--operator-credential="msi": must be default or none`,
		},
		{
			reason:  "a tag without a value is refused",
			args:    []string{"--azure-tags=costCenter"},
			wantErr: `--azure-tags="costCenter": tag costCenter: want name=value`,
		},
		{
			reason:  "a tag name Azure refuses is refused",
			args:    []string{"--azure-tags=cost/center=1"},
			wantErr: "contains one of < > % & \\ ? /",
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
			reason:  "an MC endpoint limit past the MC object's size is refused",
			args:    []string{"--mc-private-endpoint-limit=5000"},
			wantErr: "--mc-private-endpoint-limit=5000: must be between 1 and 3000",
		},
		{
			reason:  "a zero MC endpoint limit is refused",
			args:    []string{"--mc-private-endpoint-limit=0"},
			wantErr: "--mc-private-endpoint-limit=0: must be between 1 and 3000",
		},
		{
			reason:  "an MC service connection limit past Azure's is refused",
			args:    []string{"--mc-service-connection-limit=1001"},
			wantErr: "--mc-service-connection-limit=1001: must be between 1 and 1000",
		},
		{
			reason:  "more further ingress services than a load balancer takes are refused",
			args:    []string{"--mc-ingress-shard-frontends=a,b,c,d,e,f,g,h", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends puts more than 8 private link services on load balancer kubernetes-internal (the first service counted on kubernetes-internal)",
		},
		{
			reason:  "more than 8 services on another load balancer are refused",
			args:    []string{"--mc-ingress-shard-frontends=b/1,b/2,b/3,b/4,b/5,b/6,b/7,b/8,b/9", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends puts more than 8 private link services on load balancer b",
		},
		{
			reason: "more than 31 further services are refused",
			args: []string{"--mc-ingress-shard-frontends=" + strings.Join(shardFrontendsOn(0, "b", "c", "d", "e"), ","),
				"--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends names 32 frontends: at most 31",
		},
		{
			reason:  "a frontend that is not <frontend> nor <load-balancer>/<frontend> is refused",
			args:    []string{"--mc-ingress-shard-frontends=a/b/c,/d,e/", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: `"a/b/c" is neither <frontend> nor <load-balancer>/<frontend>`,
		},
		{
			reason: "one frontend of another load balancer for both services is refused",
			args: []string{"--mc-ingress-shard-frontends=b/x", "--mc-gateway-shard-frontends=B/X", "--mc-gateway-load-balancer=gw", "--wc-to-mc-layout=ingress+gateway",
				"--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends and --mc-gateway-shard-frontends both name frontend b/x",
		},
		{
			reason:  "further ingress services need the subscriptions they auto-approve",
			args:    []string{"--mc-ingress-shard-frontends=a"},
			wantErr: "further ingress services (--mc-ingress-shard-frontends, --mc-gateway-shard-frontends) need --mc-ingress-shard-subscriptions",
		},
		{
			reason:  "further gateway services need the gateway endpoint",
			args:    []string{"--mc-gateway-shard-frontends=g", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-gateway-shard-frontends needs a layout with the gateway endpoint",
		},
		{
			reason: "one frontend for both services of one load balancer is refused",
			args: []string{"--mc-ingress-shard-frontends=a", "--mc-gateway-shard-frontends=A", "--wc-to-mc-layout=ingress+gateway",
				"--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends and --mc-gateway-shard-frontends both name frontend kubernetes-internal/a",
		},
		{
			reason: "a NAT subnet name Azure refuses is refused",
			args: []string{"--mc-ingress-shard-frontends=a", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222",
				"--mc-ingress-shard-nat-subnet=" + strings.Repeat("n", 81)},
			wantErr: "--mc-ingress-shard-nat-subnet",
		},
		{
			reason:  "a subscription that is not one is refused",
			args:    []string{"--mc-ingress-shard-frontends=a", "--mc-ingress-shard-subscriptions=*"},
			wantErr: `--mc-ingress-shard-subscriptions: "*" is not a subscription ID`,
		},
		{
			reason:  "a frontend named twice is refused",
			args:    []string{"--mc-ingress-shard-frontends=a,A", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends names kubernetes-internal/a twice",
		},
		{
			reason:  "further ingress services need the AzurePrivateLinkService controller",
			args:    []string{"--mc-ingress-shard-frontends=a", "--enable-private-link-service-controller=false", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "further ingress services need --enable-private-link-service-controller",
		},
		{
			reason:  "further ingress services need the ingress endpoint",
			args:    []string{"--mc-ingress-shard-frontends=a", "--wc-to-mc-layout=gateway", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends needs a layout with the ingress endpoint",
		},
		{
			reason:  "further ingress services need their load balancer",
			args:    []string{"--mc-ingress-shard-frontends=a", "--mc-ingress-load-balancer=", "--mc-ingress-shard-subscriptions=22222222-2222-2222-2222-222222222222"},
			wantErr: "--mc-ingress-shard-frontends needs --mc-ingress-load-balancer",
		},
		{
			reason:  "a network endpoint limit past Azure's high-scale limit is refused",
			args:    []string{"--mc-endpoint-network-limit=5001"},
			wantErr: "--mc-endpoint-network-limit=5001: must be between 1 and 5000",
		},
		{
			reason:  "a subnet that is not a resource ID is refused",
			args:    []string{"--mc-endpoint-subnets=mc-extra"},
			wantErr: `--mc-endpoint-subnets: "mc-extra" is not a subnet resource ID`,
		},
		{
			reason: "a subnet named twice is refused",
			args: []string{"--mc-endpoint-subnets=/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a," +
				"/subscriptions/S/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a"},
			wantErr: "--mc-endpoint-subnets names /subscriptions/S/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a twice",
		},
		{
			reason:  "endpoints beyond the MC object need the AzurePrivateEndpoint controller",
			args:    []string{"--mc-endpoint-subnets=/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/virtualNetworks/v/subnets/a", "--enable-private-endpoint-controller=false"},
			wantErr: "--mc-endpoint-subnets needs --enable-private-endpoint-controller",
		},
		{
			reason:  "a private link service limit past Azure's is refused",
			args:    []string{"--private-link-service-limit=801"},
			wantErr: "--private-link-service-limit=801: must be between 1 and 800",
		},
		{
			reason:  "a zero MC service connection limit is refused",
			args:    []string{"--mc-service-connection-limit=0"},
			wantErr: "--mc-service-connection-limit=0: must be between 1 and 1000",
		},
		{
			reason:  "no AzurePrivateEndpoint workers is refused",
			args:    []string{"--private-endpoint-concurrency=0"},
			wantErr: "--private-endpoint-concurrency=0: must be at least 1",
		},
		{
			reason:  "a zero DNS check interval is refused",
			args:    []string{"--private-endpoint-dns-check-interval=0s"},
			wantErr: "--private-endpoint-dns-check-interval",
		},
		{
			reason:  "a negative heal delay is refused",
			args:    []string{"--heal-disconnected-after=-1m"},
			wantErr: "--heal-disconnected-after=-1m0s: must not be negative (0 turns healing off)",
		},
		{
			reason:  "a negative list TTL per 1,000 endpoints is refused",
			args:    []string{"--azure-observe-ttl-per-1000=-1s"},
			wantErr: "--azure-observe-ttl-per-1000=-1s: must not be negative (0 turns it off)",
		},
		{
			reason:  "healing Rejected endpoints needs healing on",
			args:    []string{"--heal-disconnected-after=0s", "--heal-rejected"},
			wantErr: "--heal-rejected needs --heal-disconnected-after above 0",
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
			reason:  "the profiler's address is checked as the others",
			args:    []string{"--pprof-bind-address=localhost"},
			wantErr: `--pprof-bind-address="localhost": want host:port`,
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
			reason:  "a client-side API limit of zero is refused: client-go would take 5 per second for it",
			args:    []string{"--kube-api-qps=0"},
			wantErr: "--kube-api-qps=0 and --kube-api-burst=200: both must be positive, or --kube-api-qps=-1 for no client-side limit",
		},
		{
			reason:  "a negative client-side API limit other than -1 is refused",
			args:    []string{"--kube-api-qps=-5"},
			wantErr: "--kube-api-qps=-5 and --kube-api-burst=200: both must be positive, or --kube-api-qps=-1 for no client-side limit",
		},
		{
			reason: "-1 turns the client-side API limit off, whatever the burst",
			args:   []string{"--kube-api-qps=-1", "--kube-api-burst=0"},
			want: func() options {
				o := defaults()
				o.kubeAPIQPS, o.kubeAPIBurst = -1, 0
				return o
			},
		},
		{
			reason:  "a negative MC condition interval is refused",
			args:    []string{"--mc-condition-interval=-1s"},
			wantErr: "--mc-condition-interval=-1s: must not be negative (0 writes every change at once)",
		},
		{
			reason:  "a soft memory limit above the container's is refused",
			args:    []string{"--memory-limit-fraction=1.5"},
			wantErr: "--memory-limit-fraction=1.5: must be between 0 (off) and 1",
		},
		{
			reason:  "a garbage collector target of zero is refused",
			args:    []string{"--gc-percent=0"},
			wantErr: "--gc-percent=0: must be at least 1",
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
			if diff := cmp.Diff(tc.want(), *got, cmp.AllowUnexported(options{}, dnsFlags{})); diff != "" {
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
	probe, metrics, pprof := freeAddr(t), freeAddr(t), freeAddr(t)
	const leaseName = "apeo-lifecycle-test"

	var stderr bytes.Buffer
	cmd := exec.Command(os.Args[0],
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address="+metrics,
		"--health-probe-bind-address="+probe,
		"--pprof-bind-address="+pprof,
		"--leader-elect",
		"--leader-election-namespace=default",
		"--leader-election-id="+leaseName,
		"--management-cluster-name=mc",
		"--management-cluster-namespace=org-giantswarm",
		// The control plane gate starts too (the KubeadmControlPlane CRD is
		// installed), and the gateway layout.
		"--azure-cluster-gates=GSPrivateLinksReady,GSDNSZoneReady",
		"--wc-to-mc-layout=gateway",
		// Without a client-side limit the manager, its leader election and
		// the metrics' authentication still work.
		"--kube-api-qps=-1",
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
	checkSecureMetrics(ctx, t, env, "https://"+metrics+"/metrics")
	if !httpOK(ctx, "http://"+pprof+"/debug/pprof/heap") {
		t.Errorf("--pprof-bind-address=%s: no heap profile at /debug/pprof/heap", pprof)
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
	// The soft memory limit is decided, and said, at start (here: no
	// container limit, so none is set).
	if !strings.Contains(stderr.String(), `"Soft memory limit"`) {
		t.Errorf("operator output does not say its soft memory limit:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), `"Kubernetes client limit","qps":"off"`) {
		t.Errorf("operator output does not say that --kube-api-qps=-1 turned its client-side limit off:\n%s", stderr.String())
	}
	if holder := leaseHolder(context.Background(), env.Client, leaseName); holder != "" {
		t.Errorf("lease still held by %q after a clean stop; it should be released for a fast handover", holder)
	}
}

// metricsScrapers returns the tokens of two service accounts: one bound to
// the rule the chart's metrics-reader ClusterRole grants, one without it.
func metricsScrapers(ctx context.Context, t *testing.T, env *testenv.Env) (reader, stranger string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(sa string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger = token("scraper"), token("stranger")
	// The rule the chart's metrics-reader ClusterRole grants.
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "test-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "default", Name: "scraper"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return reader, stranger
}

// checkSecureMetrics: the default metrics endpoint speaks HTTPS (HTTP/1.1
// only), refuses anonymous scrapers and authenticated ones without the
// metrics-reader rule, and serves the operator's metrics to one with it.
func checkSecureMetrics(ctx context.Context, t *testing.T, env *testenv.Env, url string) {
	t.Helper()
	reader, stranger := metricsScrapers(ctx, t, env)
	// The certificate is self-signed: the test checks the protocol, not the
	// chain. HTTP/2 is offered and must be refused.
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}}, //nolint:gosec // self-signed test certificate
		ForceAttemptHTTP2: true,
	}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(bearer string) (int, string, string, error) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Proto, string(body), nil
	}
	type answer struct{ Code int }
	cases := []struct {
		reason string
		token  string
		want   answer
	}{
		{"no token", "", answer{http.StatusUnauthorized}},
		// The TokenReview of an invalid token carries an error, which
		// controller-runtime's filter answers with 500 "Authentication
		// failed" (documented under troubleshooting): refused all the same.
		{"a token the API server does not know", "not-a-token", answer{http.StatusInternalServerError}},
		{"a service account without the metrics-reader rule", stranger, answer{http.StatusForbidden}},
		{"a service account with the metrics-reader rule", reader, answer{http.StatusOK}},
	}
	for _, c := range cases {
		var code int
		var proto, body string
		var getErr error
		// The metrics server is a runnable of its own: it may start
		// listening a moment after /readyz answers. RBAC reaches the
		// authorizer's cache a moment after the create.
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
			code, proto, body, getErr = get(c.token)
			return getErr == nil && code == c.want.Code, nil
		})
		if getErr != nil {
			t.Fatalf("%s: GET %s: %v", c.reason, url, getErr)
		}
		if diff := cmp.Diff(c.want, answer{code}); err != nil || diff != "" {
			t.Errorf("%s (-want +got):\n%s%s", c.reason, diff, body)
		}
		if diff := cmp.Diff("HTTP/1.1", proto); diff != "" {
			t.Errorf("%s: protocol (-want +got):\n%s", c.reason, diff)
		}
		if c.want.Code == http.StatusOK && !strings.Contains(body, "azure_private_endpoint_operator_control_planes_held 0") {
			t.Errorf("%s: the operator's metrics are missing:\n%.500s", c.reason, body)
		}
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
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode == http.StatusOK
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// TestSetClientLimit: the flags' limit is what client-go's REST clients
// made from the configuration get, and -1 leaves them none (a limiter
// set before is dropped too).
func TestSetClientLimit(t *testing.T) {
	client := func(t *testing.T, cfg *rest.Config) *rest.RESTClient {
		t.Helper()
		cfg.Host = "https://127.0.0.1:1"
		cfg.GroupVersion = &schema.GroupVersion{Version: "v1"}
		cfg.APIPath = "/api"
		cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
		c, err := rest.RESTClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	limited := &rest.Config{}
	setClientLimit(limited, 100, 200)
	if l := client(t, limited).GetRateLimiter(); l == nil || l.QPS() != 100 {
		t.Errorf("--kube-api-qps=100: rate limiter %v, want one of 100 per second", l)
	}
	off := &rest.Config{RateLimiter: flowcontrol.NewTokenBucketRateLimiter(5, 10)}
	setClientLimit(off, kubeAPIUnlimited, 200)
	if l := client(t, off).GetRateLimiter(); l != nil {
		t.Errorf("--kube-api-qps=-1: rate limiter of %g per second, want none", l.QPS())
	}
}

// TestFlagReferenceIsCurrent keeps docs/flags.md's table equal to the
// binary's flags (APEO_UPDATE_DOCS=1, as make generate sets it, rewrites it).
func TestFlagReferenceIsCurrent(t *testing.T) {
	o := &options{}
	docgen.Check(t, "../../docs/flags.md", "flags", docgen.FlagTable(o.flagSet()))
}

func TestOwnCredentialNamespaces(t *testing.T) {
	cases := []struct {
		reason, flag string
		want         []string
	}{
		{"default: no namespace", "", nil},
		{"a list, spaces and empty items dropped", " org-a, org-b ,,", []string{"org-a", "org-b"}},
		{"every namespace", "*", []string{"*"}},
	}
	for _, c := range cases {
		o, err := parseFlags([]string{"--management-cluster-name=mc", "--management-cluster-namespace=ns", "--operator-credential-namespaces=" + c.flag}, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		if diff := cmp.Diff(c.want, o.ownCredentialNamespaces()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.reason, diff)
		}
	}
}

// TestHealFlagMapsToOptions: --heal-disconnected-after=0s turns healing off
// (the options' zero would mean their default).
func TestHealFlagMapsToOptions(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{{"0s", -1}, {"90s", 90 * time.Second}} {
		o, err := parseFlags([]string{"--management-cluster-name=mc", "--management-cluster-namespace=ns", "--heal-disconnected-after=" + tc.flag}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.linkOptions().Heal.DisconnectedAfter; got != tc.want {
			t.Errorf("--heal-disconnected-after=%s: options get %s, want %s", tc.flag, got, tc.want)
		}
	}
}

// TestConditionIntervalMapsToOptions: --mc-condition-interval=0s writes
// every change of the MC's condition at once (the options' zero would
// mean their default, 30 s).
func TestConditionIntervalMapsToOptions(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want time.Duration
	}{{"0s", 0}, {"45s", 45 * time.Second}} {
		o, err := parseFlags([]string{"--management-cluster-name=mc", "--management-cluster-namespace=ns", "--mc-condition-interval=" + tc.flag}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		opts := o.linkOptions()
		opts.SetDefaults()
		if opts.MCConditionInterval != tc.want {
			t.Errorf("--mc-condition-interval=%s: the wiring gets %s, want %s", tc.flag, opts.MCConditionInterval, tc.want)
		}
	}
}

// shardFrontendsOn lists frontends f1, f2, … : first of them on the flag's
// load balancer, then 8 on each load balancer of others.
func shardFrontendsOn(first int, others ...string) []string {
	var out []string
	for i := 1; i <= first; i++ {
		out = append(out, fmt.Sprintf("f%d", i))
	}
	for _, lb := range others {
		for i := 1; i <= 8; i++ {
			out = append(out, fmt.Sprintf("%s/f%d", lb, i))
		}
	}
	return out
}

// TestWiringAddresses: only the wiring's own objects (the MC's namespace,
// the MC's label) hand their interface addresses to the wiring's observer.
func TestWiringAddresses(t *testing.T) {
	mc := types.NamespacedName{Namespace: "org-giantswarm", Name: "mc"}
	obj := func(ns, label string) *v1alpha1.AzurePrivateEndpoint {
		o := &v1alpha1.AzurePrivateEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
		if label != "" {
			o.Labels = map[string]string{clusterlink.MCEndpointOfLabel: label}
		}
		return o
	}
	cases := []struct {
		reason string
		mc     types.NamespacedName
		obj    *v1alpha1.AzurePrivateEndpoint
		want   bool
	}{
		{"the MC's endpoint object", mc, obj("org-giantswarm", "mc"), true},
		{"a tenant's object with the MC's label", mc, obj("org-tenant", "mc"), false},
		{"an object of the MC's namespace without the label", mc, obj("org-giantswarm", ""), false},
		{"another MC's label", mc, obj("org-giantswarm", "other"), false},
		{"no management cluster", types.NamespacedName{}, obj("", ""), false},
	}
	for _, c := range cases {
		var got bool
		wiringAddresses(c.mc, func(nic, ip string) {
			got = nic == "/nic/1" && ip == "10.0.0.4"
		})(c.obj, "/nic/1", "10.0.0.4")
		if got != c.want {
			t.Errorf("%s: handed on %v, want %v", c.reason, got, c.want)
		}
	}
}
