package zookeeper

import (
	"context"
	"errors"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// Release implements engine.Engine: one hold fewer, and the child deleted
// with the last one (which wakes the waiter that watches it).
func (e *Engine) Release(ctx context.Context, name, owner string) (engine.ReleaseResult, error) {
	return e.release(ctx, name, owner, "")
}

// ReleaseOnce implements engine.OnceReleaser: the child remembers the ids
// of its latest releases, and a copy of one drops no second hold.
func (e *Engine) ReleaseOnce(ctx context.Context, name, owner, id string) (engine.ReleaseResult, error) {
	return e.release(ctx, name, owner, id)
}

func (e *Engine) release(ctx context.Context, name, owner, id string) (engine.ReleaseResult, error) {
	if err := e.check(ctx); err != nil {
		return engine.ReleaseResult{}, err
	}
	if c, ok := e.holding(key{name, owner}); ok && c.d.Count == 1 {
		// The fast path: one multi-op at the version this engine wrote.
		err := e.free(ctx, c)
		if err == nil {
			e.dropHolding(key{name, owner})
			return engine.ReleaseResult{Status: engine.Released}, nil
		}
		if !verdict(err) {
			return engine.ReleaseResult{}, err
		}
	}
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return engine.ReleaseResult{}, err
		}
		c, ok := l.heldBy(owner)
		if !ok {
			e.dropHolding(key{name, owner})
			if _, held := l.holder(l.now); held {
				return engine.ReleaseResult{Status: engine.NotOwner}, nil
			}
			return engine.ReleaseResult{Status: engine.NotHeld}, nil
		}
		if id != "" && slices.Contains(c.d.Releases, id) {
			return engine.ReleaseResult{Status: engine.Released, Remaining: c.d.Count}, nil
		}
		if c.d.Count <= 1 {
			err = e.free(ctx, c)
		} else {
			d := c.d
			d.Count--
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
			return engine.ReleaseResult{}, err
		}
		if c.d.Count <= 1 {
			e.dropHolding(key{name, owner})
		}
		return engine.ReleaseResult{Status: engine.Released, Remaining: max(c.d.Count-1, 0)}, nil
	}
	return engine.ReleaseResult{}, conflict("release", name)
}
