package peers

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	pgengine "github.com/distlock/distlock/engine/postgres"
)

// pgTracer counts the statements a pgx connection sends (pgx.QueryTracer):
// each statement is one request and one call.
type pgTracer struct{ c *Counter }

func (p pgTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	p.c.add(1)
	return ctx
}

func (p pgTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// newPgPool returns a pgx pool on t.Postgres whose statements count into
// t.Counter.
func newPgPool(t Target) (*pgxpool.Pool, error) {
	if t.Postgres == "" {
		return nil, errors.New("no PostgreSQL server in this run")
	}
	cfg, err := pgxpool.ParseConfig(t.Postgres)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(t.PoolSize)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = int32(4 + t.Workers)
	}
	if t.Counter != nil {
		cfg.ConnConfig.Tracer = pgTracer{t.Counter}
	}
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// PgDistlock is distlock's PostgreSQL engine, default options (ttl 30s,
// auto-renewal on, LISTEN/NOTIFY wake-ups on a connection of the pool).
func PgDistlock() Variant {
	return Variant{
		Name: "distlock (PostgreSQL)", Lib: "distlock", Kind: Subject, Backend: "postgres",
		Settings: "engine/postgres, defaults; pgxpool",
		New: func(t Target) (Locker, error) {
			pool, err := newPgPool(t)
			if err != nil {
				return nil, err
			}
			eng, err := pgengine.New(pool)
			if err != nil {
				pool.Close()
				return nil, err
			}
			return &pgDistlock{
				distlockLocker: distlockLocker{client: distlock.New(eng), opts: distlockOpts(t, nil)},
				eng:            eng, pool: pool,
			}, nil
		},
	}
}

type pgDistlock struct {
	distlockLocker
	eng  *pgengine.Engine
	pool *pgxpool.Pool
}

func (l *pgDistlock) Close() error {
	err := errors.Join(l.client.Close(), l.eng.Close())
	l.pool.Close()
	return err
}

// PgAdvisory is the floor: pg_try_advisory_lock to acquire and
// pg_advisory_unlock to release, on one connection (two round trips; a
// session lock, so only one worker).
func PgAdvisory() Variant {
	return Variant{
		Name: "floor: pg_try_advisory_lock", Lib: "floor", Kind: Floor, Backend: "postgres",
		Settings: "pg_try_advisory_lock(hashtext(name)) + pg_advisory_unlock on one pgx.Conn",
		New: func(t Target) (Locker, error) {
			conn, err := pgConn(t)
			if err != nil {
				return nil, err
			}
			return &pgAdvisory{conn: conn}, nil
		},
	}
}

func pgConn(t Target) (*pgx.Conn, error) {
	if t.Postgres == "" {
		return nil, errors.New("no PostgreSQL server in this run")
	}
	cfg, err := pgx.ParseConfig(t.Postgres)
	if err != nil {
		return nil, err
	}
	if t.Counter != nil {
		cfg.Tracer = pgTracer{t.Counter}
	}
	return pgx.ConnectConfig(context.Background(), cfg)
}

type pgAdvisory struct {
	mu   sync.Mutex // one connection: one statement at a time
	conn *pgx.Conn
}

func (l *pgAdvisory) Acquire(ctx context.Context, name string) (Held, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ok bool
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtext($1))", name).Scan(&ok); err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("advisory lock %q is taken", name)
	}
	return pgAdvisoryHeld{l, name}, nil
}

type pgAdvisoryHeld struct {
	l    *pgAdvisory
	name string
}

func (h pgAdvisoryHeld) Release(ctx context.Context) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	var ok bool
	if err := h.l.conn.QueryRow(ctx, "SELECT pg_advisory_unlock(hashtext($1))", h.name).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("advisory lock %q was not held", h.name)
	}
	return nil
}

func (l *pgAdvisory) Close() error { return l.conn.Close(context.Background()) }

// PgForUpdate is the row-lock floor: BEGIN, SELECT … FOR UPDATE NOWAIT on
// the name's row (made once, before its first use), COMMIT to release.
func PgForUpdate() Variant { return pgForUpdate(true) }

// PgForUpdateWait is the waiting row-lock floor of P3: BEGIN; SELECT …
// FOR UPDATE (waiting in PostgreSQL's lock queue); COMMIT, on one
// pgx.Conn per Locker (so one per contender with Separate).
func PgForUpdateWait() Variant { return pgForUpdate(false) }

func pgForUpdate(nowait bool) Variant {
	name, settings, lock := "floor: SELECT … FOR UPDATE NOWAIT",
		"BEGIN; SELECT 1 FROM bench_rows WHERE name=$1 FOR UPDATE NOWAIT; COMMIT on one pgx.Conn",
		"SELECT 1 FROM bench_rows WHERE name = $1 FOR UPDATE NOWAIT"
	if !nowait {
		name, settings, lock = "floor: SELECT … FOR UPDATE",
			"BEGIN; SELECT 1 FROM bench_rows WHERE name=$1 FOR UPDATE (waiting); COMMIT on one pgx.Conn per goroutine",
			"SELECT 1 FROM bench_rows WHERE name = $1 FOR UPDATE"
	}
	return Variant{
		Name: name, Lib: "floor", Kind: Floor, Backend: "postgres",
		Settings: settings,
		New: func(t Target) (Locker, error) {
			conn, err := pgConn(t)
			if err != nil {
				return nil, err
			}
			if _, err := conn.Exec(context.Background(), "CREATE TABLE IF NOT EXISTS bench_rows (name text PRIMARY KEY)"); err != nil {
				_ = conn.Close(context.Background())
				return nil, err
			}
			return &pgRowLock{conn: conn, made: map[string]bool{}, lock: lock}, nil
		},
	}
}

type pgRowLock struct {
	mu   sync.Mutex // held from acquire to release: one transaction on the connection
	conn *pgx.Conn
	made map[string]bool
	lock string // the locking SELECT
}

func (l *pgRowLock) Acquire(ctx context.Context, name string) (Held, error) {
	l.mu.Lock()
	if !l.made[name] {
		if _, err := l.conn.Exec(ctx, "INSERT INTO bench_rows VALUES ($1) ON CONFLICT DO NOTHING", name); err != nil {
			l.mu.Unlock()
			return nil, err
		}
		l.made[name] = true
	}
	tx, err := l.conn.Begin(ctx)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	var one int
	if err := tx.QueryRow(ctx, l.lock, name).Scan(&one); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		l.mu.Unlock()
		return nil, err
	}
	return pgRowHeld{l, tx}, nil
}

type pgRowHeld struct {
	l  *pgRowLock
	tx pgx.Tx
}

func (h pgRowHeld) Release(ctx context.Context) error {
	defer h.l.mu.Unlock()
	return h.tx.Commit(ctx)
}

func (l *pgRowLock) Close() error { return l.conn.Close(context.Background()) }
