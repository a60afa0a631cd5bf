package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/distlock/distlock/engine"
)

// A countdown latch (engine.Latcher) is the persistent child
// latchPrefix+PathEscape(name) of the root, beside the lock's container,
// holding its count and the id of the last CountDown. Each CountDown
// rewrites it at the version read; the one that brings it to zero deletes
// it, which fires the watch every Subscribe of the name keeps on it: its
// waiters are woken by that notification, not by polling.
const latchPrefix = "c-"

// latchRecord is a latch's count, the ids of its last CountDowns and the
// mark of the SetCount that made it.
type latchRecord struct {
	Count int64 `json:"n"`
	// LastID is the last CountDown's id (what engines before IDs read).
	LastID string `json:"id,omitempty"`
	// IDs are the last latchIDs CountDowns' ids: a call sent again after
	// its answer was lost finds its own there, even after others counted.
	IDs []string `json:"ids,omitempty"`
	// Set is the mark of the SetCount call that made the latch: one sent
	// again after its answer was lost finds the latch its own.
	Set string `json:"s,omitempty"`
}

// counted reports whether the CountDown id was applied to rec.
func (rec latchRecord) counted(id string) bool {
	return id != "" && (id == rec.LastID || slices.Contains(rec.IDs, id))
}

// latchIDs is how many CountDown ids a latch remembers (as etcd's).
const latchIDs = 16

// lostConnection reports whether a request that failed with err is sent
// again: it never left (no server), the member ignored it (the session
// moved) or the connection broke before its answer (it may have been
// applied: each latch write is recognised when sent again).
func lostConnection(err error) bool {
	return errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrConnectionClosed)
}

// latchPath returns the path of name's latch.
func (e *Engine) latchPath(name string) string {
	return e.root + "/" + latchPrefix + url.PathEscape(name)
}

// SetCount implements engine.Latcher: the latch is created with count,
// unless it exists. A count below 1 is an *engine.ArgumentError, and
// nothing changes. A creation whose connection broke is sent again (until
// ctx ends) once the connection is back; the latch then found is this
// call's when it carries the call's mark.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	if err := e.check(ctx); err != nil {
		return false, err
	}
	if err := engine.CheckLatchCount(count); err != nil {
		return false, err
	}
	var m [12]byte
	_, _ = rand.Read(m[:])
	mark := hex.EncodeToString(m[:])
	b, _ := json.Marshal(latchRecord{Count: count, Set: mark})
	lost := false
	for {
		set, err := e.createRecord(ctx, e.latchPath(name), b)
		switch {
		case err == nil && !set && lost:
			rec, _, err := e.readLatchCurrent(ctx, name)
			return err == nil && rec.Set == mark, err
		case err == nil:
			return set, nil
		case !lostConnection(err) || !pause(ctx):
			return false, err
		}
		lost = lost || errors.Is(err, zk.ErrConnectionClosed)
	}
}

// CountDown implements engine.Latcher: one write at the version read (the
// deletion at zero), read again when another CountDown came between. A
// call whose connection broke is sent again (until ctx ends) once the
// connection is back: it reads the latch again and finds its id among the
// last applied (or the latch gone at zero) when its write took effect.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	return resent(ctx, func() (int64, error) { return e.countDown(ctx, name, id) })
}

// resent runs try, and again every reconnectPause while it fails on a lost
// connection (lostConnection), until ctx ends: for a call that is harmless
// to send again.
func resent[T any](ctx context.Context, try func() (T, error)) (T, error) {
	for {
		v, err := try()
		if err == nil || !lostConnection(err) || !pause(ctx) {
			return v, err
		}
	}
}

// countDown is one try of CountDown.
func (e *Engine) countDown(ctx context.Context, name, id string) (int64, error) {
	path := e.latchPath(name)
	for range maxConflicts {
		rec, version, err := e.readLatchForWrite(ctx, name)
		switch {
		case err != nil:
			return 0, err
		case rec.Count <= 0:
			return 0, nil
		case rec.counted(id):
			return rec.Count, nil // a resent copy
		}
		rec.Count--
		if id != "" {
			rec.LastID = id
			rec.IDs = append(rec.IDs, id)
			rec.IDs = rec.IDs[max(0, len(rec.IDs)-latchIDs):]
		}
		if rec.Count == 0 {
			err = e.del(ctx, path, version)
		} else {
			b, _ := json.Marshal(rec)
			_, err = e.set(ctx, path, b, version)
		}
		if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		return rec.Count, err
	}
	return 0, conflict("count down", name)
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	if err := e.check(ctx); err != nil {
		return 0, err
	}
	rec, _, err := e.readLatchCurrent(ctx, name)
	return rec.Count, err
}

// readLatchCurrent reads name's latch and its version (a zero count:
// none) once the session's member is up to date (catchUp): a member may
// serve a read from before a write another session saw answered, and
// Count must be current.
func (e *Engine) readLatchCurrent(ctx context.Context, name string) (latchRecord, int32, error) {
	if err := e.catchUp(ctx); err != nil {
		return latchRecord{}, 0, err
	}
	rec, version, err := e.getLatch(ctx, name)
	return rec, version, ignoreNoNode(err)
}

// readLatchForWrite reads name's latch and its version (a zero count:
// none) for a write at that version. It does not catch up with the leader
// first: a stale count is caught by the write at its version. Only a
// latch found missing is read again after catching up (readLatchCurrent):
// a CountDown after a SetCount elsewhere must count. Before, a CountDown
// on a lagging member found the latch just set missing and counted
// nothing.
func (e *Engine) readLatchForWrite(ctx context.Context, name string) (latchRecord, int32, error) {
	rec, version, err := e.getLatch(ctx, name)
	if errors.Is(err, zk.ErrNoNode) {
		return e.readLatchCurrent(ctx, name)
	}
	return rec, version, err
}

// getLatch reads name's latch and its version as the session's member has
// it (zk.ErrNoNode: none).
func (e *Engine) getLatch(ctx context.Context, name string) (latchRecord, int32, error) {
	var rec latchRecord
	b, st, err := e.get(ctx, e.latchPath(name))
	if err != nil {
		return rec, 0, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, 0, backendErr("read latch "+name, err)
	}
	return rec, st.Version, nil
}

// watchLatch watches name's latch: its creation, a CountDown and its
// deletion at zero.
func (e *Engine) watchLatch(ctx context.Context, name string) (<-chan zk.Event, error) {
	return do(ctx, e, "watch", func() (<-chan zk.Event, error) {
		_, _, ch, err := e.conn.ExistsW(e.latchPath(name))
		return ch, err
	})
}

// spent reports whether a watch fired (the client library closes its
// channel after the event).
func spent(ch <-chan zk.Event) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
