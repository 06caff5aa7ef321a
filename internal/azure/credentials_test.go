package azure_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azuresim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
)

const (
	simCloud      = "AzureSim"
	tenantID      = "tenant-1"
	identityNS    = "org-giantswarm"
	clusterNS     = "org-team-a"
	simSubscribed = "s1"
)

// credEnv is an API server holding identities, azuresim as the cloud, and a
// Credentials pointed at both the way the operator's flags will.
type credEnv struct {
	c     client.Client
	sim   *azuresim.Server
	creds *azure.Credentials
	clock *clocktesting.FakePassiveClock
}

func newCredEnv(t *testing.T) *credEnv {
	t.Helper()
	return newCredEnvWith(t, azuresim.Options{})
}

// newCredEnvWith is newCredEnv with azuresim's timing options (Latency,
// MaxPollInterval) from opts.
func newCredEnvWith(t *testing.T, opts azuresim.Options) *credEnv {
	t.Helper()
	env := testenv.StartT(t, testenv.Options{})
	sim := azuresim.New(azuresim.Options{TLS: true, Principals: []azuresim.Principal{{ClientID: "placeholder", ClientSecret: "x"}},
		Latency: opts.Latency, MaxPollInterval: opts.MaxPollInterval})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := sim.WriteCAFile(caFile); err != nil {
		t.Fatal(err)
	}
	if err := sim.Seed(azuresim.Seed{ResourceGroups: []azuresim.SeedResourceGroup{{SubscriptionID: simSubscribed, Name: "rg", Location: "westeurope"}}}); err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakePassiveClock(time.Now())
	ce := &credEnv{c: env.Client, sim: sim, clock: clock, creds: &azure.Credentials{
		Reader:       env.Client,
		SecretReader: env.Client,
		Clouds: azure.Clouds{Default: simCloud, Custom: []azure.CustomCloud{{
			Name: simCloud, ResourceManagerEndpoint: sim.URL(), ActiveDirectoryAuthorityHost: sim.URL(), CAFile: caFile,
		}}},
		Clock: clock,
	}}
	for _, ns := range []string{identityNS, clusterNS} {
		if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "a"}}}); err != nil {
			t.Fatal(err)
		}
	}
	return ce
}

func (ce *credEnv) identity(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	u.SetNamespace(identityNS)
	u.SetName(name)
	if err := ce.c.Create(context.Background(), u); err != nil {
		t.Fatalf("identity %s: %v", name, err)
	}
}

// servicePrincipal makes the principal "sp" in azuresim and the identity
// "sp" of it, whose secret is in the Secret "sp-secret".
func (ce *credEnv) servicePrincipal(t *testing.T) {
	t.Helper()
	ce.sim.AddPrincipal(azuresim.Principal{TenantID: tenantID, ClientID: "sp", ClientSecret: "pw"})
	ce.secret(t, "sp-secret", "pw")
	ce.identity(t, "sp", map[string]any{"type": "ServicePrincipal", "tenantID": tenantID, "clientID": "sp", "clientSecret": map[string]any{"name": "sp-secret"}, "allowedNamespaces": map[string]any{}})
}

func (ce *credEnv) secret(t *testing.T, name, value string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: identityNS, Name: name}, Data: map[string][]byte{azure.SecretKey: []byte(value)}}
	if err := ce.c.Create(context.Background(), s); err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
}

