package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

var _ engine.Sharer = (*Engine)(nil)

// acquireShared is Acquire for a shared kind, on the mutex's nodes: each holder
// is a held child carrying its kind and weight, a waiter a place in the
// same line. A request is granted when its weight fits in the permits the
// live holders leave under the stored limit (kind.go) and no place in line
// comes before its own (strict FIFO with weights: a large head is not
// overtaken). The grant is the mutex's transaction (the holder's child
// created, the name node written at the version read with the line) with
// the kind record checked at the version read: two grants decided on one
// reading, or a grant and a SetLimit, cannot both take effect. The token
// is the holder child's czxid. A live mutex holder, or a mutex's waiter in
// line, refuses the request (engine.KindError), as shared holders and
// waiters refuse a mutex.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(ctx); err != nil {
		return engine.Grant{}, err
	}
	if r.Kind == engine.RWLock {
		r.Limit = engine.RWPermits
	}
	if err := e.checkTTL(r.TTL); err != nil {
		return engine.Grant{}, err
	}
	a := attempt{e: e, r: r, k: key{r.Name, r.Waiter}, kind: r.Kind, weight: r.Weight}
	for range maxConflicts {
		g, done, err := a.sharedRound(ctx, r)
		if err != nil || done {
			return g, err
		}
	}
	return engine.Grant{}, conflict("acquire", r.Name)
}

// sharedRound runs one read-decide-write round of acquireShared; done is
// false when another client's change got in the way.
func (a *attempt) sharedRound(ctx context.Context, r engine.AcquireRequest) (engine.Grant, bool, error) {
	l, err := a.readLine(ctx)
	if err != nil || l.path == "" {
		return engine.Grant{}, false, err
	}
	return a.decided(ctx, &l, func(ctx context.Context, l *line, now int64) (engine.Grant, bool, error) {
		return a.decideShared(ctx, r, l, now)
	})
}

// decideShared is sharedRound's decision on the line l at the clock
// estimate now.
func (a *attempt) decideShared(ctx context.Context, r engine.AcquireRequest, l *line, now int64) (engine.Grant, bool, error) {
	e := a.e
	if _, ok := l.holder(now); ok {
		// Refused before the kind is stored: a refusal changes nothing.
		return engine.Grant{}, false, a.kindRefused(ctx, engine.KindError(r.Name, 0, r.Kind))
	}
	// A mutex's waiters queue: they bind the name to the mutex.
	if heads, again, err := e.mutexWaiterHeads(ctx, l, a.place.path, now); err != nil || again {
		return engine.Grant{}, false, err
	} else if heads {
		return engine.Grant{}, false, a.kindRefused(ctx, engine.KindError(r.Name, 0, r.Kind))
	}
	rec, kindOp, ok, err := e.kindOf(ctx, r, l)
	if err != nil || !ok {
		return engine.Grant{}, false, err
	}
	if err := engine.CheckShared(r, rec.Kind, rec.Limit); err != nil {
		return engine.Grant{}, false, err
	}
	line, expired := l.waiters(now)
	if marks := l.expiredMarks(now); len(expired) > 0 || len(marks) > 0 {
		return engine.Grant{}, false, e.sweep(ctx, l, expired, marks)
	}
	holders, used := l.shared(now)
	for _, h := range holders {
		if h.d.Owner != r.Owner {
			continue
		}
		if h.d.Weight != r.Weight {
			if rec.Kind == engine.RWLock {
				return engine.Grant{}, false, engine.ErrUpgrade
			}
			return engine.Grant{}, false, engine.HeldWeightError(r.Name, h.d.Weight, r.Weight)
		}
		if err := a.leave(ctx); err != nil {
			return engine.Grant{}, false, err
		}
		return a.reenter(ctx, h, now)
	}
	fits := r.Weight <= rec.Limit-used
	ahead := len(line) > 0 && line[0].path != a.place.path
	if fits && !ahead {
		return a.grantWith(ctx, l, evShared, kindOp)
	}
	g := engine.Grant{Reserved: true, HolderTTL: soonest(holders, now)}
	if len(holders) > 0 && !fits {
		g.Holder, g.Reserved = holders[0].d.Owner, false
	}
	return a.refuse(ctx, g, line)
}

