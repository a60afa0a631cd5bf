package postgres

import (
	"context"

	"github.com/distlock/distlock/engine"
)

// Extend implements engine.Engine: every lease renewal and waiter
// heartbeat of the batch, of mutexes and of shared locks
// (a shared ExtendRequest.Kind), in one statement: a call of the schema's extend
// function, of extend_shared, or of both joined by UNION ALL; one round
// trip. Either tells the holders a force-release freed that they were
// taken over (HeldByOther). The rows are locked in name order (the mutexes' first, then the
// shared locks'), so concurrent batches never deadlock.
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
	var (
		sql   string
		args  []any
		index []int // batch position -> request: the mutexes', then the shared locks'
	)
	switch {
	case len(mutex.names) == 0 && len(shared.names) == 0:
		return out, nil
	case len(shared.names) == 0:
		sql, args, index = e.sql.extend, mutex.args(), mutex.index
	case len(mutex.names) == 0:
		sql, args, index = e.sql.extendShared, shared.args(), shared.index
	default:
		sql, args = e.sql.extendBoth, append(mutex.args(), shared.args()...)
		index = append(mutex.index, shared.index...)
	}
	rows, err := e.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, e.wrap(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var (
			i, status int32
			token     int64
			wake      bool
		)
		if err := rows.Scan(&i, &status, &token, &wake); err != nil {
			return nil, e.wrap(err)
		}
		if i < 1 || int(i) > len(index) {
			continue
		}
		out[index[i-1]] = engine.ExtendResult{Status: engine.ExtendStatus(status), Token: uint64(token), Wake: wake}
		seen++
	}
	if err := rows.Err(); err != nil {
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

// extendBatch is the arrays of one extend function's call.
type extendBatch struct {
	names, owners []string
	ttls          []int64
	waiter        []bool
	index         []int // position -> request
}

func (b *extendBatch) add(i int, r engine.ExtendRequest) {
	b.names, b.owners = append(b.names, r.Name), append(b.owners, r.Owner)
	b.ttls, b.waiter = append(b.ttls, micros(r.TTL)), append(b.waiter, r.Waiter)
	b.index = append(b.index, i)
}

func (b *extendBatch) args() []any { return []any{b.names, b.owners, b.ttls, b.waiter} }
