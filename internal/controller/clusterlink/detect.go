package clusterlink

import (
	"context"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=azureclusters.infrastructure.cluster.x-k8s.io

// azureClusterCRD is the AzureCluster CRD's name.
const azureClusterCRD = "azureclusters.infrastructure.cluster.x-k8s.io"

// Installed is what the operator found installed: which CAPZ, whether ASO's
// PrivateEndpoint CRD is there, and so how orphans are cleaned up.
type Installed struct {
	Flavor  capz.Flavor
	ASO     bool
	Cleanup capz.OrphanCleanup
}

// Detector finds out what is installed, from the AzureCluster CRD's schema
// and the API server's discovery, never from a flag; it looks again at most
// once per Interval, so a CAPZ upgrade is seen without a restart, and logs
// and exports (metric capz_flavor) every change.
type Detector struct {
	// Reader reads the CRD from the API server (not a cache).
	Reader client.Reader
	Mapper meta.RESTMapper
	// Interval between looks; default 10 minutes.
	Interval time.Duration

	mu   sync.Mutex
	at   time.Time
	have Installed
}

// Get returns what is installed, looking again when Interval has passed.
func (d *Detector) Get(ctx context.Context) Installed {
	d.mu.Lock()
	defer d.mu.Unlock()
	interval := d.Interval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	if !d.at.IsZero() && time.Since(d.at) < interval {
		return d.have
	}
	d.at = time.Now()
	now := d.detect(ctx)
	if now != d.have {
		ctrl.LoggerFrom(ctx).WithName("detect").Info("CAPZ detected", "flavor", now.Flavor, "asoPrivateEndpoints", now.ASO,
			"orphanCleanup", now.Cleanup)
		setFlavorMetric(now)
		d.have = now
	}
	return d.have
}

func (d *Detector) detect(ctx context.Context) Installed {
	in := Installed{Flavor: capz.FlavorUnknown}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := d.Reader.Get(ctx, types.NamespacedName{Name: azureClusterCRD}, u); err != nil {
		ctrl.LoggerFrom(ctx).Info("Cannot read the AzureCluster CRD to tell which CAPZ runs; treating it as unknown", "error", err.Error())
	} else {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err == nil {
			in.Flavor = capz.DetectFlavor(crd)
		}
	}
	if d.Mapper != nil {
		gvk := capz.ASOPrivateEndpointGVK
		if _, err := d.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			in.ASO = true
		} else if meta.IsNoMatchError(err) {
			// The mapper caches discovery: ask again next time.
			if r, ok := d.Mapper.(interface{ Reset() }); ok {
				r.Reset()
			}
		}
	}
	in.Cleanup = capz.OrphanCleanupFor(in.Flavor, in.ASO)
	return in
}
