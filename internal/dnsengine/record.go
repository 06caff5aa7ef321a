package dnsengine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"k8s.io/utils/ptr"

	"github.com/giantswarm/azure-private-endpoint-operator/internal/azure"
	dns "github.com/giantswarm/azure-private-endpoint-operator/internal/azure/privatedns"
)

// Taken is a record set someone else wrote: the operator leaves it alone.
type Taken struct {
	FQDN, Owner string
}

// recordFingerprint is what a verified record set holds.
func recordFingerprint(o dns.Owner, ips []string, ttl int64) string {
	s := slices.Clone(ips)
	slices.Sort(s)
	return o.Value() + "|" + sprintf("%d", ttl) + "|" + strings.Join(s, ",")
}

// WriteRecord makes the A record set rel hold ips with ttl, marked as the
// target owner's, unless someone else wrote it (then it says who). A
// record set the object has not written before (written false), or any in
// a zone this process created, is created without reading first
// (If-None-Match: *); Azure's 412 says it exists, and only then is it
// read. An update writes only the version read (If-Match). A record set
// verified within the check interval is not read again.
func (e *Engine) WriteRecord(ctx context.Context, t Target, rel string, ips []string, ttl int64, written bool) (*Taken, error) {
	z, fp := t.Zone, recordFingerprint(t.Owner, ips, ttl)
	if e.seen.Fresh(recordKey(z, rel), fp, e.now(), e.check()) {
		return nil, nil
	}
	var full *RecordSetLimitError
	if !written || e.CreatedHere(z) {
		created, err := e.createRecord(ctx, t, rel, ips, ttl)
		switch {
		case created:
			e.recordWritten(t, rel, ips, fp)
			return nil, nil
		case err != nil && !errors.As(err, &full) && !azure.IsPreconditionFailed(err):
			return nil, err
		}
		// It exists (Azure's 412), or the zone is full: read it.
	}
	rs, err := e.readOrCreate(ctx, t, rel, ips, ttl, full)
	if err != nil || rs == nil {
		if err == nil {
			e.recordWritten(t, rel, ips, fp)
		}
		return nil, err
	}
	tag := dns.RecordOwner(rs)
	mine, err := e.Claims(ctx, t.Owner, tag)
	if err != nil {
		return nil, err
	}
	switch {
	case !mine && (tag != "" || !t.AdoptRecords):
		return &Taken{FQDN: dns.FQDN(rel, z.Name), Owner: tag}, nil
	case dns.RecordMatches(rs, ips, ttl, t.Owner.Value()):
		e.seen.Set(recordKey(z, rel), fp, e.now())
		return nil, nil
	}
	if err := t.API.PutRecord(ctx, z.ResourceGroup, z.Name, rel, ptr.Deref(rs.Etag, ""), dns.RecordBody(rs, ips, ttl, t.Owner.Value())); err != nil {
		return nil, err
	}
	e.recordWritten(t, rel, ips, fp)
	return nil, nil
}

// readOrCreate reads the record set rel; when it is not there (also when
// the object wrote it before: someone deleted it) it creates it, counted
// (createRecord), and returns nil. full: the zone was found full before.
func (e *Engine) readOrCreate(ctx context.Context, t Target, rel string, ips []string, ttl int64, full *RecordSetLimitError) (*armprivatedns.RecordSet, error) {
	z := t.Zone
	rs, err := t.API.Record(ctx, z.ResourceGroup, z.Name, rel)
	switch {
	case err != nil || rs != nil:
		return rs, err
	case full != nil:
		return nil, full
	}
	created, err := e.createRecord(ctx, t, rel, ips, ttl)
	if created || !azure.IsPreconditionFailed(err) {
		return nil, err
	}
	// Made meanwhile by someone else: read what they wrote.
	if rs, err = t.API.Record(ctx, z.ResourceGroup, z.Name, rel); err != nil || rs == nil {
		return nil, cmp.Or(err, fmt.Errorf("record set %s was created and deleted meanwhile by someone else", dns.FQDN(rel, z.Name)))
	}
	return rs, nil
}

// createRecord creates the record set rel if it does not exist
// (If-None-Match: *) and the zone has room for it (reserveRecordSet); it
// reports whether it did. At the zone's limit the error is a
// *RecordSetLimitError and nothing is sent; when the record set exists it
// is Azure's 412.
func (e *Engine) createRecord(ctx context.Context, t Target, rel string, ips []string, ttl int64) (bool, error) {
	z := t.Zone
	done, err := e.reserveRecordSet(ctx, t, dns.FQDN(rel, z.Name))
	if err != nil {
		return false, err
	}
	err = t.API.PutRecord(ctx, z.ResourceGroup, z.Name, rel, "", dns.RecordBody(nil, ips, ttl, t.Owner.Value()))
	done(err == nil)
	return err == nil, err
}

func (e *Engine) recordWritten(t Target, rel string, ips []string, fp string) {
	e.seen.Set(recordKey(t.Zone, rel), fp, e.now())
	t.event(ReasonRecordWritten, "%s now resolves to %s", dns.FQDN(rel, t.Zone.Name), strings.Join(ips, ", "))
}

// DeleteRecord deletes the A record set rel if the operator wrote it for
// the target's owner (the version read: If-Match); anyone else's stays.
// why ends the Event's message ("" for none).
func (e *Engine) DeleteRecord(ctx context.Context, t Target, rel, why string) error {
	z := t.Zone
	e.ForgetRecord(z, rel)
	rs, err := t.API.Record(ctx, z.ResourceGroup, z.Name, rel)
	if err != nil || rs == nil {
		return err
	}
	if mine, err := e.Claims(ctx, t.Owner, dns.RecordOwner(rs)); err != nil || !mine {
		return err
	}
	return e.deleteRecordSet(ctx, t, rs, why)
}

// DeleteRecords deletes the A record sets rels the operator wrote for the
// target's owner, as DeleteRecord, reading them with one list of the zone
// instead of one read each: for a zone that holds few other record sets
// (the owner's own zone), fewer reads.
func (e *Engine) DeleteRecords(ctx context.Context, t Target, rels []string, why string) error {
	if len(rels) < 2 {
		for _, rel := range rels {
			if err := e.DeleteRecord(ctx, t, rel, why); err != nil {
				return err
			}
		}
		return nil
	}
	sets, err := t.API.Records(ctx, t.Zone.ResourceGroup, t.Zone.Name)
	if err != nil {
		return err
	}
	for _, rs := range sets {
		if !slices.Contains(rels, ptr.Deref(rs.Name, "")) {
			continue
		}
		if mine, err := e.Claims(ctx, t.Owner, dns.RecordOwner(rs)); err != nil || !mine {
			if err != nil {
				return err
			}
			continue
		}
		if err := e.deleteRecordSet(ctx, t, rs, why); err != nil {
			return err
		}
	}
	for _, rel := range rels {
		e.ForgetRecord(t.Zone, rel)
	}
	return nil
}

func (e *Engine) deleteRecordSet(ctx context.Context, t Target, rs *armprivatedns.RecordSet, why string) error {
	z, rel := t.Zone, ptr.Deref(rs.Name, "")
	if err := t.API.DeleteRecord(ctx, z.ResourceGroup, z.Name, rel, ptr.Deref(rs.Etag, "")); err != nil {
		return err
	}
	e.recordSetDeleted(z.Key())
	e.ForgetRecord(z, rel)
	msg := "deleted record " + dns.FQDN(rel, z.Name)
	if why != "" {
		msg += ": " + why
	}
	t.event(ReasonRecordDeleted, "%s", msg)
	return nil
}
