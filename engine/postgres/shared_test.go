package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestSharedUpgrade: Migrate brings a version 1 schema (testdata: before
// shared locks) up to date, keeping the leases held across it; shared
// locks then work, and Migrate again changes nothing.
func TestSharedUpgrade(t *testing.T) {
	const schema = "upgrade_v1"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v1.sql")
	c := distlock.New(newEngine(t, pool, schema))
	defer c.Close()
	held, err := c.Acquire(ctx, "held", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Semaphore("s", 2).TryAcquire(ctx); !errors.Is(err, postgres.ErrNotMigrated) {
		t.Fatalf("a semaphore on a version 1 schema: %v, want ErrNotMigrated", err)
	}
	for range 2 {
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
	var version int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM upgrade_v1.version`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("version %d (%v), want %d", version, err, postgres.SchemaVersion)
	}
	if info, err := c.Inspect(ctx, "held"); err != nil || info.Owner != held.Owner() || held.Err() != nil {
		t.Fatalf("the lease held across the upgrade: %+v, %v, %v", info, err, held.Err())
	}
	p, err := c.Semaphore("s", 2).TryAcquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Token() <= held.Token() {
		t.Fatalf("permit token %d, not above the mutex's %d", p.Token(), held.Token())
	}
	_ = p.Release(ctx)
	_ = held.Release(ctx)
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// TestSharedOneStatement: an uncontended permit acquire is one statement,
// its release one, and one Extend renews mutex leases, shared holders and
// both kinds of waiters in one statement, each answered in its place.
func TestSharedOneStatement(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var n counter
	cfg.ConnConfig.Tracer = &n
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := newEngine(t, pool, schema)
	name := uniqueName(t)
	sem := func(owner, waiter string, weight int) engine.AcquireRequest {
		return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner + waiter,
			TTL: time.Minute, Waiter: waiter, WaiterTTL: time.Minute, Kind: engine.Semaphore, Limit: 3, Weight: weight}
	}
	for i := range 3 {
		q := n.queries.Load()
		g, err := e.Acquire(ctx, sem("a", "", 1))
		if err != nil || !g.Acquired {
			t.Fatalf("%+v, %v", g, err)
		}
		r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "a", Kind: engine.Semaphore})
		if err != nil || r.Status != engine.Released {
			t.Fatalf("%+v, %v", r, err)
		}
		if sent := n.queries.Load() - q; i > 0 && sent != 2 {
			t.Fatalf("acquire+release of a permit sent %d statements", sent)
		}
	}
	// Holders a (2) and b (1); c waits for 2, d for 1 behind it.
	for _, r := range []engine.AcquireRequest{sem("a", "", 2), sem("b", "", 1)} {
		if g, err := e.Acquire(ctx, r); err != nil || !g.Acquired {
			t.Fatalf("%+v, %v", g, err)
		}
	}
	g, err := e.Acquire(ctx, sem("c", "wc", 2))
	if err != nil || g.Acquired || !g.Queued || !g.Head || g.Holder == "" || g.HolderTTL <= 0 {
		t.Fatalf("c: %+v, %v", g, err)
	}
	if g, err := e.Acquire(ctx, sem("d", "wd", 1)); err != nil || g.Acquired || !g.Queued || g.Head {
		t.Fatalf("d: %+v, %v", g, err)
	}
	mutex := name + "-m"
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: mutex, Owner: "m", Attempt: "m", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rs := []engine.ExtendRequest{
		{Name: name, Owner: "a", TTL: time.Minute, Kind: engine.Semaphore},
		{Name: mutex, Owner: "m", TTL: time.Minute},
		{Name: name, Owner: "wc", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true},
		{Name: name, Owner: "nobody", TTL: time.Minute, Kind: engine.Semaphore},
		{Name: mutex, Owner: "x", TTL: time.Minute},
		{Name: name, Owner: "wd", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true},
		{Name: name, Owner: "gone", TTL: time.Minute, Kind: engine.Semaphore, Waiter: true},
	}
	check := func(want []engine.ExtendResult) {
		t.Helper()
		if _, err := e.Extend(ctx, rs); err != nil { // prepares
			t.Fatal(err)
		}
		q := n.queries.Load()
		got, err := e.Extend(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		if sent := n.queries.Load() - q; sent != 1 {
			t.Fatalf("a mixed batch sent %d statements", sent)
		}
		for i := range want {
			if got[i].Status != want[i].Status || got[i].Wake != want[i].Wake || (want[i].Token != 0) != (got[i].Token != 0) || got[i].Err != nil {
				t.Errorf("request %d (%+v): %+v, want %+v", i, rs[i], got[i], want[i])
			}
		}
	}
	check([]engine.ExtendResult{
		{Status: engine.Extended, Token: 1}, {Status: engine.Extended, Token: 1}, {Status: engine.Extended},
		{Status: engine.Missing}, {Status: engine.HeldByOther}, {Status: engine.Extended}, {Status: engine.Missing},
	})
	// b releases: c (2) does not fit yet; a releases: c fits, and its
	// heartbeat says so; d (behind c) is not woken.
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "b", Kind: engine.Semaphore}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "a", Kind: engine.Semaphore}); err != nil {
		t.Fatal(err)
	}
	check([]engine.ExtendResult{
		{Status: engine.Missing}, {Status: engine.Extended, Token: 1}, {Status: engine.Extended, Wake: true},
		{Status: engine.Missing}, {Status: engine.HeldByOther}, {Status: engine.Extended}, {Status: engine.Missing},
	})
	// A newcomer does not overtake the queue, though its weight fits.
	if g, err := e.Acquire(ctx, sem("e", "", 1)); err != nil || g.Acquired || !g.Reserved {
		t.Fatalf("a newcomer ahead of the queue: %+v, %v", g, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || info.Kind != engine.Semaphore || info.Limit != 3 || info.Held || info.Waiters != 2 {
		t.Fatalf("Inspect: %+v, %v", info, err)
	}
	if err := e.Leave(ctx, engine.LeaveRequest{Name: name, Waiter: "wc", Kind: engine.Semaphore}); err != nil {
		t.Fatal(err)
	}
	if g, err := e.Acquire(ctx, sem("d", "wd", 1)); err != nil || !g.Acquired {
		t.Fatalf("d after c left: %+v, %v", g, err)
	}
}

// TestSharedMutexApart: a shared lock is refused while the name is held as
// a mutex (and says so); a quorum's shared RaiseFence raises the token of
// the holder only, and the next grant is above it.
func TestSharedMutexApart(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	name := uniqueName(t)
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "m", Attempt: "m", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rw := engine.AcquireRequest{Name: name, Owner: "r", Attempt: "r", TTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}
	var ae *engine.ArgumentError
	if _, err := e.Acquire(ctx, rw); !errors.As(err, &ae) || ae.Reason != fmt.Sprintf("%q is a mutex, not a rwlock", name) {
		t.Fatalf("a reader of a name held as a mutex: %v", err)
	}
	if _, err := e.SetLimit(ctx, name, 2); !errors.As(err, &ae) {
		t.Fatalf("SetLimit of a name held as a mutex: %v", err)
	}
	if info, err := e.Inspect(ctx, name); err != nil || info.Kind != 0 {
		t.Fatalf("a refused call made the shared lock: %+v, %v", info, err)
	}
	_, _ = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "m"})
	g, err := e.Acquire(ctx, rw)
	if err != nil || !g.Acquired {
		t.Fatalf("%+v, %v", g, err)
	}
	if _, err := e.SetLimit(ctx, name, 2); !errors.As(err, &ae) || ae.Reason != fmt.Sprintf("%q is a rwlock, not a semaphore", name) {
		t.Fatalf("SetLimit of a rwlock: %v", err)
	}
	raised := g.Token + 1000
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "r", Token: raised, Kind: engine.RWLock}); err != nil || !ok {
		t.Fatalf("RaiseFence (shared): %v, %v", ok, err)
	}
	if ok, err := e.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "nobody", Token: raised + 1, Kind: engine.RWLock}); err != nil || ok {
		t.Fatalf("RaiseFence (shared) of no holder: %v, %v", ok, err)
	}
	info, err := e.Inspect(ctx, name)
	if err != nil || len(info.Holders) != 1 || info.Holders[0].Token != raised || info.HighWater != raised {
		t.Fatalf("after the raise: %+v, %v", info, err)
	}
	_, _ = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "r", Kind: engine.RWLock})
	rw.Owner, rw.Weight = "w", engine.RWPermits
	if g, err := e.Acquire(ctx, rw); err != nil || !g.Acquired || g.Token <= raised {
		t.Fatalf("the writer after the raise: %+v, %v", g, err)
	}
}

// TestSharedConcurrentBatches: Extend batches of mutexes and shared locks
// in opposite name orders, beside acquires and releases of the same
// shared locks, never deadlock.
func TestSharedConcurrentBatches(t *testing.T) {
	const schema = "engine"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := uniqueName(t) + "/"
	e0 := newEngine(t, newPool(t), schema)
	var forward []engine.ExtendRequest
	for i := range 10 {
		name := fmt.Sprintf("%s%02d", prefix, i)
		if _, err := e0.Acquire(ctx, engine.AcquireRequest{Name: name + "m", Owner: "o", Attempt: "o", TTL: time.Minute}); err != nil {
			t.Fatal(err)
		}
		r := engine.AcquireRequest{Name: name, Owner: "o", Attempt: "o", TTL: time.Minute, Kind: engine.Semaphore, Limit: 4, Weight: 1}
		if _, err := e0.Acquire(ctx, r); err != nil {
			t.Fatal(err)
		}
		forward = append(forward, engine.ExtendRequest{Name: name + "m", Owner: "o", TTL: time.Minute},
			engine.ExtendRequest{Name: name, Owner: "o", TTL: time.Minute, Kind: engine.Semaphore})
	}
	var backward []engine.ExtendRequest
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
			for range 30 {
				res, err := e.Extend(ctx, batch)
				if err != nil {
					t.Error(err)
					return
				}
				for i, r := range res {
					if r.Status != engine.Extended {
						t.Errorf("request %d: %+v", i, r)
						return
					}
				}
			}
		})
		wg.Go(func() {
			owner := fmt.Sprint("x", w)
			for i := range 30 {
				name := fmt.Sprintf("%s%02d", prefix, (i*7+w)%10)
				r := engine.AcquireRequest{Name: name, Owner: owner, Attempt: fmt.Sprint(i), TTL: time.Minute, Kind: engine.Semaphore, Limit: 4, Weight: 1}
				if _, err := e.Acquire(ctx, r); err != nil {
					t.Error(err)
					return
				}
				if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner, Kind: engine.Semaphore}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