// kindRefused returns err, the refusal of another kind's live holder,
// once the line it was read from is known to be current (catchUpOnce
// first).
func (a *attempt) kindRefused(ctx context.Context, err error) error {
	if !a.caughtUp {
		return a.catchUpOnce(ctx)
	}
	if cerr := a.needClock(); cerr != nil {
		return cerr
	}
	return err
}

// catchUpOnce brings the member the session reads from up to date
// (catchUp: any member may serve a line from before a holder's release
// that another session saw answered), once per call; the caller runs its
// round again. Only refusals pay for it: a grant is checked by its
// transaction's versions, a stale line cannot grant.
func (a *attempt) catchUpOnce(ctx context.Context) error {
	a.caughtUp = true
	return a.e.catchUp(ctx)
}

// soonest returns the shortest time left of holders at now (0: none).
func soonest(holders []child, now int64) time.Duration {
	least := int64(math.MaxInt64)
	for _, h := range holders {
		least = min(least, h.expiry()-now)
	}
	if len(holders) == 0 {
		return 0
	}
	return left(least)
}

// releaseShared is Release for a shared kind: Release of the owner's held
// child (its permits come back with its last hold; the name node's write
// wakes the head of the line).
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.release(ctx, r, "")
}

// SetLimit implements engine.Sharer: the kind record is written at the
// version read (made when missing), then the name node's data, which
// wakes the head of the line. A name a mutex holds (or its live waiter
// heads the line), or an RW lock, is refused with engine.KindError; a limit below 1 with an
// *engine.ArgumentError. Holders above a smaller limit keep their permits.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	if limit < 1 {
		return 0, &engine.ArgumentError{Arg: "limit", Reason: fmt.Sprintf("%d is below 1", limit)}
	}
	now, err := e.clock(ctx)
	if err != nil {
		return 0, err
	}
	caughtUp := false
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return 0, err
		}
		_, held := l.holder(max(now, l.now))
		queued, again, err := e.mutexWaiterHeads(ctx, &l, "", max(now, l.now))
		if err != nil {
			return 0, err
		}
		if again {
			continue
		}
		if held || queued {
			// A refusal only from a current line (catchUpOnce's reason).
			if !caughtUp {
				caughtUp = true
				if err := e.catchUp(ctx); err != nil {
					return 0, err
				}
				continue
			}
			return 0, engine.KindError(name, 0, engine.Semaphore)
		}
		prev, done, err := e.writeLimit(ctx, &l, name, limit)
		if err != nil || !done {
			if err != nil {
				return 0, err
			}
			continue
		}
		if _, err := e.set(ctx, l.path, event{Kind: evLimit}.encode(), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return 0, err
		}
		return prev, nil
	}
	return 0, conflict("set limit", name)
}

// writeLimit stores limit in name's kind record and returns the previous
// one (0: none), checking in the same transaction the name node at the
// version the line l was read at (a reading that missed a mutex's grant
// writes nothing); done is false when the record or the line changed
// meanwhile.
func (e *Engine) writeLimit(ctx context.Context, l *line, name string, limit int) (int, bool, error) {
	if l.parent == nil { // no name node yet: made first, and read again
		return 0, false, e.ensure(ctx, l.path, containerNode)
	}
	rec, ok, err := e.readKind(ctx, name)
	if err != nil {
		return 0, false, err
	}
	next := kindRecord{Kind: engine.Semaphore, Limit: limit}
	if !ok {
		made, err := e.createKind(ctx, l, name, next)
		return 0, made, err
	}
	if rec.Kind != engine.Semaphore {
		return 0, false, engine.KindError(name, rec.Kind, engine.Semaphore)
	}
	b, _ := json.Marshal(next)
	_, err = e.multi(ctx, &zk.CheckVersionRequest{Path: l.path, Version: l.parent.Version},
		&zk.SetDataRequest{Path: rec.path, Data: b, Version: rec.version})
	if changedMeanwhile(err) {
		return 0, false, nil
	}
	return rec.Limit, err == nil, err
}
