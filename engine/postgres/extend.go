package postgres

import (
	"context"
	"time"

	"github.com/distlock/distlock/engine"
)

// Extend implements engine.Engine: every lease renewal and waiter
// heartbeat of the batch, of mutexes and of shared locks
// (a shared ExtendRequest.Kind), in one statement: a call of the schema's extend
// function, of extend_shared, or of both joined by UNION ALL; one round
// trip. Either tells the holders a force-release freed that they were
// taken over (HeldByOther). The rows are locked in name order (the mutexes' first, then the
// shared locks'), so concurrent batches never deadlock. A renewal that
// names a token (ExtendRequest.Token) other than the owner's hold's is
// answered HeldByOther with the hold's token and changes nothing (schema
// version 12; on an older schema, not checked: Engine.v11).
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	out := make([]engine.ExtendResult, len(rs))
	var mutex, shared extendBatch
	for i, r := range rs {
		if err := checkTexts("name", r.Name, "owner", r.Owner); err != nil {
			out[i].Err = err
			continue
		}
		if r.Kind.Shared() {
			shared.add(i, r)
		} else {
			mutex.add(i, r)
		}
	}
	var index []int // batch position -> request: the mutexes', then the shared locks'
	switch {
	case len(mutex.names) == 0 && len(shared.names) == 0:
		return out, nil
	case len(shared.names) == 0:
		index = mutex.index
	case len(mutex.names) == 0:
		index = shared.index
	default:
		index = append(mutex.index, shared.index...)
	}
	seen := 0
	query := func(sql string, args []any) error {
		rows, err := e.pool.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		seen = 0
		for rows.Next() {
			var (
				i, status int32
				token     int64
				wake      bool
			)
			if err := rows.Scan(&i, &status, &token, &wake); err != nil {
				return err
			}
			if i < 1 || int(i) > len(index) {
				continue
			}
			out[index[i-1]] = engine.ExtendResult{Status: engine.ExtendStatus(status), Token: uint64(token), Wake: wake}
			seen++
		}
		return rows.Err()
	}
	err := e.v11.call(func() error {
		return query(e.extendStatement(&mutex, &shared))
	}, func() error {
		return query(e.extendStatementV11(&mutex, &shared))
	})
	if err != nil {
		return nil, e.wrap(err)
	}
	if seen != len(index) {
		for _, j := range index {
			if out[j].Status == 0 && out[j].Err == nil {
				out[j].Err = errShortReply
			}
		}
	}
	return out, nil
}

// extendStatement is the statement and arguments of one Extend: the
// mutexes' function, the shared locks', or both in one statement.
func (e *Engine) extendStatement(mutex, shared *extendBatch) (string, []any) {
	return extendCall(mutex, shared, e.sql.extend, e.sql.extendShared, e.sql.extendBoth, (*extendBatch).args)
}

// extendStatementV11 is extendStatement with the functions of schema
// version 11 (no grant tokens).
func (e *Engine) extendStatementV11(mutex, shared *extendBatch) (string, []any) {
	return extendCall(mutex, shared, e.sql.extendV11, e.sql.extendSharedV11, e.sql.extendBothV11, (*extendBatch).argsV11)
}

// extendCall is the statement and arguments of one Extend, given the
// statements that call the mutexes' function (mutexes), the shared
// locks' (shareds) and both (both), and the arguments of a function's
// call (args).
func extendCall(mutex, shared *extendBatch, mutexes, shareds, both string, args func(*extendBatch) []any) (string, []any) {
	switch {
	case len(shared.names) == 0:
		return mutexes, args(mutex)
	case len(mutex.names) == 0:
		return shareds, args(shared)
	}
	return both, append(args(mutex), args(shared)...)
}

// extendBatch is the arrays of one extend function's call.
type extendBatch struct {
	names, owners []string
	ttls          []int64
	waiter        []bool
	tokens        []int64 // the grants' (0: the owner's hold, whatever its token)
	index         []int   // position -> request
}

func (b *extendBatch) add(i int, r engine.ExtendRequest) {
	b.names, b.owners = append(b.names, r.Name), append(b.owners, r.Owner)
	b.ttls, b.waiter = append(b.ttls, micros(r.TTL)), append(b.waiter, r.Waiter)
	b.tokens = append(b.tokens, grantToken(r.Token))
	b.index = append(b.index, i)
}

// args are the function's arguments.
func (b *extendBatch) args() []any {
	return []any{b.names, b.owners, b.ttls, b.waiter, b.tokens}
}

// argsV11 are the arguments of schema version 11's function: args without
// the tokens.
func (b *extendBatch) argsV11() []any {
	return []any{b.names, b.owners, b.ttls, b.waiter}
}

// grantToken is a grant's token as the functions take it (bigint): one
// above 2^63-1, which no grant has, is -1, which no hold has either.
func grantToken(t uint64) int64 {
	if t > 1<<63-1 {
		return -1
	}
	return int64(t)
}

// v11Recheck is how long an engine that met a schema before version 12
// calls version 11's signatures (without the tokens) before it tries the
// current ones again: a Migrate meanwhile turns the check on without a
// restart.
const v11Recheck = time.Minute

// v13Recheck is v11Recheck for a schema before version 14: how long an
// engine that met one calls version 13's release_shared (without the kind)
// before it tries the current one again.
const v13Recheck = time.Minute

// v15Recheck is v11Recheck for a schema before version 16: how long an
// engine that met one calls version 15's set_metadata (without the grant's
// token) before it tries the current one again.
const v15Recheck = time.Minute

// v18Recheck is v11Recheck for a schema before version 19: how long an
// engine releases a set's names one call each before it tries version
// 19's release_multi again.
const v18Recheck = time.Minute

// v19Recheck is v11Recheck for a schema before version 20: how long an
// engine answers a shared lock's ReleaseOnce unsupported before it tries
// version 20's release_shared again.
const v19Recheck = time.Minute
