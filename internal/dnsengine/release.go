package dnsengine

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// DropZone deletes the target's zone if the operator made it for the
// owner, or made it shared and no other live object of the owner's kind
// uses it (Register), and it holds nothing but its SOA record set and no
// links (a link another live object needs stays, and so the zone). links
// is how many links the zone has, as the caller just listed them;
// negative: unknown, the zone's own count says (and only when it has
// links are they listed, to tell links still being deleted from anyone
// else's). Before that, in an unused shared zone without links, it
// deletes the record sets the operator wrote for owners of the caller's
// kind that are gone (Users.Live): a record a lost status write forgot
// would keep the zone for good. It reports whether the zone is gone or
// stays for good (false: look again).
func (e *Engine) DropZone(ctx context.Context, t Target, links int) (bool, error) {
	z := t.Zone
	observed, err := t.API.Zone(ctx, z.ResourceGroup, z.Name)
	if err != nil || observed == nil {
		if observed == nil && err == nil {
			e.ForgetZone(z)
		}
		return observed == nil, err
	}
	tag := dns.TagOwner(observed.Tags)
	if mine, err := e.Claims(ctx, t.Owner, tag); err != nil || !mine && !dns.IsShared(tag, t.Owner.Kind) {
		return err == nil, err // not made for this owner: it stays
	}
	shared := dns.IsShared(tag, t.Owner.Kind)
	others, err := e.others(ctx, t, shared)
	if err != nil || shared && others.Live {
		return err == nil, err
	}
	if ZoneProvisioning(observed) == armprivatedns.ProvisioningStateDeleting {
		return false, nil
	}
	empty, err := e.emptied(ctx, t, observed, tag, &links, others)
	if err != nil || !empty {
		return false, err // links or records are still going: look again
	}
	if links > 0 || RecordSetCount(observed) > 1 {
		t.event(ReasonZoneNotOwned, "private DNS zone %s still holds other records or links: it stays", z.Name)
		return true, nil
	}
	if err := t.API.DeleteZone(ctx, z.ResourceGroup, z.Name); err != nil {
		return false, err
	}
	e.zoneDeleted(z.Subscription)
	e.ForgetZone(z)
	t.event(ReasonZoneDeleted, "deleting private DNS zone %s", z.Name)
	return false, nil
}

// emptied does what must happen before a zone can go: it learns how many
// links are left (*links, when unknown) and, in an unused shared zone
// without links, sweeps the records of owners that are gone. It reports
// false while links or records are still being deleted.
func (e *Engine) emptied(ctx context.Context, t Target, z *armprivatedns.PrivateZone, tag string, links *int, others ZoneUsers) (bool, error) {
	if *links < 0 {
		n, deleting, err := e.linksLeft(ctx, t, z, others)
		if err != nil || deleting {
			return false, err
		}
		*links = n
	}
	if u := e.usersOf(t); u != nil && dns.IsShared(tag, t.Owner.Kind) && *links == 0 && RecordSetCount(z) > 1 {
		swept, err := e.sweep(ctx, t, u.Live)
		if err != nil || swept > 0 {
			return false, err
		}
	}
	return true, nil
}

// linksLeft is how many links a zone has, from its own count
// (properties.numberOfVirtualNetworkLinks, which Azure returns with every
// zone: ASO's recording in internal/azuresim/conformance/testdata/
// private-dns-zone.json), listing them only when it has some. pending says whether any is still being
// deleted — or is one the operator made for the owner (or shared, with no
// other live user) that is not: its delete is started again (an earlier
// one failed, or was never sent).
func (e *Engine) linksLeft(ctx context.Context, t Target, z *armprivatedns.PrivateZone, others ZoneUsers) (int, bool, error) {
	if z.Properties == nil || ptr.Deref(z.Properties.NumberOfVirtualNetworkLinks, 0) == 0 {
		return 0, false, nil
	}
	links, err := t.API.Links(ctx, t.Zone.ResourceGroup, t.Zone.Name)
	if err != nil {
		return 0, false, err
	}
	pending := false
	for _, l := range links {
		if others.Needs(dns.LinkedVNet(l)) {
			continue
		}
		going, err := e.dropLink(ctx, t, l, &others)
		if err != nil {
			return 0, false, err
		}
		pending = pending || going
	}
	return len(links), pending, nil
}

// sweep deletes the A record sets of an unused shared zone that the
// operator wrote for an owner of the target owner's kind that is not live
// (the target's own included). Record sets without the operator's mark,
// with an earlier version's value, of another kind, or of a live owner
// stay. It returns how many it deleted.
func (e *Engine) sweep(ctx context.Context, t Target, live func(context.Context, dns.Owner) (bool, error)) (int, error) {
	sets, err := t.API.Records(ctx, t.Zone.ResourceGroup, t.Zone.Name)
	if err != nil {
		return 0, err
	}
	swept, known := 0, map[dns.Owner]bool{t.Owner: false}
	for _, rs := range sets {
		o, ok := dns.ParseOwner(dns.RecordOwner(rs))
		if !ok || o.Kind != t.Owner.Kind {
			continue
		}
		if _, seen := known[o]; !seen {
			l, err := live(ctx, o)
			if err != nil {
				return swept, err
			}
			known[o] = l
		}
		if known[o] {
			continue
		}
		why := "written for " + o.Namespace + "/" + o.Name + ", which no longer needs it, so that the unused shared zone can go"
		if err := e.deleteRecordSet(ctx, t, rs, why); err != nil {
			return swept, err
		}
		swept++
	}
	return swept, nil
}
