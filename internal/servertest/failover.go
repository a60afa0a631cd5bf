package servertest

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/remote"
)

// KillOneOfTwo runs the failover scenario on two servers of one backend
// (urls; kill stops the first one for good) and checks what must hold,
// reading the backend itself with inspect. Two clients name both servers
// (the first is their current one). While one holds a lease with
// auto-renewal (ttl) and the other waits for the lock (queued through the
// first server), the first server is killed. The lease is not lost:
// renewals sent after the kill are confirmed through the second server,
// Done stays open, the token stays, and the backend still shows the same
// holder; the waiter is granted through the second server when the holder
// releases, with a greater token.
func KillOneOfTwo(t *testing.T, urls [2]string, kill func(), ttl time.Duration, inspect func(context.Context, string) (engine.Info, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	both := urls[0] + "," + urls[1]
	client := func() *distlock.Client {
		e, err := remote.New(both)
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
		return c
	}
	holder, waiter := client(), client()

	l, err := holder.Acquire(ctx, "job", distlock.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	ttl = l.TTL() // as the engine fitted it
	token, owner := l.Token(), l.Owner()
	type result struct {
		l   *distlock.Lease
		err error
	}
	waited := make(chan result, 1)
	go func() {
		wl, err := waiter.Acquire(ctx, "job", distlock.WithTTL(ttl))
		waited <- result{wl, err}
	}()
	waitFor(ctx, t, "the waiter to queue", func() bool {
		info, err := inspect(ctx, "job")
		return err == nil && info.Waiters > 0
	})

	kill()
	// Two renewals sent after the kill, confirmed through the other
	// server: the deadline is counted from a send after the kill, one ttl
	// (less the drift) later.
	for range 2 {
		after := time.Now()
		waitFor(ctx, t, "a renewal through the other server", func() bool {
			select {
			case <-l.Done():
				t.Fatalf("the lease was lost when one server of two stopped answering: %v", l.Err())
			default:
			}
			return l.Deadline().After(after.Add(ttl - engine.Drift(ttl)))
		})
	}
	if err := l.Err(); err != nil || l.Token() != token {
		t.Fatalf("lease after the kill: err %v, token %d (was %d)", err, l.Token(), token)
	}
	info, err := inspect(ctx, "job")
	if err != nil || !info.Held || info.Owner != owner || info.Token != token {
		t.Fatalf("the backend shows %+v, %v; want held by %s with token %d", info, err, owner, token)
	}
	select {
	case r := <-waited:
		t.Fatalf("the waiter returned while the lock was held: %v, %v", r.l, r.err)
	default:
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release through the other server: %v", err)
	}
	r := <-waited
	if r.err != nil {
		t.Fatalf("the waiter, queued through the killed server: %v", r.err)
	}
	if r.l.Token() <= token {
		t.Fatalf("the waiter's token %d is not above the holder's %d", r.l.Token(), token)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test at ctx's end.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting: %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
