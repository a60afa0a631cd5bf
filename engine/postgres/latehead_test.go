package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// lateHead queues two fair waiters behind a holder of name, releases (the
// lock is reserved for the first, w1), waits until the reservation's end
// has passed in the database's time, lets first (if not nil) make a call
// on the name, then has w1 ask. It returns the holder's token and w1's
// answer.
func lateHead(t *testing.T, ctx context.Context, e *postgres.Engine, schema, name string, first func()) (uint64, engine.Grant) {
	t.Helper()
	acquire := func(owner, waiter string) engine.Grant {
		t.Helper()
		r := engine.AcquireRequest{Name: name, Owner: owner, TTL: time.Minute, Waiting: true, Waiter: waiter, WaiterTTL: time.Minute}
		if waiter != "" {
			r.Order = engine.OrderFair
		}
		g, err := e.Acquire(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	held := acquire("holder", "")
	if !held.Acquired {
		t.Fatalf("holder: %+v", held)
	}
	for _, w := range []string{"w1", "w2"} {
		if g := acquire("o-"+w, w); g.Acquired || !g.Queued {
			t.Fatalf("%s: %+v, want queued", w, g)
		}
	}
	if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "holder"}); err != nil || r.Status != engine.Released {
		t.Fatalf("release: %+v, %v", r, err)
	}
	pool := newPool(t)
	waitFor(t, "w1's reservation to end", func() bool {
		var lapsed bool
		err := pool.QueryRow(ctx, "SELECT reserved_for = 'w1' AND reserved_until <= clock_timestamp() FROM "+schema+".locks WHERE name = $1", name).Scan(&lapsed)
		return err == nil && lapsed
	})
	if first != nil {
		first()
	}
	return held.Token, acquire("o-w1", "w1")
}

// TestLateHeadServed: a release reserves the lock for the queue's head,
// which comes only after the reservation's end (a wake-up delivered late,
// a starved process). When its own acquire is the first call on the name
// since, it is granted, with a token above the holder's, and the waiter
// behind it keeps its place: nobody was served meanwhile, so the head is
// still first (schema version 8). Before, the lapse sent it to the back of
// the queue, behind everybody who queued meanwhile, and the lock waited for
// the next head's wake-up: on a version 7 schema (testdata) the same late
// head is refused and queued behind the other. When another waiter's call
// comes first after the lapse (here its heartbeat), that one is served and
// the late head loses its turn, as before (engine.Queuer). Seen failing
// with acquire settling the queue as any other call does (the late head
// re-queued at the back).
func TestLateHeadServed(t *testing.T) {
	const schema = "late_head"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v7.sql")
	e := newEngine(t, newPool(t), schema)
	if _, g := lateHead(t, ctx, e, schema, "v7", nil); g.Acquired || !g.Queued || g.Head {
		t.Fatalf("version 7, the late head: %+v, want re-queued behind w2", g)
	}

	upgrade(t, ctx, pool, schema)
	before, g := lateHead(t, ctx, e, schema, "late", nil)
	if !g.Acquired || g.Token <= before {
		t.Fatalf("the late head, first to ask: %+v, want granted with a token above the holder's %d", g, before)
	}
	info, err := e.Inspect(ctx, "late")
	if err != nil || info.Owner != "o-w1" || info.Token != g.Token || info.Waiters != 1 {
		t.Fatalf("after the late head's grant: %+v, %v; want o-w1 holding, w2 queued", info, err)
	}
	var first string
	if err := pool.QueryRow(ctx, "SELECT waiter FROM "+schema+".waiters WHERE name = 'late' ORDER BY ticket LIMIT 1").Scan(&first); err != nil || first != "w2" {
		t.Fatalf("the queue's head: %q, %v; want w2", first, err)
	}

	// The control: another waiter's call (w2's heartbeat) comes first after
	// the lapse; it drops w1's reservation, and w1 is queued behind w2.
	_, g = lateHead(t, ctx, e, schema, "beaten", func() {
		rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "beaten", Owner: "w2", TTL: time.Minute, Waiter: true}})
		if err != nil || rs[0].Err != nil || !rs[0].Wake {
			t.Fatalf("w2's heartbeat after w1's reservation ended: %+v, %v; want Wake", rs, err)
		}
	})
	if g.Acquired || !g.Queued || g.Head {
		t.Fatalf("the late head after another waiter's call: %+v, want queued behind w2", g)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
