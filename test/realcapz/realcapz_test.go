// Package realcapz runs the wiring against the controllers our users run:
// Cluster API Provider Azure v1.27.0's own AzureCluster controller and
// Azure Service Operator v2.20.0's own controllers, compiled from their
// modules (hack/capzmanager, hack/asomanager) and pointed at azuresim as
// Azure's public cloud (internal/sandbox, Options.RealControllers).
package realcapz

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

const (
	mcNS  = "org-giantswarm"
	mcSub = "11111111-0000-0000-0000-000000000001"
	wcNS  = "org-acme"
	wcSub = "22222222-0000-0000-0000-000000000002"
	// The annotations the operator writes on a WC.
	apiAnn = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationAPIServerIP
	ingAnn = clusterlink.DefaultAnnotationPrefix + "/" + clusterlink.AnnotationMCIngressIP
	// readyLimit bounds CAPZ and ASO making a cluster's network: generous
	// for a loaded 2-core machine (it takes well under a minute alone).
	readyLimit = 10 * time.Minute
)

func TestMain(m *testing.M) { testenv.Main(m) }

// start starts a real-controller world with the CAPZ of a schema and,
// when the test ends, fails it for every request CAPZ or ASO made that
// azuresim does not serve.
func start(t *testing.T, schema testenv.Schema) *testworld.World {
	t.Helper()
	w := testworld.Start(t, testworld.Options{Schema: schema, RealControllers: true})
	t.Cleanup(func() {
		if u := w.Sim.Unserved(); len(u) > 0 {
			t.Errorf("azuresim does not serve what the real controllers asked (%d):\n  %s", len(u), strings.Join(u, "\n  "))
		}
		if refused := w.Real.Proxy.Refused(); len(refused) > 0 {
			t.Errorf("the real controllers asked hosts other than Azure's public cloud: %v", refused)
		}
	})
	return w
}

// waitReady waits until CAPZ says the AzureCluster is ready, and fails
// with what CAPZ's conditions and logs say otherwise.
func waitReady(t *testing.T, w *testworld.World, ns, name string) {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, readyLimit, true, func(ctx context.Context) (bool, error) {
		for _, p := range w.Real.Processes() {
			if gone, err := p.Exited(); gone {
				return false, fmt.Errorf("%s exited (%w): %s", p.Name, err, p.Tail(4096))
			}
		}
		u, err := w.Get(ctx, ns, name)
		if err != nil {
			return false, nil //nolint:nilerr // read again
		}
		last = u
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "ready")
		return ready, nil
	})
	if err != nil {
		var conds any
		if last != nil {
			conds = last.Object["status"]
		}
		t.Fatalf("AzureCluster %s/%s not ready: %v\nstatus: %v\nCAPZ's log ends:\n%s\nASO's log ends:\n%s", ns, name, err, conds,
			w.Real.CAPZ.Tail(8192), w.Real.ASO.Tail(8192))
	}
}

// TestWiringWithRealCAPZ is the smoke scenario make test runs: a private
// MC and a private WC on CAPZ v1.27 with a native private link, the MC's
// network, load balancers and private link services made by the real CAPZ
// through the real ASO, and the real operator binary wiring them: the
// MC's endpoint to the WC's API server is CAPZ's (an entry the operator
// adds to the MC's AzureCluster, an ASO PrivateEndpoint, an endpoint in
// Azure), the WC's endpoint to the MC's ingress is the operator's own.
func TestWiringWithRealCAPZ(t *testing.T) {
	w := start(t, testenv.SchemaV127)
	w.Namespace(t, mcNS)
	w.Namespace(t, wcNS)
	mc := testworld.Cluster{Namespace: mcNS, Name: "mc", Subscription: mcSub, Private: true, CIDR16: 10}
	wc := testworld.Cluster{Namespace: wcNS, Name: "wc1", Subscription: wcSub, Private: true, CIDR16: 20,
		PrivateLinks: []testworld.PrivateLink{{Name: "wc1-api-privatelink", AllowedSubscriptions: []string{mcSub}, AutoApprovedSubscriptions: []string{mcSub}}}}
	w.CreateOwned(t, mc, testenv.SchemaV127)
	w.CreateOwned(t, wc, testenv.SchemaV127)
	waitReady(t, w, mcNS, "mc")
	createIngress(t, w, "mc", mcSub, "mc-rg", "mc-vnet", "mc-nodes", wcSub)
	waitReady(t, w, wcNS, "wc1")

	op := startOperator(t, w)
	key := types.NamespacedName{Namespace: wcNS, Name: "wc1"}
	testworld.Eventually(t, readyLimit, "the WC wired both ways", func(ctx context.Context) (bool, string) {
		if gone, err := op.Exited(); gone {
			return false, fmt.Sprintf("the operator exited: %v", err)
		}
		u, err := w.Get(ctx, key.Namespace, key.Name)
		if err != nil {
			return false, err.Error()
		}
		a := u.GetAnnotations()
		return a[apiAnn] != "" && a[ingAnn] != "", testworld.Describe(u)
	})
	u, err := w.Get(context.Background(), key.Namespace, key.Name)
	if err != nil {
		t.Fatal(err)
	}
	// CAPZ named the endpoint; ASO made it; the operator read its address.
	if got, want := u.GetAnnotations()[apiAnn], w.EndpointIP(t, mcSub, "mc-rg", "wc1-api-privatelink-privateendpoint"); got != want {
		t.Errorf("%s = %s, want the address of the endpoint ASO made, %s", apiAnn, got, want)
	}
	checkASOEndpoint(t, w, "wc1-api-privatelink-privateendpoint")
}

