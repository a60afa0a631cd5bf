package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
)

// counter counts the statements a pool sends (pgx.QueryTracer).
type counter struct{ queries, prepares atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *counter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}

func (c *counter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// TestOneStatementEach: once a connection has prepared the engine's
// statements, an uncontended acquire is one statement, a release one, the
// renewal of many leases one, and a set of 8 names one, its release one; the median acquire+release through the
// Client is logged.
func TestOneStatementEach(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one connection: prepared once
	var n counter
	cfg.ConnConfig.Tracer = &n
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := newEngine(t, pool, schema)
	c := distlock.New(e)
	defer c.Close()
	name := uniqueName(t)
	const rounds = 300
	times := make([]time.Duration, 0, rounds)
	for i := range rounds + 1 {
		q := n.queries.Load()
		start := time.Now()
		l, err := c.TryAcquire(ctx, name, distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		acquired := n.queries.Load() - q
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if i == 0 {
			continue // the statements' first use prepares them
		}
		times = append(times, took)
		if total := n.queries.Load() - q; acquired != 1 || total != 2 {
			t.Fatalf("acquire sent %d statements, acquire+release %d; want 1 and 2", acquired, total)
		}
	}
	slices.Sort(times)
	t.Logf("acquire+release through the Client, one goroutine: median %v, p90 %v (%d rounds)", times[rounds/2], times[rounds*9/10], rounds)

	var rs []engine.ExtendRequest
	for i := range 100 {
		name := uniqueName(t) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "o", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, engine.ExtendRequest{Name: name, Owner: "o", TTL: time.Minute})
	}
	if _, err := e.Extend(ctx, rs); err != nil { // prepares
		t.Fatal(err)
	}
	q := n.queries.Load()
	if _, err := e.Extend(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if sent := n.queries.Load() - q; sent != 1 {
		t.Fatalf("renewing 100 leases sent %d statements", sent)
	}

	// A set of 8 through the Client: one statement to take it, one to
	// release it (the first round prepares them).
	set := make([]string, 8)
	for i := range set {
		set[i] = fmt.Sprintf("%s/set/%d", name, i)
	}
	for i := range 2 {
		q := n.queries.Load()
		s, err := c.TryAcquireAll(ctx, set, distlock.WithAutoRenew(false))
		if err != nil {
			t.Fatal(err)
		}
		acquired := n.queries.Load() - q
		if err := s.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if total := n.queries.Load() - q; i > 0 && (acquired != 1 || total != 2) {
			t.Fatalf("a set of 8 sent %d statements, with its release %d; want 1 and 2", acquired, total)
		}
	}
}
