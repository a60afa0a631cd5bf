package server

import (
	"sync"
	"time"

	"github.com/distlock/distlock"
)

// holdGrace is how long past its last known expiry a hold is kept before
// the sweep forgets it.
const holdGrace = time.Second

// holdTracker remembers the holds granted through this server, so that
// their release or loss can be reported with the time held (the hold-time
// histogram) and the holders gauge stays right. A hold whose ttl ran out
// without a renewal seen by this server is forgotten by the sweep (with
// several servers behind a load balancer, a client's renewals may reach
// another server: each server counts the holds it granted and still sees).
type holdTracker struct {
	obs *fanout
	now func() time.Time

	mu sync.Mutex
	m  map[holdKey]*hold
}

type holdKey struct{ name, owner string }

type hold struct {
	granted time.Time
	expires time.Time
	holds   int
	token   uint64 // the token of the grant last recorded
}

func newHoldTracker(obs *fanout) *holdTracker {
	return &holdTracker{obs: obs, now: time.Now, m: make(map[holdKey]*hold)}
}

// granted records a grant of name to owner, with token, and count holds
// now; it reports it to the observer. A replay (a re-sent request of the
// same attempt, which the engine answers with the same grant: the token
// of the hold tracked, and no more holds than it counts) is that grant
// again: it renews the tracked hold's expiry and counts nothing.
func (t *holdTracker) granted(name, owner string, token uint64, count int, ttl, waited time.Duration, contended bool) {
	now := t.now()
	k := holdKey{name, owner}
	t.mu.Lock()
	h := t.m[k]
	if h != nil && token != 0 && h.token == token && count <= h.holds {
		h.expires = now.Add(ttl)
		t.mu.Unlock()
		return
	}
	var stale int
	var staleHeld time.Duration
	if h != nil && count <= 1 {
		// A fresh grant: the holds we knew of ended unseen.
		stale, staleHeld = h.holds, h.expires.Sub(h.granted)
		h = nil
	}
	if h == nil {
		h = &hold{granted: now}
		t.m[k] = h
	}
	h.holds++
	h.expires, h.token = now.Add(ttl), token
	t.mu.Unlock()
	for range stale {
		t.obs.m.expired(staleHeld)
	}
	t.obs.Acquired(name, waited, contended)
}

// extended records an extension of owner's hold of name for ttl.
func (t *holdTracker) extended(name, owner string, ttl time.Duration) {
	t.obs.Renewed(name, true)
	t.mu.Lock()
	if h := t.m[holdKey{name, owner}]; h != nil {
		h.expires = t.now().Add(ttl)
	}
	t.mu.Unlock()
}

// lostAtRenewal records an extension that found owner not holding name:
// every hold it had is lost with cause.
func (t *holdTracker) lostAtRenewal(name, owner string, cause distlock.LossCause) {
	t.obs.Renewed(name, false)
	if h := t.forget(name, owner); h != nil {
		t.lost(name, h, cause)
	} else {
		t.obs.lostElsewhere(cause)
	}
}

// released records a release that dropped one hold of owner on name,
// remaining holds being left.
func (t *holdTracker) released(name, owner string, remaining int) {
	k := holdKey{name, owner}
	t.mu.Lock()
	h := t.m[k]
	n := 0
	if h != nil {
		n = 1
		if h.holds--; h.holds <= 0 || remaining == 0 {
			n += max(h.holds, 0) // holds we missed ended with this release
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	if h == nil {
		t.obs.changed()
		return
	}
	held := t.now().Sub(h.granted)
	for range n {
		t.obs.Released(name, held)
	}
}

// lostAtRelease records a release that found owner not holding name:
// every hold it had is lost with cause.
func (t *holdTracker) lostAtRelease(name, owner string, cause distlock.LossCause) {
	if h := t.forget(name, owner); h != nil {
		t.lost(name, h, cause)
		return
	}
	t.obs.lostElsewhere(cause)
}

// undone records an undo (engine.ReleaseRequest.Undo: a client taking back
// a grant whose answer it never got, or a clean-up release of an attempt
// whose outcome it does not know) that found owner not holding name. No
// lease was lost: the client never held one. A hold this server tracked
// for it (a grant whose answer was lost on the way) ended unseen by its
// holder: it counts as expired, as the sweep counts one.
func (t *holdTracker) undone(name, owner string) {
	h := t.forget(name, owner)
	if h == nil {
		return
	}
	held := t.now().Sub(h.granted)
	for range h.holds {
		t.obs.m.expired(held)
	}
	t.obs.changed()
}

// lostOldGrant records a renewal or a release of a freed grant whose owner
// holds the lock again under a newer grant (engine.ExtendRequest.Token):
// the old lease's loss is counted, and the owner's tracked hold, the newer
// grant's, stays.
func (t *holdTracker) lostOldGrant() {
	t.obs.lostElsewhere(distlock.TakenOver)
}

// forget drops the holds of owner on name and returns them (nil when
// none were known).
func (t *holdTracker) forget(name, owner string) *hold {
	k := holdKey{name, owner}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.m[k]
	delete(t.m, k)
	return h
}

// forced records a force-release of name through this server: the holds
// of owner, or of every owner when owner is "" (a valid owner is never
// empty), ended then. A holder that renews or releases later is told it
// lost the lock, which counts its loss (fanout.lostElsewhere), not another end of
// its hold.
func (t *holdTracker) forced(name, owner string) {
	now := t.now()
	var held []time.Duration
	t.mu.Lock()
	for k, h := range t.m {
		if k.name == name && (owner == "" || k.owner == owner) {
			for range h.holds {
				held = append(held, now.Sub(h.granted))
			}
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	for _, d := range held {
		t.obs.m.forced(d)
	}
}

// lost reports each of h's holds of name lost with cause.
func (t *holdTracker) lost(name string, h *hold, cause distlock.LossCause) {
	held := t.now().Sub(h.granted)
	for range h.holds {
		t.obs.Lost(name, cause, held)
	}
}

// sweep forgets the holds whose ttl ran out unseen.
func (t *holdTracker) sweep() {
	now := t.now()
	var held []time.Duration
	t.mu.Lock()
	for k, h := range t.m {
		if now.After(h.expires.Add(holdGrace)) {
			for range h.holds {
				held = append(held, h.expires.Sub(h.granted))
			}
			delete(t.m, k)
		}
	}
	t.mu.Unlock()
	for _, d := range held {
		t.obs.m.expired(d)
	}
	if len(held) > 0 {
		t.obs.changed()
	}
}

// sweepHolds runs the hold sweep every second until the server stops.
func (s *Server) sweepHolds() {
	defer s.bg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.holds.sweep()
		case <-s.bgStop:
			return
		}
	}
}

// count returns the number of holds tracked.
func (t *holdTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, h := range t.m {
		n += h.holds
	}
	return n
}
