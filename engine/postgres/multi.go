package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/engine"
)

var (
	_ engine.MultiAcquirer = (*Engine)(nil)
	_ engine.MultiReleaser = (*Engine)(nil)
)

// AcquireMulti implements engine.MultiAcquirer: one call of the schema's
// acquire_multi function, all or nothing, each name's token drawn while
// the call holds every name's row (schema.sql). A name that holders of a
// shared lock hold is refused with engine.KindError's
// *engine.ArgumentError, having changed nothing. When the round trip
// fails without an answer from PostgreSQL (a connection cut after the
// call committed, say), the call is sent once more: acquire_multi
// recognises the names its first copy granted by their one-off owner, and
// answers them granted with their tokens. A schema of version 4 or before
// (no acquire_multi) is engine.ErrNotAtomic: the Client takes the names
// one by one until Migrate runs.
func (e *Engine) AcquireMulti(ctx context.Context, rs []engine.AcquireRequest) (engine.MultiGrant, error) {
	if err := e.check(); err != nil {
		return engine.MultiGrant{}, err
	}
	if err := engine.CheckSet(rs); err != nil {
		return engine.MultiGrant{}, err
	}
	if len(rs) == 0 {
		return engine.MultiGrant{Acquired: true}, nil
	}
	n := len(rs)
	names, owners, metadata, attempts := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ttls := make([]int64, n)
	for i, r := range rs {
		if err := checkTexts("name", r.Name, "owner", r.Owner, "metadata", r.Metadata, "attempt", r.Attempt); err != nil {
			return engine.MultiGrant{}, err
		}
		names[i], owners[i], metadata[i], attempts[i], ttls[i] = r.Name, r.Owner, r.Metadata, r.Attempt, micros(r.TTL)
	}
	return resent(ctx, e, func() (engine.MultiGrant, error) {
		return e.acquireMulti(ctx, names, owners, ttls, metadata, attempts)
	})
}

// acquireMulti is one call of acquire_multi.
func (e *Engine) acquireMulti(ctx context.Context, names, owners []string, ttls []int64, metadata, attempts []string) (engine.MultiGrant, error) {
	var (
		mg      engine.MultiGrant
		tokens  []int64
		blocked int32
		ttlUS   int64
	)
	err := e.pool.QueryRow(ctx, e.sql.acquireMulti, names, owners, ttls, metadata, attempts).
		Scan(&mg.Acquired, &tokens, &blocked, &mg.Grant.Holder, &ttlUS, &mg.Grant.Reserved)
	if err != nil {
		return engine.MultiGrant{}, e.multiError(err, names)
	}
	if mg.Acquired {
		if len(tokens) != len(names) {
			return engine.MultiGrant{}, fmt.Errorf("postgres: acquire set: %d tokens for %d names", len(tokens), len(names))
		}
		mg.Tokens = make([]uint64, len(tokens))
		for i, t := range tokens {
			mg.Tokens[i] = uint64(t)
		}
		return mg, nil
	}
	mg.Blocked = int(blocked)
	mg.Grant.HolderTTL = time.Duration(ttlUS) * time.Microsecond
	return mg, nil
}

// multiError is the error of a set's call: a shared lock's refusal of
// the request its DETAIL numbers, as Acquire gives it; a schema without
// the set's functions (before version 5) engine.ErrNotAtomic; else wrap's.
func (e *Engine) multiError(err error, names []string) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "DL001" {
		if i, aerr := strconv.Atoi(pe.Detail); aerr == nil && i >= 1 && i <= len(names) {
			return e.sharedError(err, names[i-1], 0, 0, 0)
		}
	}
	if undefinedFunction(err) {
		return fmt.Errorf("%w: the schema has no set functions (migrate it to version %d): %w", engine.ErrNotAtomic, SchemaVersion, e.wrap(err))
	}
	return e.wrap(err)
}

