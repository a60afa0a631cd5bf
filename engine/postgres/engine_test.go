package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestWithoutListen: an engine that may not LISTEN (PgBouncer in
// transaction mode) refuses subscriptions with ErrNoListen, and distlock's
// waiters poll instead: a waiter still gets a released lock within a few
// polling intervals.
func TestWithoutListen(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema, postgres.WithoutListen())
	if _, err := e.Subscribe(ctx, "x"); !errors.Is(err, postgres.ErrNoListen) {
		t.Fatalf("Subscribe without LISTEN: %v", err)
	}
	holder := distlock.New(newEngine(t, newPool(t), schema))
	defer holder.Close()
	waiter := distlock.New(e)
	defer waiter.Close()
	name := uniqueName(t)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *distlock.Lease, 1)
	go func() {
		l, err := waiter.Acquire(ctx, name, distlock.WithFair())
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitFor(t, "the waiter", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	// Polling, it got the lock soon after the release: not by waiting out
	// the holder's lease (a minute).
	t.Logf("polling waiter got the lock %v after the release", time.Since(released))
	if !time.Now().Before(h.Deadline()) {
		t.Fatal("the polling waiter waited out the holder's lease")
	}
	_ = l.Release(ctx)
}

// TestExtendBatch: one Extend renews thousands of leases (one statement
// for all of them) and answers each request in its place: extended,
// missing, held by another owner, and waiter heartbeats.
func TestExtendBatch(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	const n = 3000
	prefix := uniqueName(t) + "/"
	var rs []engine.ExtendRequest
	for i := range n {
		name := fmt.Sprintf("%s%05d", prefix, i)
		if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "o", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatalf("acquire %s: %+v, %v", name, g, err)
		}
		rs = append(rs, engine.ExtendRequest{Name: name, Owner: "o", TTL: 2 * time.Minute})
	}
	// A held lock with a queued waiter, asked for by a stranger; a name
	// nobody holds; a waiter that is not queued.
	held := prefix + "held"
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: held, Owner: "h", Attempt: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if g, err := e.Acquire(ctx, engine.AcquireRequest{Name: held, Owner: "w", Attempt: "w", TTL: time.Minute,
		Waiting: true, Waiter: "w1", WaiterTTL: time.Minute}); err != nil || !g.Queued || !g.Head {
		t.Fatalf("waiter: %+v, %v", g, err)
	}
	rs = append(rs,
		engine.ExtendRequest{Name: held, Owner: "stranger", TTL: time.Minute},
		engine.ExtendRequest{Name: prefix + "free", Owner: "o", TTL: time.Minute},
		engine.ExtendRequest{Name: held, Owner: "w1", TTL: time.Minute, Waiter: true},
		engine.ExtendRequest{Name: held, Owner: "nobody", TTL: time.Minute, Waiter: true},
		rs[0], // twice in one batch
	)
	start := time.Now()
	out, err := e.Extend(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one Extend of %d requests: %v", len(rs), time.Since(start))
	for i := range n {
		if out[i].Status != engine.Extended || out[i].Token == 0 || out[i].Err != nil {
			t.Fatalf("lease %d: %+v", i, out[i])
		}
	}
	want := []engine.ExtendStatus{engine.HeldByOther, engine.Missing, engine.Extended, engine.Missing, engine.Extended}
	for j, w := range want {
		if got := out[n+j]; got.Status != w || got.Wake {
			t.Fatalf("request %d: %+v, want %v", n+j, got, w)
		}
	}
	if info, err := e.Inspect(ctx, rs[0].Name); err != nil || info.TTL < time.Minute+50*time.Second {
		t.Fatalf("after the extension: %+v, %v", info, err)
	}
	// The holder leaves: the waiter's heartbeat says it may take the lock.
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: held, Owner: "h"}); err != nil {
		t.Fatal(err)
	}
	out, err = e.Extend(ctx, []engine.ExtendRequest{{Name: held, Owner: "w1", TTL: time.Minute, Waiter: true}})
	if err != nil || out[0].Status != engine.Extended || !out[0].Wake {
		t.Fatalf("the head's heartbeat on a free lock: %+v, %v", out, err)
	}
}