// createIngress makes what a platform team's ingress controller and its
// Service make in a private MC (cloud-provider-azure, for a Service that
// asks for a private link service): an internal load balancer on the node
// subnet, that subnet's private link service network policies disabled,
// and the private link service <mc>-ingress-privatelink on it,
// auto-approving the WCs' subscription. CAPZ makes none of it, and leaves
// the policies of a subnet it uses for no private link of its own as they
// are (azure/services/subnets/spec.go).
func createIngress(t *testing.T, w *testworld.World, mc, sub, rg, vnet, subnet, autoApprove string) {
	t.Helper()
	ctx := context.Background()
	net := w.Network(t, sub)
	subnetID := fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/virtualNetworks/%s/subnets/%s", sub, rg, vnet, subnet)
	subnets := net.NewSubnetsClient()
	sn, err := subnets.Get(ctx, rg, vnet, subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	sn.Properties.PrivateLinkServiceNetworkPolicies = to.Ptr(armnetwork.VirtualNetworkPrivateLinkServiceNetworkPoliciesDisabled)
	snPoller, err := subnets.BeginCreateOrUpdate(ctx, rg, vnet, subnet, sn.Subnet, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snPoller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
	lbName := mc + "-ingress-lb"
	poller, err := net.NewLoadBalancersClient().BeginCreateOrUpdate(ctx, rg, lbName, armnetwork.LoadBalancer{
		Location: to.Ptr(testworld.DefaultLocation),
		SKU:      &armnetwork.LoadBalancerSKU{Name: to.Ptr(armnetwork.LoadBalancerSKUNameStandard)},
		Properties: &armnetwork.LoadBalancerPropertiesFormat{FrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{
			Name:       to.Ptr(lbName + "-frontEnd"),
			Properties: &armnetwork.FrontendIPConfigurationPropertiesFormat{Subnet: &armnetwork.Subnet{ID: &subnetID}},
		}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := poller.PollUntilDone(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	plsPoller, err := net.NewPrivateLinkServicesClient().BeginCreateOrUpdate(ctx, rg, mc+"-ingress-privatelink", armnetwork.PrivateLinkService{
		Location: to.Ptr(testworld.DefaultLocation),
		Properties: &armnetwork.PrivateLinkServiceProperties{
			LoadBalancerFrontendIPConfigurations: []*armnetwork.FrontendIPConfiguration{{ID: lb.Properties.FrontendIPConfigurations[0].ID}},
			IPConfigurations: []*armnetwork.PrivateLinkServiceIPConfiguration{{
				Name:       to.Ptr("ingress-nat"),
				Properties: &armnetwork.PrivateLinkServiceIPConfigurationProperties{Subnet: &armnetwork.Subnet{ID: &subnetID}, Primary: to.Ptr(true)},
			}},
			Visibility:   &armnetwork.PrivateLinkServicePropertiesVisibility{Subscriptions: []*string{to.Ptr("*")}},
			AutoApproval: &armnetwork.PrivateLinkServicePropertiesAutoApproval{Subscriptions: []*string{to.Ptr(autoApprove)}},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plsPoller.PollUntilDone(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// checkASOEndpoint waits until CAPZ's ASO PrivateEndpoint for the MC's
// endpoint is Ready: the endpoint came through ASO. (The operator can see
// the endpoint in Azure before ASO's poll of its operation marks the
// object Ready.)
func checkASOEndpoint(t *testing.T, w *testworld.World, name string) {
	t.Helper()
	testworld.Eventually(t, readyLimit, "ASO's PrivateEndpoint "+mcNS+"/"+name+" Ready", func(ctx context.Context) (bool, string) {
		pe := capz.Object(capz.ASOPrivateEndpointGVK)
		if err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: name}, pe); err != nil {
			return false, err.Error()
		}
		a := capz.ReadASO(pe)
		return a.Ready, fmt.Sprintf("%+v", a)
	})
}

// startOperator runs the operator binary for the world's MC, with args
// added to the flags every test here uses.
func startOperator(t *testing.T, w *testworld.World, args ...string) *sandbox.Operator {
	t.Helper()
	bin, err := sandbox.SharedOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	op, err := w.Sandbox.StartOperator(bin, filepath.Join(t.TempDir(), "operator.log"),
		append([]string{"--management-cluster-name=mc", "--management-cluster-namespace=" + mcNS, "--pending-recheck-interval=1s", "--mc-write-delay=200ms"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("operator log ends:\n%s", testenv.TailFile(op.LogFile, 8192))
		}
	})
	return op
}
