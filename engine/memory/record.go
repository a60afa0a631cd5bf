package memory

import "time"

// record is everything the engine keeps of one name, whatever its kind:
// the mutex's grant, the shared lock (a semaphore's or reader-writer
// lock's kind, limit, holders and queue), the mutex's waiter queue, the
// fencing high-water, the holders a force-release freed, and a countdown
// latch's count. Every operation on a name reads its one record, so a
// refusal across kinds, the admin views (Inspect, List, ForceRelease) and
// the sweep see every kind by construction.
type record struct {
	mutex  *lock                // nil: no grant (or an expired one, dropped when read: live)
	shared *sharedLock          // nil: no shared lock kept
	queue  *waitQueue           // the mutex's waiters; nil: none
	fence  highWater            // zero: no high-water kept
	taken  map[string]time.Time // owner -> lease end (taken.go); nil: none
	latch  *latch               // nil: no latch (latch.go)
}

// empty reports whether r keeps nothing.
func (r *record) empty() bool {
	return r.mutex == nil && r.shared == nil && r.queue == nil && r.fence == (highWater{}) &&
		len(r.taken) == 0 && r.latch == nil
}

// of returns name's record, nil when the engine keeps nothing of it. The
// caller holds e.mu.
func (e *Engine) of(name string) *record { return e.names[name] }

// record returns name's record, made when missing. The caller holds e.mu.
func (e *Engine) record(name string) *record {
	r := e.names[name]
	if r == nil {
		r = &record{}
		e.names[name] = r
	}
	return r
}

// tidy drops name's record r once it keeps nothing (after a field was
// cleared). The caller holds e.mu.
func (e *Engine) tidy(name string, r *record) {
	if r != nil && r.empty() {
		delete(e.names, name)
	}
}

// highWater returns name's fencing high-water at now (0: none kept, or
// forgotten). The caller holds e.mu.
func (e *Engine) highWater(name string, now time.Time) uint64 {
	if r := e.of(name); r != nil && now.Before(r.fence.expires) {
		return r.fence.token
	}
	return 0
}
