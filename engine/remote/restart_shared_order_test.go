//go:build unix

package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/remote"
	"github.com/distlock/distlock/internal/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// TestSharedQueueOrderThroughServerRestart is
// TestQueueOrderThroughServerRestart for a semaphore of one permit:
// waiters queue through server A (real processes on one Redis); A is
// killed and started again on the same port (the waiters name A alone), or
// killed while the waiters name B too. Each waiter's event stream opens
// again on the server left, and the waiter tries again through it. Then
// every queued waiter's wake-ups must go to a channel that an engine
// listens on (the server's that has its stream), and, once the holder
// releases, the waiters must be granted in their arrival order (the
// queue's order before the fault; grants ordered by their fencing tokens),
// none of them dropped from the queue and queued again (no arrival ticket
// taken after theirs).
//
// A shared lock reserves nothing for its head, so a head woken where
// nobody listens keeps its place: it learns its turn from its next
// heartbeat's answer (shared_extend.lua's wake), a heartbeat period
// late. The order alone does not show it; the channel check does.
func TestSharedQueueOrderThroughServerRestart(t *testing.T) {
	for _, c := range []struct {
		name string
		both bool // the clients name B after A, and A is not started again
	}{
		{"restarted on the same port", false},
		{"killed, B named too", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sharedOrderThroughFault(t, c.both)
		})
	}
}

func sharedOrderThroughFault(t *testing.T, both bool) {
	const n, name = 4, "permits"
	srvs, direct, rs := procServers(t, 2)
	a, b := srvs[0], srvs[1]
	urls := []string{a.URL()}
	if both {
		urls = append(urls, b.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sem := func(c *distlock.Client) *distlock.Semaphore { return c.Semaphore(name, 1) }
	l, err := sem(strangerClient(t, urls...)).Acquire(ctx, distlock.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	trails := make([]*requestTrail, n)
	grants := make(chan strangerGrant, n)
	for i := range trails {
		trails[i] = &requestTrail{}
		e, err := remote.New(strings.Join(urls, ","), remote.WithHTTPClient(&http.Client{Transport: trails[i]}))
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
		who := fmt.Sprintf("w%d", i)
		go func() {
			l, err := sem(c).Acquire(ctx, distlock.WithTTL(30*time.Second), distlock.WithOwner(who))
			grants <- strangerGrant{who, l, err}
		}()
		enginetest.WaitFor(t, 20*time.Second, "the "+who+" waiter to queue", func() bool {
			info, err := direct.Inspect(ctx, name)
			return err == nil && info.Waiters > i
		})
	}
	info, err := direct.Inspect(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var arrival []string
	for _, w := range info.Queue {
		arrival = append(arrival, distlock.WaiterOwner(w.ID))
	}
	if len(arrival) != n {
		t.Fatalf("the queue before the fault: %v; want %d waiters", arrival, n)
	}
	state := "distlock:{" + name + "}:sqs" // the shared queue's state (scripts/shared.lua)
	// tickets is the last arrival ticket the queue issued; its state is
	// deleted with its last entry ("" then).
	tickets := func() string {
		v, err := rs.Client().HGet(ctx, state, "n").Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			t.Fatal(err)
		}
		return v
	}
	issued := tickets()

	fault := time.Now()
	for _, tr := range trails {
		tr.from(fault)
	}
	a.kill()
	if !both {
		a.start()
	}
	enginetest.WaitFor(t, time.Minute, "every waiter to try again after its event stream opened again", func() bool {
		for _, tr := range trails {
			if !tr.retried() {
				return false
			}
		}
		return true
	})
	if got := tickets(); got != issued {
		// The fault outlasted the entries' heartbeat ttl (distlock.WaiterTTL):
		// the machine, not the queue, broke the order.
		t.Skipf("machine too slow: arrival tickets %s before the fault, %s after the waiters came back (%v): an entry lapsed while its server was down", issued, got, time.Since(fault))
	}
	var unheard []string
	defer func() {
		if len(unheard) > 0 {
			t.Logf("waiters woken where nobody listens: %v", unheard)
		}
	}()
	enginetest.WaitFor(t, 20*time.Second, "every queued waiter's wake-ups to go to a channel an engine listens on", func() bool {
		unheard = unheardWaiters(t, ctx, rs, name, state)
		return len(unheard) == 0
	})

	released := time.Now()
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	last := l.Token()
	for range n {
		g := <-grants
		if g.err != nil {
			t.Fatalf("waiter %s: %v", g.who, g.err)
		}
		if g.l.Token() <= last {
			t.Fatalf("waiter %s's token %d is not above the previous grant's %d", g.who, g.l.Token(), last)
		}
		last = g.l.Token()
		order = append(order, g.who)
		t.Logf("%s granted %v after the previous release", g.who, time.Since(released).Round(time.Millisecond))
		if got := tickets(); got != issued && (got != "" || len(order) < n) {
			t.Errorf("after %v were granted the queue issued arrival tickets up to %s, %s before the release: a waiter was dropped from the queue and entered it again", order, got, issued)
		}
		released = time.Now()
		if err := g.l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(order, arrival) {
		t.Fatalf("granted in the order %v; the waiters arrived in the order %v", order, arrival)
	}
}

// unheardWaiters lists the waiters queued for shared lock name whose
// wake-ups go to a channel (c:<id> in the queue's state hash state; absent:
// the lock's own) that nobody subscribes to, each with its channel.
func unheardWaiters(t *testing.T, ctx context.Context, rs *redistest.Server, name, state string) []string {
	t.Helper()
	rc := rs.Client()
	ids, err := rc.ZRange(ctx, "distlock:{"+name+"}:sq", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var unheard []string
	for _, id := range ids {
		ch, err := rc.HGet(ctx, state, "c:"+id).Result()
		if errors.Is(err, goredis.Nil) {
			ch = "distlock:{" + name + "}"
		} else if err != nil {
			t.Fatal(err)
		}
		subs, err := rc.PubSubNumSub(ctx, ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		if subs[ch] == 0 {
			unheard = append(unheard, id+" on "+ch)
		}
	}
	return unheard
}
