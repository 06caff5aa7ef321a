// Package cpgate holds a private workload cluster's control plane back
// until the management cluster can reach it (--azure-cluster-gates): while
// the cluster's AzureCluster lacks any of the gate conditions as True, its
// KubeadmControlPlane carries Cluster API's pause annotation. The operator
// lifts only a pause it set itself (marked with PausedByAnnotation) or one
// that is provably the older operator's, so a person's or another tool's
// pause is never lifted; and it lifts its own pause whenever the gate no
// longer applies, deletion first: upstream KubeadmControlPlane returns on
// pause before it handles deletion, so a pause left behind would keep a
// Cluster Deleting forever.
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
	// Release lifts the operator's pause: every gate is met, or the gate no
	// longer applies to the control plane.
	Release
	// Leave leaves a control plane someone else paused as it is.
	Leave
)

// Observed is what Decide reads, from the management cluster's, the
// control plane's, its owning Cluster's and its AzureCluster's objects.
type Observed struct {
	// GatesOff: the operator runs without gates (--azure-cluster-gates
	// empty): it only lifts the pauses an earlier configuration left.
	GatesOff bool
	// Unselected: the control plane does not carry the operator's
	// --watch-filter label value.
	Unselected bool
	// FilterMatches: the operator's pause was set by an instance with the
	// same --watch-filter value as this one (see PausedFilterAnnotation).
	FilterMatches bool
	// MCMissing: the management cluster's AzureCluster does not exist.
	MCMissing bool
	// MCPrivate: the management cluster's API server load balancer is
	// internal. A public MC reaches every cluster without private links.
	MCPrivate bool
	// Initialized: the control plane is up (status.initialization.
	// controlPlaneInitialized, or v1beta1's status.initialized).
	Initialized bool
	// Deleting: the control plane, its owning Cluster or its AzureCluster
	// has a deletion timestamp.
	Deleting bool
	// Owned: the control plane has an owning Cluster.
	Owned bool
	// ClusterPaused: the owning Cluster is paused (spec.paused or its
	// pause annotation): clusterctl move, or a person.
	ClusterPaused bool
	// HasInfrastructure: the Cluster names its infrastructure cluster and
	// that AzureCluster exists.
	HasInfrastructure bool
	// WCPrivate: the AzureCluster's API server load balancer is internal.
	WCPrivate bool
	// Unmet are the gate conditions of the AzureCluster that are not True.
	Unmet []string
	// Paused: the control plane carries the pause annotation.
	Paused bool
	// PausedByOperator: that pause is the operator's (its mark), or
	// provably the older operator's (olderOperatorPause in the controller).
	PausedByOperator bool
}

// Decide is the gate's pure decision.
//
// The operator's own pause is lifted whenever the gate no longer applies,
// checked in this order: the control plane (or its Cluster or AzureCluster)
// is being deleted; the gates are off; the management cluster is gone or
// public; the control plane is initialized or has no owning Cluster; the
// Cluster has no infrastructure; the workload cluster is public. Otherwise
// it holds while a gate is unmet and releases when all are met. A Cluster
// paused by clusterctl move or a person is left as it is (nothing is
// written while Cluster API is told to stand still), except for deletion.
// A pause that is not the operator's is never touched.
//
// An unselected control plane (--watch-filter) is another instance's: it
// is left alone, unless this instance's filter value set the pause (the
// label was changed or removed since): then the pause is lifted.
func Decide(o Observed) (Decision, string) {
	ours := o.Paused && o.PausedByOperator
	release := func(why string) (Decision, string) {
		if ours {
			return Release, why
		}
		return Skip, why
	}
	switch {
	case o.Unselected:
		if ours && o.FilterMatches {
			return Release, "the control plane no longer carries the watch-filter label"
		}
		return Skip, "the control plane is not selected by --watch-filter"
	case o.Deleting:
		return release("the control plane is being deleted")
	case o.GatesOff:
		return release("the gates are off (--azure-cluster-gates is empty)")
	case o.MCMissing:
		return release("the management cluster's AzureCluster does not exist")
	case !o.MCPrivate:
		return release("the management cluster is public")
	case o.Initialized:
		return release("the control plane is initialized")
	case !o.Owned:
		return release("the control plane has no owning Cluster")
	case o.ClusterPaused:
		return Skip, "the owning Cluster is paused"
	case !o.HasInfrastructure:
		return release("the owning Cluster has no infrastructure cluster")
	case !o.WCPrivate:
		return release("the workload cluster's API server is public")
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
