package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/engine"
)

// Shared locks (engine.Sharer): semaphores and reader-writer locks, with
// the memory engine's semantics, in the tables shared (kind, limit,
// high-water per name), shared_holders (one row per holder: weight, holds,
// token, metadata, attempt, expires_at) and shared_waiters (the strict
// FIFO queue with weights). Each operation is one function call of
// schema.sql; Extend renews holders and heartbeats of shared locks in the
// same statement as the mutexes' (a shared ExtendRequest.Kind).
//
// The kinds are kept apart as on the memory engine: a mutex is refused
// while a shared lock's holders hold the name, a shared lock while a mutex
// holds it (both grants hold the name's row of locks when they check).

// acquireShared is Acquire for a shared kind: one call of acquire_shared.
func (e *Engine) acquireShared(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	if err := e.check(); err != nil {
		return engine.Grant{}, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner, "metadata", r.Metadata, "attempt", r.Attempt, "waiter", r.Waiter); err != nil {
		return engine.Grant{}, err
	}
	var (
		g       engine.Grant
		token   int64
		holds   int32
		ttlUS   int64
		acquire bool
		waitTTL int64
	)
	if r.Waiter != "" {
		waitTTL = micros(r.WaiterTTL)
	}
	err := e.pool.QueryRow(ctx, e.sql.acquireShared, r.Name, r.Owner, micros(r.TTL), r.Metadata, r.Attempt,
		r.Waiter, waitTTL, int32(r.Kind), int32(r.Limit), int32(r.Weight)).
		Scan(&acquire, &token, &holds, &g.Holder, &ttlUS, &g.Queued, &g.Head, &g.Reserved)
	if err != nil {
		return engine.Grant{}, e.sharedError(err, r.Name, r.Kind, r.Limit, r.Weight)
	}
	if acquire {
		return engine.Grant{Acquired: true, Token: uint64(token), Count: int(holds)}, nil
	}
	g.HolderTTL = time.Duration(ttlUS) * time.Microsecond
	return g, nil
}

// sharedError turns a function's refusal of a request of kind (0: a
// mutex) on name (SQLSTATE DL001, 'DISTLOCK ...', see acquire_shared and
// _mutex_check in schema.sql) into the error the memory engine returns for
// it: an *engine.ArgumentError, or engine.ErrUpgrade. Other errors are
// wrapped as every call's.
func (e *Engine) sharedError(err error, name string, kind engine.Kind, limit, weight int) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "DL001" {
		return e.wrap(err)
	}
	r := engine.AcquireRequest{Name: name, Kind: kind, Limit: limit, Weight: weight}
	if refusal := engine.SharedRefusal(pe.Message, r); refusal != nil {
		return refusal
	}
	if strings.HasPrefix(pe.Message, "DISTLOCK limit ") {
		// A schema before version 4 refuses a declared limit that
		// differs from the stored one: Migrate brings it up to date.
		return &SchemaError{Schema: e.schema, Err: err}
	}
	return err
}

// releaseShared is Release for a shared kind: one call of release_shared. The
// last hold's permits come back, and the head of the queue is woken
// (NOTIFY, sent when the call commits) if it fits. A release that names a
// token other than the holder's is answered NotOwner and drops nothing
// (schema version 12). A release whose kind is not the lock's, while the
// owner holds it, is refused with the error an acquire of that kind gets
// (engine.KindError) and drops nothing (schema version 14; on an older
// schema the kind is not checked).
func (e *Engine) releaseShared(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	if err := e.check(); err != nil {
		return engine.ReleaseResult{}, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner); err != nil {
		return engine.ReleaseResult{}, err
	}
	var status, remaining int32
	err := e.plainReleaseShared(ctx, r, &status, &remaining)
	if err != nil {
		return engine.ReleaseResult{}, e.sharedError(err, r.Name, r.Kind, 0, 0)
	}
	return engine.ReleaseResult{Status: engine.ReleaseStatus(status), Remaining: int(remaining)}, nil
}

// releaseOnceShared is ReleaseOnce for a shared kind: release_shared with
// the call's id (schema version 20), which records it with the count-down,
// so a copy with the same id drops no second hold. On a schema before
// version 20 (v19: for v19Recheck at a time) the answer is
// errNoSharedReleaseID, having sent nothing or run nothing, and the Client
// releases plainly.
func (e *Engine) releaseOnceShared(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if err := e.check(); err != nil {
		return engine.ReleaseResult{}, err
	}
	if err := checkTexts("name", r.Name, "owner", r.Owner, "release id", id); err != nil {
		return engine.ReleaseResult{}, err
	}
	var status, remaining int32
	err := e.v19.call(func() error {
		return e.pool.QueryRow(ctx, e.sql.releaseSharedOnce, r.Name, r.Owner, grantToken(r.Token), int32(r.Kind), id).Scan(&status, &remaining)
	}, func() error { return errNoSharedReleaseID })
	if errors.Is(err, errNoSharedReleaseID) {
		return engine.ReleaseResult{}, err
	}
	if err != nil {
		return engine.ReleaseResult{}, e.sharedError(err, r.Name, r.Kind, 0, 0)
	}
	return engine.ReleaseResult{Status: engine.ReleaseStatus(status), Remaining: int(remaining)}, nil
}

// errNoSharedReleaseID answers a shared lock's ReleaseOnce on a schema
// before version 20: its release_shared records no ids.
var errNoSharedReleaseID = fmt.Errorf("postgres: the schema's shared locks cannot release once (migrate it to version %d): %w", SchemaVersion, errors.ErrUnsupported)

