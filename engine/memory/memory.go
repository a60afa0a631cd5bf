// Package memory is the embedded, in-process lock engine. It has the same
// semantics as engine/redis (time to live on the monotonic clock, fencing
// tokens seeded from the wall clock and kept strictly increasing, wake-ups on
// release) so programs, the CLI and tests run with no Redis at all.
//
// One Engine is one lock authority: locks are shared by every Client in the
// process that uses the same Engine, and dropped when the process exits.
package memory

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// fenceMemory is how long the fencing high-water of a name is remembered
// after its last grant, like the high-water key's time to live on Redis.
const fenceMemory = 7 * 24 * time.Hour

// sweepEvery is how often expired entries are dropped from the tables.
const sweepEvery = time.Second

// Engine is an in-process lock authority. The zero value is not usable;
// call New.
type Engine struct {
	mu        sync.Mutex
	names     map[string]*record // one record per name, whatever its kind (record.go)
	hub       *engine.Hub        // the subscriptions
	lastSweep time.Time
	closed    bool
	now       func() time.Time
}

type lock struct {
	owner    string
	count    int
	token    uint64
	metadata string
	attempt  string
	rels     engine.ReleaseIDs // the ids of the last releases that counted a hold down (ReleaseOnce)
	expires  time.Time
	taken    *waitEntry // the queue entry the grant took (nil: none), which an Undo puts back
}

type highWater struct {
	token   uint64
	expires time.Time
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.FenceRaiser    = (*Engine)(nil)
	_ engine.MetadataSetter = (*Engine)(nil)
	_ engine.OnceReleaser   = (*Engine)(nil)
)

// New returns an empty in-process engine.
func New() *Engine {
	return &Engine{
		names: make(map[string]*record),
		hub:   engine.NewHub(nil, 0),
		now:   time.Now,
	}
}

// live returns the unexpired lock of name; the caller holds e.mu.
func (e *Engine) live(name string, now time.Time) *lock {
	r := e.of(name)
	if r == nil || r.mutex == nil {
		return nil
	}
	if !now.Before(r.mutex.expires) {
		r.mutex = nil
		e.tidy(name, r)
		return nil
	}
	return r.mutex
}

// sweep drops expired entries at most once per sweepEvery; the caller holds e.mu.
func (e *Engine) sweep(now time.Time) {
	if now.Sub(e.lastSweep) < sweepEvery {
		return
	}
	e.lastSweep = now
	for name, r := range e.names {
		if r.mutex != nil && !now.Before(r.mutex.expires) {
			r.mutex = nil
		}
		if !now.Before(r.fence.expires) {
			r.fence = highWater{}
		}
		sweepTaken(r, now)
		e.tidy(name, r)
	}
}

// next returns the next fencing token of name (engine.NextToken: its
// high-water + 1 or the wall clock in microseconds, or the request's
// proposal, whichever is greater), or engine.ErrFenceExhausted. The caller
// holds e.mu.
func (e *Engine) next(name string, now time.Time, proposal uint64) (uint64, error) {
	return engine.NextToken(e.highWater(name, now), now, proposal)
}

// mint records token, from next, as name's high-water and returns it.
// The caller holds e.mu.
func (e *Engine) mint(name string, token uint64, now time.Time) uint64 {
	e.record(name).fence = highWater{token: token, expires: now.Add(fenceMemory)}
	return token
}

func (e *Engine) check(ctx context.Context) error {
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if e.closed {
		return engine.ErrClosed
	}
	return nil
}

// acquireMutex is Acquire for a mutex.
func (e *Engine) acquireMutex(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	now := e.now()
	e.sweep(now)
	if err := e.sharedKind(r.Name, now); err != nil {
		return engine.Grant{}, err
	}
	q := e.settle(r.Name, now)
	if l := e.live(r.Name, now); l != nil {
		if l.owner != r.Owner {
			g := engine.Grant{Holder: l.owner, HolderTTL: l.expires.Sub(now)}
			if r.Waiter != "" {
				e.enqueue(r, now).mark(&g, r.Waiter)
			}
			return g, nil
		}
		if l.attempt != r.Attempt {
			l.count++
			l.attempt = r.Attempt
		}
		l.expires = engine.HoldExpiry(l.count, l.expires, now, r.TTL)
		e.granted(r, q)
		return engine.Grant{Acquired: true, Token: l.token, Count: l.count}, nil
	}
	token, err := e.next(r.Name, now, r.TokenProposal)
	if err != nil {
		return engine.Grant{}, err
	}
	if g, ok := e.admit(r, q, now); !ok {
		return g, nil
	}
	l := &lock{owner: r.Owner, count: 1, token: e.mint(r.Name, token, now), metadata: r.Metadata, attempt: r.Attempt, expires: now.Add(r.TTL),
		taken: e.granted(r, q)}
	e.record(r.Name).mutex = l
	if r.Announce {
		e.announce(r.Name, l) // the plain subscribers: an election's observers
	}
	return engine.Grant{Acquired: true, Token: l.token, Count: 1}, nil
}