// armCall proves a credential works: a token from the emulated AAD, then an
// ARM list that the emulator only answers with a valid token.
func armCall(t *testing.T, cred *azure.Credential) error {
	t.Helper()
	opts := &arm.ClientOptions{ClientOptions: azcore.ClientOptions{Cloud: cred.Cloud, Transport: cred.Transport}}
	c, err := armnetwork.NewPrivateEndpointsClient(simSubscribed, cred, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.NewListPager("rg", nil).NextPage(context.Background())
	return err
}

func cluster(identity string) *capz.AzureCluster {
	return &capz.AzureCluster{Name: "wc1", Namespace: clusterNS, IdentityRef: &capz.ObjectRef{Name: identity, Namespace: identityNS}}
}

// TestCredentialsForEveryIdentityType builds each identity type CAPZ
// supports from its AzureClusterIdentity and uses it against azuresim.
func TestCredentialsForEveryIdentityType(t *testing.T) {
	ce := newCredEnv(t)
	certPEM, keyPEM := selfSignedCert(t)
	allowAll := map[string]any{}
	tests := []struct {
		name      string
		spec      map[string]any
		secret    string
		principal azuresim.Principal
		setup     func(t *testing.T)
	}{
		{
			name:      "ServicePrincipal",
			spec:      map[string]any{"type": "ServicePrincipal", "tenantID": tenantID, "clientID": "sp", "clientSecret": map[string]any{"name": "sp-secret"}, "allowedNamespaces": allowAll},
			secret:    "sp-password",
			principal: azuresim.Principal{TenantID: tenantID, ClientID: "sp", ClientSecret: "sp-password"},
		},
		{
			name:      "ManualServicePrincipal",
			spec:      map[string]any{"type": "ManualServicePrincipal", "tenantID": tenantID, "clientID": "manual", "clientSecret": map[string]any{"name": "manual-secret", "namespace": identityNS}, "allowedNamespaces": allowAll},
			secret:    "manual-password",
			principal: azuresim.Principal{TenantID: tenantID, ClientID: "manual", ClientSecret: "manual-password"},
		},
		{
			name:      "ServicePrincipalCertificate",
			spec:      map[string]any{"type": "ServicePrincipalCertificate", "tenantID": tenantID, "clientID": "cert", "clientSecret": map[string]any{"name": "cert-secret"}, "allowedNamespaces": allowAll},
			secret:    certPEM + keyPEM,
			principal: azuresim.Principal{TenantID: tenantID, ClientID: "cert", Certificate: certPEM},
		},
		{
			name:      "WorkloadIdentity",
			spec:      map[string]any{"type": "WorkloadIdentity", "tenantID": tenantID, "clientID": "wi", "allowedNamespaces": allowAll},
			principal: azuresim.Principal{TenantID: tenantID, ClientID: "wi", FederatedToken: "projected-service-account-token"},
			setup: func(t *testing.T) {
				f := filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(f, []byte("projected-service-account-token"), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AZURE_FEDERATED_TOKEN_FILE", f)
			},
		},
		{
			name:      "UserAssignedMSI",
			spec:      map[string]any{"type": "UserAssignedMSI", "tenantID": tenantID, "clientID": "msi", "allowedNamespaces": allowAll},
			principal: azuresim.Principal{ClientID: "msi", ManagedIdentity: true},
			setup: func(t *testing.T) {
				t.Setenv("IDENTITY_ENDPOINT", ce.sim.URL()+"/msi/token")
				t.Setenv("IDENTITY_HEADER", "header-from-the-platform")
			},
		},
		{
			name:      "UserAssignedIdentityCredential",
			principal: azuresim.Principal{TenantID: tenantID, ClientID: "uaic", Certificate: certPEM},
			setup: func(t *testing.T) {
				f := filepath.Join(t.TempDir(), "credentials.json")
				raw, _ := json.Marshal(map[string]string{
					"authentication_endpoint": ce.sim.URL() + "/",
					"client_id":               "uaic",
					"tenant_id":               tenantID,
					"client_secret":           base64.StdEncoding.EncodeToString([]byte(certPEM + keyPEM)),
					"not_before":              time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
					"not_after":               time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
				})
				if err := os.WriteFile(f, raw, 0o600); err != nil {
					t.Fatal(err)
				}
				ce.identity(t, "uaic", map[string]any{"type": "UserAssignedIdentityCredential", "tenantID": tenantID, "clientID": "uaic",
					"userAssignedIdentityCredentialsPath": f, "allowedNamespaces": allowAll})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ce.sim.AddPrincipal(tc.principal)
			if tc.setup != nil {
				tc.setup(t)
			}
			if tc.spec != nil {
				ce.identity(t, tc.principal.ClientID, tc.spec)
			}
			if tc.secret != "" {
				ref, _ := tc.spec["clientSecret"].(map[string]any)
				ce.secret(t, ref["name"].(string), tc.secret)
			}
			cred, err := ce.creds.For(context.Background(), cluster(tc.principal.ClientID))
			if err != nil {
				t.Fatalf("%s: credential: %v", tc.name, err)
			}
			if err := armCall(t, cred); err != nil {
				t.Errorf("%s: ARM call with the credential: %v", tc.name, err)
			}
		})
	}
}

// TestCredentialRefusals covers what stops a cluster from using an identity.
func TestCredentialRefusals(t *testing.T) {
	ce := newCredEnv(t)
	sp := func(allowed any) map[string]any {
		spec := map[string]any{"type": "ServicePrincipal", "tenantID": tenantID, "clientID": "sp", "clientSecret": map[string]any{"name": "sp-secret"}}
		if allowed != nil {
			spec["allowedNamespaces"] = allowed
		}
		return spec
	}
	ce.secret(t, "sp-secret", "pw")
	ce.identity(t, "no-allowed-namespaces", sp(nil))
	ce.identity(t, "listed", sp(map[string]any{"list": []any{clusterNS}}))
	ce.identity(t, "listed-elsewhere", sp(map[string]any{"list": []any{"other"}}))
	ce.identity(t, "selected", sp(map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"team": "a"}}}))
	ce.identity(t, "not-selected", sp(map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"team": "b"}}}))
	ce.identity(t, "missing-secret", map[string]any{"type": "ServicePrincipal", "tenantID": tenantID, "clientID": "x",
		"clientSecret": map[string]any{"name": "nope"}, "allowedNamespaces": map[string]any{}})

	tests := []struct {
		reason     string
		cluster    *capz.AzureCluster
		wantReason string // "" means allowed
	}{
		{"no identityRef", &capz.AzureCluster{Name: "wc1", Namespace: clusterNS}, azure.ReasonNoIdentity},
		{"unset allowedNamespaces allows no namespace (as in CAPZ)", cluster("no-allowed-namespaces"), azure.ReasonIdentityNotAllowed},
		{"the namespace is listed", cluster("listed"), ""},
		{"another namespace is listed", cluster("listed-elsewhere"), azure.ReasonIdentityNotAllowed},
		{"the namespace matches the selector", cluster("selected"), ""},
		{"the namespace does not match the selector", cluster("not-selected"), azure.ReasonIdentityNotAllowed},
		{"the identity does not exist", cluster("ghost"), azure.ReasonIdentityNotFound},
		{"the identity's Secret does not exist", cluster("missing-secret"), azure.ReasonIdentitySecret},
		{"an unknown cloud", func() *capz.AzureCluster { c := cluster("listed"); c.AzureEnvironment = "AzureMarsCloud"; return c }(), azure.ReasonUnknownCloud},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := ce.creds.For(context.Background(), tc.cluster)
			got := azure.Classify(err)
			if tc.wantReason == "" {
				if err != nil {
					t.Errorf("%s: want allowed, got %v", tc.reason, err)
				}
				return
			}
			if got.Class != azure.ClassTerminal || got.Reason != tc.wantReason {
				t.Errorf("%s: want terminal %s, got %+v", tc.reason, tc.wantReason, got)
			}
		})
	}
}

