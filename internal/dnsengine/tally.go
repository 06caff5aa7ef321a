package dnsengine

// tally counts what Azure holds against a limit the engine checks before
// it asks for one more (the record sets of a zone, the zones of a
// subscription): Azure's figure as last read (n), with this process's
// creations and deletions since, and the creations under way. Guarded by
// Engine.mu.
type tally struct {
	n, creating int
}

func (c *tally) used() int { return c.n + c.creating }

// near says whether one more takes the count to 90 % of limit or beyond.
func (c *tally) near(limit int) bool { return (c.used()+1)*10 >= limit*9 }

// take reserves one place within limit, one decision at a time: ok false
// at the limit. used is the count with the place taken (without it when
// refused); near says the place takes the count to 90 % or beyond.
func (e *Engine) take(c *tally, limit int) (used int, near, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	used = c.used()
	if used >= limit {
		return used, false, false
	}
	near = c.near(limit)
	c.creating++
	return used + 1, near, true
}

// settle ends a reservation: the place is kept when the thing was created.
func (e *Engine) settle(c *tally, created bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c.creating--
	if created {
		c.n++
	}
}

// removed notes one that this process deleted; the count stays at least
// floor (a zone's SOA record set).
func (e *Engine) removed(c *tally, floor int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.n > floor {
		c.n--
	}
}
