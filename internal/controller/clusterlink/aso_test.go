package clusterlink_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capzsim"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/privatelinkservice"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testenv"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/testworld"
)

// TestOrphanThroughASO: upstream CAPZ v1.23 makes endpoints through ASO
// and leaves the ASO object of an entry the operator removed. The operator
// deletes that ASO object (ASO then deletes the endpoint), never the Azure
// endpoint while its ASO object lives.
func TestOrphanThroughASO(t *testing.T) {
	// The WC opts out: the operator removes the MC's entry; CAPZ v1.23
	// keeps the ASO object, so the operator deletes it.
	w, guard := optedOut(t, testenv.SchemaUpstream)
	pes := w.Network(t, mcSub).NewPrivateEndpointsClient()
	testworld.Eventually(t, testworld.Timeout, "the orphan's ASO object and endpoint gone", func(ctx context.Context) (bool, string) {
		err := w.Client.Get(ctx, types.NamespacedName{Namespace: mcNS, Name: asoPE}, asoEndpoint())
		_, azErr := pes.Get(ctx, "mc-rg", asoPE, nil)
		return apierrors.IsNotFound(err) && azErr != nil, fmt.Sprint(err, azErr)
	})
	waitEvent(t, w, mcKey, clusterlink.ReasonOrphanDeleted)
	guard()
}

// TestNoAzureDeleteBehindLiveASO: a CAPZ the operator takes for one that
// deletes what leaves spec (the fork's schema: cleanup in Azure) but that
// keeps ASO objects: the operator leaves an endpoint alone while its ASO
// object lives, since ASO would make it again.
func TestNoAzureDeleteBehindLiveASO(t *testing.T) {
	w, guard := optedOut(t, testenv.SchemaFork)
	testworld.Eventually(t, testworld.Timeout, "the MC entry removed", func(context.Context) (bool, string) {
		names := endpointNames(t, w, mcKey)
		return len(names) == 0, fmt.Sprint(names)
	})
	// Ten sweep intervals (300 ms in tests): two ripen a candidate.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := w.Network(t, mcSub).NewPrivateEndpointsClient().Get(context.Background(), "mc-rg", asoPE, nil); err != nil {
		t.Errorf("the endpoint behind a live ASO object was deleted: %v", err)
	}
	guard()
}

// asoPE is the MC's endpoint to wc1's managed service.
const asoPE = "wc1-api-privatelink-privateendpoint"

// optedOut wires wc1 through a managed private link service in a world
// whose capzsim is upstream CAPZ v1.23 (ASO objects kept when removed from
// spec) under the given schema, starts the ASO guard on the MC's endpoint,
// and opts wc1 out, so that the operator removes that endpoint's entry.
func optedOut(t *testing.T, schema testenv.Schema) (*testworld.World, func()) {
	t.Helper()
	w := world(t, schema, capzsim.Upstream, false)
	wc := wcCluster("wc1", 20)
	wc.PrivateLinks = nil
	create(t, w, schema, mcCluster(true), wc)
	operator(t, w, func(o *clusterlink.Options) { o.PrivateLinkServices, o.ManagePrivateLinkServices = true, true })
	w.StartPrivateLinkServices(t, privatelinkservice.Options{})
	wired(t, w, "wc1", true, true)
	guard := watchASOGuard(t, w, mcSub, "mc-rg", mcNS, asoPE)
	mergePatch(t, w, types.NamespacedName{Namespace: wcNS, Name: "wc1"},
		`{"metadata":{"annotations":{"`+clusterlink.DefaultAnnotationPrefix+"/"+clusterlink.ManageAnnotation+`":"false"}}}`)
	return w, guard
}

func asoEndpoint() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(capz.ASOPrivateEndpointGVK)
	return u
}

// watchASOGuard polls an endpoint and its ASO object until the returned
// function is called, and fails the test if the endpoint was ever missing
// in Azure while its ASO object lived (not being deleted).
func watchASOGuard(t *testing.T, w *testworld.World, sub, rg, ns, name string) func() {
	t.Helper()
	pes := w.Network(t, sub).NewPrivateEndpointsClient()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var violation string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			obj := asoEndpoint()
			err := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
			live := err == nil && obj.GetDeletionTimestamp() == nil
			_, azErr := pes.Get(ctx, rg, name, nil)
			obj2 := asoEndpoint()
			err2 := w.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj2)
			live2 := err2 == nil && obj2.GetDeletionTimestamp() == nil && obj2.GetUID() == obj.GetUID()
			if live && live2 && azErr != nil && ctx.Err() == nil {
				mu.Lock()
				violation = fmt.Sprintf("endpoint %s missing in Azure (%v) while its ASO object lived", name, azErr)
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return func() {
		t.Helper()
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		if violation != "" {
			t.Error(violation)
		}
	}
}
