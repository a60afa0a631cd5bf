package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/distlock/distlock/engine"
)

var _ engine.Sharer = (*Engine)(nil)

// sharedLock is one name's semaphore or reader-writer lock (engine.Sharer).
type sharedLock struct {
	kind    engine.Kind
	limit   int
	holders map[string]*sharedHolder // by owner
	q       *waitQueue               // nil when nobody waits
	forget  time.Time                // when an unused lock's limit is forgotten
}

type sharedHolder struct {
	weight, count int
	token         uint64
	metadata      string
	attempt       string
	rels          engine.ReleaseIDs // the ids of the last releases that counted a hold down (ReleaseOnce)
	expires       time.Time
	taken         *waitEntry // the queue entry the grant took (nil: none), which an Undo puts back
}

// used counts the permits held.
func (s *sharedLock) used() int {
	n := 0
	for _, h := range s.holders {
		n += h.weight
	}
	return n
}

// fits reports whether weight permits are free.
func (s *sharedLock) fits(weight int) bool { return weight <= s.limit-s.used() }

// due reports whether the head of the queue, asking for weight permits,
// has an attempt to make: its weight fits, or it is above the limit and
// never will (its attempt is refused as bad input).
func (s *sharedLock) due(weight int) bool { return s.fits(weight) || weight > s.limit }

// soonest is the time left of the holder that expires first (ReserveTTL
// when nobody holds it: the head of the queue is due to take it).
func (s *sharedLock) soonest(now time.Time) time.Duration {
	d := time.Duration(-1)
	for _, h := range s.holders {
		if left := h.expires.Sub(now); d < 0 || left < d {
			d = left
		}
	}
	if d < 0 {
		return engine.ReserveTTL
	}
	return d
}

// anyHolder returns the owner of one holder (the oldest grant).
func (s *sharedLock) anyHolder() string {
	owner, token := "", uint64(0)
	for o, h := range s.holders {
		if owner == "" || h.token < token {
			owner, token = o, h.token
		}
	}
	return owner
}

// sharedState returns name's shared lock with its expired holders and
// waiters dropped, or nil; the caller holds e.mu.
func (e *Engine) sharedState(name string, now time.Time) *sharedLock {
	r := e.of(name)
	if r == nil || r.shared == nil {
		return nil
	}
	s := r.shared
	for o, h := range s.holders {
		if !now.Before(h.expires) {
			delete(s.holders, o)
		}
	}
	if s.q != nil {
		s.q = settleQueue(s.q, now)
	}
	if len(s.holders) == 0 && s.q == nil && !now.Before(s.forget) {
		r.shared = nil
		e.tidy(name, r)
		return nil
	}
	s.forget = now.Add(fenceMemory)
	return s
}

// mutexKind refuses a shared request of kind asked on name while the name
// is the mutex's: held as one, or with live waiters in the mutex's queue
// (queued waiters bind a name to their kind, as holders do; an expired
// entry or a lapsed reservation's does not count). It returns
// engine.KindError, or nil; the caller holds e.mu.
func (e *Engine) mutexKind(name string, asked engine.Kind, now time.Time) error {
	if e.live(name, now) != nil || e.settle(name, now) != nil {
		return engine.KindError(name, engine.Mutex, asked)
	}
	return nil
}

// sharedKind refuses a mutex request on name while the name is a shared
// lock's: held as one (a live holder), or with live waiters in its queue
// (they bind the name to its kind, as holders do). It returns
// engine.KindError naming the shared lock's kind, or nil; the caller holds
// e.mu.
func (e *Engine) sharedKind(name string, now time.Time) error {
	if sl := e.sharedState(name, now); sl != nil && (len(sl.holders) > 0 || sl.q != nil) {
		return engine.KindError(name, sl.kind, engine.Mutex)
	}
	return nil
}

// dropShared forgets name's shared lock (kind, limit, holders and
// queue); the caller holds e.mu.
func (e *Engine) dropShared(name string) {
	if r := e.of(name); r != nil {
		r.shared = nil
		e.tidy(name, r)
	}
}

// wakeShared wakes the head of s's queue when its weight fits, or when it
// is above the limit (a SetLimit shrank it under the head): that head can
// never be granted, and its attempt is refused as bad input, so that it
// leaves and the waiters behind it are not held up for good. The caller
// holds e.mu.
func (e *Engine) wakeShared(name string, s *sharedLock) {
	if s.q == nil {
		return
	}
	if h := s.q.head(); h != nil && s.due(h.weight) {
		e.notifyWaiter(name, h.id)
	}
}

