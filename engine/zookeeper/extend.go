package zookeeper

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Extend implements engine.Engine, for mutexes and shared locks alike
// (their holders and places are the same children). ZooKeeper has no batch of reads and
// writes, so the requests are sent together, each on its own: a holder's
// renewal rewrites its child's data at the version it read (the write's
// mtime is the new base of its ttl); a waiter's heartbeat rewrites its place
// in line and, when the waiter is at the front with every child before it
// expired (deleted then), asks it to try (Wake).
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	out := make([]engine.ExtendResult, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			if err := e.checkTTL(r.TTL); err != nil && !r.Waiter {
				out[i].Err = err
				return
			}
			if r.Waiter {
				out[i] = e.heartbeat(ctx, r)
			} else {
				out[i] = e.renew(ctx, r)
			}
		})
	}
	wg.Wait()
	return out, nil
}

// renew extends a holder's lease: one write at the version this engine
// last wrote (the fast path), or a read of the line first. Only a holder
// of the kind asked is renewed (a mutex's, or a shared lock's: the
// contract's ExtendRequest.Kind): the owner's child of the other kind is
// answered Missing, as the other engines answer, so that Attach (a
// mutex's extension) to a semaphore's permit or an RW lock's side is
// refused instead of binding a mutex's lease to it (which renewed the
// permit with its own ttl, and whose release freed the permit). A
// renewal that names a grant's token (r.Token, not 0) renews only the
// child of that grant (its czxid): the owner's child of another grant (the
// lease's was freed, and the owner granted the lock anew) is answered
// HeldByOther with its token, unchanged. The fast path is taken only when
// the child this engine last wrote is of that grant; otherwise the line
// is read and tells.
func (e *Engine) renew(ctx context.Context, r engine.ExtendRequest) engine.ExtendResult {
	k := key{r.Name, r.Owner}
	if c, ok := e.holding(k); ok && c.d.Count == 1 && ofKind(c, r.Kind) && ofGrant(c, r.Token) {
		if res, done := e.rewrite(ctx, k, c, r.TTL, c.st.Mtime); done {
			return res
		}
	}
	for range maxConflicts {
		l, err := e.read(ctx, r.Name)
		if err != nil {
			return engine.ExtendResult{Err: err}
		}
		c, ok := l.heldBy(r.Owner, l.now)
		if ok && !ofKind(c, r.Kind) {
			return engine.ExtendResult{Status: engine.Missing}
		}
		if !ok {
			e.dropHolding(key{r.Name, r.Owner})
			return engine.ExtendResult{Status: e.lostTo(ctx, &l, r.Owner)}
		}
		if !ofGrant(c, r.Token) {
			// A newer grant of the owner: the lease's own went.
			return engine.ExtendResult{Status: engine.HeldByOther, Token: uint64(c.st.Czxid)}
		}
		if res, done := e.rewrite(ctx, k, c, r.TTL, l.now); done {
			return res
		}
		if _, _, err := e.get(ctx, c.path); errors.Is(err, zk.ErrNoNode) {
			e.dropHolding(k)
			return engine.ExtendResult{Status: e.lostTo(ctx, &l, r.Owner)}
		}
	}
	return engine.ExtendResult{Err: conflict("extend", r.Name)}
}

// ofKind reports whether the held child c is a holder of kind (a mutex's,
// or a shared lock's).
func ofKind(c child, kind engine.Kind) bool { return (c.d.Kind != 0) == kind.Shared() }

// ofGrant reports whether the held child c is of the grant whose fencing
// token is token (its czxid; 0: any grant). A child's path is unique (its
// protected GUID), so the child this engine wrote at a path is that
// grant's as long as the path is there.
func ofGrant(c child, token uint64) bool {
	return token == 0 || c.st != nil && uint64(c.st.Czxid) == token
}

