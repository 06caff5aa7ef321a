package dnsengine

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// Link is a zone's link to a virtual network, as EnsureLink found it.
type Link struct {
	// ID is the link's resource ID (the one that serves, whoever made it).
	ID string
	// Ready: the link is provisioned, so the zone's names resolve from
	// the network.
	Ready bool
}

// EnsureLink makes sure the zone is linked to vnet: any link to it will do,
// whoever made it, and a link the operator makes carries owner (the
// object's value, or shared). In a zone this process created, the link is
// created without listing first; a link seen provisioned is not read
// again within the check interval, whichever object asks.
func (e *Engine) EnsureLink(ctx context.Context, t Target, vnet, owner string) (Link, error) {
	z := t.Zone
	now := e.now()
	if id, ok := e.seen.Get(linkKey(z, vnet), now, e.check()); ok {
		return Link{ID: id, Ready: true}, nil
	}
	name := dns.LinkName(vnet)
	ownID := z.ID() + "/virtualNetworkLinks/" + name
	if e.CreatedHere(z) && !e.seen.Known(linkPutKey(z, vnet)) {
		err := t.API.PutLink(ctx, z.ResourceGroup, z.Name, name, "", dns.LinkBody(vnet, owner, t.Tags))
		if err == nil {
			e.seen.Set(linkPutKey(z, vnet), "", now)
			t.event(ReasonLinkCreated, "linking private DNS zone %s to virtual network %s", z.Name, vnet)
			return Link{ID: ownID}, nil
		}
		if !azure.IsPreconditionFailed(err) {
			return Link{}, err
		}
	}
	links, err := t.API.Links(ctx, z.ResourceGroup, z.Name)
	if err != nil {
		return Link{}, err
	}
	l := dns.LinkTo(links, vnet)
	switch {
	case l == nil:
		if err := t.API.PutLink(ctx, z.ResourceGroup, z.Name, name, "", dns.LinkBody(vnet, owner, t.Tags)); err != nil && !azure.IsPreconditionFailed(err) {
			return Link{}, err
		}
		e.seen.Set(linkPutKey(z, vnet), "", now)
		t.event(ReasonLinkCreated, "linking private DNS zone %s to virtual network %s", z.Name, vnet)
		return Link{ID: ownID}, nil
	case dns.RewriteFailedLink(l, owner):
		// Azure keeps a link whose operation failed until it is written
		// again or deleted.
		if err := t.API.PutLink(ctx, z.ResourceGroup, z.Name, ptr.Deref(l.Name, name), ptr.Deref(l.Etag, ""), dns.LinkBody(vnet, owner, t.Tags)); err != nil {
			return Link{}, err
		}
		t.event(ReasonLinkCreated, "linking private DNS zone %s to virtual network %s again (its last operation failed)", z.Name, vnet)
		return Link{ID: ptr.Deref(l.ID, ownID)}, nil
	}
	id := ptr.Deref(l.ID, ownID)
	if dns.LinkState(l) != armprivatedns.ProvisioningStateSucceeded {
		return Link{ID: id}, nil
	}
	e.seen.Set(linkKey(z, vnet), id, now)
	return Link{ID: id, Ready: true}, nil
}

// Links lists the zone's links (a read).
func (e *Engine) Links(ctx context.Context, t Target) ([]*armprivatedns.VirtualNetworkLink, error) {
	return t.API.Links(ctx, t.Zone.ResourceGroup, t.Zone.Name)
}

// DropLink deletes a link the operator made for the target's owner, or a
// shared one of the owner's kind, unless another live object of that kind
// needs the zone linked to its network (Register; without a registered
// Users, a shared link stays). Anyone else's link stays. It reports
// whether the link is going (its delete started now or before), so that a
// release waits.
func (e *Engine) DropLink(ctx context.Context, t Target, l *armprivatedns.VirtualNetworkLink) (bool, error) {
	return e.dropLink(ctx, t, l, nil)
}

// dropLink is DropLink with what the others need already read (nil: read
// it here).
func (e *Engine) dropLink(ctx context.Context, t Target, l *armprivatedns.VirtualNetworkLink, others *ZoneUsers) (bool, error) {
	tag, vnet := dns.TagOwner(l.Tags), dns.LinkedVNet(l)
	mine, err := e.Claims(ctx, t.Owner, tag)
	if err != nil || !mine && !dns.IsShared(tag, t.Owner.Kind) {
		return false, err
	}
	if others == nil {
		o, err := e.others(ctx, t, !mine)
		if err != nil {
			return false, err
		}
		others = &o
	}
	if others.Needs(vnet) {
		return false, nil
	}
	e.seen.ForgetTree(linkKey(t.Zone, vnet))
	e.seen.ForgetTree(linkPutKey(t.Zone, vnet))
	if dns.LinkState(l) == armprivatedns.ProvisioningStateDeleting {
		return true, nil
	}
	if err := t.API.DeleteLink(ctx, t.Zone.ResourceGroup, t.Zone.Name, ptr.Deref(l.Name, "")); err != nil {
		return false, err
	}
	t.event(ReasonLinkDeleted, "unlinking private DNS zone %s from virtual network %s", t.Zone.Name, vnet)
	return true, nil
}
