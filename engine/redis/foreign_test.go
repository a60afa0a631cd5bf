package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestForeignKeyEndsWaits: a key distlock did not write at a lock's place
// (a string that is no lock's value, as redis-cli SET leaves; a key of
// another type) is a *ForeignKeyError naming the lock and its key, which no
// retry mends: Acquire with context.Background() ends with it at once,
// without waiting out the failure budget (BackendError.Failing is zero),
// and Inspect and Attach return it too. None of them changes the key. The
// minute's guard keeps a wait that never ends from hanging the test; it
// asserts no speed.
func TestForeignKeyEndsWaits(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	rdb := srv.Client()
	eng, err := redisengine.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	c := distlock.New(eng)
	defer c.Close()
	for _, tc := range []struct {
		name, key string // key: what the error names
		put       func() error
	}{
		{"garbage", "distlock:{garbage}", func() error { return rdb.Set(ctx, "distlock:{garbage}", "garbage", 0).Err() }},
		{"alist", "distlock:{alist}*", func() error { return rdb.RPush(ctx, "distlock:{alist}", "a").Err() }},
	} {
		if err := tc.put(); err != nil {
			t.Fatal(err)
		}
		before, err := rdb.Dump(ctx, "distlock:{"+tc.name+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		check := func(op string, err error) {
			t.Helper()
			var fk *redisengine.ForeignKeyError
			switch {
			case !errors.As(err, &fk):
				t.Errorf("%s %s = %v, want a *ForeignKeyError", op, tc.name, err)
			case fk.Name != tc.name || fk.Key != tc.key:
				t.Errorf("%s %s: ForeignKeyError names %q, %q; want %q, %q", op, tc.name, fk.Name, fk.Key, tc.name, tc.key)
			case !errors.Is(err, distlock.ErrBackend) || !engine.IsPermanent(eng, err):
				t.Errorf("%s %s = %v, want a permanent backend error", op, tc.name, err)
			}
		}
		done := make(chan error, 1)
		go func() { _, err := c.Acquire(ctx, tc.name); done <- err }()
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("Acquire %s did not return", tc.name)
		}
		check("Acquire", err)
		if be := (*distlock.BackendError)(nil); errors.As(err, &be) && be.Failing != 0 {
			t.Errorf("Acquire %s waited out the failure budget (%v) for an error no retry mends", tc.name, be.Failing)
		}
		_, err = c.Inspect(ctx, tc.name)
		check("Inspect", err)
		_, err = c.Attach(ctx, tc.name, "someone")
		check("Attach", err)
		after, err := rdb.Dump(ctx, "distlock:{"+tc.name+"}").Result()
		if err != nil || after != before {
			t.Errorf("the key %s changed: %q, %v; was %q", tc.key, after, err, before)
		}
	}
}
