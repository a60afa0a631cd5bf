package zookeeper

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// ForceRelease implements engine.ForceReleaser: the holder's child is
// deleted (which wakes the waiter behind it), after a mark for the holder
// is left, so that its next renewal answers HeldByOther. The mark is an
// ephemeral child (markPrefix + the owner's tag) with the freed lease's
// expiry; the holder's renewal that reads it deletes it (or, past that
// expiry, ignores and deletes it); one never read goes with the session of
// the engine that left it.
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.force(ctx, name, func(string) bool { return true })
}

// ForceReleaseHolder implements engine.HolderReleaser: ForceRelease, when
// owner holds the mutex.
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	return e.force(ctx, name, func(o string) bool { return o == owner })
}

func (e *Engine) force(ctx context.Context, name string, which func(owner string) bool) (bool, error) {
	if err := e.check(ctx); err != nil {
		return false, err
	}
	now, err := e.clock(ctx)
	if err != nil {
		return false, err
	}
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return false, err
		}
		live, _ := l.live(max(now, l.now))
		if len(live) == 0 || !live[0].d.Held || !which(live[0].d.Owner) {
			return false, nil
		}
		c := live[0]
		mark, _ := json.Marshal(c.expiry())
		_, err = do(ctx, e, "create", func() (string, error) {
			return e.conn.Create(l.path+"/"+markPrefix+tag(c.d.Owner), mark, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		})
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return false, err
		}
		err = e.del(ctx, c.path, c.st.Version)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		e.dropHolding(key{name, c.d.Owner})
		return true, nil
	}
	return false, conflict("force-release", name)
}

// SetMetadata implements engine.MetadataSetter: the holder's child gets
// the new metadata and keeps its expiry (the base of its ttl is written
// out, as the write moves the child's mtime). The change wakes the
// name's subscribers (their watch of the holder's data).
func (e *Engine) SetMetadata(ctx context.Context, name, owner, metadata string) (engine.ExtendStatus, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return 0, err
		}
		c, ok := l.holder(owner)
		if !ok {
			return e.lostTo(ctx, &l, owner, false), nil
		}
		d := c.d
		d.Metadata = metadata
		d.Base = c.expiry() - d.TTL
		_, err = e.set(ctx, c.path, d.encode(), c.st.Version)
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return engine.Extended, nil
	}
	return 0, conflict("set metadata", name)
}
