package enginetest

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// SharedRaiseBounds checks RaiseFence (engine.FenceRaiser) of a shared
// lock's holder on e against engine.CheckRaise, as RaiseFenceNeverLowers
// checks a mutex's:
// a token below the holder's, above engine.MaxToken, or more than
// engine.MaxRaiseAhead ahead of the clock is an *engine.ArgumentError
// about the token and changes nothing; the holder's own token and one
// above it within the bounds are raised.
func SharedRaiseBounds(t *testing.T, e engine.Engine) {
	t.Helper()
	fr, ok := e.(engine.FenceRaiser)
	if !ok {
		t.Fatalf("%T raises no shared fences", e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := lockName(t)
	r := engine.AcquireRequest{Name: name, Owner: "reader", Attempt: "r1", TTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}
	g, err := e.Acquire(ctx, r)
	if err != nil || !g.Acquired {
		t.Fatalf("read lock: %+v, %v", g, err)
	}
	holder := func() (token, hw uint64) {
		t.Helper()
		info, err := e.Inspect(ctx, name)
		if err != nil || len(info.Holders) != 1 {
			t.Fatalf("inspect: %+v, %v", info, err)
		}
		return info.Holders[0].Token, info.HighWater
	}
	token, hw := holder()
	far := uint64(time.Now().UnixMicro()) + engine.MaxRaiseAhead + uint64(time.Hour/time.Microsecond)
	for _, bad := range []struct {
		what  string
		token uint64
	}{
		{"below the holder's token", token - 1},
		{"above 2^53-1", engine.MaxToken + 1},
		{"2^64-1", math.MaxUint64},
		{"more than MaxRaiseAhead ahead of the clock", far},
	} {
		ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "reader", Token: bad.token, Kind: engine.RWLock})
		var ae *engine.ArgumentError
		if ok || !errors.As(err, &ae) || ae.Arg != "token" {
			t.Errorf("RaiseFence (shared) %s: %v, %v; want an *engine.ArgumentError about the token", bad.what, ok, err)
		}
		if tok, h := holder(); tok != token || h != hw {
			t.Errorf("RaiseFence (shared) %s changed the lock: token %d, high-water %d; was %d, %d", bad.what, tok, h, token, hw)
			token, hw = tok, h
		}
	}
	for _, up := range []uint64{token, token + 1000} {
		if ok, err := fr.RaiseFence(ctx, engine.RaiseRequest{Name: name, Owner: "reader", Token: up, Kind: engine.RWLock}); !ok || err != nil {
			t.Fatalf("RaiseFence (shared) to %d: %v, %v", up, ok, err)
		}
	}
	if tok, h := holder(); tok != token+1000 || h < token+1000 {
		t.Fatalf("after the raise: token %d, high-water %d; want %d", tok, h, token+1000)
	}
}