// resent runs call, and runs it once more when its round trip failed
// without an answer from PostgreSQL (unanswered) while ctx is live and e
// open: the first copy may have been applied, its reply lost. It is for
// calls whose copy sent again is applied once: acquire_multi recognises
// the names its first copy granted by their one-off owner and attempt,
// latch_count_down a call id among the last 16 applied. The second
// copy's answer or error is the call's.
func resent[T any](ctx context.Context, e *Engine, call func() (T, error)) (T, error) {
	v, err := call()
	if err == nil || !unanswered(ctx, err) || e.check() != nil {
		return v, err
	}
	return call()
}

// unanswered reports whether err is a round trip that failed without an
// answer from PostgreSQL, while ctx is live: the call may or may not
// have been applied.
func unanswered(ctx context.Context, err error) bool {
	var pe *pgconn.PgError
	return ctx.Err() == nil && !errors.As(err, &pe)
}

// ReleaseMulti implements engine.MultiReleaser: one call of the schema's
// release_multi function, each request released as Release releases it,
// its grant token included: a request whose Token is not 0 and not the
// owner's hold's (a newer grant of the same owner, after a
// force-release) is answered NotOwner and drops nothing (schema version
// 19). On a schema before version 19 (whose release_multi takes no
// tokens) or before version 5 (none at all) the requests are released
// one call each, as Release does, tokens included (from version 12).
// A name the owner no longer holds because a force-release freed it is
// answered NotOwner, as Release answers (_taken, for those names only).
func (e *Engine) ReleaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	out, err := e.releaseMulti(ctx, rs)
	if err != nil {
		return nil, err
	}
	for i, r := range out {
		if r.Status != engine.NotHeld {
			continue
		}
		if out[i], err = e.unlessTaken(ctx, rs[i].Name, rs[i].Owner, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// releaseMulti is ReleaseMulti before the taken-over marks are read: one
// call of release_multi with the tokens, or (Engine.v18) the requests one
// by one.
func (e *Engine) releaseMulti(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if err := engine.CheckReleaseSet(rs); err != nil {
		return nil, err
	}
	n := len(rs)
	names, owners, tokens := make([]string, n), make([]string, n), make([]int64, n)
	for i, r := range rs {
		if err := checkTexts("name", r.Name, "owner", r.Owner); err != nil {
			return nil, err
		}
		names[i], owners[i], tokens[i] = r.Name, r.Owner, grantToken(r.Token)
	}
	if n == 0 {
		return nil, nil
	}
	var out []engine.ReleaseResult
	err := e.v18.call(func() (err error) {
		out, err = e.releaseSetCall(ctx, names, owners, tokens)
		return err
	}, func() (err error) {
		out, err = e.releaseOneByOne(ctx, rs)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// releaseSetCall is one call of release_multi (version 19's, with the
// tokens): the results in the order of the requests.
func (e *Engine) releaseSetCall(ctx context.Context, names, owners []string, tokens []int64) ([]engine.ReleaseResult, error) {
	rows, err := e.pool.Query(ctx, e.sql.releaseMulti, names, owners, tokens)
	if err != nil {
		return nil, e.wrap(err)
	}
	defer rows.Close()
	out := make([]engine.ReleaseResult, len(names))
	n := 0
	for rows.Next() {
		var i, status, remaining int32
		if err := rows.Scan(&i, &status, &remaining); err != nil {
			return nil, e.wrap(err)
		}
		if i < 1 || int(i) > len(names) {
			return nil, errShortReply
		}
		out[i-1] = engine.ReleaseResult{Status: engine.ReleaseStatus(status), Remaining: int(remaining)}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, e.wrap(err)
	}
	if n != len(names) {
		return nil, errShortReply
	}
	return out, nil
}

// releaseOneByOne releases the requests one call each, as Release does
// (its token checked from schema version 12): the path of a schema
// without version 19's release_multi. An error stops it; the releases
// made stay made (each is safe to send again).
func (e *Engine) releaseOneByOne(ctx context.Context, rs []engine.ReleaseRequest) ([]engine.ReleaseResult, error) {
	out := make([]engine.ReleaseResult, len(rs))
	for i, r := range rs {
		res, err := e.releaseMutex(ctx, r)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}
