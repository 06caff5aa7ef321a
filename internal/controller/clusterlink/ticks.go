package clusterlink

import "time"

// DriftCheckInterval is how long until a converged cluster's next drift check.
func (o *Options) DriftCheckInterval() time.Duration {
	return untilTick(time.Now(), o.DriftCheck, o.tickPhase)
}

// PendingRecheckInterval is how long until a waiting cluster's next look at Azure.
func (o *Options) PendingRecheckInterval() time.Duration {
	return untilTick(time.Now(), o.PendingRecheck, o.tickPhase)
}

// MCServiceRecheckInterval is how long until a cluster waiting for Azure
// to have one of the MC's private link services looks again
// (servicecheck.go): every mcServiceRecheckPeriod (5 s), or PendingRecheck when that
// is shorter. It is shorter than a pending recheck because nothing else
// tells the cluster: the service is the MC's ingress, made by the platform
// while the first clusters are wired, and with clusters waiting a whole
// tick for it test/scale's smokes took 598 s in CI instead of 476 s.
func (o *Options) MCServiceRecheckInterval() time.Duration {
	return untilTick(time.Now(), o.mcServiceRecheck(), o.tickPhase)
}

// mcServiceRecheck is the period of MCServiceRecheckInterval's ticks.
func (o *Options) mcServiceRecheck() time.Duration {
	return min(mcServiceRecheckPeriod, o.PendingRecheck)
}

// mcServiceRecheckPeriod is MCServiceRecheckInterval's period unless
// PendingRecheck is shorter.
const mcServiceRecheckPeriod = 5 * time.Second

// untilTick returns the time from now to the next tick of a clock that ticks
// every interval, offset by phase; never zero. Rechecks of every cluster
// land on the same ticks, so one observation of Azure (a list per
// subscription, shared for the observer's TTL) serves all of them: a drift
// check of 1,000 clusters costs a few lists, not 1,000. The per-process
// random phase keeps different operators from ticking together.
func untilTick(now time.Time, interval, phase time.Duration) time.Duration {
	if interval <= 0 {
		return time.Second
	}
	since := now.Sub(time.Unix(0, 0).Add(phase)) % interval
	if since < 0 {
		since += interval
	}
	return interval - since
}