// rewrite renews the held child c at the version it was read or written
// at (now: a clock estimate no later than the write); done is false when
// the child changed or went meanwhile (read the line then).
func (e *Engine) rewrite(ctx context.Context, k key, c child, ttl time.Duration, now int64) (engine.ExtendResult, bool) {
	d := c.d
	d.Base, d.TTL = holdExpiry(d.Count, c.expiry(), now, ttl)
	st, err := doSettled(ctx, e, "set", func() (*zk.Stat, error) { return e.conn.Set(c.path, d.encode(), c.st.Version) },
		func(st *zk.Stat, err error) {
			// Applied after the caller gave up (a stalled ensemble runs
			// it when it resumes): a write past the expiry brought the
			// lease back for a ttl, held by nobody.
			if err == nil && e.freeExpired(c, st) {
				e.dropHolding(k)
			}
		})
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return engine.ExtendResult{}, false
	}
	if err != nil {
		return engine.ExtendResult{Err: err}, true
	}
	if st.Mtime > c.expiry() {
		// Expired before this write: the lease is gone, not renewed.
		c.st = st
		_ = e.free(ctx, c)
		e.dropHolding(k)
		return engine.ExtendResult{Status: engine.Missing}, true
	}
	e.setHolding(k, child{path: c.path, d: d, st: st})
	return engine.ExtendResult{Status: engine.Extended, Token: uint64(st.Czxid)}, true
}

// freeExpired deletes the held child c, written at st by a write the
// ensemble applied past c's expiry (st.Mtime later than it), and reports
// whether it did: the write found the lease gone and must not bring it
// back. It calls the client library directly: it runs on a worker, after
// the write's caller gave up (doSettled).
func (e *Engine) freeExpired(c child, st *zk.Stat) bool {
	if st == nil || st.Mtime <= c.expiry() {
		return false
	}
	_, err := e.conn.Multi(&zk.DeleteRequest{Path: c.path, Version: st.Version},
		&zk.SetDataRequest{Path: c.path[:lastSlash(c.path)], Data: event{Kind: evReleased}.encode(), Version: -1})
	return err == nil
}

// lostTo tells why owner no longer holds the lock: HeldByOther when a
// force-release freed its lease and that lease has not ended yet, or when
// another owner holds the lock; Missing otherwise.
func (e *Engine) lostTo(ctx context.Context, l *line, owner string) engine.ExtendStatus {
	if m, ok := l.markOf(owner); ok && m.st != nil {
		// The mark is persistent (it outlives the engine that left it)
		// and stays until the freed lease's end: every lease of the owner
		// (re-entrant holds, on any Client) is told by it, as on the
		// embedded engine. It goes once that lease has ended.
		if l.now > m.until {
			_ = e.del(ctx, m.path, m.st.Version)
		}
		if l.now <= m.until {
			return engine.HeldByOther
		}
	}
	if _, ok := l.holder(l.now); ok {
		return engine.HeldByOther
	}
	return engine.Missing
}

// heartbeat renews a waiter's place in line.
func (e *Engine) heartbeat(ctx context.Context, r engine.ExtendRequest) engine.ExtendResult {
	k := key{r.Name, r.Owner}
	w, ok := e.waiter(k)
	if !ok {
		return engine.ExtendResult{Status: engine.Missing}
	}
	sent := time.Now()
	if _, err := e.set(ctx, w.path, w.d.encode(), -1); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return engine.ExtendResult{Status: engine.Missing}
		}
		return engine.ExtendResult{Err: err}
	}
	e.wroteWaiter(k, w.path, sent)
	l, err := e.readLine(ctx, r.Name, w.path, decisionChildren)
	if err != nil {
		return engine.ExtendResult{Err: err}
	}
	line, expired := l.waiters(l.now)
	if err := e.sweep(ctx, &l, expired, l.expiredMarks(l.now)); err != nil {
		return engine.ExtendResult{Err: err}
	}
	res := engine.ExtendResult{Status: engine.Extended}
	_, held := l.holder(l.now)
	if len(line) > 0 && line[0].path == w.path && (!held || w.d.Kind != 0) {
		// The head of a free mutex, or of a shared lock (it may fit beside
		// the holders: its attempt tells).
		res.Wake = true
	}
	return res
}
