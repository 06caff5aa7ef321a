package privateendpoint

import (
	"fmt"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/giantswarm/azure-private-endpoint-operator/api/v1alpha1"
	pe "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
)

// The drift check through a list (Options.Observer).
//
// A Ready object's endpoint is read again every
// --private-endpoint-drift-interval to notice what changed behind the
// operator's back. Where the process already lists the endpoint's
// subscription with the object's own credential — the wiring lists the
// management cluster's subscription at every drift tick, and the MC's
// endpoints beyond its AzureCluster are AzurePrivateEndpoints in it —
// that list says whether anything changed since the object's last read:
// Azure gives an endpoint a new etag with every write to it, and the list
// carries the etag, the provisioning state, the connection and the
// interfaces. The drift check reads the endpoint again only when a list
// Azure answered after that read shows it otherwise (readPrint), or when
// no such list exists.
//
// What the check remembers is in memory and only spares a read: a new
// process, a new generation, a status someone else changed, a read that
// failed or found the endpoint not Ready, each read the endpoint as before.
// Nothing it remembers is taken from an object's status alone: the
// fingerprint holds the status as the last read left it, and a status
// that differs from it is read again.

// readKey is the memo key of the object's last full read.
func readKey(obj *v1alpha1.AzurePrivateEndpoint) string { return "read|" + owner(obj) }

// approvedKey is the memo key of the object's last Approved observation
// (recentlyApproved).
func approvedKey(obj *v1alpha1.AzurePrivateEndpoint) string { return "endpoint|" + owner(obj) }

// readPrint is what a list must show, with the object as it is, for the
// endpoint to be as its last read found it: the generation; the etag
// (Azure gives the resource a new one with every write to it, and
// networking with the end of every operation on it) and what the
// provider's side and Azure change without the consumer writing (the
// provisioning state, the connection, the interfaces); and the status
// that read wrote.
func readPrint(obj *v1alpha1.AzurePrivateEndpoint, o pe.Observation) string {
	st := obj.Status
	dns := make([]string, 0, len(st.CustomDNSConfigs))
	for _, c := range st.CustomDNSConfigs {
		dns = append(dns, c.FQDN+"="+strings.Join(c.IPAddresses, ","))
	}
	return fmt.Sprintf("%d|%s|%s|%s|%s|%s|%s|%t|%s|%s|%s|%s|%s|%s", obj.Generation,
		o.ETag, strings.ToLower(o.ID), o.ProvisioningState, o.ConnectionState, o.ConnectionDescription,
		strings.ToLower(o.PrivateLinkServiceID), o.ManualApproval, strings.ToLower(strings.Join(o.NICIDs, ",")),
		st.PrivateEndpointID+"|"+st.ProvisioningState, st.ConnectionState+"|"+st.ConnectionDescription,
		st.NetworkInterfaceID, strings.Join(st.IPAddresses, ","), strings.Join(dns, ";"))
}

// sawRead records a full read, started at at, that found the endpoint
// Ready without drift, and the status it left.
func (r *Reconciler) sawRead(obj *v1alpha1.AzurePrivateEndpoint, observed *armnetwork.PrivateEndpoint, at time.Time) {
	o := pe.Observe(observed, nil)
	if o.ETag == "" {
		return
	}
	r.dnsSeen.Set(readKey(obj), readPrint(obj, o), at)
}

// listedUnchanged says that a list Azure answered since the object's last
// full read (or the last list that confirmed it) shows the endpoint as
// that read found it; it then counts as confirmed as of that list. Any
// other answer forgets the read: the caller reads the endpoint.
func (r *Reconciler) listedUnchanged(obj *v1alpha1.AzurePrivateEndpoint, api azureAPI, rg, name string) bool {
	key := readKey(obj)
	fp, since, ok := r.dnsSeen.Entry(key)
	if !ok || api.listed == nil || !meta.IsStatusConditionTrue(obj.Status.Conditions, v1alpha1.ConditionPrivateEndpointReady) {
		r.dnsSeen.Forget(key)
		return false
	}
	o, started, ok := api.listed(rg, name, since)
	if !ok || readPrint(obj, o) != fp {
		r.dnsSeen.Forget(key)
		return false
	}
	r.dnsSeen.Set(key, fp, started)
	return true
}
