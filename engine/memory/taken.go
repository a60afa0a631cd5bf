package memory

import (
	"context"
	"time"

	"github.com/distlock/distlock/engine"
)

// The holders a force-release freed, of either kind, are remembered by
// name and owner until their lease would have ended: meanwhile a renewal of
// that owner that does not find its hold is answered HeldByOther (taken
// over), a resent one too. The marks go by themselves (sweep) when those
// leases would have ended.

var _ engine.HolderReleaser = (*Engine)(nil)

// markTaken remembers owner as freed by a force-release of name, until
// until; the caller holds e.mu.
func (e *Engine) markTaken(name, owner string, until time.Time) {
	r := e.record(name)
	if r.taken == nil {
		r.taken = make(map[string]time.Time)
	}
	r.taken[owner] = until
}

// takenFrom reports whether a force-release freed owner's hold of name
// and its lease would not have ended by now. The caller holds e.mu.
func (e *Engine) takenFrom(name, owner string, now time.Time) bool {
	r := e.of(name)
	if r == nil {
		return false
	}
	until, ok := r.taken[owner]
	return ok && now.Before(until)
}

// sweepTaken drops r's marks whose lease would have ended; the caller
// holds e.mu.
func sweepTaken(r *record, now time.Time) {
	for owner, until := range r.taken {
		if !now.Before(until) {
			delete(r.taken, owner)
		}
	}
}

// takenCount is the number of marks kept (tests).
func (e *Engine) takenCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.names {
		n += len(r.taken)
	}
	return n
}

// ForceReleaseHolder implements engine.HolderReleaser: it frees owner's
// hold of name, a mutex or one holder of a shared lock, and wakes the
// waiters as a release would; the holder is told HeldByOther at its next
// renewal. It reports whether owner held the lock.
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return false, err
	}
	now := e.now()
	if s := e.sharedState(name, now); s != nil && s.holders[owner] != nil {
		h := s.holders[owner]
		delete(s.holders, owner)
		e.markTaken(name, owner, h.expires)
		e.wakeShared(name, s)
		e.notifyWaiter(name, "")
		return true, nil
	}
	l := e.live(name, now)
	if l == nil || l.owner != owner {
		return false, nil
	}
	e.forceMutex(name, l)
	return true, nil
}

// forceMutex frees name's mutex l whoever holds it, marking its holder
// taken, and wakes its waiters; the caller holds e.mu.
func (e *Engine) forceMutex(name string, l *lock) {
	e.markTaken(name, l.owner, l.expires)
	e.dropMutex(name)
	e.freed(name)
}