// acquireShared is Acquire for a shared kind.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	now := e.now()
	e.sweep(now)
	if err := e.mutexKind(r.Name, r.Kind, now); err != nil {
		return engine.Grant{}, err
	}
	s := e.sharedState(r.Name, now)
	if s == nil { // made with the limit declared; once it exists, its own governs
		if err := engine.CheckShared(r, r.Kind, r.Limit); err != nil {
			return engine.Grant{}, err
		}
		s = &sharedLock{kind: r.Kind, limit: r.Limit, holders: make(map[string]*sharedHolder), forget: now.Add(fenceMemory)}
		e.record(r.Name).shared = s
	}
	if err := engine.CheckShared(r, s.kind, s.limit); err != nil {
		return engine.Grant{}, err
	}
	if h := s.holders[r.Owner]; h != nil { // re-entry
		if h.weight != r.Weight {
			if s.kind == engine.RWLock {
				return engine.Grant{}, engine.ErrUpgrade
			}
			return engine.Grant{}, engine.HeldWeightError(r.Name, h.weight, r.Weight)
		}
		if h.attempt != r.Attempt {
			h.count++
			h.attempt = r.Attempt
		}
		h.expires = engine.HoldExpiry(h.count, h.expires, now, r.TTL)
		e.dropSharedWaiter(s, r.Waiter)
		return engine.Grant{Acquired: true, Token: h.token, Count: h.count}, nil
	}
	ahead := s.q != nil && s.q.head() != nil && s.q.head().id != r.Waiter
	if !ahead && s.fits(r.Weight) {
		token, err := e.next(r.Name, now, r.TokenProposal)
		if err != nil {
			return engine.Grant{}, err
		}
		var taken *waitEntry
		if s.q != nil && r.Waiter != "" {
			taken = s.q.entries[r.Waiter]
		}
		e.dropSharedWaiter(s, r.Waiter)
		h := &sharedHolder{weight: r.Weight, count: 1, token: e.mint(r.Name, token, now), metadata: r.Metadata, attempt: r.Attempt, expires: now.Add(r.TTL), taken: taken}
		s.holders[r.Owner] = h
		e.wakeShared(r.Name, s) // the next head, if it fits too
		return engine.Grant{Acquired: true, Token: h.token, Count: 1}, nil
	}
	g := engine.Grant{Holder: s.anyHolder(), HolderTTL: s.soonest(now)}
	if len(s.holders) == 0 || s.fits(r.Weight) {
		g.Holder, g.Reserved = "", true // free enough, but kept for the queue
	}
	if r.Waiter != "" {
		if s.q == nil {
			s.q = &waitQueue{entries: make(map[string]*waitEntry)}
		}
		w := enqueueIn(s.q, r.Waiter, r.WaiterTTL, now)
		w.weight = r.Weight
		s.q.mark(&g, r.Waiter)
		e.wakeShared(r.Name, s) // the head may fit (a head that died)
	}
	return g, nil
}

// dropSharedWaiter takes waiter out of s's queue; the caller holds e.mu.
func (e *Engine) dropSharedWaiter(s *sharedLock, waiter string) {
	if s.q == nil || waiter == "" {
		return
	}
	if w := s.q.entries[waiter]; w != nil {
		s.q.remove(w)
		if len(s.q.entries) == 0 {
			s.q = nil
		}
	}
}

// releaseShared is Release for a shared kind.
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	now := e.now()
	s := e.sharedState(r.Name, now)
	if s == nil || s.holders[r.Owner] == nil {
		if e.takenFrom(r.Name, r.Owner, now) {
			return engine.ReleaseResult{Status: engine.NotOwner}, nil // force-released: taken over, as Extend says
		}
		return engine.ReleaseResult{Status: engine.NotHeld}, nil
	}
	if s.kind != r.Kind {
		return engine.ReleaseResult{}, engine.KindError(r.Name, s.kind, r.Kind) // a permit released as a reader, or the reverse
	}
	h := s.holders[r.Owner]
	if r.Token != 0 && h.token != r.Token {
		return engine.ReleaseResult{Status: engine.NotOwner}, nil // a newer grant of the owner
	}
	if h.rels.Has(id) {
		return engine.ReleaseResult{Status: engine.Released, Remaining: h.count}, nil // a copy of a count-down
	}
	if h.count--; h.count > 0 {
		h.rels = h.rels.With(id) // (a release without an id keeps the others')
		return engine.ReleaseResult{Status: engine.Released, Remaining: h.count}, nil
	}
	delete(s.holders, r.Owner)
	if r.Undo && h.taken != nil && now.Before(h.taken.deadline) {
		s.q = requeue(s.q, h.taken)
	}
	if r.Undo && len(s.holders) == 0 && s.q == nil {
		e.dropShared(r.Name) // kind and limit forgotten: the grant is undone
	}
	e.wakeShared(r.Name, s)
	e.notifyWaiter(r.Name, "") // plain subscribers (observers, waiters outside a queue)
	return engine.ReleaseResult{Status: engine.Released}, nil
}

