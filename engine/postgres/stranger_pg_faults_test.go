package postgres_test

// A stranger's fault tests across every lock kind: the backends serving a
// holder stopped (SIGSTOP) between its grant and its renewals, and the
// engine's LISTEN connection ended (pg_terminate_backend) while waiters of
// every kind wait.

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
)

const strangerFaultSchema = "stranger_faults"

// kindHolds takes name (with a suffix per kind) as a mutex, a semaphore's
// only permit, an RW lock's writer, an election's leader and a set of two
// names, each with ttl, and returns the leases by what they are.
func kindHolds(t *testing.T, ctx context.Context, c *distlock.Client, name string, ttl time.Duration) map[string]*distlock.Lease {
	t.Helper()
	held := map[string]*distlock.Lease{}
	l, err := c.Acquire(ctx, name+"-mutex", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	held["mutex"] = l
	if l, err = c.Semaphore(name+"-sem", 1).Acquire(ctx, distlock.WithTTL(ttl)); err != nil {
		t.Fatal(err)
	}
	held["semaphore"] = l
	if l, err = c.RWMutex(name+"-rw").Lock(ctx, distlock.WithTTL(ttl)); err != nil {
		t.Fatal(err)
	}
	held["writer"] = l
	ld, err := c.Campaign(ctx, name+"-election", "old", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	held["leader"] = ld.Lease()
	set, err := c.AcquireAll(ctx, []string{name + "-set-a", name + "-set-b"}, distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	held["set member"] = set.Lease(name + "-set-b")
	return held
}

// kindWaits starts one waiting call of c per kind of kindHolds on name
// (the set's on one of its names with a free one) and returns the channel
// each sends its lease on (nil and the error when it failed).
type waited struct {
	what  string
	lease *distlock.Lease
	at    time.Time
	err   error
}

func kindWaits(ctx context.Context, c *distlock.Client, name string) <-chan waited {
	out := make(chan waited, 5)
	send := func(what string, l *distlock.Lease, err error) {
		out <- waited{what: what, lease: l, at: time.Now(), err: err}
	}
	go func() {
		l, err := c.Acquire(ctx, name+"-mutex", distlock.WithTTL(30*time.Second))
		send("mutex", l, err)
	}()
	go func() {
		l, err := c.Semaphore(name+"-sem", 1).Acquire(ctx, distlock.WithTTL(30*time.Second))
		send("semaphore", l, err)
	}()
	go func() {
		l, err := c.RWMutex(name+"-rw").Lock(ctx, distlock.WithTTL(30*time.Second))
		send("writer", l, err)
	}()
	go func() {
		ld, err := c.Campaign(ctx, name+"-election", "new", distlock.WithTTL(30*time.Second))
		if err != nil {
			send("leader", nil, err)
			return
		}
		send("leader", ld.Lease(), nil)
	}()
	go func() {
		set, err := c.AcquireAll(ctx, []string{name + "-set-b", name + "-set-c"}, distlock.WithTTL(30*time.Second))
		if err != nil {
			send("set member", nil, err)
			return
		}
		send("set member", set.Lease(name+"-set-b"), nil)
	}()
	return out
}

// stopBackends stops (SIGSTOP) the server's processes serving application
// app and returns the function that continues them (also run at cleanup).
func stopBackends(t *testing.T, ctx context.Context, app string) (cont func()) {
	t.Helper()
	pids := backends(t, ctx, app)
	if len(pids) == 0 {
		t.Fatalf("no backend of %s", app)
	}
	for _, p := range pids {
		if err := syscall.Kill(int(p), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	done := false
	cont = func() {
		if done {
			return
		}
		done = true
		for _, p := range pids {
			_ = syscall.Kill(int(p), syscall.SIGCONT)
		}
	}
	t.Cleanup(cont)
	return cont
}

// TestStrangerPGStoppedHolderEveryKind: the backends serving a holder of
// every kind (a mutex, a semaphore's permit, an RW lock's writer, an
// election's leader, a set) are stopped with SIGSTOP between its grants
// and its first renewal, past its ttl, while another Client waits for
// each lock. Each waiter is granted once the holder's lease ended in the
// database; by then the holder was told: its lease's Done closed, with a
// *LostError recorded (At) before the grant and not before its own
// deadline; the waiter's token is above the holder's. When the backends
// continue, the stale holder's Release changes nothing.
func TestStrangerPGStoppedHolderEveryKind(t *testing.T) {
	migrated(t, strangerFaultSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The holder connects as a role of its own, whose connection limit is
	// then set to the backends it has: the stopped ones. Else, once a
	// renewal's context ends (pgx then closes its connection), the pool
	// would renew on a new backend, which nobody stopped, and the leases
	// still valid by then would live on (correctly: renewed in time).
	for _, q := range []string{
		`DO $$ BEGIN CREATE ROLE stranger_stalled LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
		`ALTER ROLE stranger_stalled CONNECTION LIMIT -1`,
		`GRANT USAGE ON SCHEMA ` + strangerFaultSchema + ` TO stranger_stalled`,
		`GRANT ALL ON ALL TABLES IN SCHEMA ` + strangerFaultSchema + ` TO stranger_stalled`,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA ` + strangerFaultSchema + ` TO stranger_stalled`,
	} {
		execSQL(t, ctx, q)
	}
	unlimit := func() { execSQL(t, context.Background(), `ALTER ROLE stranger_stalled CONNECTION LIMIT -1`) }
	t.Cleanup(unlimit)
	holderURL := fmt.Sprintf("postgres://stranger_stalled@127.0.0.1:%d/postgres?sslmode=disable&application_name=stranger-stopped-holder", srv.Port)
	holder := distlock.New(newEngine(t, poolOn(t, holderURL), strangerFaultSchema))
	t.Cleanup(func() { _ = holder.Close() })
	waiter := client(t, strangerFaultSchema, "stranger-stopped-waiter")
	name := uniqueName(t)
	const ttl = time.Second
	held := kindHolds(t, ctx, holder, name, ttl)
	k := len(backends(t, ctx, "stranger-stopped-holder"))
	execSQL(t, ctx, fmt.Sprintf(`ALTER ROLE stranger_stalled CONNECTION LIMIT %d`, k))
	cont := stopBackends(t, ctx, "stranger-stopped-holder")
	results := kindWaits(ctx, waiter, name)
	for range len(held) {
		r := <-results
		if r.err != nil {
			t.Fatalf("the waiting %s: %v", r.what, r.err)
		}
		defer r.lease.Release(context.Background())
		old := held[r.what]
		select {
		case <-old.Done():
		default:
			t.Fatalf("the waiter was granted the %s (token %d) while its stopped holder (token %d, deadline %v before the grant) was not told",
				r.what, r.lease.Token(), old.Token(), r.at.Sub(old.Deadline()))
		}
		var lost *distlock.LostError
		if !errors.As(old.Err(), &lost) {
			t.Fatalf("the stopped holder of the %s: %v, want a *LostError", r.what, old.Err())
		}
		if !lost.At.Before(r.at) || lost.At.Before(old.Deadline()) {
			t.Fatalf("the stopped holder of the %s was told at %v, its deadline %v, the waiter granted at %v: want deadline <= told < granted",
				r.what, lost.At.Format(time.StampMicro), old.Deadline().Format(time.StampMicro), r.at.Format(time.StampMicro))
		}
		if r.lease.Token() <= old.Token() {
			t.Fatalf("the %s's next token %d is not above the stopped holder's %d", r.what, r.lease.Token(), old.Token())
		}
	}
	cont()
	unlimit()
	for what, old := range held {
		if err := old.Release(ctx); err == nil {
			t.Errorf("the stale holder released the %s it had lost", what)
		}
	}
	for _, n := range []string{"-mutex", "-sem", "-rw", "-election", "-set-b"} {
		info, err := waiter.Inspect(ctx, name+n)
		if err != nil || !info.Held {
			t.Fatalf("%s after the stale holder's releases: %+v, %v; want still held by the waiter", n, info, err)
		}
		for _, h := range info.Holders {
			for _, old := range held {
				if h.Owner == old.Owner() {
					t.Fatalf("%s: the stale holder %s holds it again: %+v", n, old.Owner(), info)
				}
			}
		}
		if info.Owner != "" {
			for _, old := range held {
				if info.Owner == old.Owner() {
					t.Fatalf("%s: the stale holder %s holds it again: %+v", n, old.Owner(), info)
				}
			}
		}
	}
}

// TestStrangerPGListenerCutWhileWaiting: waiters of every kind wait on
// one engine; its LISTEN connection is ended (pg_terminate_backend), and
// the holders release at once, while the engine may still be
// reconnecting (a notification sent then is lost). Every waiter is
// granted before the released leases' deadlines (a minute away): woken by
// the releases (or by the listener's re-check on reconnecting), not by an
// expiry or its own context's end.
func TestStrangerPGListenerCutWhileWaiting(t *testing.T) {
	migrated(t, strangerFaultSchema)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	holder := client(t, strangerFaultSchema, "stranger-cut-holder")
	waiter := client(t, strangerFaultSchema, "stranger-cut-waiter")
	name := uniqueName(t)
	held := kindHolds(t, ctx, holder, name, time.Minute)
	results := kindWaits(ctx, waiter, name)
	for _, n := range []string{"-mutex", "-sem", "-rw", "-election", "-set-b"} {
		enginetest.WaitFor(t, 30*time.Second, "a waiter queued for "+n, func() bool {
			info, err := holder.Inspect(ctx, name+n)
			return err == nil && info.Waiters > 0
		})
	}
	if n := queryCount(t, ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'stranger-cut-waiter' AND query LIKE 'LISTEN%'`); n != 1 {
		t.Fatalf("terminated %d listening connections, want 1", n)
	}
	var deadline time.Time
	for what, l := range held {
		if deadline.IsZero() || l.Deadline().Before(deadline) {
			deadline = l.Deadline()
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("releasing the %s: %v", what, err)
		}
	}
	for range len(held) {
		r := <-results
		if r.err != nil {
			t.Fatalf("the waiting %s: %v", r.what, r.err)
		}
		defer r.lease.Release(context.Background())
		if !r.at.Before(deadline) {
			t.Fatalf("the %s's waiter was granted at %v, not before the released leases' deadline %v: not woken by the release",
				r.what, r.at.Format(time.StampMilli), deadline.Format(time.StampMilli))
		}
		if r.lease.Token() <= held[r.what].Token() {
			t.Fatalf("the %s's token %d is not above the released %d", r.what, r.lease.Token(), held[r.what].Token())
		}
	}
}

// execSQL runs sql on a session of its own.
func execSQL(t *testing.T, ctx context.Context, sql string) {
	t.Helper()
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
