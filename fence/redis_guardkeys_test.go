//go:build !lite

package fence_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/fence"
)

// wantInvalid fails t unless err wraps ErrInvalidArgument.
func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, fence.ErrInvalidArgument) {
		t.Fatalf("%s: got %v, want ErrInvalidArgument", what, err)
	}
}

// wantNoKey fails t if key exists.
func wantNoKey(t *testing.T, ctx context.Context, c *redis.Client, key string) {
	t.Helper()
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("%s exists (%v): a refused write ran", key, err)
	}
}

// TestRedisGuardKeysAreNoData: no fenced write may touch a key the guard
// keeps for itself: another resource's fence key (any key ending in
// ":fence") or a write id key. Exec and Set refuse such a key with
// ErrInvalidArgument and send nothing (the writing resource's mark is not
// made), the marks keep their tokens, and the stale holder is still
// refused. Before, a DEL or an HSET of acct's mark through another
// resource's Exec, and a Set of acct's fence key as data, were accepted:
// acct's token-40 holder then wrote after token 50, or acct's next write
// failed with WRONGTYPE.
func TestRedisGuardKeysAreNoData(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	if err := r.Set(ctx, "acct", "new", 50, "new"); err != nil {
		t.Fatal(err)
	}
	fk := fence.FenceKeyFor("acct")
	ids, err := c.Keys(ctx, fk+":write:*").Result()
	if err != nil || len(ids) != 1 {
		t.Fatalf("write id keys of acct: %q %v", ids, err)
	}
	other := fence.FenceKeyFor("cleanup")
	for what, call := range map[string]func() error{
		"DEL of acct's mark": func() error {
			_, err := r.Exec(ctx, other, 1, "janitor", []string{fk}, "DEL", fk)
			return err
		},
		"HSET of acct's mark": func() error {
			_, err := r.Exec(ctx, other, 1, "janitor", []string{fk}, "HSET", fk, "token", "1", "holder", "old")
			return err
		},
		"PERSIST of a custom fence key among data keys": func() error {
			_, err := r.Exec(ctx, other, 1, "janitor", []string{"{cleanup}:data", "res:fence"}, "PERSIST", "res:fence")
			return err
		},
		"DEL of a write id key": func() error {
			_, err := r.Exec(ctx, other, 1, "janitor", []string{ids[0]}, "DEL", ids[0])
			return err
		},
		"Set of acct's mark": func() error { return r.Set(ctx, fk, "junk", 1, "janitor") },
		"Set of a write id key": func() error {
			return r.Set(ctx, "{cleanup}:fence:write:0123456789abcdef-7", "1", 1, "janitor")
		},
	} {
		wantInvalid(t, what, call())
	}
	wantNoKey(t, ctx, c, other)
	if n, err := c.Exists(ctx, ids[0]).Result(); err != nil || n != 1 {
		t.Fatalf("write id key %s after the refusals: %d %v", ids[0], n, err)
	}
	wantHighest(t, ctx, r, fk, 50)
	err = r.Set(ctx, "acct", "old", 40, "old")
	wantStale(t, err, fence.StaleError{Resource: fk, Token: 40, Highest: 50, Holder: "old"})
	if err := r.Set(ctx, "acct", "newer", 60, "newer"); err != nil {
		t.Fatalf("acct's next holder: %v", err)
	}
	wantString(t, ctx, c, "acct", "newer")

	// Keys that only look alike are data.
	for _, k := range []string{"{acct}:fence-log", "{acct}:fenced", "{acct}:write:", "{acct}:fence:write:x", "{acct}:write:0123456789ABCDEF-1", "{acct}:write:0123456789abcdef-"} {
		if _, err := r.Exec(ctx, fk, 60, "newer", []string{k}, "SET", k, "v"); err != nil {
			t.Fatalf("a write of the data key %q: %v", k, err)
		}
	}
}

// TestRedisTokenAboveMax: a token above engine.MaxToken (2^53-1), which no
// grant carries, is refused with ErrInvalidArgument by Set and Exec and
// sends nothing: the mark and the data keep their values, and the
// resource's holders are not locked out. 2^53-1 itself is a token.
func TestRedisTokenAboveMax(t *testing.T) {
	ctx := testContext(t)
	_, c := startRedis(t, 3)
	r := fence.NewRedis(c)
	if err := r.Set(ctx, "k", "v5", 5, "a"); err != nil {
		t.Fatal(err)
	}
	fk := fence.FenceKeyFor("k")
	for _, token := range []uint64{engine.MaxToken + 1, 1 << 63, math.MaxUint64} {
		wantInvalid(t, "Set", r.Set(ctx, "k", "huge", token, "typo"))
		_, err := r.Exec(ctx, fk, token, "typo", []string{"k"}, "SET", "k", "huge")
		wantInvalid(t, "Exec", err)
		_, err = r.Exec(ctx, fence.FenceKeyFor("fresh"), token, "typo", []string{"fresh"}, "SET", "fresh", "huge")
		wantInvalid(t, "Exec on a resource without a mark", err)
	}
	wantHighest(t, ctx, r, fk, 5)
	wantString(t, ctx, c, "k", "v5")
	wantNoKey(t, ctx, c, fence.FenceKeyFor("fresh"))
	if err := r.Set(ctx, "k", "v6", 6, "b"); err != nil {
		t.Fatalf("the next holder after the refusals: %v", err)
	}
	if err := r.Set(ctx, "k", "max", engine.MaxToken, "c"); err != nil {
		t.Fatalf("token 2^53-1: %v", err)
	}
	wantHighest(t, ctx, r, fk, engine.MaxToken)
}
