// Package cpgate holds a private workload cluster's control plane back
// until the management cluster can reach it (--azure-cluster-gates): while
// the cluster's AzureCluster lacks any of the gate conditions as True, its
// KubeadmControlPlane carries Cluster API's pause annotation. The operator
// lifts only a pause it set itself (marked with PausedByAnnotation), so a
// person's or another tool's pause is never lifted.
package cpgate

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Decision is what the gate does to one KubeadmControlPlane.
type Decision int

const (
	// Skip neither pauses nor releases (see Decide for when).
	Skip Decision = iota
	// Hold pauses the control plane (or keeps the operator's pause): a gate
	// is unmet.
	Hold
	// Release lifts the operator's pause: every gate is met.
	Release
	// Leave leaves a control plane someone else paused as it is.
	Leave
)

// Observed is what Decide reads, from the management cluster's, the
// control plane's, its owning Cluster's and its AzureCluster's objects.
type Observed struct {
	// MCPrivate: the management cluster's API server load balancer is
	// internal. A public MC reaches every cluster without private links.
	MCPrivate bool
	// Initialized: the control plane is up (status.initialization.
	// controlPlaneInitialized, or v1beta1's status.initialized).
	Initialized bool
	// Deleting: the control plane has a deletion timestamp.
	Deleting bool
	// Owned: the control plane has an owning Cluster.
	Owned bool
	// ClusterPaused: the owning Cluster is paused (spec.paused or its
	// pause annotation): clusterctl move, or a person.
	ClusterPaused bool
	// HasInfrastructure: the Cluster names its infrastructure cluster.
	HasInfrastructure bool
	// WCPrivate: the AzureCluster's API server load balancer is internal.
	WCPrivate bool
	// Unmet are the gate conditions of the AzureCluster that are not True.
	Unmet []string
	// Paused: the control plane carries the pause annotation.
	Paused bool
	// PausedByOperator: that pause is the operator's (its mark, or, from
	// the older operator, held only by one of its field managers).
	PausedByOperator bool
}

// Decide is the gate's pure decision. It skips (never pauses, never
// releases) a control plane of a public MC, one already initialized or
// being deleted, one without an owning Cluster, one whose Cluster is paused
// or has no infrastructure reference, and a public workload cluster's.
func Decide(o Observed) (Decision, string) {
	switch {
	case !o.MCPrivate:
		return Skip, "the management cluster is public"
	case o.Initialized:
		return Skip, "the control plane is initialized"
	case o.Deleting:
		return Skip, "the control plane is being deleted"
	case !o.Owned:
		return Skip, "the control plane has no owning Cluster yet"
	case o.ClusterPaused:
		return Skip, "the owning Cluster is paused"
	case !o.HasInfrastructure:
		return Skip, "the owning Cluster has no infrastructure reference yet"
	case !o.WCPrivate:
		return Skip, "the workload cluster's API server is public"
	case o.Paused && !o.PausedByOperator:
		return Leave, "the control plane is paused by someone else"
	case len(o.Unmet) > 0:
		return Hold, "AzureCluster conditions not True: " + strings.Join(o.Unmet, ", ")
	case o.Paused:
		return Release, "every gate condition is True"
	}
	return Skip, "every gate condition is True"
}

// Unmet returns the gates that are not True among an object's
// status.conditions, in gate order.
func Unmet(u *unstructured.Unstructured, gates []string) []string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, g := range gates {
		met := slices.ContainsFunc(conds, func(c any) bool {
			m, ok := c.(map[string]any)
			return ok && m["type"] == g && fmt.Sprint(m["status"]) == "True"
		})
		if !met {
			out = append(out, g)
		}
	}
	return out
}
