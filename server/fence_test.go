package server_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
	"github.com/distlock/distlock/server/api"
)

// checkFenceBounds: POST /v1/locks/{name}/fence accepts only the raise it
// exists for (engine.CheckRaise): a token below the holder's, above
// 2^53-1 (2^64-1 too) or too far ahead of the clock is a 400
// invalid_argument about the token and changes nothing; the holder's own
// token and a token above it within the bounds are raised. The name's
// next grant works and its token still fits in 53 bits.
func checkFenceBounds(t *testing.T, s *testServer) {
	const name = "bounded"
	r := call(t, "POST", lockURL(s, name, "acquire"), "", map[string]any{"owner": "me"})
	want(t, "acquire", r, 200, "")
	token := num(t, r, "token")
	status := func() (uint64, uint64) {
		t.Helper()
		r := call(t, "GET", lockURL(s, name, ""), "", nil)
		want(t, "status", r, 200, "")
		return num(t, r, "token"), num(t, r, "high_water")
	}
	_, hw := status()
	far := uint64(time.Now().UnixMicro()) + engine.MaxRaiseAhead + uint64(time.Hour/time.Microsecond)
	for _, bad := range []struct {
		what  string
		token uint64
	}{
		{"below the holder's token", token - 1},
		{"1", 1},
		{"2^53", engine.MaxToken + 1},
		{"2^64-1", math.MaxUint64},
		{"more than 2^40 µs ahead of the clock", far},
	} {
		r := call(t, "POST", lockURL(s, name, "fence"), "", map[string]any{"owner": "me", "token": bad.token})
		if r.status != 400 || r.code(t) != api.CodeInvalidArgument || r.errField(t, "arg") != "token" {
			t.Errorf("fence %s: HTTP %d %s, want 400 invalid_argument about the token", bad.what, r.status, r.body)
		}
		if tok, h := status(); tok != token || h != hw {
			t.Errorf("fence %s changed the lock: token %d, high-water %d; was %d, %d", bad.what, tok, h, token, hw)
			token, hw = tok, h
		}
	}
	for _, ok := range []uint64{token, token + 1000} {
		r := call(t, "POST", lockURL(s, name, "fence"), "", map[string]any{"owner": "me", "token": ok})
		want(t, "fence", r, 200, "")
		if r.json(t)["raised"] != true {
			t.Fatalf("fence to %d: %s", ok, r.body)
		}
	}
	if tok, h := status(); tok != token+1000 || h < token+1000 {
		t.Fatalf("after the raise: token %d, high-water %d; want %d", tok, h, token+1000)
	}
	want(t, "release", call(t, "POST", lockURL(s, name, "release"), "", map[string]any{"owner": "me"}), 200, "")
	r = call(t, "POST", lockURL(s, name, "acquire"), "", map[string]any{"owner": "next"})
	want(t, "the next acquire", r, 200, "")
	if next := num(t, r, "token"); next <= token+1000 || next > engine.MaxToken {
		t.Fatalf("the next grant's token %d: want above %d and at most 2^53-1", next, token+1000)
	}
}

// TestFenceBoundsMemory: checkFenceBounds on the embedded engine (whose
// counter wrapped to 0 after a raise to 2^64-1).
func TestFenceBoundsMemory(t *testing.T) {
	checkFenceBounds(t, start(t, nil))
}

// TestFenceBoundsRedis: checkFenceBounds on Redis (where a raise to
// 2^64-1 made every later acquire of the name a 503 for the fence key's
// 7 days), and a high-water already out of range (written before raises
// were bounded, or by hand) is answered 409 fence_exhausted, never 503,
// until the key is deleted.
func TestFenceBoundsRedis(t *testing.T) {
	rs := redistest.Start(t)
	eng, err := redisengine.New(rs.Client())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	s := start(t, eng)
	checkFenceBounds(t, s)

	ctx := context.Background()
	const name = "exhausted"
	key := redisengine.DefaultPrefix + "{" + name + "}:fence"
	// 2^64-1 and 2^63-1 do not fit INCR; 2^53-1 and 2^62 do, and would
	// give tokens past 2^53-1, which clients lose precision on.
	for _, v := range []string{"18446744073709551615", "9223372036854775807", "9007199254740991", "4611686018427387904"} {
		if err := rs.Client().Set(ctx, key, v, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		r := call(t, "POST", lockURL(s, name, "acquire"), "", map[string]any{"owner": "me"})
		want(t, "acquire with the high-water at "+v, r, 409, api.CodeFenceExhausted)
		r = call(t, "POST", lockURL(s, name, "acquire"), "", map[string]any{"owner": "me", "kind": "semaphore", "limit": 2})
		want(t, "semaphore acquire with the high-water at "+v, r, 409, api.CodeFenceExhausted)
		if info, err := eng.Inspect(ctx, name); err != nil || info.Held {
			t.Fatalf("the refused acquire left %+v, %v", info, err)
		}
		if got := rs.Client().Get(ctx, key).Val(); got != v {
			t.Fatalf("the refused acquires changed the high-water %s to %s", v, got)
		}
		if n := rs.Client().Exists(ctx, redisengine.DefaultPrefix+"{"+name+"}:s").Val(); n != 0 {
			t.Fatal("the refused semaphore acquire left the name's shared lock record")
		}
	}
	if err := rs.Client().Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	want(t, "acquire after the repair", call(t, "POST", lockURL(s, name, "acquire"), "", map[string]any{"owner": "me"}), 200, "")
}
