package redis_test

import (
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// TestTakenMarksExpire: the marks a force-release leaves for the holders it
// freed, of a mutex and of a shared lock, are in the name's :t key, which
// expires with the latest lease they would have had: nothing is left in
// the shared lock's state (which lives for days), and a holder that never
// renews leaves nothing behind once its lease would have ended. A renewal
// is told taken over, and so is the same renewal resent.
func TestTakenMarksExpire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client()
	e := listEngine(t, c)
	ctx := listCtx(t)
	const ttl = 20 * time.Second
	if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "m", Owner: "mo", TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []string{"a", "b"} {
		if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "s", Owner: o, TTL: ttl, Kind: engine.Semaphore, Limit: 3, Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"m", "s"} {
		if held, err := e.ForceRelease(ctx, name); err != nil || !held {
			t.Fatalf("ForceRelease(%s) = %v, %v", name, held, err)
		}
	}
	for _, k := range []struct{ name, owner string }{{"m", "mo"}, {"s", "a"}, {"s", "b"}} {
		key := "distlock:{" + k.name + "}:t"
		if ok, err := c.HExists(ctx, key, k.owner).Result(); err != nil || !ok {
			t.Fatalf("no mark for %s in %s: %v", k.owner, key, err)
		}
		left, err := c.PTTL(ctx, key).Result()
		if err != nil || left <= 0 || left > ttl {
			t.Fatalf("%s expires in %v (%v), want within the freed lease's %v", key, left, err, ttl)
		}
	}
	if fields, err := c.HKeys(ctx, "distlock:{s}:s").Result(); err != nil {
		t.Fatal(err)
	} else {
		for _, f := range fields {
			if f[0] == 't' {
				t.Fatalf("a mark %q left in the shared lock's state, which lives for days", f)
			}
		}
	}
	res, err := e.Extend(ctx, []engine.ExtendRequest{{Name: "m", Owner: "mo", TTL: ttl}, {Name: "s", Owner: "a", TTL: ttl, Kind: engine.Semaphore}})
	if err != nil || res[0].Status != engine.HeldByOther || res[1].Status != engine.HeldByOther {
		t.Fatalf("the freed holders' renewals: %+v, %v; want held by other (taken over)", res, err)
	}
	// A renewal resent (its reply lost) is answered the same.
	res, err = e.Extend(ctx, []engine.ExtendRequest{{Name: "m", Owner: "mo", TTL: ttl}, {Name: "s", Owner: "a", TTL: ttl, Kind: engine.Semaphore}})
	if err != nil || res[0].Status != engine.HeldByOther || res[1].Status != engine.HeldByOther {
		t.Fatalf("the renewals resent: %+v, %v; want held by other again", res, err)
	}
	// Marks past their end are pruned by the next force-release: a holder
	// freed with 300 ms left, then one with a long lease (which keeps the
	// key), then, once the first's end passed in server time, a third.
	force := func(owner string, ttl time.Duration) {
		t.Helper()
		if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "p", Owner: owner, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
		if held, err := e.ForceRelease(ctx, "p"); err != nil || !held {
			t.Fatalf("ForceRelease(p) of %s = %v, %v", owner, held, err)
		}
	}
	force("short", 300*time.Millisecond)
	force("long", ttl)
	ends, err := c.HGet(ctx, "distlock:{p}:t", "short").Int64()
	if err != nil {
		t.Fatal(err)
	}
	for {
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if now.UnixMicro() > ends {
			break
		}
		time.Sleep(time.Duration(ends-now.UnixMicro()) * time.Microsecond)
	}
	force("third", ttl)
	if owners, err := c.HKeys(ctx, "distlock:{p}:t").Result(); err != nil || len(owners) != 2 {
		t.Fatalf("marks of p: %v, %v; want long and third (short's end passed)", owners, err)
	}
}
