package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// The fault tests stop, restart and cut the server's connections: they
// run one at a time (no t.Parallel), after the conformance suite.

// client returns a Client on a new engine of its own pool (one process),
// whose connections carry application name app.
func client(t *testing.T, schema, app string, opts ...postgres.Option) *distlock.Client {
	t.Helper()
	c := distlock.New(newEngine(t, newPool(t, "application_name="+app), schema, opts...))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func uniqueName(t *testing.T) string { return fmt.Sprintf("%s-%x", t.Name(), rand.Uint64()) }

// backends returns the pids of the server's sessions of application app.
func backends(t *testing.T, ctx context.Context, app string) []int32 {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// terminate ends the sessions of application app (pg_terminate_backend)
// and returns how many there were; with waiting, only those waiting for a
// lock.
func terminate(t *testing.T, ctx context.Context, app string, waiting bool) int {
	t.Helper()
	return queryCount(t, ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND (NOT $2 OR wait_event_type = 'Lock')`, app, waiting)
}

// queryCount runs query, a count, on a session of its own.
func queryCount(t *testing.T, ctx context.Context, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// rowLock holds the lock row of name FOR UPDATE in a transaction of its
// own until the returned function is called: the engine's calls on name
// wait behind it.
func rowLock(t *testing.T, ctx context.Context, schema, name string) (unlock func()) {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.URL("application_name=blocker"))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := tx.QueryRow(ctx, `SELECT name FROM `+schema+`.locks WHERE name = $1 FOR UPDATE`, name).Scan(&got); err != nil {
		t.Fatal(err)
	}
	done := false
	unlock = func() {
		if !done {
			done = true
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		}
	}
	t.Cleanup(unlock)
	return unlock
}

// waitLocked waits until n sessions of app wait for a lock (a row's, an
// advisory lock).
func waitLocked(t *testing.T, ctx context.Context, app string, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lockWaiters(t, ctx, app) < want {
		if time.Now().After(deadline) {
			t.Fatalf("no session of %s waits for a lock", app)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockWaiters counts the sessions of app that wait for a lock.
func lockWaiters(t *testing.T, ctx context.Context, app string) int {
	t.Helper()
	return queryCount(t, ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app)
}

// waitRenewedAfter waits until l has confirmed a renewal sent after at: its
// local deadline (send time + ttl - drift) is then past at + ttl - drift.
// It returns early when l is lost, which the caller then reports.
func waitRenewedAfter(t *testing.T, l *distlock.Lease, at time.Time) {
	t.Helper()
	ttl := l.TTL()
	limit := max(4*ttl, 20*time.Second) // a starved machine's, not a speed
	end := time.Now().Add(limit)
	for l.Err() == nil && !l.Deadline().After(at.Add(ttl-engine.Drift(ttl))) {
		if time.Now().After(end) {
			t.Fatalf("no renewal sent after %v was confirmed within %v", at.Format(time.StampMilli), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRestartKeepsLeases: the server restarts (killed: pg_ctl -m immediate)
// while a lock is held and a waiter queues. The table is durable: the
// lease survives with its token and owner, nobody else is granted the lock
// meanwhile, the listener reconnects, and the waiter gets the lock when the
// holder releases it, with a higher token.
func TestRestartKeepsLeases(t *testing.T) {
	const schema = "faults"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	holder, waiter, watch := client(t, schema, "holder"), client(t, schema, "waiter"), client(t, schema, "watch")
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *distlock.Lease, 1)
	go func() {
		w, err := waiter.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	waitFor(t, "the waiter to queue", func() bool {
		info, err := watch.Inspect(ctx, name)
		return err == nil && info.Waiters == 1
	})
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("server down and up again in %v", time.Since(down))
	var info distlock.Info
	waitFor(t, "the server to answer", func() bool {
		info, err = watch.Inspect(ctx, name)
		return err == nil
	})
	if !info.Held || info.Owner != l.Owner() || info.Token != l.Token() {
		t.Fatalf("after the restart: %+v, want held by %q with token %d", info, l.Owner(), l.Token())
	}
	// Two renewals at least, across the restart: the lease lives on (one
	// sent a renewal interval after the server came back is confirmed).
	waitRenewedAfter(t, l, time.Now().Add(l.TTL()/3))
	if l.Err() != nil {
		t.Fatalf("the lease was lost across the restart: %v", l.Err())
	}
	select {
	case w := <-got:
		t.Fatalf("the waiter got the lock while it was held: %+v", w)
	default:
	}
	released := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w == nil {
			t.FailNow()
		}
		t.Logf("the waiter got the lock %v after the release", time.Since(released))
		if w.Token() <= l.Token() {
			t.Fatalf("token %d after %d", w.Token(), l.Token())
		}
		_ = w.Release(ctx)
	case <-ctx.Done():
		t.Fatal("the waiter never got the lock after the release")
	}
}

// TestTerminateDuringAcquire: the session running an acquire is ended
// (pg_terminate_backend) while the acquire waits for the lock's row. A
// TryAcquire fails with a backend error and changes nothing; a waiting
// Acquire tries again and gets the lock once it is free.
func TestTerminateDuringAcquire(t *testing.T) {
	const schema = "faults"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	holder, victim, watch := client(t, schema, "holder"), client(t, schema, "victim"), client(t, schema, "watch")
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	unlock := rowLock(t, ctx, schema, name)

	// One attempt, cut.
	try := make(chan error, 1)
	go func() {
		_, err := victim.TryAcquire(ctx, name)
		try <- err
	}()
	waitLocked(t, ctx, "victim", 1)
	if n := terminate(t, ctx, "victim", true); n != 1 {
		t.Fatalf("terminated %d sessions", n)
	}
	if err := <-try; !errors.Is(err, distlock.ErrBackend) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquire whose session was terminated: %v, want a backend error", err)
	}

	// A waiting Acquire, cut while it waits for the row.
	acq := make(chan *distlock.Lease, 1)
	go func() {
		l, err := victim.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
		}
		acq <- l
	}()
	// The first attempt's clean-up (a release by its one-off owner, which
	// may have been granted for all the Client knows) waits for the row
	// too: both are cut.
	waitLocked(t, ctx, "victim", 2)
	if n := terminate(t, ctx, "victim", true); n != 2 {
		t.Fatalf("terminated %d sessions", n)
	}
	unlock()
	info, err := watch.Inspect(ctx, name)
	if err != nil || !info.Held || info.Owner != h.Owner() || info.Count != 1 || info.Token != h.Token() {
		t.Fatalf("after the cut attempts: %+v, %v; want %q's one hold, token %d", info, err, h.Owner(), h.Token())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-acq:
		if l == nil {
			t.FailNow()
		}
		if l.Token() <= h.Token() {
			t.Fatalf("token %d after %d", l.Token(), h.Token())
		}
		_ = l.Release(ctx)
	case <-ctx.Done():
		t.Fatal("the cut Acquire never got the lock after the release")
	}
}

// TestTerminateDuringHold: every session of a holder's process (its pool
// and its listening connection) and of a waiter's is ended while the lock
// is held. The holder's renewals reconnect and the lease lives on; the
// waiter's listener reconnects, and the release wakes it.
func TestTerminateDuringHold(t *testing.T) {
	const schema = "faults"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := uniqueName(t)
	holder, waiter, watch := client(t, schema, "holder2"), client(t, schema, "waiter2"), client(t, schema, "watch")
	// Long enough that the renewal after the cut, which opens a session
	// (connect, authenticate, prepare) on a busy machine, lands before the
	// deadline; a holder that does not reconnect still loses it.
	const ttl = 4 * time.Second
	l, err := holder.Acquire(ctx, name, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	// The holder listens too (a wait of its own on another name).
	other, err := watch.Acquire(ctx, name+"-other", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if o, err := holder.Acquire(ctx, name+"-other"); err == nil {
			_ = o.Release(ctx)
		}
	}()
	got := make(chan *distlock.Lease, 1)
	go func() {
		w, err := waiter.Acquire(ctx, name)
		if err != nil {
			t.Error(err)
		}
		got <- w
	}()
	waitFor(t, "the waiters to queue", func() bool {
		a, err1 := watch.Inspect(ctx, name)
		b, err2 := watch.Inspect(ctx, name+"-other")
		return err1 == nil && err2 == nil && a.Waiters == 1 && b.Waiters == 1
	})
	for _, app := range []string{"holder2", "waiter2"} {
		if len(backends(t, ctx, app)) == 0 {
			t.Fatalf("no session of %s", app)
		}
		terminate(t, ctx, app, false)
	}
	// Renewals after the cut reconnect: two renewals later the lease
	// lives on, and the waiter's listener is back.
	waitRenewedAfter(t, l, time.Now().Add(l.TTL()/3))
	if l.Err() != nil {
		t.Fatalf("the lease was lost when its sessions were terminated: %v", l.Err())
	}
	waitFor(t, "the waiter's listener to reconnect", func() bool { return len(backends(t, ctx, "waiter2")) > 0 })
	released := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-got:
		if w == nil {
			t.FailNow()
		}
		t.Logf("the waiter got the lock %v after the release", time.Since(released))
		if w.Token() <= l.Token() {
			t.Fatalf("token %d after %d", w.Token(), l.Token())
		}
		_ = w.Release(ctx)
	case <-ctx.Done():
		t.Fatal("the waiter never got the lock after the release")
	}
	_ = other.Release(ctx)
}

// TestPausedClientLosesLease: a holder whose connections stall (a proxy
// holds every byte, as for a stopped process or a partition) past its ttl
// is told of the loss by its local deadline, before anyone else is granted
// the lock; the next grant has a higher token.
func TestPausedClientLosesLease(t *testing.T) {
	const schema = "faults"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	proxy, err := pgtest.NewProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	defer proxy.Resume()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&application_name=paused", proxy.Port())
	paused := distlock.New(newEngine(t, poolOn(t, url), schema))
	t.Cleanup(func() { _ = paused.Close() })
	next := client(t, schema, "next")
	name := uniqueName(t)
	const ttl = time.Second
	l, err := paused.Acquire(ctx, name, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	proxy.Pause()
	pausedAt := time.Now()
	n, err := next.Acquire(ctx, name, distlock.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	defer n.Release(ctx)
	select {
	case <-l.Done():
	default:
		t.Fatalf("the next holder was granted the lock %v after the pause, and the paused holder was not told", granted.Sub(pausedAt))
	}
	t.Logf("paused holder's deadline %v after the pause; next grant %v after it", l.Deadline().Sub(pausedAt), granted.Sub(pausedAt))
	var le *distlock.LostError
	if !errors.As(l.Err(), &le) {
		t.Fatalf("the paused lease: %v, want a *LostError", l.Err())
	}
	if n.Token() <= l.Token() {
		t.Fatalf("the next grant's token %d is not above the paused holder's %d", n.Token(), l.Token())
	}
	proxy.Resume()
	if err := l.Release(ctx); err == nil {
		t.Fatal("the paused holder released a lease it had lost")
	}
	info, err := next.Inspect(ctx, name)
	if err != nil || info.Owner != n.Owner() || info.Token != n.Token() {
		t.Fatalf("after the paused holder came back: %+v, %v", info, err)
	}
}

// TestStatementTimeout: with a statement_timeout, an acquire stuck behind
// a row lock fails as a backend error (never as "locked"), changes
// nothing, and the next attempt after the row is free answers as usual.
func TestStatementTimeout(t *testing.T) {
	const schema = "faults"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := uniqueName(t)
	holder := client(t, schema, "holder")
	timed := distlock.New(newEngine(t, newPool(t, "application_name=timed", "statement_timeout=200"), schema))
	t.Cleanup(func() { _ = timed.Close() })
	h, err := holder.Acquire(ctx, name, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	unlock := rowLock(t, ctx, schema, name)
	start := time.Now()
	_, err = timed.TryAcquire(ctx, name)
	took := time.Since(start)
	var be *distlock.BackendError
	if !errors.As(err, &be) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquire past the statement timeout: %v, want a *BackendError", err)
	}
	t.Logf("after %v: %v", took, err)
	unlock()
	if _, err := timed.TryAcquire(ctx, name); !errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquire after the row was free: %v, want ErrLocked", err)
	}
	info, err := holder.Inspect(ctx, name)
	if err != nil || info.Owner != h.Owner() || info.Count != 1 || info.Token != h.Token() {
		t.Fatalf("after the timed-out attempt: %+v, %v", info, err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := timed.TryAcquire(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
}

// waitFor polls cond (test-side only) for up to 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
