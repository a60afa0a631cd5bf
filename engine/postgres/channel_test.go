package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres"
)

// TestWakeOnOwnChannel: a queued waiter's wake-up travels on its engine's
// own channel (schema version 7), so no other engine's listener receives
// it: a connection LISTENing on the schema's channel sees no 'w:' message
// while a release hands the lock to a waiter of another engine; it sees
// the release ('handed'), for the name's plain subscribers (an
// election's observers read the lock again at once). Every
// message on the schema's channel before a sentinel sent after the grant
// has arrived by the time the sentinel does (PostgreSQL delivers in commit
// order), so the absence is checked without a sleep.
func TestWakeOnOwnChannel(t *testing.T) {
	const schema = "own_channel"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	migrated(t, schema)
	conn, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ch := pgx.Identifier{postgres.Channel(schema)}.Sanitize()
	if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
		t.Fatal(err)
	}
	holder := distlock.New(newEngine(t, newPool(t), schema))
	defer holder.Close()
	waiterEng := newEngine(t, newPool(t), schema)
	waiter := distlock.New(waiterEng)
	defer waiter.Close()
	held, err := holder.Acquire(ctx, "x", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, "x", distlock.WithTTL(time.Minute))
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, "the waiter queued", func() bool {
		info, err := waiterEng.Inspect(ctx, "x")
		return err == nil && info.Waiters == 1
	})
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the queued waiter: %v", err)
	}
	sentinel, err := pgx.Connect(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer sentinel.Close(context.Background())
	if _, err := sentinel.Exec(ctx, "SELECT pg_notify($1, 'sentinel')", postgres.Channel(schema)); err != nil {
		t.Fatal(err)
	}
	released := false
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload == "sentinel" {
			if !released {
				t.Fatal("the release sent nothing on the schema's channel: the name's observers are not told")
			}
			return
		}
		_, msg, _ := strings.Cut(n.Payload, " ")
		if strings.HasPrefix(msg, "w:") {
			t.Fatalf("a waiter's wake-up on the schema's channel, which every engine listens on: %q", n.Payload)
		}
		released = released || msg == "handed"
	}
}

// TestUpgradeV6Channels: on a version 6 schema (testdata) the engine calls
// acquire without its channel and a queued waiter is woken on the schema's
// channel; Migrate brings it up to date (version 7 and on) with a lock held and a waiter
// queued across it; after it, version 6's acquire (12 arguments, for
// processes of that version) still grants, and a new engine's waiter is
// woken on its own channel.
func TestUpgradeV6Channels(t *testing.T) {
	const schema = "upgrade_v6"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v6.sql")
	a := distlock.New(newEngine(t, newPool(t), schema))
	defer a.Close()
	bEng := newEngine(t, newPool(t), schema)
	b := distlock.New(bEng)
	defer b.Close()
	held, err := a.Acquire(ctx, "x", distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, errs := acquireLater(ctx, b, "x")
	waitFor(t, "b queued on version 6", func() bool {
		info, err := bEng.Inspect(ctx, "x")
		return err == nil && info.Waiters == 1
	})
	upgrade(t, ctx, pool, schema) // a holds, b waits, across it
	if info, err := bEng.Inspect(ctx, "x"); err != nil || info.Owner != held.Owner() || info.Token != held.Token() || info.Waiters != 1 {
		t.Fatalf("across the upgrade: %+v, %v; want a's grant and b queued", info, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var lb *distlock.Lease
	select {
	case lb = <-got:
	case err := <-errs:
		t.Fatalf("b, queued before the upgrade: %v", err)
	}
	if lb.Token() <= held.Token() {
		t.Fatalf("b's token %d not above a's %d", lb.Token(), held.Token())
	}
	var ok bool
	if err := pool.QueryRow(ctx, "SELECT o_acquired FROM "+schema+".acquire('v6', 'old', 60000000, '', 'old', false, '', 0, false, false, false, false)").Scan(&ok); err != nil || !ok {
		t.Fatalf("version 6's acquire after the upgrade: %v, %v", ok, err)
	}
	cEng := newEngine(t, newPool(t), schema)
	c := distlock.New(cEng)
	defer c.Close()
	got, errs = acquireLater(ctx, c, "x")
	waitFor(t, "c queued after the upgrade", func() bool {
		info, err := cEng.Inspect(ctx, "x")
		return err == nil && info.Waiters == 1
	})
	var ch *string
	if err := pool.QueryRow(ctx, "SELECT chan FROM "+schema+".waiters WHERE name = 'x'").Scan(&ch); err != nil || ch == nil {
		t.Fatalf("c's entry: channel %v, %v; want its engine's own", ch, err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case lc := <-got:
		_ = lc.Release(ctx)
	case err := <-errs:
		t.Fatalf("c: %v", err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// acquireLater acquires name with c (a minute's ttl) in a goroutine: the
// lease or the error arrives on one of the two channels.
func acquireLater(ctx context.Context, c *distlock.Client, name string) (<-chan *distlock.Lease, <-chan error) {
	got, errs := make(chan *distlock.Lease, 1), make(chan error, 1)
	go func() {
		l, err := c.Acquire(ctx, name, distlock.WithTTL(time.Minute))
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	return got, errs
}
