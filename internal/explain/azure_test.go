package explain_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/explain"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/sandbox"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

var wiredKey = types.NamespacedName{Namespace: wcNS, Name: "wired"}

const (
	wiredMCEndpoint = "wired-api-privatelink-privateendpoint"
	wiredAPIName    = "api.wired." + baseDomain
)

// checkAzure: explain reading Azure with the clusters' identities (the
// operator's SDK clients against azuresim): each endpoint's connection
// state and address, the records DNS mode wrote, and what it says when
// Azure differs from what the operator published.
func checkAzure(ctx context.Context, t *testing.T, w *testworld.World) {
	t.Helper()
	az := explain.NewAzure(ctx, w.Client, w.Clouds(), false)
	o := explain.Options{ManagementCluster: mcKey, Azure: az}
	var r explain.Report
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		r, err = explain.Explain(ctx, w.Client, wiredKey, o)
		return err == nil && r.Wired && step(r, "record "+wiredAPIName).State == explain.StateOK, nil
	})
	if err != nil {
		t.Fatalf("wired, with Azure: %v; last report %+v", err, r)
	}
	u, err := w.Get(ctx, wcNS, "wired")
	if err != nil {
		t.Fatal(err)
	}
	apiIP := u.GetAnnotations()[clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.AnnotationAPIServerIP]
	if s := step(r, "in Azure: "+wiredMCEndpoint); s.State != explain.StateOK || s.Detail != "Approved, "+apiIP {
		t.Errorf("the MC's endpoint in Azure: %+v; want Approved, %s", s, apiIP)
	}
	if s := step(r, "record "+wiredAPIName); !strings.HasPrefix(s.Detail, apiIP+" (zone ") {
		t.Errorf("the MC-side record: %+v; want %s in its zone", s, apiIP)
	}
	if s := step(r, "record *.mc."+baseDomain); s.State != explain.StateOK {
		t.Errorf("the WC-side record: %+v", s)
	}
	if r, err := explain.Explain(ctx, w.Client, types.NamespacedName{Namespace: wcNS, Name: "manual"}, o); err != nil ||
		r.Reason != clusterlink.ReasonEndpointPending || r.StoppedAt != "in Azure: manual-api-privatelink-privateendpoint" {
		t.Errorf("manual, with Azure: %+v, %v", r, err)
	}
	checkUnreadable(ctx, t, w)
	checkTampered(ctx, t, w.Client, o)
	checkRecordsChanged(ctx, t, w, o, zoneOf(t, step(r, "record "+wiredAPIName).Detail), apiIP)
	checkAzurePlugin(t, w)
}

// checkUnreadable: what the caller may not read is left out, and said so;
// the chain does not stop there.
func checkUnreadable(ctx context.Context, t *testing.T, w *testworld.World) {
	t.Helper()
	noSecrets := noSecretReader{Reader: w.Client}
	r, err := explain.Explain(ctx, noSecrets, wiredKey, explain.Options{ManagementCluster: mcKey, Azure: explain.NewAzure(ctx, noSecrets, w.Clouds(), false)})
	if err != nil || !r.Wired {
		t.Fatalf("without read access to Secrets: %+v, %v", r, err)
	}
	if s := step(r, "in Azure: "+wiredMCEndpoint); s.State != explain.StateSkipped || !strings.Contains(s.Detail, "not read: ") || !strings.Contains(s.Detail, "forbidden") {
		t.Errorf("an endpoint the caller's kubeconfig cannot get a credential for: %+v", s)
	}
}

// tampered answers as Azure would after a change the operator has not
// seen yet: the real answer for wired's MC endpoint, changed.
type tampered struct {
	explain.Azure
	change func(*privateendpoints.Observation) *privateendpoints.Observation
}

func (a tampered) Endpoint(ctx context.Context, as *capz.AzureCluster, rg, name string) (*privateendpoints.Observation, error) {
	ob, err := a.Azure.Endpoint(ctx, as, rg, name)
	if err != nil || ob == nil || name != wiredMCEndpoint {
		return ob, err
	}
	return a.change(ob), nil
}

// checkTampered: for each state Azure may put the endpoint in, the reason
// explain stops with (the operator's own reasons for the same states).
func checkTampered(ctx context.Context, t *testing.T, c client.Reader, o explain.Options) {
	t.Helper()
	set := func(f func(*privateendpoints.Observation)) func(*privateendpoints.Observation) *privateendpoints.Observation {
		return func(ob *privateendpoints.Observation) *privateendpoints.Observation { f(ob); return ob }
	}
	for _, tc := range []struct {
		name, reason, state, at string
		change                  func(*privateendpoints.Observation) *privateendpoints.Observation
	}{
		{"deleted in Azure", explain.ReasonEndpointNotInAzure, explain.StateWaiting, "in Azure: " + wiredMCEndpoint,
			func(*privateendpoints.Observation) *privateendpoints.Observation { return nil }},
		{"rejected", clusterlink.ReasonEndpointRejected, explain.StateStop, "in Azure: " + wiredMCEndpoint,
			set(func(ob *privateendpoints.Observation) { ob.ConnectionState = privateendpoints.StateRejected })},
		{"disconnected", clusterlink.ReasonEndpointDisconnected, explain.StateStop, "in Azure: " + wiredMCEndpoint,
			set(func(ob *privateendpoints.Observation) { ob.ConnectionState = privateendpoints.StateDisconnected })},
		{"updating", clusterlink.ReasonEndpointProvisioning, explain.StateWaiting, "in Azure: " + wiredMCEndpoint,
			set(func(ob *privateendpoints.Observation) { ob.ProvisioningState = "Updating" })},
		{"another service", clusterlink.ReasonEndpointTargetMismatch, explain.StateStop, "in Azure: " + wiredMCEndpoint,
			set(func(ob *privateendpoints.Observation) { ob.PrivateLinkServiceID += "-other" })},
		{"another address", explain.ReasonAnnotationOutdated, explain.StateWaiting, "annotation " + clusterlink.AnnotationAPIServerIP,
			set(func(ob *privateendpoints.Observation) { ob.IP = "10.99.0.1" })},
	} {
		o := o
		o.Azure = tampered{Azure: o.Azure, change: tc.change}
		r, err := explain.Explain(ctx, c, wiredKey, o)
		if err != nil || r.Wired || r.Reason != tc.reason || r.StoppedAt != tc.at || step(r, tc.at).State != tc.state || r.Fix == "" || !explain.StopsHere(r.Reason, r.StoppedAt) {
			t.Errorf("%s: %+v, %v; want %s at %q (%s)", tc.name, r, err, tc.reason, tc.at, tc.state)
		}
	}
}

