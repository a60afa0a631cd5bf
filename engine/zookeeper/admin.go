package zookeeper

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// ForceRelease implements engine.ForceReleaser (of a shared lock, every
// holder is freed, each with its mark): the holder's child is
// deleted (which wakes the waiter behind it), after a mark for the holder
// is left, so that its next renewal answers HeldByOther. The mark is a
// persistent child (markPrefix + the owner's tag) with the freed lease's
// expiry: it outlives the engine that left it (the CLI's force-release
// exits at once, before the freed holder's next renewal). The holder's
// renewal that reads it deletes it (or, past that expiry, ignores and
// deletes it); one never read is deleted by the first reading of the line
// past that expiry (sweep), so marks do not pile up. Expired holders'
// children the reading finds are deleted first, as every reading does.
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.force(ctx, name, func(string) bool { return true })
}

// ForceReleaseHolder implements engine.HolderReleaser: ForceRelease, when
// owner holds the mutex; of a shared lock, owner's permits alone.
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	return e.force(ctx, name, func(o string) bool { return o == owner })
}

// forced returns the live holders a force-release frees: the mutex's
// holder, or every holder of a shared lock, that which accepts.
func (l *line) forced(now int64, which func(owner string) bool) []child {
	holders, _ := l.shared(now)
	if h, ok := l.holder(now); ok {
		holders = []child{h}
	}
	var freed []child
	for _, c := range holders {
		if which(c.d.Owner) {
			freed = append(freed, c)
		}
	}
	return freed
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
		at := max(now, l.now)
		if _, expired := l.waiters(at); len(expired) > 0 || len(l.expiredMarks(at)) > 0 {
			if err := e.sweep(ctx, &l, expired, l.expiredMarks(at)); err != nil {
				return false, err
			}
			continue
		}
		freed := l.forced(at, which)
		if len(freed) == 0 {
			return false, nil
		}
		var ops []any
		for _, c := range freed {
			mark, _ := json.Marshal(c.expiry())
			markPath := l.path + "/" + markPrefix + tag(c.d.Owner)
			_ = e.del(ctx, markPath, -1) // an earlier mark of the same owner
			// Persistent: it must outlive this engine (see ForceRelease).
			ops = append(ops, &zk.CreateRequest{Path: markPath, Data: mark, Acl: zk.WorldACL(zk.PermAll)},
				&zk.DeleteRequest{Path: c.path, Version: c.st.Version})
		}
		_, err = e.multi(ctx, append(ops, &zk.SetDataRequest{Path: l.path, Data: event{Kind: evReleased}.encode(), Version: -1})...)
		if changedMeanwhile(err) { // a holder renewed or gone, a mark made meanwhile
			continue
		}
		if err != nil {
			return false, err
		}
		for _, c := range freed {
			e.dropHolding(key{name, c.d.Owner})
		}
		return true, nil
	}
	return false, conflict("force-release", name)
}

// SetMetadata implements engine.MetadataSetter: the holder's child gets
// the new metadata and keeps its expiry (the base of its ttl is written
// out, as the write moves the child's mtime). The change wakes the
// name's subscribers (their watch of the holder's data). A call that found
// no connection, or whose connection broke, is sent again once the
// session is back (until ctx ends), as CountDown's: a member restarting
// under a leader's Proclaim is not its failure, and the value written is
// the same on every try. A request naming a grant's token (r.Token, not 0:
// an election's term) sets the metadata of that grant only: the holder
// child's czxid is compared with it (ofGrant), and the write is made at
// the version of the child read, so a newer grant of the owner (another
// child) answers HeldByOther and changes nothing.
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	return resent(ctx, func() (engine.ExtendStatus, error) { return e.setMetadata(ctx, r) })
}

// setMetadata is one try of SetMetadata.
func (e *Engine) setMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	name := r.Name
	for range maxConflicts {
		l, err := e.read(ctx, name)
		if err != nil {
			return 0, err
		}
		c, ok := l.heldBy(r.Owner, l.now)
		if ok && !ofKind(c, engine.Mutex) {
			// An election's metadata is a mutex's (the contract's, and
			// the other engines'): a shared holder's is left alone.
			return engine.Missing, nil
		}
		if !ok {
			return e.lostTo(ctx, &l, r.Owner), nil
		}
		if !ofGrant(c, r.Token) {
			return engine.HeldByOther, nil // a newer grant of the owner
		}
		d := c.d
		d.Metadata = r.Metadata
		d.Base = c.expiry() - d.TTL
		ops := []any{&zk.SetDataRequest{Path: c.path, Data: d.encode(), Version: c.st.Version},
			&zk.SetDataRequest{Path: l.path, Data: event{Kind: evMetadata}.encode(), Version: -1}}
		// The line's reading (l.now) is the newest mtime it saw, which a
		// stalled ensemble leaves behind: the write's own mtime tells
		// whether the hold had expired when it was applied, even after
		// the caller gave up (doSettled).
		res, err := doSettled(ctx, e, "multi", func() ([]zk.MultiResponse, error) { return e.conn.Multi(ops...) },
			func(res []zk.MultiResponse, err error) {
				if err == nil && len(res) > 0 {
					e.freeExpired(c, res[0].Stat)
				}
			})
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if len(res) > 0 && e.freeExpired(c, res[0].Stat) {
			e.dropHolding(key{name, r.Owner})
			return engine.Missing, nil // expired before this write: not the leader's value
		}
		return engine.Extended, nil
	}
	return 0, conflict("set metadata", name)
}
