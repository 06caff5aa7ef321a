package clusterlink

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
)

// TrimManagedFields returns the operator's cache transform: it keeps only
// the managedFields entries of the operator's field manager and of adopt
// (the older operator's managers), the only ones it reads
// (capz.CurrentOwned, TakenNames, StaleEntries: an entry no kept manager
// holds is someone else's). Other managers' entries (CAPZ's, users') are
// often the larger part of an AzureCluster; at 1,000 workload clusters they
// cost tens of MiB of cache for nothing.
func TrimManagedFields(adopt ...string) func(any) (any, error) {
	return func(obj any) (any, error) {
		o, ok := obj.(metav1.Object)
		if !ok {
			return obj, nil
		}
		fields := o.GetManagedFields()
		kept := make([]metav1.ManagedFieldsEntry, 0, 1)
		for _, f := range fields {
			if f.Manager == capz.FieldManager || slices.Contains(adopt, f.Manager) {
				kept = append(kept, f)
			}
		}
		if len(kept) != len(fields) {
			o.SetManagedFields(kept)
		}
		return obj, nil
	}
}
