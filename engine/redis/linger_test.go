package redis_test

import (
	"context"
	"testing"
	"time"

	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestSubscriptionLingers: a lock's channel stays subscribed for a while
// (2s) after its last subscription closed, so that a Client's next wait
// finds it subscribed (recentwaits.go), and is unsubscribed afterwards.
func TestSubscriptionLingers(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	channel := redisengine.DefaultPrefix + "{job}"
	numsub := func() int64 {
		t.Helper()
		n, err := srv.Client().PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[channel]
	}
	sub, err := eng.Subscribe(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if n := numsub(); n != 1 {
		t.Fatalf("%d subscribers of the channel, want 1", n)
	}
	closed := time.Now()
	sub.Close()
	n := numsub()
	if time.Since(closed) < time.Second && n != 1 { // read well within the linger
		t.Fatalf("the channel was unsubscribed as its last subscription closed (%d subscribers)", n)
	}
	for deadline := time.Now().Add(30 * time.Second); numsub() != 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the channel stayed subscribed without subscribers")
		}
	}
}
