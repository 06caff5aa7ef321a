package dnsengine

import (
	"context"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/limitmetrics"
)

// A private DNS zone holds at most 25,000 record sets, its SOA record set
// included ("Azure subscription and service limits", Azure DNS limits,
// private DNS zones: "Record sets per private DNS zone"). Azure says both
// figures in the zone's properties, numberOfRecordSets and
// maxNumberOfRecordSets (the recorded zone,
// internal/azuresim/conformance/testdata/private-dns-zone.json, has 1 and
// 25000); internal/azuresim/limits.go enforces the limit. A zone shared by
// many objects (DNS mode's shared MC-side zone: one or two record sets per
// workload cluster; AzurePrivateEndpoints' shared zones) reaches it.
//
// The engine counts before it creates a record set, from Azure's own
// figures: the zone's numbers as last read (every read of the zone, at
// most one per check interval), plus the record sets this process created
// and minus those it deleted since, plus those it is creating. From 90 %
// of the zone's maximum the zone is read again before each new record
// set, so that near the limit the count is Azure's, also for record sets
// made by others. A new record set at the limit is not requested: the
// write returns a *RecordSetLimitError, which the controllers report on
// the object (DNS mode: GSDNSZoneReady Unknown with DNSRecordSetLimit;
// AzurePrivateEndpoint: DNSReady False with PrivateDNSRecordSetLimit),
// and the Warning DNSRecordSetLimitNear goes on the object that takes a
// record set from 90 %. A record set that exists is always written.

// AzureRecordSetsPerZone is Azure's limit of record sets per private DNS
// zone, used until the zone's own maxNumberOfRecordSets is read.
const AzureRecordSetsPerZone = 25000

// ReasonRecordSetLimitNear is the Warning on an object that takes a zone's
// record set from 90 % of its maximum.
const ReasonRecordSetLimitNear = "DNSRecordSetLimitNear"

// RecordSetLimitError says that a new record set was not requested because
// the zone holds as many as Azure allows.
type RecordSetLimitError struct {
	// FQDN is the record set's name; Zone the zone's.
	FQDN, Zone string
	// Used is the zone's record sets, SOA included; Limit its maximum.
	Used, Limit int
}

func (e *RecordSetLimitError) Error() string {
	return fmt.Sprintf("record set %s is not created: private DNS zone %s holds %d record sets, Azure's maximum for a zone (%d, its SOA record set included)",
		e.FQDN, e.Zone, e.Used, e.Limit)
}

// recordSets is what the engine knows of a zone's record sets: the
// count, and the zone's maximum.
type recordSets struct {
	tally
	max int
}

// zoneRead notes a zone's figures as Azure gave them.
func (e *Engine) zoneRead(z *armprivatedns.PrivateZone, key string) {
	if z == nil || z.Properties == nil || z.Properties.NumberOfRecordSets == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.recordSetsOf(key)
	c.n = int(*z.Properties.NumberOfRecordSets)
	if m := ptr.Deref(z.Properties.MaxNumberOfRecordSets, 0); m > 0 {
		c.max = int(m)
	}
}

// zoneCreated notes a zone this process created: its SOA record set only.
func (e *Engine) zoneCreated(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recordSetsOf(key).n = 1
}

// recordSetsOf is the zone's entry, with Azure's maximum until one is
// read; e.mu is held.
func (e *Engine) recordSetsOf(key string) *recordSets {
	if e.sets == nil {
		e.sets = map[string]*recordSets{}
	}
	c, ok := e.sets[key]
	if !ok {
		c = &recordSets{max: AzureRecordSetsPerZone}
		e.sets[key] = c
	}
	return c
}

// recordSetDeleted notes a record set this process deleted.
func (e *Engine) recordSetDeleted(key string) {
	e.mu.Lock()
	c := e.sets[key]
	e.mu.Unlock()
	if c != nil {
		e.removed(&c.tally, 1)
	}
}

// reserveRecordSet takes a place for a new record set fqdn in the target's
// zone: it reads the zone first when its figures are unknown or near the
// limit. At the limit it returns a *RecordSetLimitError. Otherwise the
// caller calls done with whether the record set was created.
func (e *Engine) reserveRecordSet(ctx context.Context, t Target, fqdn string) (done func(created bool), _ error) {
	key := t.Zone.Key()
	e.mu.Lock()
	c, known := e.sets[key]
	read := !known || c.near(c.max)
	e.mu.Unlock()
	if read {
		observed, err := t.API.Zone(ctx, t.Zone.ResourceGroup, t.Zone.Name)
		if err != nil {
			return nil, err
		}
		e.zoneRead(observed, key)
	}
	e.mu.Lock()
	c = e.recordSetsOf(key)
	limit := c.max
	e.mu.Unlock()
	used, near, ok := e.take(&c.tally, limit)
	limitmetrics.Set(limitmetrics.PrivateDNSRecordSets, t.Zone.ID(), used, limit)
	if !ok {
		return nil, &RecordSetLimitError{FQDN: fqdn, Zone: t.Zone.Name, Used: used, Limit: limit}
	}
	if near {
		t.warn(ReasonRecordSetLimitNear, "private DNS zone %s holds %d record sets with %s, near Azure's maximum of %d for a zone: beyond it no record set is created; spread the names over more zones (docs/dns.md)",
			t.Zone.Name, used, fqdn, limit)
	}
	return func(created bool) { e.settle(&c.tally, created) }, nil
}
