package distlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestStrangerAdminRedisFaultsWaitersServed: fair waiters (three, of a
// mutex or a semaphore) queued behind a holder on one redis-server, while
// what the engine stores is damaged under them: the queue's keys deleted
// by hand, the lock's key deleted (the holder's grant lost), the fencing
// high-water deleted with it, the shared queue's keys deleted, the server
// restarted without persistence, the server stopped (SIGSTOP) past the
// waiters' heartbeat ttl. In every case every waiter is served (none
// waits for ever: within its 30 s context), each token is above the
// holder's and above the one granted before it. (Passes: recorded as
// checked; after the stop the fair order is not kept, docs/REDIS.md.)
func TestStrangerAdminRedisFaultsWaitersServed(t *testing.T) {
	srv := redistest.Start(t)
	client := func() *distlock.Client {
		e, err := redisengine.New(srv.Client())
		if err != nil {
			t.Fatal(err)
		}
		c := distlock.New(e)
		t.Cleanup(func() { _ = c.Close(); _ = e.Close() })
		return c
	}
	a, b := client(), client()
	ctx := strangerCtx(t, 120*time.Second)
	key := func(name, suffix string) string { return redisengine.DefaultPrefix + "{" + name + "}" + suffix }
	cases := []struct {
		what   string
		shared bool
		damage func(name string)
	}{
		{"queue keys deleted", false, func(name string) {
			_ = srv.Del(ctx, key(name, ":q"), key(name, ":qd"), key(name, ":qs"))
		}},
		{"lock and queue keys deleted", false, func(name string) {
			_ = srv.Del(ctx, key(name, ""), key(name, ":q"), key(name, ":qd"), key(name, ":qs"))
		}},
		{"lock and fence keys deleted", false, func(name string) {
			_ = srv.Del(ctx, key(name, ""), key(name, ":fence"))
		}},
		{"shared queue keys deleted", true, func(name string) {
			_ = srv.Del(ctx, key(name, ":sq"), key(name, ":sqd"), key(name, ":sqs"))
		}},
		{"restarted without persistence", true, func(string) {
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
		}},
		{"stopped past the waiters' heartbeat ttl", false, func(name string) {
			// The fault itself: the server stopped until every queue
			// entry's heartbeat deadline has passed, as the queue recorded
			// them (:qd, server time in µs: this machine's clock).
			rc := srv.Client()
			ds, err := rc.ZRangeWithScores(ctx, key(name, ":qd"), 0, -1).Result()
			_ = rc.Close()
			if err != nil || len(ds) == 0 {
				t.Fatalf("the queue's heartbeat deadlines: %v, %v", ds, err)
			}
			last := int64(ds[len(ds)-1].Score)
			if err := srv.Pause(); err != nil {
				t.Fatal(err)
			}
			enginetest.WaitFor(t, time.Minute, "every queue entry's heartbeat deadline to pass", func() bool {
				return time.Now().UnixMicro() > last
			})
			if err := srv.Resume(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tc := range cases {
		name := "faults-" + string(rune('a'+i))
		take := func(c *distlock.Client, ctx context.Context, opts ...distlock.Option) (*distlock.Lease, error) {
			if tc.shared {
				return c.Semaphore(name, 1).Acquire(ctx, opts...)
			}
			return c.Acquire(ctx, name, opts...)
		}
		h, err := take(a, ctx, distlock.WithTTL(12*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var tokens []uint64
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				l, err := take(b, wctx, distlock.WithFair())
				if err != nil {
					t.Errorf("%s: waiter %d: %v", tc.what, w, err)
					return
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				_ = l.Release(ctx)
			}()
			enginetest.WaitFor(t, 10*time.Second, tc.what+": the waiter queued", func() bool {
				info, err := a.Inspect(ctx, name)
				return err == nil && info.Waiters == w+1
			})
		}
		tc.damage(name)
		_ = h.Release(ctx) // may find its grant gone
		wg.Wait()
		last := h.Token()
		for _, tok := range tokens {
			if tok <= last {
				t.Errorf("%s: tokens %v after the holder's %d: not increasing", tc.what, tokens, h.Token())
				break
			}
			last = tok
		}
		if len(tokens) != 3 {
			t.Errorf("%s: %d of 3 waiters served", tc.what, len(tokens))
		}
	}
}
