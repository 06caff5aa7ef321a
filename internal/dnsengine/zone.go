package dnsengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

var sprintf = fmt.Sprintf

// ZoneState is what EnsureZone found.
type ZoneState struct {
	// Ready: the zone is provisioned; links and records can go in.
	Ready bool
	// Foreign: the zone is neither the owner's nor shared (someone else
	// made it): records go in, and the operator never deletes it.
	Foreign bool
	// Owner is the zone's owner tag.
	Owner string
	// Progress says what Azure is doing while the zone is not Ready.
	Progress string
}

// EnsureZone makes sure the target's zone exists and is provisioned. A
// zone the object has not used before (existing false) is created without
// reading first (If-None-Match: *); Azure's 412 says it exists, and only
// then is it read. A zone seen provisioned within the check interval is
// not read again, whichever object asks.
func (e *Engine) EnsureZone(ctx context.Context, t Target, existing bool) (ZoneState, error) {
	z := t.Zone
	if tag, ok := e.seenZone(t); ok {
		return e.zoneState(ctx, t, tag)
	}
	if !existing && !e.seen.Known(createdKey(z)) && !e.seen.Known(existsKey(z)) {
		created, err := e.createZone(ctx, t)
		var full *ZoneLimitError
		if (err != nil || created) && !errors.As(err, &full) {
			return ZoneState{Progress: "creating private DNS zone " + z.Name}, err
		}
		// It exists; or the subscription is full, and it may exist.
	}
	observed, err := t.API.Zone(ctx, z.ResourceGroup, z.Name)
	if err != nil {
		return ZoneState{}, err
	}
	e.zoneRead(observed, z.Key())
	if observed == nil {
		if _, err := e.createZone(ctx, t); err != nil {
			return ZoneState{}, err
		}
		return ZoneState{Progress: "creating private DNS zone " + z.Name}, nil
	}
	if st := ZoneProvisioning(observed); st != armprivatedns.ProvisioningStateSucceeded {
		return ZoneState{Progress: sprintf("private DNS zone %s is %s", z.Name, st)}, nil
	}
	tag := dns.TagOwner(observed.Tags)
	if tag == "" && t.AdoptZone {
		if err := t.API.PutZone(ctx, z.ResourceGroup, z.Name, ptr.Deref(observed.Etag, ""), dns.ZoneBody(observed, z.Owner(t.Owner), t.Tags)); err != nil {
			return ZoneState{}, err
		}
		t.event(ReasonZoneAdopted, "adopting private DNS zone %s", z.Name)
		return ZoneState{Progress: "adopting private DNS zone " + z.Name}, nil
	}
	if retag, err := e.retag(ctx, t, observed, tag); retag || err != nil {
		return ZoneState{Progress: "tagging private DNS zone " + z.Name}, err
	}
	e.seen.Set(zoneKey(z), tag+"\x00"+tagsPrint(t.Tags), e.now())
	return e.zoneState(ctx, t, tag)
}

// createZone starts creating the zone unless it exists; it reports
// whether it did (false: Azure said it exists). A subscription that holds
// the limit gets no request: a *ZoneLimitError (zonelimit.go).
func (e *Engine) createZone(ctx context.Context, t Target) (bool, error) {
	z := t.Zone
	done, err := e.reserveZone(ctx, t)
	if err != nil {
		return false, err
	}
	err = t.API.PutZone(ctx, z.ResourceGroup, z.Name, "", dns.ZoneBody(nil, z.Owner(t.Owner), t.Tags))
	done(err == nil)
	if azure.IsPreconditionFailed(err) {
		// It exists: read it from now on instead of asking again (a zone
		// being deleted would otherwise cost a write on every pass).
		e.seen.Set(existsKey(z), "", e.now())
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// A zone this process creates holds no link and no record set: they
	// are written without reading first.
	e.seen.Set(createdKey(z), "", e.now())
	e.zoneCreated(z.Key())
	t.event(ReasonZoneCreated, "creating private DNS zone %s in %s/%s", z.Name, z.Subscription, z.ResourceGroup)
	return true, nil
}

// zoneState is a provisioned zone's state for the target.
func (e *Engine) zoneState(ctx context.Context, t Target, tag string) (ZoneState, error) {
	mine, err := e.Claims(ctx, t.Owner, tag)
	if err != nil {
		return ZoneState{}, err
	}
	return ZoneState{Ready: true, Owner: tag, Foreign: !mine && !dns.IsShared(tag, t.Owner.Kind)}, nil
}

// CreatedHere says whether this process created the zone within the check
// interval (so that it holds nothing the process did not write).
func (e *Engine) CreatedHere(z dns.Zone) bool {
	_, ok := e.seen.Get(createdKey(z), e.now(), e.check())
	return ok
}

// ZoneProvisioning is a zone's provisioning state.
func ZoneProvisioning(z *armprivatedns.PrivateZone) armprivatedns.ProvisioningState {
	if z == nil || z.Properties == nil {
		return ""
	}
	return ptr.Deref(z.Properties.ProvisioningState, "")
}

// RecordSetCount is a zone's number of record sets, its SOA included.
func RecordSetCount(z *armprivatedns.PrivateZone) int64 {
	if z == nil || z.Properties == nil {
		return 0
	}
	return ptr.Deref(z.Properties.NumberOfRecordSets, 0)
}

// seenZone is the owner tag of a zone seen provisioned within the check
// interval. The memo holds the owner tag and the tags the zone was checked
// with: an own zone is looked at again at once when the tags asked for
// change.
func (e *Engine) seenZone(t Target) (string, bool) {
	seen, ok := e.seen.Get(zoneKey(t.Zone), e.now(), e.check())
	if !ok {
		return "", false
	}
	tag, tags, _ := strings.Cut(seen, "\x00")
	return tag, t.Zone.Shared || tags == tagsPrint(t.Tags)
}

// retag writes the tags the target asks for onto its own zone when it
// lacks them (they changed, or the zone predates them), once, with the
// zone's ETag; it says whether it wrote. A shared zone keeps the tags of
// the object that made it.
func (e *Engine) retag(ctx context.Context, t Target, observed *armprivatedns.PrivateZone, tag string) (bool, error) {
	z := t.Zone
	if z.Shared || tag != z.Owner(t.Owner) || len(azure.TagsDiffer(observed.Tags, t.Tags)) == 0 {
		return false, nil
	}
	return true, t.API.PutZone(ctx, z.ResourceGroup, z.Name, ptr.Deref(observed.Etag, ""), dns.ZoneBody(observed, tag, t.Tags))
}

// tagsPrint is a stable print of tags, for the memo.
func tagsPrint(tags map[string]string) string {
	keys := slices.Sorted(maps.Keys(tags))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + tags[k] + ",")
	}
	return b.String()
}
