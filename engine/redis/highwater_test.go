package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// highWaterRequests are a grant of each kind that mints a token.
func highWaterRequests(name string) []engine.AcquireRequest {
	return []engine.AcquireRequest{
		{Name: name, Owner: "o", TTL: time.Second},
		{Name: name + "-sem", Owner: "o", TTL: time.Second, Kind: engine.Semaphore, Limit: 2, Weight: 1},
	}
}

// TestRefusedWritesAreNoExhaustedTokens: a Redis that refuses writes
// (min-replicas-to-write with no replica: NOREPLICAS; maxmemory reached:
// OOM) fails a grant of every kind with the server's error, a backend
// failure the Client retries, never ErrFenceExhausted, which ends waits and
// says the name can never be granted again (found by an outside tester:
// every mutex grant and campaign answered "tokens exhausted" on a Sentinel
// master set up with min-replicas-to-write, the advice of docs/REDIS.md).
// The fence keys' values written by hand past what a token may be are
// still refused as exhausted, changing nothing.
func TestRefusedWritesAreNoExhaustedTokens(t *testing.T) {
	srv := redistest.Start(t)
	eng, err := redisengine.New(srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	admin := srv.Client()
	for _, refusal := range []struct{ what, param, value, restore string }{
		{"NOREPLICAS", "min-replicas-to-write", "1", "0"},
		{"OOM", "maxmemory", "1", "0"},
	} {
		if err := admin.ConfigSet(ctx, refusal.param, refusal.value).Err(); err != nil {
			t.Fatal(err)
		}
		for _, r := range highWaterRequests("refused") {
			_, err := eng.Acquire(ctx, r)
			if err == nil || errors.Is(err, engine.ErrFenceExhausted) || !strings.Contains(err.Error(), refusal.what) {
				t.Errorf("%s, %v: Acquire = %v; want Redis's %s, not exhausted tokens", refusal.what, r.Kind, err, refusal.what)
			}
		}
		if err := admin.ConfigSet(ctx, refusal.param, refusal.restore).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []struct {
		what string
		set  func(key string) error
	}{
		{"past 2^53-1", func(k string) error { return admin.Set(ctx, k, "9007199254740991", 0).Err() }},
		{"not an integer", func(k string) error { return admin.Set(ctx, k, "x", 0).Err() }},
		{"a hash", func(k string) error { return admin.HSet(ctx, k, "f", "1").Err() }},
	} {
		for _, r := range highWaterRequests("bad") {
			key := redisengine.DefaultPrefix + "{" + r.Name + "}:fence"
			if err := admin.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := bad.set(key); err != nil {
				t.Fatal(err)
			}
			before, _ := admin.Dump(ctx, key).Result()
			if _, err := eng.Acquire(ctx, r); !errors.Is(err, engine.ErrFenceExhausted) {
				t.Errorf("high-water %s, %v: Acquire = %v; want ErrFenceExhausted", bad.what, r.Kind, err)
			}
			if after, _ := admin.Dump(ctx, key).Result(); after != before {
				t.Errorf("high-water %s, %v: the refused grant changed it", bad.what, r.Kind)
			}
		}
	}
}
