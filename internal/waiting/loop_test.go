package waiting

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

func TestSleep(t *testing.T) {
	held := engine.Grant{HolderTTL: 2 * time.Second}
	cases := []struct {
		what               string
		a                  Answer
		queued, subscribed bool
		lo, hi             time.Duration
	}{
		{"failed: a jittered poll", Answer{Failed: true}, true, true, PollFallback / 2, 3 * PollFallback / 2},
		{"split vote: the engine's pause", Answer{Grant: engine.Grant{Retry: 7 * time.Millisecond}}, false, true, 7 * time.Millisecond, 7 * time.Millisecond},
		{"queued behind the head: until woken", Answer{Grant: engine.Grant{Queued: true, HolderTTL: time.Second}}, true, true, -1, -1},
		{"the head: the holder's time left", Answer{Grant: engine.Grant{Queued: true, Head: true, HolderTTL: time.Second}}, true, true, time.Second, time.Second},
		{"no queue: the holder's time left", Answer{Grant: held}, false, true, 2 * time.Second, 2 * time.Second},
		{"no expiry: a slow poll", Answer{Grant: engine.Grant{HolderTTL: -1}}, false, true, 5 * PollFallback, 15 * PollFallback},
		{"expiring now: 1ms", Answer{Grant: engine.Grant{HolderTTL: 10 * time.Microsecond}}, false, true, time.Millisecond, time.Millisecond},
		{"no wake-ups: at most a poll", Answer{Grant: held}, false, false, PollFallback / 2, 3 * PollFallback / 2},
		{"no wake-ups, behind the head: a poll", Answer{Grant: engine.Grant{Queued: true}}, true, false, PollFallback / 2, 3 * PollFallback / 2},
	}
	for _, tc := range cases {
		if d := Sleep(tc.a, tc.queued, tc.subscribed); d < tc.lo || d > tc.hi {
			t.Errorf("%s: %v, want [%v, %v]", tc.what, d, tc.lo, tc.hi)
		}
	}
}

// TestRunLeavesQueue: a queued waiter whose wait ends without the lock
// leaves the queue before Run returns, whichever way it ended; Stop ends it
// with ErrStopped. On the fake clock (testing/synctest): the 50ms budget
// runs out only once the first try has been made, however late the
// machine runs the test (in real time a descheduled first try came after
// it, and "stop" ended with the deadline instead).
func TestRunLeavesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		t.Cleanup(func() { _ = eng.Close() })
		ctx := context.Background()
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "holder", TTL: time.Minute}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		for _, how := range []string{"context", "stop"} {
			stop := make(chan struct{})
			tries := 0
			l := Loop{Engine: eng, Name: "n", Queue: eng, Waiter: "w-" + how, Stop: stop,
				Detached: func(ctx context.Context) (context.Context, context.CancelFunc) {
					return context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				}}
			l.Try = func(ctx context.Context) Answer {
				tries++
				g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "o-" + how, TTL: time.Minute, Waiter: l.Waiter, WaiterTTL: time.Minute})
				if tries == 1 {
					if how == "stop" {
						close(stop)
					}
				}
				return Answer{Grant: g, Failed: err != nil, Done: g.Acquired}
			}
			rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			err := l.Run(rctx)
			cancel()
			want := context.DeadlineExceeded
			if how == "stop" {
				want = ErrStopped
			}
			if !errors.Is(err, want) {
				t.Fatalf("%s: Run = %v, want %v", how, err, want)
			}
			info, err := eng.Inspect(ctx, "n")
			if err != nil || info.Waiters != 0 {
				t.Fatalf("%s: still queued after Run returned: %+v %v", how, info, err)
			}
		}
	})
}
