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

// TestNextToken: max(high-water+1, the clock), never above MaxToken; a
// proposal replaces the clock when it is above it by at most
// MaxProposalLead, and never lowers a token.
func TestNextToken(t *testing.T) {
	now := time.UnixMicro(1_000)
	for _, c := range []struct {
		hw, proposal, want uint64
		err                error
	}{
		{0, 0, 1_000, nil},
		{5_000, 0, 5_001, nil},
		{engine.MaxToken - 1, 0, engine.MaxToken, nil},
		{engine.MaxToken, 0, 0, engine.ErrFenceExhausted},
		{math.MaxUint64, 0, 0, engine.ErrFenceExhausted},
		// Proposals: taken above the clock, within the lead.
		{0, 1_500, 1_500, nil},
		{0, 1_000 + engine.MaxProposalLead, 1_000 + engine.MaxProposalLead, nil},
		{0, 1_001 + engine.MaxProposalLead, 1_000, nil}, // too far ahead: the clock
		{0, 999, 1_000, nil},       // behind the clock: the clock
		{2_000, 1_500, 2_001, nil}, // behind the high-water: never lowers
		{1_500, 1_500, 1_501, nil},
		{0, math.MaxUint64, 1_000, nil},
	} {
		got, err := engine.NextToken(c.hw, now, c.proposal)
		if got != c.want || !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("NextToken(%d, proposal %d): %d, %v; want %d, %v", c.hw, c.proposal, got, err, c.want, c.err)
		}
	}
	if _, err := engine.NextToken(0, time.UnixMicro(engine.MaxToken+1), 0); !errors.Is(err, engine.ErrFenceExhausted) {
		t.Errorf("a clock past 2^53-1: %v", err)
	}
	if _, err := engine.NextToken(0, time.UnixMicro(engine.MaxToken-10), engine.MaxToken+5); !errors.Is(err, engine.ErrFenceExhausted) {
		t.Errorf("a proposal past 2^53-1: %v", err)
	}
}