// sharedInfo describes the shared lock s of name (nil: none) at now; the
// caller holds e.mu.
func (e *Engine) sharedInfo(name string, s *sharedLock, now time.Time) engine.Info {
	info := engine.Info{Name: name, HighWater: e.highWater(name, now)}
	if s == nil {
		return info
	}
	info.Kind, info.Limit = s.kind, s.limit
	for o, h := range s.holders {
		info.Holders = append(info.Holders, engine.Holder{Owner: o, Count: h.count, Token: h.token,
			TTL: h.expires.Sub(now), Metadata: h.metadata, Weight: h.weight})
		info.Token = max(info.Token, h.token)
	}
	slices.SortFunc(info.Holders, func(a, b engine.Holder) int { return cmp.Compare(a.Token, b.Token) })
	info.Held = len(info.Holders) > 0
	if s.q != nil {
		info.Waiters = len(s.q.entries)
		for _, w := range s.q.order {
			if len(info.Queue) < engine.MaxQueueListed {
				info.Queue = append(info.Queue, engine.Waiter{ID: w.id, Waited: now.Sub(w.since)})
			}
		}
	}
	return info
}

// SetLimit implements engine.Sharer.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	now := e.now()
	if err := e.mutexKind(name, engine.Semaphore, now); err != nil {
		return 0, err
	}
	s := e.sharedState(name, now)
	if s == nil {
		e.record(name).shared = &sharedLock{kind: engine.Semaphore, limit: limit, holders: make(map[string]*sharedHolder), forget: now.Add(fenceMemory)}
		return 0, nil
	}
	if s.kind != engine.Semaphore {
		return 0, engine.KindError(name, s.kind, engine.Semaphore)
	}
	prev := s.limit
	s.limit = limit
	e.wakeShared(name, s)
	return prev, nil
}

// leaveShared is Leave's path for a shared lock's waiter: it leaves the
// queue, and the next head is woken when it fits.
func (e *Engine) leaveShared(ctx context.Context, r engine.LeaveRequest) error {
	name, waiter := r.Name, r.Waiter
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return err
	}
	s := e.sharedState(name, e.now())
	if s == nil {
		return nil
	}
	e.dropSharedWaiter(s, waiter)
	e.wakeShared(name, s)
	return nil
}

// extendShared answers an ExtendRequest for a shared lock (a holder's
// renewal or a waiter's heartbeat); the caller holds e.mu.
func (e *Engine) extendShared(r engine.ExtendRequest, now time.Time) engine.ExtendResult {
	s := e.sharedState(r.Name, now)
	if r.Waiter {
		if s == nil || s.q == nil || s.q.entries[r.Owner] == nil {
			return engine.ExtendResult{Status: engine.Missing}
		}
		w := s.q.entries[r.Owner]
		w.deadline = now.Add(r.TTL)
		return engine.ExtendResult{Status: engine.Extended, Wake: s.q.head() == w && s.due(w.weight)}
	}
	if s == nil || s.holders[r.Owner] == nil {
		if e.takenFrom(r.Name, r.Owner, now) {
			return engine.ExtendResult{Status: engine.HeldByOther}
		}
		return engine.ExtendResult{Status: engine.Missing}
	}
	h := s.holders[r.Owner]
	if r.Token != 0 && h.token != r.Token {
		return engine.ExtendResult{Status: engine.HeldByOther, Token: h.token} // a newer grant of the owner
	}
	h.expires = engine.HoldExpiry(h.count, h.expires, now, r.TTL)
	return engine.ExtendResult{Status: engine.Extended, Token: h.token}
}

// raiseShared is RaiseFence's path for a shared lock's holder.
func (e *Engine) raiseShared(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return false, err
	}
	now := e.now()
	s := e.sharedState(r.Name, now)
	if s == nil || s.holders[r.Owner] == nil {
		return false, nil
	}
	if err := engine.CheckRaise(s.holders[r.Owner].token, r.Token, now); err != nil {
		return false, err
	}
	e.raise(r.Name, r.Token, now)
	s.holders[r.Owner].token = r.Token
	return true, nil
}

// forceShared frees every holder of name's shared lock, remembering them
// as taken over, and wakes the head of its queue and the plain
// subscribers. It reports whether anyone held it; the caller holds e.mu.
func (e *Engine) forceShared(name string, now time.Time) bool {
	s := e.sharedState(name, now)
	if s == nil || len(s.holders) == 0 {
		return false
	}
	for o, h := range s.holders {
		e.markTaken(name, o, h.expires)
		delete(s.holders, o)
	}
	e.wakeShared(name, s)
	e.notifyWaiter(name, "")
	return true
}

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
}

// Release implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.ReleaseOnceByKind) to releaseMutex or releaseShared,
// without an id (every call drops a hold).
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, r, "")
}

// ReleaseOnce implements engine.OnceReleaser: as Release, but a hold's
// count-down records id, so a copy of the call (a server's client resending
// a release whose answer was lost; a quorum's retry) drops no second hold.
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	return engine.ReleaseOnceByKind(ctx, r, id, e.releaseMutex, e.releaseShared)
}