// checkRecordsChanged: a record changed or removed in Azure behind the
// operator's back (it rereads hourly here) is found, with the zone.
func checkRecordsChanged(ctx context.Context, t *testing.T, w *testworld.World, o explain.Options, zone dns.Zone, apiIP string) {
	t.Helper()
	records := w.DNS(t, zone.Subscription).NewRecordSetsClient()
	got, err := records.Get(ctx, zone.ResourceGroup, zone.Name, armprivatedns.RecordTypeA, "api", nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := got.RecordSet
	rs.Properties.ARecords = []*armprivatedns.ARecord{{IPv4Address: new("10.99.0.7")}}
	if _, err := records.CreateOrUpdate(ctx, zone.ResourceGroup, zone.Name, armprivatedns.RecordTypeA, "api", rs, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := explain.Explain(ctx, w.Client, wiredKey, o); err != nil || r.Reason != explain.ReasonDNSRecordDiffers ||
		r.StoppedAt != "record "+wiredAPIName || !strings.Contains(r.Message, "holds 10.99.0.7; the operator wrote "+apiIP) {
		t.Errorf("a record changed in Azure: %+v, %v", r, err)
	}
	if _, err := records.Delete(ctx, zone.ResourceGroup, zone.Name, armprivatedns.RecordTypeA, "api", nil); err != nil {
		t.Fatal(err)
	}
	if r, err := explain.Explain(ctx, w.Client, wiredKey, o); err != nil || r.Reason != explain.ReasonDNSRecordMissing || r.StoppedAt != "record "+wiredAPIName {
		t.Errorf("a record deleted in Azure: %+v, %v", r, err)
	}
}

// checkAzurePlugin: the plugin's Azure flags, with identities and with the
// caller's own credential (environment variables, as on a laptop).
func checkAzurePlugin(t *testing.T, w *testworld.World) {
	t.Helper()
	cc, err := json.Marshal(w.CustomCloud())
	if err != nil {
		t.Fatal(err)
	}
	cloudFile := filepath.Join(t.TempDir(), "cloud.json")
	if err := os.WriteFile(cloudFile, cc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"identity", "own"} {
		if mode == "own" {
			t.Setenv("AZURE_TENANT_ID", sandbox.CAPZTenantID)
			t.Setenv("AZURE_CLIENT_ID", sandbox.CAPZClientID)
			t.Setenv("AZURE_CLIENT_SECRET", sandbox.CAPZSecret)
		}
		out, code := runPlugin(t, w.Client, "explain", wcNS+"/manual", "--azure="+mode, "--azure-custom-cloud", cloudFile, "-o", "json")
		var r explain.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 3 || r.StoppedAt != "in Azure: manual-api-privatelink-privateendpoint" {
			t.Errorf("kubectl apeo explain --azure=%s: exit %d, %v, %s", mode, code, err, out)
		}
	}
	if out, code := runPlugin(t, w.Client, "explain", wcNS+"/manual", "--azure=off", "-o", "json"); code != 3 || strings.Contains(out, "in Azure") {
		t.Errorf("--azure=off: exit %d, %s", code, out)
	}
	if _, code := runPlugin(t, w.Client, "explain", wcNS+"/manual", "--azure=everything"); code != 2 {
		t.Errorf("--azure=everything: exit %d, want 2", code)
	}
	for _, name := range []string{"manual", "wired"} {
		t.Logf("kubectl apeo explain %s/%s --azure-custom-cloud ...:\n%s", wcNS, name, mustRun(t, w.Client, "explain", wcNS+"/"+name, "--azure-custom-cloud", cloudFile))
	}
}

func step(r explain.Report, name string) explain.Step {
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	return explain.Step{}
}

// zoneOf reads the zone ID a record step names: "<ips> (zone <id>)".
func zoneOf(t *testing.T, detail string) dns.Zone {
	t.Helper()
	_, id, _ := strings.Cut(detail, "(zone ")
	z, ok := dns.ZoneFromID(strings.TrimSuffix(id, ")"))
	if !ok {
		t.Fatalf("no zone in %q", detail)
	}
	return z
}

// noSecretReader answers as the API server does a caller who may not read
// Secrets.
type noSecretReader struct{ client.Reader }

func (r noSecretReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("no access to Secrets"))
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}
