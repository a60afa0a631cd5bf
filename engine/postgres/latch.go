package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
)

// A countdown latch (engine.Latcher) is a row of the latches table (schema
// version 6), changed by the functions latch_set and latch_count_down in
// one round trip each; the one that brings the count to zero deletes the
// row and notifies the name's channel key, which wakes its subscribers
// (Subscribe). On a schema of an earlier version every call is a
// *SchemaError (ErrNotMigrated) saying to migrate it.

var _ engine.Latcher = (*Engine)(nil)

// latchSQL returns a latch statement on the engine's schema.
func (e *Engine) latchSQL(stmt string) string {
	s := quoteIdent(e.schema)
	switch stmt {
	case "set":
		return "SELECT " + s + ".latch_set($1, $2)"
	case "down":
		return "SELECT " + s + ".latch_count_down($1, $2)"
	}
	return "SELECT count FROM " + s + ".latches WHERE name = $1"
}

// SetCount implements engine.Latcher.
func (e *Engine) SetCount(ctx context.Context, name string, count int64) (bool, error) {
	if err := e.check(); err != nil {
		return false, err
	}
	if err := checkTexts("name", name); err != nil {
		return false, err
	}
	if err := engine.CheckLatchCount(count); err != nil {
		return false, err // (the table's CHECK (count > 0) would refuse it as a backend error)
	}
	var set bool
	if err := e.pool.QueryRow(ctx, e.latchSQL("set"), name, count).Scan(&set); err != nil {
		return false, e.wrap(err)
	}
	return set, nil
}

// CountDown implements engine.Latcher: one call of latch_count_down, sent
// once more (resent) when its round trip fails without an answer from
// PostgreSQL (a connection cut after the call committed, say):
// latch_count_down finds the call's id among the last 16 applied and
// counts nothing again. A call without an id ("") is sent once: a second
// copy would count again.
func (e *Engine) CountDown(ctx context.Context, name, id string) (int64, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	if err := checkTexts("name", name, "id", id); err != nil {
		return 0, err
	}
	if id == "" {
		return e.countDown(ctx, name, id)
	}
	return resent(ctx, e, func() (int64, error) { return e.countDown(ctx, name, id) })
}

// countDown is one call of latch_count_down.
func (e *Engine) countDown(ctx context.Context, name, id string) (int64, error) {
	var n int64
	if err := e.pool.QueryRow(ctx, e.latchSQL("down"), name, id).Scan(&n); err != nil {
		return 0, e.wrap(err)
	}
	return n, nil
}

// Count implements engine.Latcher.
func (e *Engine) Count(ctx context.Context, name string) (int64, error) {
	if err := e.check(); err != nil {
		return 0, err
	}
	if err := checkTexts("name", name); err != nil {
		return 0, err
	}
	var n int64
	err := e.pool.QueryRow(ctx, e.latchSQL("count"), name).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, e.wrap(err)
	}
	return n, nil
}