// TestCredentialCache checks that a credential is built once, reused, and
// rebuilt when its Secret is rotated (noticed after the recheck interval) or
// its identity changes (noticed at once).
func TestCredentialCache(t *testing.T) {
	ce := newCredEnv(t)
	ctx := context.Background()
	ce.sim.AddPrincipal(azuresim.Principal{TenantID: tenantID, ClientID: "sp", ClientSecret: "old"})
	ce.secret(t, "sp-secret", "old")
	ce.identity(t, "sp", map[string]any{"type": "ServicePrincipal", "tenantID": tenantID, "clientID": "sp", "clientSecret": map[string]any{"name": "sp-secret"}, "allowedNamespaces": map[string]any{}})

	first, err := ce.creds.For(ctx, cluster("sp"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := ce.creds.For(ctx, cluster("sp"))
	if err != nil {
		t.Fatal(err)
	}
	if first.TokenCredential != again.TokenCredential {
		t.Error("a second use built a new credential")
	}

	// What others write on an identity and its Secret besides the
	// credential — CAPZ's finalizer for every cluster that uses the
	// identity, the identity guard's on the Secret, labels — builds
	// nothing: each build asks Azure AD for a new token (issue 41).
	setMetadata(t, ce, []string{"azurecluster.infrastructure.cluster.x-k8s.io/0123"}, []string{"privatelink.giantswarm.io/identity-in-use"})
	ce.clock.SetTime(ce.clock.Now().Add(6 * time.Minute)) // the Secret is read again
	metaOnly, err := ce.creds.For(ctx, cluster("sp"))
	if err != nil {
		t.Fatal(err)
	}
	if metaOnly.TokenCredential != first.TokenCredential {
		t.Error("finalizers and labels on the identity and its Secret rebuilt the credential")
	}
	setMetadata(t, ce, nil, nil)

	s := &corev1.Secret{}
	if err := ce.c.Get(ctx, client.ObjectKey{Namespace: identityNS, Name: "sp-secret"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data[azure.SecretKey] = []byte("new")
	if err := ce.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	ce.sim.AddPrincipal(azuresim.Principal{TenantID: tenantID, ClientID: "sp", ClientSecret: "new"})
	within, _ := ce.creds.For(ctx, cluster("sp"))
	if within.TokenCredential != first.TokenCredential {
		t.Error("the Secret was read again before the recheck interval")
	}
	ce.clock.SetTime(ce.clock.Now().Add(6 * time.Minute))
	rotated, err := ce.creds.For(ctx, cluster("sp"))
	if err != nil {
		t.Fatal(err)
	}
	if rotated.TokenCredential == first.TokenCredential {
		t.Fatal("a rotated Secret did not rebuild the credential")
	}
	if err := armCall(t, rotated); err != nil {
		t.Errorf("the rebuilt credential does not work: %v", err)
	}

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	if err := ce.c.Get(ctx, client.ObjectKey{Namespace: identityNS, Name: "sp"}, u); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "other-tenant", "spec", "tenantID")
	if err := ce.c.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	changed, err := ce.creds.For(ctx, cluster("sp"))
	if err != nil {
		t.Fatal(err)
	}
	if changed.TokenCredential == rotated.TokenCredential {
		t.Error("a changed identity did not rebuild the credential")
	}
}

// setMetadata sets the finalizers of identity "sp" and Secret "sp-secret"
// and a label on both: metadata others write, nothing a credential is made
// of.
func setMetadata(t *testing.T, ce *credEnv, identityFinalizers, secretFinalizers []string) {
	t.Helper()
	ctx := context.Background()
	id := &unstructured.Unstructured{}
	id.SetGroupVersionKind(capz.AzureClusterIdentityGVK)
	if err := ce.c.Get(ctx, client.ObjectKey{Namespace: identityNS, Name: "sp"}, id); err != nil {
		t.Fatal(err)
	}
	id.SetFinalizers(identityFinalizers)
	id.SetLabels(map[string]string{"touched": "yes"})
	if err := ce.c.Update(ctx, id); err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := ce.c.Get(ctx, client.ObjectKey{Namespace: identityNS, Name: "sp-secret"}, s); err != nil {
		t.Fatal(err)
	}
	s.Finalizers = secretFinalizers
	s.Labels = map[string]string{"touched": "yes"}
	if err := ce.c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// selfSignedCert returns a certificate and its RSA key as PEM.
func selfSignedCert(t *testing.T) (string, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
}

// TestClientsAreCachedAndCounted checks that clients are built once per
// credential and subscription and that every request is counted.
func TestClientsAreCachedAndCounted(t *testing.T) {
	ce := newCredEnv(t)
	ctx := context.Background()
	ce.servicePrincipal(t)
	clients := &azure.Clients{Credentials: ce.creds}

	f1, _, err := clients.Network(ctx, cluster("sp"), simSubscribed)
	if err != nil {
		t.Fatal(err)
	}
	f2, _, err := clients.Network(ctx, cluster("sp"), simSubscribed)
	if err != nil {
		t.Fatal(err)
	}
	if f1 != f2 {
		t.Error("a second use built new clients")
	}
	other, _, err := clients.Network(ctx, cluster("sp"), "other-subscription")
	if err != nil {
		t.Fatal(err)
	}
	if other == f1 {
		t.Error("another subscription shares clients")
	}

	counter := azure.Requests.WithLabelValues("GET", "Microsoft.Network/privateEndpoints", "200")
	before := testutil.ToFloat64(counter)
	if _, err := f1.NewPrivateEndpointsClient().NewListPager("rg", nil).NextPage(ctx); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(counter) - before; got != 1 {
		t.Errorf("counted %v list requests, want 1", got)
	}

	// The raw client beside a factory (the private endpoint lists') is
	// made with the same options: counted as every other request.
	raw, sub, ok := clients.RawNetwork(f1)
	if !ok || sub != simSubscribed {
		t.Fatalf("RawNetwork of a factory Network made: %v, %q", ok, sub)
	}
	req, err := runtime.NewRequest(ctx, http.MethodGet, runtime.JoinPaths(raw.Endpoint(), "/subscriptions/"+simSubscribed+"/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints?api-version=2025-09-01"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := raw.Pipeline().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if got := testutil.ToFloat64(counter) - before; got != 2 {
		t.Errorf("counted %v list requests after the raw client's, want 2", got)
	}
	if _, _, ok := clients.RawNetwork(&armnetwork.ClientFactory{}); ok {
		t.Error("RawNetwork of a factory Network did not make")
	}
}

func TestResourceType(t *testing.T) {
	tests := map[string]string{
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/pe":                                "Microsoft.Network/privateEndpoints",
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints":                                   "Microsoft.Network/privateEndpoints",
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateLinkServices/p/privateEndpointConnections/c": "Microsoft.Network/privateLinkServices/privateEndpointConnections",
		"/subscriptions/s/providers/Microsoft.Network/locations/westeurope/operations/id":                                   "Microsoft.Network/locations/operations",
		"/subscriptions/s/resourceGroups/rg":                                                                                "Microsoft.Resources/resourceGroups",
		"/tenant/oauth2/v2.0/token":                                                                                         "other",
	}
	for path, want := range tests {
		if got := azure.ResourceType(path); got != want {
			t.Errorf("ResourceType(%s) = %s, want %s", path, got, want)
		}
	}
}