// plainReleaseShared calls release_shared without an id, with the newest
// signature the schema has, scanning its answer into status and remaining.
func (e *Engine) plainReleaseShared(ctx context.Context, r engine.ReleaseRequest, status, remaining *int32) error {
	return e.v13.call(func() error {
		return e.pool.QueryRow(ctx, e.sql.releaseShared, r.Name, r.Owner, grantToken(r.Token), int32(r.Kind)).Scan(status, remaining)
	}, func() error {
		return e.v11.call(func() error {
			return e.pool.QueryRow(ctx, e.sql.releaseSharedV13, r.Name, r.Owner, grantToken(r.Token)).Scan(status, remaining)
		}, func() error {
			return e.pool.QueryRow(ctx, e.sql.releaseSharedV11, r.Name, r.Owner).Scan(status, remaining)
		})
	})
}

// inspectShared describes the shared lock name: a plain read, no locks.
// Kind and Limit are zero for a name that is no shared lock; Holders are
// in token order; HighWater is the name's last token (minted or raised).
func (e *Engine) inspectShared(ctx context.Context, name string) (engine.Info, error) {
	info, err := scanSharedInfo(name, e.pool.QueryRow(ctx, e.sql.inspectShared, name))
	if err != nil {
		return engine.Info{}, e.wrap(err)
	}
	return info, nil
}

// scanSharedInfo reads a shared lock's row (the inspectShared statement).
func scanSharedInfo(name string, row pgx.Row) (engine.Info, error) {
	var (
		kind, limit, waiters int32
		hw                   int64
		owners, metadata     []string
		weights, holds       []int32
		tokens, ttls         []int64
		ids                  []string
		us                   []int64
	)
	err := row.Scan(&kind, &limit, &hw, &waiters, &owners, &weights, &holds, &tokens, &ttls, &metadata, &ids, &us)
	if err != nil {
		return engine.Info{}, err
	}
	info := engine.Info{Name: name, Kind: engine.Kind(kind), Limit: int(limit), HighWater: uint64(hw), Waiters: int(waiters),
		Queue: queueList(ids, us)}
	for i := range owners {
		if i >= len(weights) || i >= len(holds) || i >= len(tokens) || i >= len(ttls) || i >= len(metadata) {
			return engine.Info{}, errShortReply
		}
		info.Holders = append(info.Holders, engine.Holder{Owner: owners[i], Count: int(holds[i]), Token: uint64(tokens[i]),
			TTL: time.Duration(ttls[i]) * time.Microsecond, Metadata: metadata[i], Weight: int(weights[i])})
		info.Token = max(info.Token, uint64(tokens[i]))
	}
	info.Held = len(info.Holders) > 0
	return info, nil
}

// SetLimit implements engine.Sharer: one call of set_limit.
func (e *Engine) SetLimit(ctx context.Context, name string, limit int) (int, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	if err := checkText("name", name); err != nil {
		return 0, err
	}
	if limit < 1 || limit > engine.RWPermits {
		return 0, &engine.ArgumentError{Arg: "limit", Reason: fmt.Sprintf("%d is not between 1 and %d", limit, engine.RWPermits-1)}
	}
	var prev int32
	if err := e.pool.QueryRow(ctx, e.sql.setLimit, name, int32(limit)).Scan(&prev); err != nil {
		return 0, e.sharedError(err, name, engine.Semaphore, limit, 0)
	}
	return int(prev), nil
}

var _ engine.Sharer = (*Engine)(nil)

// Acquire implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.AcquireByKind) to acquireMutex or acquireShared.
func (e *Engine) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	return engine.AcquireByKind(ctx, r, e.acquireMutex, e.acquireShared)
}

// Release implements engine.Engine: every kind of lock, dispatched once on
// r.Kind (engine.ReleaseByKind) to releaseMutex or releaseShared.
func (e *Engine) Release(ctx context.Context, r engine.ReleaseRequest) (engine.ReleaseResult, error) {
	res, err := engine.ReleaseByKind(ctx, r, e.releaseMutex, e.releaseShared)
	if err != nil {
		return res, err
	}
	return e.unlessTaken(ctx, r.Name, r.Owner, res)
}

// unlessTaken turns a release's NotHeld into NotOwner when a force-release
// freed owner's hold of name and its lease has not ended (_taken): taken
// over, as a renewal is told. One statement, on that path only.
func (e *Engine) unlessTaken(ctx context.Context, name, owner string, res engine.ReleaseResult) (engine.ReleaseResult, error) {
	if res.Status != engine.NotHeld {
		return res, nil
	}
	var taken bool
	if err := e.pool.QueryRow(ctx, e.sql.taken, name, owner).Scan(&taken); err != nil {
		return engine.ReleaseResult{}, e.wrap(err)
	}
	if taken {
		res.Status = engine.NotOwner
	}
	return res, nil
}

// ReleaseOnce implements engine.OnceReleaser, every kind of lock,
// answering as Release does (a force-released hold is taken over:
// unlessTaken). On a schema before version 20 a shared kind's answer
// matches errors.ErrUnsupported (its release_shared records no ids).
func (e *Engine) ReleaseOnce(ctx context.Context, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	res, err := engine.ReleaseOnceByKind(ctx, r, id, e.releaseOnceMutex, e.releaseOnceShared)
	if err != nil {
		return res, err
	}
	return e.unlessTaken(ctx, r.Name, r.Owner, res)
}
