package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestLeaksReportsCountingLatch: Leaks reports a countdown latch still
// counting (its row has no expiry by design) as a Leak of kind other and
// type LatchLeakType, TTL -1, as the Redis, etcd and ZooKeeper engines
// report theirs, in its name's place among the locks' leaks: a name with a
// leaked mutex and a latch gives both, on one page even at limit 1 (the
// cursor is a name). A latch counted down to zero is gone, and no longer
// reported; Leaks changes no count. Before the fix Leaks read the locks'
// tables only, and a latch left counting was never reported.
func TestLeaksReportsCountingLatch(t *testing.T) {
	const schema = "latch_leaks"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, schema)
	c := distlock.New(e)
	defer c.Close()
	base := uniqueName(t) + "/"
	both, latch := base+"a", base+"b"
	l, err := c.Acquire(ctx, both, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	if tag, err := pool.Exec(ctx, `UPDATE `+schema+`.locks SET expires_at = NULL WHERE name = $1`, both); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("making the mutex's lease endless: %v", err)
	}
	for _, n := range []string{both, latch} {
		if ok, err := c.CountDownLatch(n).TrySetCount(ctx, 2); err != nil || !ok {
			t.Fatalf("TrySetCount %s: %v, %v", n, ok, err)
		}
	}

	var got []engine.Leak
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatalf("Leaks pages without end: %+v", got)
		}
		leaks, next, err := e.Leaks(ctx, base, time.Hour, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(leaks) > 2 || len(leaks) == 2 && leaks[0].Name != leaks[1].Name {
			t.Fatalf("a page of limit 1: %+v; want one name's leaks", leaks)
		}
		got = append(got, leaks...)
		if next == "" {
			break
		}
		cursor = next
	}
	want := []engine.Leak{
		{Key: both, Name: both, Kind: engine.LeakLock, Type: "row", TTL: -1},
		{Key: both, Name: both, Kind: engine.LeakOther, Type: postgres.LatchLeakType, TTL: -1},
		{Key: latch, Name: latch, Kind: engine.LeakOther, Type: postgres.LatchLeakType, TTL: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("Leaks: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("leak %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	for range 2 {
		if err := c.CountDownLatch(latch).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leaks, _, err := e.Leaks(ctx, base, time.Hour, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaks) != 2 || leaks[0].Name != both || leaks[1].Name != both {
		t.Fatalf("Leaks after %s reached zero: %+v, want only %s's two", latch, leaks, both)
	}
	if n, err := c.CountDownLatch(both).Count(ctx); err != nil || n != 2 {
		t.Fatalf("%s's count after Leaks: %d, %v; want 2", both, n, err)
	}
	if leaks, _, err := e.Leaks(ctx, base+"z", time.Hour, "", 10); err != nil || len(leaks) != 0 {
		t.Fatalf("Leaks under another prefix: %+v, %v; want none", leaks, err)
	}
}
