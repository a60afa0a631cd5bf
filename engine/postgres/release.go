package postgres

import (
	"context"
	"errors"

	"github.com/distlock/distlock/engine"
)

// errShortReply: the database answered fewer results than requests.
var errShortReply = errors.New("postgres: no result for the request")

// releaseMutex is Release for a mutex: one call of the schema's release
// function. The last hold frees the lock and, when anyone waits, wakes the
// head of the queue (NOTIFY, sent when the call commits). A release that
// names a token (ReleaseRequest.Token) other than the owner's hold's is
// answered NotOwner and drops nothing (schema version 12).
func (e *Engine) releaseMutex(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	return e.releaseOnceMutex(ctx, r, "")
}

// releaseOnceMutex is ReleaseOnce for a mutex: a second release with the
// same non-empty id (a resent copy) drops no second hold.
func (e *Engine) releaseOnceMutex(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := e.check(); err != nil {
		return engine.ReleaseResult{}, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner, "release id", id); err != nil {
		return engine.ReleaseResult{}, err
	}
	var status, remaining int32
	err := e.v11.call(func() error {
		return e.pool.QueryRow(ctx, e.sql.release, r.Name, r.Owner, id, grantToken(r.Token)).Scan(&status, &remaining)
	}, func() error {
		return e.pool.QueryRow(ctx, e.sql.releaseV11, r.Name, r.Owner, id).Scan(&status, &remaining)
	})
	if err != nil {
		return engine.ReleaseResult{}, e.wrap(err)
	}
	return engine.ReleaseResult{Status: engine.ReleaseStatus(status), Remaining: int(remaining)}, nil
}

// ForceRelease implements engine.ForceReleaser: it frees the lock whoever
// holds it, a mutex or every holder of a shared lock, and wakes its
// waiters. It reports whether the lock was held. Every holder freed is
// told HeldByOther at its next renewal (schema.sql: _mark_taken, _taken).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	return e.forceRelease(ctx, name, "")
}

// ForceReleaseHolder implements engine.HolderReleaser: as ForceRelease,
// but only owner's hold is freed (the mutex only when owner holds it).
// The owner "" holds nothing: false, nothing sent (the functions take an empty owner
// for every holder, ForceRelease's call).
func (e *Engine) ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error) {
	if owner == "" {
		if err := e.check(); err != nil {
			return false, err
		}
		return false, checkText("name", name)
	}
	return e.forceRelease(ctx, name, owner)
}

// forceRelease frees name's mutex, or its shared holders, or only owner's
// hold when owner is not "": one call of force_release, and of
// force_release_shared when the mutex was not held (by owner).
func (e *Engine) forceRelease(ctx context.Context, name, owner string) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	if err := checkTexts("name", name, "owner", owner); err != nil {
		return false, err
	}
	var held bool
	if err := e.pool.QueryRow(ctx, e.sql.forceRelease, name, owner).Scan(&held); err != nil {
		return false, e.wrap(err)
	}
	if held {
		return true, nil
	}
	return e.forceShared(ctx, name, owner)
}

// Leave implements engine.Queuer: every kind, dispatched once on r.Kind
// (engine.LeaveByKind), one function call each: leave for a mutex's
// waiter, leave_shared for a shared lock's. The waiter leaves the queue;
// when it was the head of a free lock (or its weight now fits), the next
// head is woken.
func (e *Engine) Leave(ctx context.Context, r engine.LeaveRequest) error {
	return engine.LeaveByKind(ctx, r, e.leaveBy(e.sql.leave), e.leaveBy(e.sql.leaveShared))
}

// leaveBy is Leave's path that calls statement (leave or leave_shared).
func (e *Engine) leaveBy(statement string) func(context.Context, engine.LeaveRequest) error {
	return func(ctx context.Context, r engine.LeaveRequest) error {
		if err := e.check(); err != nil {
			return err
		}
		if err := checkTexts("name", r.Name, "waiter", r.Waiter); err != nil {
			return err
		}
		var was bool
		if err := e.pool.QueryRow(ctx, statement, r.Name, r.Waiter).Scan(&was); err != nil {
			return e.wrap(err)
		}
		return nil
	}
}
