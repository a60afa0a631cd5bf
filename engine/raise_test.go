package engine_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// TestCheckRaise: the one rule of a raise, and the refusals the scripts
// and database functions report, worded alike.
func TestCheckRaise(t *testing.T) {
	now := time.UnixMicro(1_700_000_000_000_000)
	limit := uint64(now.UnixMicro()) + engine.MaxRaiseAhead
	for _, c := range []struct {
		current, token uint64
		ok             bool
	}{
		{100, 100, true},
		{100, 101, true},
		{100, limit, true},
		{100, 99, false},
		{100, 1, false},
		{100, limit + 1, false},
		{100, engine.MaxToken + 1, false},
		{100, math.MaxUint64, false},
		{limit + 5, limit + 5, true}, // the holder's own token, whatever it is
	} {
		err := engine.CheckRaise(c.current, c.token, now)
		var ae *engine.ArgumentError
		if c.ok != (err == nil) || (err != nil && (!errors.As(err, &ae) || ae.Arg != "token")) {
			t.Errorf("CheckRaise(%d, %d): %v", c.current, c.token, err)
		}
	}
	if got, want := engine.RaiseRefusal("DISTLOCK below 100", 99), engine.CheckRaise(100, 99, now); got == nil || got.Error() != want.Error() {
		t.Errorf("below: %v, want %v", got, want)
	}
	if got, want := engine.RaiseRefusal("DISTLOCK ahead 5", 6), engine.RaiseAheadError(6, 5); got == nil || got.Error() != want.Error() {
		t.Errorf("ahead: %v, want %v", got, want)
	}
	if err := engine.RaiseRefusal("ERR something else", 1); err != nil {
		t.Errorf("another error: %v", err)
	}
}

// TestNextToken: max(high-water+1, the clock), never above MaxToken.
func TestNextToken(t *testing.T) {
	now := time.UnixMicro(1_000)
	for _, c := range []struct {
		hw, want uint64
		err      error
	}{
		{0, 1_000, nil},
		{5_000, 5_001, nil},
		{engine.MaxToken - 1, engine.MaxToken, nil},
		{engine.MaxToken, 0, engine.ErrFenceExhausted},
		{math.MaxUint64, 0, engine.ErrFenceExhausted},
	} {
		got, err := engine.NextToken(c.hw, now)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("NextToken(%d): %d, %v; want %d, %v", c.hw, got, err, c.want, c.err)
		}
	}
	if _, err := engine.NextToken(0, time.UnixMicro(engine.MaxToken+1)); !errors.Is(err, engine.ErrFenceExhausted) {
		t.Errorf("a clock past 2^53-1: %v", err)
	}
}
