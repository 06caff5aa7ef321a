package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v11"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privateendpoints"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/capz"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/clusterlink"
	"github.com/giantswarm/azure-private-endpoint-operator/internal/controller/wiringdns"
)

// endpointsInAzure: each entry's endpoint as Azure has it, read in owner's
// subscription and resource group (CAPZ makes an entry's endpoint there)
// with owner's credential. It returns the address Azure gives each
// endpoint it read, by entry name.
func endpointsInAzure(ctx context.Context, ch *chain, az Azure, owner *capz.AzureCluster, es []entry) map[string]string {
	ips := map[string]string{}
	for _, e := range es {
		step := "in Azure: " + e.name
		ob, err := az.Endpoint(ctx, owner, owner.ResourceGroup, e.name)
		if err != nil && ob == nil {
			ch.add(step, StateSkipped, "not read: "+unread(err))
			continue
		}
		if ob == nil {
			ch.stop(step, StateWaiting, ReasonEndpointNotInAzure, fmt.Sprintf(
				"Azure has no private endpoint %s in resource group %s of subscription %s: CAPZ makes it from %s's entry",
				e.name, owner.ResourceGroup, owner.SubscriptionID, owner.Namespace+"/"+owner.Name))
			continue
		}
		if err != nil && ob.IP == "" {
			// The endpoint was read, its network interface not: saying
			// "provisioning" would send the reader the wrong way.
			ch.add(step, StateSkipped, ob.ConnectionState+", address not read: "+unread(err))
			continue
		}
		ips[e.name] = ob.IP
		judgeEndpoint(ch, step, e, *ob)
	}
	return ips
}

// judgeEndpoint: what Azure says of one endpoint, with the operator's
// reasons for the same states.
func judgeEndpoint(ch *chain, step string, e entry, ob privateendpoints.Observation) {
	service := ob.PrivateLinkServiceID
	if service == "" {
		service = e.service
	}
	conn := "connection to " + service
	if ob.ConnectionDescription != "" {
		conn += " (" + ob.ConnectionDescription + ")"
	}
	switch {
	case ob.PrivateLinkServiceID != "" && !strings.EqualFold(ob.PrivateLinkServiceID, e.service):
		ch.stop(step, StateStop, clusterlink.ReasonEndpointTargetMismatch, fmt.Sprintf(
			"endpoint %s connects to %s, not to %s as its entry says", e.name, ob.PrivateLinkServiceID, e.service))
	case ob.ConnectionState == privateendpoints.StatePending:
		ch.stop(step, StateStop, clusterlink.ReasonEndpointPending, conn+" is Pending: the service's owner must approve it")
	case ob.ConnectionState == privateendpoints.StateRejected:
		ch.stop(step, StateStop, clusterlink.ReasonEndpointRejected, conn+" is Rejected")
	case ob.ConnectionState == privateendpoints.StateDisconnected:
		ch.stop(step, StateStop, clusterlink.ReasonEndpointDisconnected, conn+" is Disconnected: the service or the connection is gone")
	case ob.ProvisioningState != string(armnetwork.ProvisioningStateSucceeded) || ob.IP == "":
		ch.stop(step, StateWaiting, clusterlink.ReasonEndpointProvisioning, fmt.Sprintf(
			"endpoint %s: provisioning state %q, connection %q, address %q", e.name, ob.ProvisioningState, ob.ConnectionState, ob.IP))
	default:
		ch.add(step, StateOK, ob.ConnectionState+", "+ob.IP)
	}
}

// recordsInAzure: each name DNS mode says it wrote (GSDNSZoneReady's
// message, once True), looked up in the private zones of the cluster's
// subscription and then of the management cluster's, with each one's
// credential.
func recordsInAzure(ctx context.Context, ch *chain, az Azure, u *unstructured.Unstructured, view, mc *capz.AzureCluster) {
	c := clusterlink.ConditionOf(u, clusterlink.ConditionGSDNSZoneReady)
	if c == nil || c["status"] != "True" {
		return // DNS mode is off, or says itself why it is not ready
	}
	msg, _ := c["message"].(string)
	written, ok := wiringdns.ParseSummary(msg)
	if !ok {
		ch.add("records in Azure", StateSkipped, "GSDNSZoneReady's message does not name the records (an operator of another version?)")
		return
	}
	where := []*capz.AzureCluster{view}
	if mc != nil && !strings.EqualFold(mc.SubscriptionID, view.SubscriptionID) {
		where = append(where, mc)
	}
	for _, w := range written {
		for _, fqdn := range w.FQDNs {
			judgeRecord(ch, "record "+fqdn, w.IP, lookUp(ctx, az, where, fqdn))
		}
	}
}

// lookup is a name's record as found in the first subscription that has a
// zone for it, or why none was.
type lookup struct {
	rec    Record
	where  string
	errs   []string
	looked []string
}

func lookUp(ctx context.Context, az Azure, where []*capz.AzureCluster, fqdn string) lookup {
	var l lookup
	for _, ac := range where {
		l.looked = append(l.looked, ac.SubscriptionID)
		rec, err := az.Record(ctx, ac, fqdn)
		if err != nil {
			l.errs = append(l.errs, ac.SubscriptionID+": "+unread(err))
			continue
		}
		if rec.Zone != "" {
			l.rec, l.where = rec, ac.SubscriptionID
			return l
		}
	}
	return l
}

func judgeRecord(ch *chain, step, want string, l lookup) {
	switch {
	case l.rec.Zone == "" && len(l.errs) > 0:
		ch.add(step, StateSkipped, "not read: "+strings.Join(l.errs, "; "))
	case l.rec.Zone == "":
		ch.add(step, StateSkipped, "no private zone of subscription "+strings.Join(l.looked, " or ")+
			" that the clusters' credentials may read holds the name (a central zone is read with its own identity, not here)")
	case !l.rec.Found:
		ch.stop(step, StateWaiting, ReasonDNSRecordMissing, fmt.Sprintf(
			"zone %s has no A record for the name: the operator writes it again at its next DNS check", l.rec.Zone))
	case !slices.Contains(l.rec.IPs, want):
		ch.stop(step, StateWaiting, ReasonDNSRecordDiffers, fmt.Sprintf(
			"the record in zone %s holds %s; the operator wrote %s and writes it again at its next DNS check",
			l.rec.Zone, strings.Join(l.rec.IPs, ", "), want))
	default:
		ch.add(step, StateOK, strings.Join(l.rec.IPs, ", ")+" (zone "+l.rec.Zone+")")
	}
}

// unread is why Azure could not be read, in one line: Azure's own answer
// as the operator classifies it (a missing permission names the action),
// else the whole error (a credential's error says on its later lines why
// it failed: the host it could not reach, the file it could not read).
func unread(err error) string {
	if c := azure.Classify(err); c.Code != "" {
		return c.Message
	}
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if r := []rune(msg); len(r) > maxUnread {
		msg = string(r[:maxUnread]) + "…"
	}
	return msg
}

// maxUnread bounds what a step says of an error.
const maxUnread = 400
