package clusterlink

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TrimManagedFields is the operator's cache transform: it keeps only the
// managedFields entries of the operator's field manager, the only ones it
// reads (capz.CurrentOwned). Other managers' entries (CAPZ's, users') are
// often the larger part of an AzureCluster; at 1,000 workload clusters they
// cost tens of MiB of cache for nothing.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	fields := o.GetManagedFields()
	kept := make([]metav1.ManagedFieldsEntry, 0, 1)
	for _, f := range fields {
		if f.Manager == capz.FieldManager {
			kept = append(kept, f)
		}
	}
	if len(kept) != len(fields) {
		o.SetManagedFields(kept)
	}
	return obj, nil
}
