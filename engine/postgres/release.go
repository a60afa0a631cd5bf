package postgres

import (
	"context"
	"errors"

	"github.com/distlock/distlock/engine"
)

// errShortReply: the database answered fewer results than requests.
var errShortReply = errors.New("postgres: no result for the request")

// Release implements engine.Engine: one call of the schema's release
// function. The last hold frees the lock and, when anyone waits, wakes the
// head of the queue (NOTIFY, sent when the call commits).
func (e *Engine) Release(ctx context.Context, name, owner string) (engine.ReleaseResult, error) {
	return e.ReleaseOnce(ctx, name, owner, "")
}

// ReleaseOnce implements engine.OnceReleaser: a second release with the
// same non-empty id (a resent copy) drops no second hold.
func (e *Engine) ReleaseOnce(ctx context.Context, name, owner, id string) (engine.ReleaseResult, error) {
	if err := e.check(); err != nil {
		return engine.ReleaseResult{}, err
	}
	if err := checkTexts("name", name, "owner", owner, "release id", id); err != nil {
		return engine.ReleaseResult{}, err
	}
	var status, remaining int32
	if err := e.pool.QueryRow(ctx, e.sql.release, name, owner, id).Scan(&status, &remaining); err != nil {
		return engine.ReleaseResult{}, e.wrap(err)
	}
	return engine.ReleaseResult{Status: engine.ReleaseStatus(status), Remaining: int(remaining)}, nil
}

// ForceRelease implements engine.ForceReleaser: it frees the lock whoever
// holds it, a mutex or every holder of a shared lock, and wakes its
// waiters. It reports whether the lock was held. A shared lock's holders
// are told HeldByOther at their next renewal (extend_shared_taken).
func (e *Engine) ForceRelease(ctx context.Context, name string) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	if err := checkText("name", name); err != nil {
		return false, err
	}
	var held bool
	if err := e.pool.QueryRow(ctx, e.sql.forceRelease, name).Scan(&held); err != nil {
		return false, e.wrap(err)
	}
	if held {
		return true, nil
	}
	return e.forceShared(ctx, name)
}

// Leave implements engine.Queuer: the waiter leaves the queue; when it was
// the head of a free lock, the next head is woken.
func (e *Engine) Leave(ctx context.Context, name, waiter string) error {
	if err := e.check(); err != nil {
		return err
	}
	if err := checkTexts("name", name, "waiter", waiter); err != nil {
		return err
	}
	var was bool
	if err := e.pool.QueryRow(ctx, e.sql.leave, name, waiter).Scan(&was); err != nil {
		return e.wrap(err)
	}
	return nil
}
