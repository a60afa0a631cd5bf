package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/lagprobe"
	"github.com/distlock/distlock/internal/redistest"
)

func newClient(t *testing.T, srv *redistest.Server) *distlock.Client {
	t.Helper()
	c := distlock.New(listEngine(t, srv.Client()))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTokensAcrossFlushAndRestart: tokens strictly increase over 1,000
// grants that include expiries, a FLUSHALL and a restart of a server with no
// persistence (the high-water is gone; time seeding keeps the order).
func TestTokensAcrossFlushAndRestart(t *testing.T) {
	srv := redistest.Start(t)
	a, b := newClient(t, srv), newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last uint64
	for i := range 1000 {
		switch i {
		case 300:
			if err := srv.FlushAll(ctx); err != nil {
				t.Fatal(err)
			}
		case 600:
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}
		c := a
		if i%3 == 0 {
			c = b
		}
		expire := i%100 == 50
		opts := []distlock.Option{distlock.WithTTL(time.Second)}
		if expire {
			opts = []distlock.Option{distlock.WithTTL(distlock.MinTTL), distlock.WithAutoRenew(false)}
		}
		l, err := c.Acquire(ctx, "fenced", opts...)
		if err != nil {
			t.Fatalf("grant %d: %v", i, err)
		}
		if l.Token() <= last {
			t.Fatalf("grant %d: token %d not above %d", i, l.Token(), last)
		}
		last = l.Token()
		if expire {
			<-l.Done()
			continue
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
}

// TestTokensWithoutTimeSeedingControl shows the restart check has teeth: a
// high-water counter alone (what a plain INCR key gives) restarts from 1 when
// the server loses its data, so its tokens go backwards.
func TestTokensWithoutTimeSeedingControl(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client()
	ctx := context.Background()
	for range 5 {
		rc.Incr(ctx, "counter-token")
	}
	before, _ := rc.Get(ctx, "counter-token").Int64()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	after, err := rc.Incr(ctx, "counter-token").Result()
	if err != nil {
		t.Fatal(err)
	}
	if after > before {
		t.Fatalf("counter token %d after restart, above %d: the restart did not lose state", after, before)
	}
}

// TestLossWhenServerPaused: with the server SIGSTOPped every renewal hangs;
// the holder is told at the local deadline (Lease.Deadline), by its own
// timer: not before it, and after it by no more than the scheduling delay
// measured meanwhile.
func TestLossWhenServerPaused(t *testing.T) {
	srv := redistest.Start(t)
	probe := enginetest.StartProbe(t)
	c := newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ttl = 300 * time.Millisecond
	l, err := c.Acquire(ctx, "paused", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	// A renewal went through (the deadline moved).
	granted := l.Deadline()
	for !l.Deadline().After(granted) {
		select {
		case <-l.Done():
			t.Skipf("machine too slow: the lease was lost before its first renewal: %v", l.Err())
		case <-time.After(time.Millisecond):
		}
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	defer srv.Resume()
	select {
	case <-l.Done():
	case <-ctx.Done():
		t.Fatal("loss not signalled with the server paused")
	}
	var lost *distlock.LostError
	if !errors.As(l.Err(), &lost) || lost.Cause != distlock.Unreachable || !errors.Is(l.Err(), distlock.ErrLeaseLost) {
		t.Fatalf("Err = %v, want LostError(unreachable)", l.Err())
	}
	if early := l.Deadline().Sub(lost.At); early > 0 {
		t.Fatalf("loss signalled %v before the local deadline", early)
	}
	enginetest.Bounded(t, "the loss signal after the local deadline", lost.At.Sub(l.Deadline()), probe.Slack(), probe.Delay(), ttl)
	// The deadline is conservative: the server still had the key then.
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
}

// TestWaiterAcrossRestart: a waiter whose subscription connection broke
// (server restarted) still gets the lock once it is free, by re-subscribing
// or by the ttl-bounded wait.
func TestWaiterAcrossRestart(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := newClient(t, srv), newClient(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := holder.Acquire(ctx, "restart", distlock.WithTTL(2*time.Second), distlock.WithAutoRenew(false)); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Acquire(ctx, "restart")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	for {
		info, err := holder.Inspect(ctx, "restart")
		if err != nil {
			t.Fatal(err)
		}
		if info.Waiters > 0 {
			break // the waiter waits
		}
		time.Sleep(time.Millisecond)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter never got the lock after the restart: %v", err)
	}
}

// TestKeysShareHashTag: every key a lock uses lives in the lock's hash slot,
// so the scripts are legal on Cluster; and nothing else is left behind.
func TestKeysShareHashTag(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	rc := srv.Client()
	keys, err := rc.Keys(ctx, "*").Result() // test-side only
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"distlock:{orders:42}": true, "distlock:{orders:42}:fence": true}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	slot, _ := rc.ClusterKeySlot(ctx, "distlock:{orders:42}").Result()
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q", k)
		}
		if s, _ := rc.ClusterKeySlot(ctx, k).Result(); s != slot {
			t.Fatalf("key %q in slot %d, lock in %d", k, s, slot)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	keys, _ = rc.Keys(ctx, "*").Result()
	if len(keys) != 1 || keys[0] != "distlock:{orders:42}:fence" {
		t.Fatalf("after release: %v, want only the high-water key", keys)
	}
	if ttl, _ := rc.PTTL(ctx, keys[0]).Result(); ttl <= 0 || ttl > redisengine.DefaultFenceTTL {
		t.Fatalf("high-water key ttl %v: must expire (no permanent key per name)", ttl)
	}
}

// TestScriptCacheFlushed: after SCRIPT FLUSH (or a restart) every operation
// still works, the batched renewal included.
func TestScriptCacheFlushed(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	rc := srv.Client()
	probe := enginetest.StartProbe(t)
	l, err := c.Acquire(ctx, "noscript", distlock.WithTTL(900*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Two renewals confirmed after the flush (the lease's deadline moved
	// twice): they ran through NOSCRIPT.
	for moved, last := 0, l.Deadline(); moved < 2; {
		select {
		case <-l.Done():
			if d := probe.Delay(); d >= lagprobe.Starved {
				t.Skipf("machine too slow: measured scheduling delay %v; the lease was lost: %v", d, l.Err())
			}
			t.Fatalf("lease lost after SCRIPT FLUSH: %v", l.Err())
		case <-time.After(time.Millisecond):
		}
		if d := l.Deadline(); d.After(last) {
			moved, last = moved+1, d
		}
	}
	rc.ScriptFlush(ctx)
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	rc.ScriptFlush(ctx)
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rc.ScriptFlush(ctx)
	if _, err := c.TryAcquire(ctx, "noscript"); err != nil {
		t.Fatal(err)
	}
}

// TestBackendErrors: an unreachable server is a backend error, never
// "locked", and a wait on it ends with the context, naming the last error.
func TestBackendErrors(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := c.TryAcquire(ctx, "down")
	var be *distlock.BackendError
	if !errors.As(err, &be) || !errors.Is(err, distlock.ErrBackend) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("TryAcquire on a dead server: %v, want *BackendError", err)
	}
	if !strings.Contains(err.Error(), srv.Addr()) {
		t.Fatalf("backend error does not name the node: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = c.Acquire(wctx, "down")
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, distlock.ErrBackend) || errors.Is(err, distlock.ErrLocked) {
		t.Fatalf("Acquire on a dead server: %v", err)
	}
	if _, err := c.Inspect(ctx, "down"); !errors.Is(err, distlock.ErrBackend) {
		t.Fatalf("Inspect on a dead server: %v", err)
	}
}

// TestBadInputChangesNothing: invalid calls send nothing to Redis.
func TestBadInputChangesNothing(t *testing.T) {
	srv := redistest.Start(t)
	c := newClient(t, srv)
	ctx := context.Background()
	rc := srv.Client()
	before := commandCount(t, rc)
	for _, call := range []func() error{
		func() error { _, err := c.TryAcquire(ctx, ""); return err },
		func() error { _, err := c.TryAcquire(ctx, "x", distlock.WithTTL(time.Millisecond)); return err },
		func() error { _, err := c.Attach(ctx, "x", ""); return err },
		func() error { _, err := c.Inspect(ctx, strings.Repeat("n", 600)); return err },
	} {
		if err := call(); !errors.Is(err, distlock.ErrInvalidArgument) {
			t.Fatalf("got %v", err)
		}
	}
	// commandCount itself is the only traffic (INFO twice).
	if after := commandCount(t, rc); after != before+1 {
		t.Fatalf("bad input sent %d commands", after-before-1)
	}
}

func commandCount(t *testing.T, rc *goredis.Client) int64 {
	t.Helper()
	info, err := rc.Info(context.Background(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			var n int64
			for _, ch := range v {
				n = n*10 + int64(ch-'0')
			}
			return n
		}
	}
	t.Fatal("no total_commands_processed in INFO")
	return 0
}