// Extend implements engine.Engine.
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	now := e.now()
	out := make([]engine.ExtendResult, len(rs))
	for i, r := range rs {
		if r.Kind.Shared() {
			out[i] = e.extendShared(r, now)
			continue
		}
		if r.Waiter {
			out[i] = e.heartbeat(r, now)
			continue
		}
		l := e.live(r.Name, now)
		switch {
		case (l == nil || l.owner != r.Owner) && e.takenFrom(r.Name, r.Owner, now):
			out[i].Status = engine.HeldByOther // a force-release freed it
		case l == nil:
			out[i].Status = engine.Missing
		case l.owner != r.Owner:
			out[i].Status = engine.HeldByOther
		case r.Token != 0 && l.token != r.Token:
			out[i] = engine.ExtendResult{Status: engine.HeldByOther, Token: l.token} // a newer grant of the owner
		default:
			l.expires = engine.HoldExpiry(l.count, l.expires, now, r.TTL)
			out[i] = engine.ExtendResult{Status: engine.Extended, Token: l.token}
		}
	}
	return out, nil
}

// releaseMutex is Release for a mutex.
func (e *Engine) releaseMutex(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	return e.release(r, id), nil
}

// release drops one hold of r.Owner on r.Name, of the grant of r.Token
// (0: any), unless id (not "") is the id of the release that last counted
// it down (a copy of that release: answered as it was, with the holds
// there are). An Undo that frees the lock puts back the queue entry the
// grant took, at its arrival ticket, before the head is woken. The caller
// holds e.mu.
func (e *Engine) release(r engine.ReleaseRequest, id string) engine.ReleaseResult {
	name, owner, token := r.Name, r.Owner, r.Token
	now := e.now()
	l := e.live(name, now)
	switch {
	case l == nil && e.takenFrom(name, owner, now):
		return engine.ReleaseResult{Status: engine.NotOwner} // force-released: taken over, as Extend says
	case l == nil:
		return engine.ReleaseResult{Status: engine.NotHeld}
	case l.owner != owner, token != 0 && l.token != token:
		return engine.ReleaseResult{Status: engine.NotOwner}
	case l.rels.Has(id):
		return engine.ReleaseResult{Status: engine.Released, Remaining: l.count}
	}
	l.count--
	if l.count > 0 {
		l.rels = l.rels.With(id) // (a release without an id keeps the others')
		return engine.ReleaseResult{Status: engine.Released, Remaining: l.count}
	}
	e.dropMutex(name)
	if r.Undo && l.taken != nil && now.Before(l.taken.deadline) {
		rec := e.record(name)
		rec.queue = requeue(rec.queue, l.taken)
	}
	e.freed(name)
	return engine.ReleaseResult{Status: engine.Released}
}

// ForceRelease implements engine.ForceReleaser: it frees the lock whoever
// holds it, a mutex or every holder of a shared lock, and wakes its
// waiters. It reports whether the lock was held. The holders freed are
// told HeldByOther at their next renewal (taken.go).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return false, err
	}
	now := e.now()
	if e.forceShared(name, now) {
		return true, nil
	}
	l := e.live(name, now)
	if l == nil {
		e.freed(name)
		return false, nil
	}
	e.forceMutex(name, l)
	return true, nil
}

// SetMetadata implements engine.MetadataSetter: the hold of r.Owner, of
// the grant of r.Token when not 0 (another token: HeldByOther, nothing
// changed).
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	now := e.now()
	l := e.live(r.Name, now)
	switch {
	case l == nil && e.takenFrom(r.Name, r.Owner, now):
		return engine.HeldByOther, nil // force-released: taken over, as Extend says
	case l == nil:
		return engine.Missing, nil
	case l.owner != r.Owner:
		return engine.HeldByOther, nil
	case r.Token != 0 && l.token != r.Token:
		return engine.HeldByOther, nil // a newer grant of the owner
	}
	l.metadata = r.Metadata
	e.announce(r.Name, l)
	return engine.Extended, nil
}

// Inspect implements engine.Engine.
func (e *Engine) Inspect(ctx context.Context, name string) (engine.Info, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.Info{}, err
	}
	now := e.now()
	return engine.Describe(e.info(name, now), e.sharedInfo(name, e.sharedState(name, now), now)), nil
}

// RaiseFence implements engine.FenceRaiser, dispatched once on r.Kind
// (engine.RaiseByKind): while r.Owner holds the lock (a mutex's grant or a
// shared lock's permits), its token becomes r.Token and the high-water
// rises to it, within engine.CheckRaise (never lower, at most 2^53-1, at
// most MaxRaiseAhead ahead of the clock); a refused raise changes nothing.
func (e *Engine) RaiseFence(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	return engine.RaiseByKind(ctx, r, e.raiseMutex, e.raiseShared)
}

// raiseMutex is RaiseFence's mutex path.
func (e *Engine) raiseMutex(ctx context.Context, r engine.RaiseRequest) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return false, err
	}
	now := e.now()
	l := e.live(r.Name, now)
	if l == nil || l.owner != r.Owner {
		return false, nil
	}
	if err := engine.CheckRaise(l.token, r.Token, now); err != nil {
		return false, err
	}
	e.raise(r.Name, r.Token, now)
	l.token = r.Token
	return true, nil
}

// raise lifts name's high-water to at least token (a checked raise) and
// keeps it for fenceMemory. The caller holds e.mu.
func (e *Engine) raise(name string, token uint64, now time.Time) {
	r := e.record(name)
	if !now.Before(r.fence.expires) || r.fence.token < token {
		r.fence.token = token
	}
	r.fence.expires = now.Add(fenceMemory)
}

// dropMutex drops name's mutex grant; the caller holds e.mu.
func (e *Engine) dropMutex(name string) {
	if r := e.of(name); r != nil {
		r.mutex = nil
		e.tidy(name, r)
	}
}

// Close implements engine.Engine. After Close every operation fails with
// engine.ErrClosed and every subscription is woken.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	e.hub.Close()
	return nil
}
