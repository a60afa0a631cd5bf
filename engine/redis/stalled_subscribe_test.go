package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSubscribeHonoursContextWhileStopped: with the server SIGSTOPped, a
// Subscribe returns when its context ends, every time (go-redis dials and
// handshakes the pub/sub connection again whatever the caller's context,
// and holds it meanwhile: no Subscribe may wait for that, nor for another
// one's), and leaves nothing subscribed; once the server runs again a
// Subscribe is ready when it returns: a message published after it wakes
// it.
func TestSubscribeHonoursContextWhileStopped(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Inspect(ctx, "stalled-warm"); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	// (The harness's clean-up kills a server left paused.)
	probe := enginetest.StartProbe(t)
	const budget = 200 * time.Millisecond
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("stalled-%d", i)
		names = append(names, name)
		cctx, cancel := context.WithTimeout(ctx, budget)
		start := time.Now()
		sub, err := eng.Subscribe(cctx, name)
		took := time.Since(start)
		cancel()
		if err == nil {
			sub.Close()
			t.Fatalf("Subscribe %d: ready with the server stopped", i)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Subscribe %d: %v, want the context's deadline", i, err)
		}
		enginetest.Bounded(t, fmt.Sprintf("Subscribe %d with the server stopped", i), took,
			budget+probe.Slack(), probe.Delay(), time.Second)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	// Ready when Subscribe returns, once the server runs again.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sub, err := eng.Subscribe(cctx, "stalled-after")
	if err != nil {
		t.Fatalf("Subscribe after SIGCONT: %v", err)
	}
	defer sub.Close()
	if err := srv.Client().Publish(ctx, redisengine.Channel(eng, "stalled-after"), "released").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.C():
	case <-cctx.Done():
		t.Fatal("a message published after Subscribe returned did not wake it")
	}
	// The failed subscriptions leave nothing subscribed (their
	// UNSUBSCRIBEs went before the last SUBSCRIBE, or their connection
	// was closed).
	enginetest.WaitFor(t, 30*time.Second, "the failed subscriptions' channels to be unsubscribed", func() bool {
		for _, name := range names {
			ch := redisengine.Channel(eng, name)
			n, err := srv.Client().PubSubNumSub(ctx, ch).Result()
			if err != nil || n[ch] != 0 {
				return false
			}
		}
		return true
	})
}
