package redis_test

import (
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// markBackends are a Redis server and a Redis Cluster of three masters.
func markBackends() map[string]func(t *testing.T) goredis.UniversalClient {
	return map[string]func(t *testing.T) goredis.UniversalClient{
		"redis":   func(t *testing.T) goredis.UniversalClient { return redistest.Start(t).Client() },
		"cluster": func(t *testing.T) goredis.UniversalClient { return redistest.StartCluster(t, 3).Client() },
	}
}

// TestLeaksSkipForceReleaseMark: the mark a force-release leaves
// (distlock:{NAME}:t) is no leak, whatever --max-ttl is: it goes by
// itself when the freed lease would have ended (engine.ForceReleaser). A
// mark with no ttl (not distlock's: set or PERSISTed by hand) is one.
// Before, Leaks reported the mark as an "other" key whenever maxTTL was
// below the freed lease's time left.
func TestLeaksSkipForceReleaseMark(t *testing.T) {
	for backend, open := range markBackends() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			c := open(t)
			e := listEngine(t, c)
			ctx := listCtx(t)
			if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "m", Owner: "mo", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "s", Owner: "so", TTL: time.Minute, Kind: engine.Semaphore, Limit: 2, Weight: 1}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"m", "s"} {
				if held, err := e.ForceRelease(ctx, name); err != nil || !held {
					t.Fatalf("ForceRelease(%s) = %v, %v", name, held, err)
				}
				key := "distlock:{" + name + "}:t"
				if left, err := c.PTTL(ctx, key).Result(); err != nil || left <= time.Second {
					t.Fatalf("%s: ttl %v, %v; want the freed lease's time left", key, left, err)
				}
			}
			for _, prefix := range []string{"", "m", "s"} {
				if leaks, _, err := e.Leaks(ctx, prefix, time.Second, "", 100); err != nil || len(leaks) != 0 {
					t.Errorf("Leaks(%q, 1s) after force-releases: %+v, %v; want none", prefix, leaks, err)
				}
			}
			if err := c.Persist(ctx, "distlock:{m}:t").Err(); err != nil {
				t.Fatal(err)
			}
			leaks, _, err := e.Leaks(ctx, "", time.Second, "", 100)
			if err != nil || len(leaks) != 1 || leaks[0].Key != "distlock:{m}:t" || leaks[0].TTL >= 0 {
				t.Errorf("Leaks with a mark made persistent: %+v, %v; want that mark", leaks, err)
			}
		})
	}
}

// TestListCursorRefused: List refuses a cursor it did not make with an
// *engine.ArgumentError of the cursor (never a plain error, which the
// server answered 503 backend_unavailable), on a server and on a Cluster,
// and changes nothing.
func TestListCursorRefused(t *testing.T) {
	for backend, open := range markBackends() {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := listEngine(t, open(t))
			ctx := listCtx(t)
			if _, err := e.Acquire(ctx, engine.AcquireRequest{Name: "a", Owner: "o", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
			for _, cursor := range []string{"abcde", "-120", "1.5@x", "@"} {
				infos, next, err := e.List(ctx, "", cursor, 10)
				var ae *engine.ArgumentError
				if !errors.As(err, &ae) || ae.Arg != "cursor" || len(infos) != 0 || next != "" {
					t.Errorf("List from %q: %+v, %q, %v; want an ArgumentError of the cursor", cursor, infos, next, err)
				}
				if _, _, err := e.Leaks(ctx, "", time.Hour, cursor, 10); !errors.As(err, &ae) || ae.Arg != "cursor" {
					t.Errorf("Leaks from %q: %v; want an ArgumentError of the cursor", cursor, err)
				}
			}
			if info, err := e.Inspect(ctx, "a"); err != nil || !info.Held || info.Owner != "o" {
				t.Errorf("after the bad cursors: %+v, %v", info, err)
			}
		})
	}
}
