package memory

import (
	"context"

	"github.com/distlock/distlock/engine"
)

var (
	_ engine.MultiAcquirer = (*Engine)(nil)
	_ engine.MultiReleaser = (*Engine)(nil)
)

// ReleaseMulti implements engine.MultiReleaser: every release under the
// engine's one lock.
func (e *Engine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if err := engine.CheckReleaseSet(rs); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	out := make([]engine.ReleaseResult, len(rs))
	for i, r := range rs {
		out[i] = e.release(r, "")
	}
	return out, nil
}

// AcquireMulti implements engine.MultiAcquirer: under the engine's one
// lock, every name is checked before any is granted: first that none is
// a shared lock's, held or with waiters queued (a kind error is refused at
// once, ahead of any contention on another name), then that each is free
// with nobody queued, its next token computed; so a refusal or an
// exhausted fence changes nothing.
func (e *Engine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.check(ctx); err != nil {
		return engine.MultiGrant{}, err
	}
	now := e.now()
	e.sweep(now)
	for _, r := range rs {
		if err := e.sharedKind(r.Name, now); err != nil {
			return engine.MultiGrant{}, err
		}
	}
	tokens := make([]uint64, len(rs))
	for i, r := range rs {
		if l := e.live(r.Name, now); l != nil {
			return engine.MultiGrant{Blocked: i, Grant: engine.Grant{Holder: l.owner, HolderTTL: l.expires.Sub(now)}}, nil
		}
		if q := e.settle(r.Name, now); q != nil {
			// Free, but waiters queue for it: a set does not go ahead of them.
			left := engine.ReserveTTL
			if q.reserved != nil {
				left = q.until.Sub(now)
			}
			return engine.MultiGrant{Blocked: i, Grant: engine.Grant{HolderTTL: left, Reserved: true}}, nil
		}
		token, err := e.next(r.Name, now, r.TokenProposal)
		if err != nil {
			return engine.MultiGrant{}, err
		}
		tokens[i] = token
	}
	for i, r := range rs {
		e.record(r.Name).mutex = &lock{owner: r.Owner, count: 1, token: e.mint(r.Name, tokens[i], now),
			metadata: r.Metadata, attempt: r.Attempt, expires: now.Add(r.TTL)}
	}
	return engine.MultiGrant{Acquired: true, Tokens: tokens}, nil
}
