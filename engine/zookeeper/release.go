package zookeeper

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// releaseMutex is Release for a mutex: one hold fewer, and the child deleted
// with the last one (which wakes the waiter that watches it).
func (e *Engine) releaseMutex(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.release(ctx, r, "")
}

// releaseOnceMutex is ReleaseOnce for a mutex: the child remembers the ids
// of its latest releases, and a copy of one drops no second hold.
func (e *Engine) releaseOnceMutex(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	return e.release(ctx, r, id)
}

// release drops one hold, trying again while the connection is down (a
// member failed: the client library connects to another) until ctx ends,
// so that a release during a failover frees the lock instead of leaving
// it held until its ttl. A request that may have taken effect is sent
// again only when that is harmless: the child's deletion (found gone
// then: released), or a count down with its id (applied once). Only a
// holder of rq.Kind is released (a mutex's, or a shared lock's, as renew
// renews): the owner's child of the other kind is not its lease (a
// mutex's and a shared lock's: NotHeld; a semaphore's and an RW lock's:
// the kind's *engine.ArgumentError, engine.KindError, as an acquire of
// the wrong kind gets; nothing changes either way). A
// release that names a grant's token (rq.Token, not 0) drops a hold of
// that grant's child only (its czxid): the owner's child of another grant
// is answered NotOwner and kept.
func (e *Engine) release(ctx context.Context, rq engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	var r releaseTry
	for {
		res, err := e.releaseOnce(ctx, rq, id, &r)
		switch {
		case err == nil && r.deleteLost && (res.Status == engine.NotHeld || res.Status == engine.NotOwner):
			// The deletion whose answer was lost took effect.
			return engine.ReleaseResult{Status: engine.Released}, nil
		case err == nil || !r.again(err) || !pause(ctx):
			return res, err
		}
	}
}

// releaseTry is what a release's tries tell the next one.
type releaseTry struct {
	deleteLost bool // the child's deletion was sent and its answer lost
	countLost  bool // a count down without an id was sent and its answer lost
}

// again reports whether a release that failed with err is tried again:
// the request never left (no server), was ignored (the session moved to
// another member) or the connection broke, and no request lost so far is
// harmful to repeat.
func (r *releaseTry) again(err error) bool {
	return !r.countLost && (errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrConnectionClosed))
}

// pause waits reconnectPause, or until ctx ends (false).
func pause(ctx context.Context) bool {
	select {
	case <-time.After(reconnectPause):
		return true
	case <-ctx.Done():
		return false
	}
}

// reconnectPause is how long a request that found no connection waits
// before it is tried again.
const reconnectPause = 100 * time.Millisecond

// releaseOnce is one try of release.
func (e *Engine) releaseOnce(ctx context.Context, rq engine.ReleaseRequest, id string, r *releaseTry) (engine.ReleaseResult, error) {
	name, owner, kind := rq.Name, rq.Owner, rq.Kind
	if c, ok := e.holding(key{name, owner}); ok && c.d.Count == 1 && c.d.Kind == kind && ofGrant(c, rq.Token) {
		// The fast path: one multi-op at the version this engine wrote.
		err := e.free(ctx, c)
		if err == nil {
			e.dropHolding(key{name, owner})
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
		if !verdict(err) {
			r.deleteLost = r.deleteLost || errors.Is(err, zk.ErrConnectionClosed)
			return engine.ReleaseResult{}, err
		}
	}
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return engine.ReleaseResult{}, err
		}
		c, ok := l.heldBy(owner, l.now)
		if ok && !ofKind(c, kind) {
			return engine.ReleaseResult{Status: engine.NotHeld}, nil
		}
		if ok && c.d.Kind != kind {
			// The other shared kind (a semaphore's permit released as an
			// RW lock's hold, or the reverse): refused as an acquire of
			// that kind is, and nothing changes.
			return engine.ReleaseResult{}, engine.KindError(name, c.d.Kind, kind)
		}
		if !ok {
			e.dropHolding(key{name, owner})
			// Another owner holds it, or a force-release freed the
			// owner's hold (its mark): taken over, as a renewal is told.
			if e.lostTo(ctx, &l, owner) == engine.HeldByOther {
				return engine.ReleaseResult{Status: engine.NotOwner}, nil
			}
			return engine.ReleaseResult{Status: engine.NotHeld}, nil
		}
		if !ofGrant(c, rq.Token) {
			// A newer grant of the owner: the released one went.
			return engine.ReleaseResult{Status: engine.NotOwner}, nil
		}
		if id != "" && slices.Contains(c.d.Releases, id) {
			return engine.ReleaseResult{Status: engine.Released, Remaining: c.d.Count}, nil
		}
		if c.d.Count <= 1 {
			err = e.free(ctx, c)
		} else {
			d := c.d
			d.Count--
			// The write moves the child's mtime: the expiry is written
			// out, so that dropping a hold does not extend the lease.
			d.Base = c.expiry() - d.TTL
			if id != "" {
				d.Releases = append(d.Releases, id)
				d.Releases = d.Releases[max(0, len(d.Releases)-maxReleases):]
			}
			_, err = e.set(ctx, c.path, d.encode(), c.st.Version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			if errors.Is(err, zk.ErrConnectionClosed) {
				r.deleteLost = r.deleteLost || c.d.Count <= 1
				r.countLost = r.countLost || c.d.Count > 1 && id == ""
			}
			return engine.ReleaseResult{}, err
		}
		if c.d.Count <= 1 {
			e.dropHolding(key{name, owner})
		}
		return engine.ReleaseResult{Status: engine.Released, Remaining: max(c.d.Count-1, 0)}, nil
	}
	return engine.ReleaseResult{}, conflict("release", name)
}
