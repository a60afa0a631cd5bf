package postgres

import (
	"context"

	"github.com/distlock/distlock/engine"
)

// Extend implements engine.Engine: every lease renewal and waiter
// heartbeat of the batch in one call of the schema's extend function, one
// round trip. The rows are locked in name order, so concurrent batches
// never deadlock.
func (e *Engine) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	out := make([]engine.ExtendResult, len(rs))
	var (
		names, owners []string
		ttls          []int64
		waiter        []bool
		index         []int // batch position -> request
	)
	for i, r := range rs {
		if r.Shared {
			out[i].Err = &engine.ArgumentError{Arg: "shared", Reason: "the postgres engine keeps no shared locks"}
			continue
		}
		if err := checkTexts("name", r.Name, "owner", r.Owner); err != nil {
			out[i].Err = err
			continue
		}
		names, owners = append(names, r.Name), append(owners, r.Owner)
		ttls, waiter = append(ttls, micros(r.TTL)), append(waiter, r.Waiter)
		index = append(index, i)
	}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := e.pool.Query(ctx, e.sql.extend, names, owners, ttls, waiter)
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
