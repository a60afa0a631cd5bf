package redis_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestMutexRefusedByLiveSharedHolders: the mutex's acquire script refuses
// a name whose shared lock has a live holder, on its uncontended path (the
// keys sent without the queue's) and as a waiter (every key), with
// engine.KindError, and changes nothing: no lock, no queue, no mark, the
// high-water and the holder as they were. A holder whose deadline passed
// in the server's time refuses nothing, though its entry is still there
// (only the shared scripts drop it): the mutex is granted.
func TestMutexRefusedByLiveSharedHolders(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client()
	e := listEngine(t, c)
	ctx := listCtx(t)
	const name = "kinds"
	if g, err := e.Acquire(ctx, semReq(name, "holder", time.Minute, 2, 1)); err != nil || !g.Acquired {
		t.Fatalf("semaphore: %+v, %v", g, err)
	}
	before := dumpKeys(t, ctx, c, name)
	want := engine.KindError(name, engine.Semaphore, 0).Error()
	for _, waiter := range []string{"", "w"} {
		r := engine.AcquireRequest{Name: name, Owner: "m", TTL: time.Minute, Attempt: "m", OneOff: true, Waiting: true}
		if waiter != "" {
			r.Waiter, r.WaiterTTL = waiter, time.Minute
		}
		g, err := e.Acquire(ctx, r)
		var ae *engine.ArgumentError
		if g.Acquired || !errors.As(err, &ae) || err.Error() != want {
			t.Fatalf("mutex (waiter %q) of a name with a live shared holder: %+v, %v; want %q", waiter, g, err, want)
		}
	}
	if after := dumpKeys(t, ctx, c, name); after != before {
		t.Fatalf("the refusals changed the keys:\n%s\nbefore:\n%s", after, before)
	}

	// A holder whose lease ended in the server's time, with nothing run on
	// the name since: its entry is still there, and refuses nothing.
	const dead = "kinds-dead"
	deadKeys := redisengine.SharedKeys(e, dead) // [2]: the holders
	if g, err := e.Acquire(ctx, semReq(dead, "holder", 200*time.Millisecond, 2, 1)); err != nil || !g.Acquired {
		t.Fatalf("semaphore: %+v, %v", g, err)
	}
	deadline, err := c.ZScore(ctx, deadKeys[2], "holder").Result()
	if err != nil {
		t.Fatal(err)
	}
	for serverMicros(t, c) <= int64(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n, err := c.Exists(ctx, deadKeys[2]).Result(); err != nil || n != 1 {
		t.Fatalf("the dead holder's entry: %d, %v", n, err)
	}
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: dead, Owner: "m", TTL: time.Minute, Attempt: "m", OneOff: true})
	if err != nil || !g.Acquired {
		t.Fatalf("mutex after the shared holder's lease ended: %+v, %v", g, err)
	}
}

// dumpKeys renders the name's keys, their values and whether they expire.
func dumpKeys(t *testing.T, ctx context.Context, c goredis.UniversalClient, name string) string {
	t.Helper()
	ks, err := c.Keys(ctx, redisengine.DefaultPrefix+"{"+name+"}*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ks)
	out := ""
	for _, k := range ks {
		v, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		pttl, _ := c.PTTL(ctx, k).Result()
		out += k + " " + v + " " + fmtExpiry(pttl) + "\n"
	}
	return out
}

func fmtExpiry(d time.Duration) string {
	if d < 0 {
		return "persistent"
	}
	return "expires"
}
