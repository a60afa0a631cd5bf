package waiting

// The wait loop and the heartbeats on a fake clock (testing/synctest),
// against the embedded engine, as the server's held-open acquires use them:
// time moves only when every goroutine of the bubble is blocked, so the
// tests assert the exact instants of attempts and heartbeats. The engine is
// made inside the bubble, so that it reads the bubble's clock.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
)

// beatTTL is the waiters' heartbeat ttl in these tests: a beat every second.
const beatTTL = 3 * time.Second

// beats is the memory engine with the times of its waiter heartbeats.
type beats struct {
	*memory.Engine
	mu sync.Mutex
	at []time.Time
}

func (b *beats) Extend(ctx context.Context, rs []engine.ExtendRequest) ([]engine.ExtendResult, error) {
	b.mu.Lock()
	for _, r := range rs {
		if r.Waiter {
			b.at = append(b.at, time.Now())
		}
	}
	b.mu.Unlock()
	return b.Engine.Extend(ctx, rs)
}

func (b *beats) times() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.at...)
}

// queuedWait runs, in a goroutine, a server-style wait for name on eng: a
// queued waiter with its own heartbeats (Beat), as the server's held-open
// acquire. It returns a channel that receives the time of the attempt that
// was granted, or the zero time when Run ended otherwise.
func queuedWait(ctx context.Context, eng *beats, name string) <-chan time.Time {
	const id = "waiter"
	beat := NewBeat(eng, name, id, beatTTL)
	var granted time.Time
	l := &Loop{Engine: eng, Name: name, Queue: eng, Waiter: id, Queued: beat.Start, Kick: beat.Kick(),
		Detached: func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		}}
	l.Try = func(ctx context.Context) Answer {
		at := time.Now()
		g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "owner", TTL: time.Minute, Waiter: id, WaiterTTL: beatTTL})
		if g.Acquired {
			granted = at
		}
		return Answer{Grant: g, Failed: err != nil, Done: g.Acquired}
	}
	done := make(chan time.Time, 1)
	go func() {
		_ = l.Run(ctx)
		beat.Stop()
		done <- granted
	}()
	return done
}

// TestFakeClockLoopWokenByRelease: a queued waiter heartbeats every ttl/3
// from its entry, and a release wakes it at that instant: it is granted
// then, not at its next heartbeat.
func TestFakeClockLoopWokenByRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &beats{Engine: memory.New()}
		ctx := context.Background()
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "holder", TTL: time.Hour}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, time.Hour) // fake time: fails a waiter never woken
		defer cancel()
		done := queuedWait(wctx, eng, "n")
		time.Sleep(3*beatTTL/3 + beatTTL/6) // three heartbeats, then half a beat
		synctest.Wait()
		at := eng.times()
		if len(at) != 3 {
			t.Fatalf("heartbeats at %v after the entry, want 3, every %v", at, beatTTL/3)
		}
		for i, a := range at {
			if want := start.Add(time.Duration(i+1) * beatTTL / 3); !a.Equal(want) {
				t.Fatalf("heartbeat %d %v after the entry, want %v", i+1, a.Sub(start), want.Sub(start))
			}
		}
		released := time.Now()
		if res, err := eng.Release(ctx, engine.ReleaseRequest{Name: "n", Owner: "holder"}); err != nil || res.Status != engine.Released {
			t.Fatal(res, err)
		}
		if granted := <-done; !granted.Equal(released) {
			t.Fatalf("granted %v after the release, want at it (woken by it)", granted.Sub(released))
		}
	})
}

// TestFakeClockLoopSleepsUntilExpiry: the head of the queue, behind a
// holder that never releases, tries again at the instant the holder's
// lease runs out (a ttl no multiple of the heartbeat interval, so that no
// heartbeat wakes it).
func TestFakeClockLoopSleepsUntilExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := &beats{Engine: memory.New()}
		ctx := context.Background()
		start := time.Now()
		const holderTTL = 2500 * time.Millisecond
		if g, err := eng.Acquire(ctx, engine.AcquireRequest{Name: "n", Owner: "holder", TTL: holderTTL}); err != nil || !g.Acquired {
			t.Fatal(g, err)
		}
		wctx, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		if granted := <-queuedWait(wctx, eng, "n"); !granted.Equal(start.Add(holderTTL)) {
			t.Fatalf("granted %v after the holder's grant, want when its ttl %v ran out", granted.Sub(start), holderTTL)
		}
	})
}

// TestFakeClockLoopPollsAfterFailure: after a failed attempt the loop
// tries again after a jittered PollFallback, in [PollFallback/2,
// 3*PollFallback/2), not at once and not later.
func TestFakeClockLoopPollsAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		eng := memory.New()
		var tries []time.Time
		l := Loop{Engine: eng, Name: "n"}
		l.Try = func(context.Context) Answer {
			tries = append(tries, time.Now())
			return Answer{Failed: len(tries) < 20, Done: len(tries) == 20}
		}
		if err := l.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(tries); i++ {
			if gap := tries[i].Sub(tries[i-1]); gap < PollFallback/2 || gap >= 3*PollFallback/2 {
				t.Fatalf("attempt %d came %v after the failed one, want a jittered %v", i+1, gap, PollFallback)
			}
		}
	})
}
