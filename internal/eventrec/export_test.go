package eventrec

// Tick ends and refreshes series now, as the recorder does every minute.
func (r *Recorder) Tick() { r.tick() }