// TestBatchesNoDeadlock: engines renewing the same names in opposite
// orders, at once, never deadlock (the rows are locked in name order).
func TestBatchesNoDeadlock(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := uniqueName(t) + "/"
	const names = 20
	var forward, backward []engine.ExtendRequest
	e0 := newEngine(t, newPool(t), schema)
	for i := range names {
		name := fmt.Sprintf("%s%02d", prefix, i)
		owner := fmt.Sprintf("o%d", i%2)
		if _, err := e0.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		forward = append(forward, engine.ExtendRequest{Name: name, Owner: owner, TTL: time.Minute})
	}
	for i := range forward {
		backward = append(backward, forward[len(forward)-1-i])
	}
	var wg sync.WaitGroup
	for w := range 4 {
		e := newEngine(t, newPool(t), schema)
		batch := forward
		if w%2 == 1 {
			batch = backward
		}
		wg.Go(func() {
			for range 50 {
				if _, err := e.Extend(ctx, batch); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestListLeaksSweep: List pages through the held locks of a prefix;
// Leaks finds a hand-made row without expiry; Sweep deletes the rows of
// expired leases and changes no answer.
func TestListLeaksSweep(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, schema)
	prefix := uniqueName(t) + "/"
	for i := range 5 {
		name := fmt.Sprintf("%s%d", prefix, i)
		if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "o", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		infos, next, err := e.List(ctx, prefix, cursor, 2)
		if err != nil || pages > 5 {
			t.Fatalf("list: %v after %d pages", err, pages)
		}
		for _, info := range infos {
			all = append(all, info.Name)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(all) != 5 {
		t.Fatalf("listed %v", all)
	}
	leak := prefix + "leak"
	if _, err := pool.Exec(ctx, `INSERT INTO engine.locks (name, owner, holds, token) VALUES ($1, 'x', 1, 1)`, leak); err != nil {
		t.Fatal(err)
	}
	leaks, _, err := e.Leaks(ctx, prefix, 24*time.Hour, "", 100)
	if err != nil || len(leaks) != 1 || leaks[0].Name != leak || leaks[0].TTL >= 0 || leaks[0].Kind != engine.LeakLock {
		t.Fatalf("leaks: %+v, %v", leaks, err)
	}
	if held, err := e.ForceRelease(ctx, leak); err != nil || held {
		t.Fatalf("force-release of the leak: %v, %v (a lease without expiry is never held)", held, err)
	}
	expired := prefix + "expired"
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: expired, Owner: "o", Attempt: "o", TTL: 50 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 50ms lease to expire (by the database's clock)", func() bool {
		info, err := e.Inspect(ctx, expired)
		return err == nil && !info.Held
	})
	var rows int
	count := func() int {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM engine.locks WHERE name = $1`, expired).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if count() != 1 {
		t.Fatal("the expired lease's row is gone before the sweep")
	}
	if _, err := e.Sweep(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	if count() != 0 {
		t.Fatal("the sweep left the expired lease's row")
	}
	if info, err := e.Inspect(ctx, prefix+"0"); err != nil || !info.Held {
		t.Fatalf("the sweep touched a held lock: %+v, %v", info, err)
	}
}

// TestTokensSeededFromClock: a new schema's tokens start at the database
// clock in microseconds, so a schema dropped and migrated again still
// mints tokens above the old ones.
func TestTokensSeededFromClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := newPool(t)
	const schema = "seeded"
	var last uint64
	for round := range 2 {
		before := uint64(time.Now().Add(-time.Minute).UnixMicro())
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
		e, err := postgres.New(pool, postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "o", Attempt: "o", TTL: time.Minute})
		_ = e.Close()
		if err != nil || !g.Acquired || g.Token < before || g.Token <= last {
			t.Fatalf("round %d: %+v, %v; want a token above %d and %d", round, g, err, before, last)
		}
		last = g.Token
		if err := postgres.Drop(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListenConfig: the listening connection may be a connection of its
// own (straight to PostgreSQL while the pool goes through PgBouncer): a
// waiter is woken through it.
func TestListenConfig(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(srv.URL("application_name=own-listener"))
	if err != nil {
		t.Fatal(err)
	}
	waiter := distlock.New(newEngine(t, newPool(t), schema, postgres.WithListenConfig(cfg)))
	defer waiter.Close()
	holder := distlock.New(newEngine(t, newPool(t), schema))
	defer holder.Close()
	name := uniqueName(t)
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *distlock.Lease, 1)
	go func() {
		l, err := waiter.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	waitFor(t, "the waiter", func() bool {
		info, err := holder.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	if n := len(backends(t, ctx, "own-listener")); n != 1 {
		t.Fatalf("%d sessions of the own listener, want 1", n)
	}
	released := time.Now()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l := <-got
	if l == nil {
		t.FailNow()
	}
	if !time.Now().Before(h.Deadline()) { // unwoken, it would sleep out the holder's minute
		t.Fatalf("woken %v after the release: only when the holder's lease ran out", time.Since(released))
	}
	_ = l.Release(ctx)
}
