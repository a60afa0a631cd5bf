package engine

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxToken is the largest fencing token an engine mints or a raise may
// set: 2^53-1, so that every token is exact as a JSON number, a Lua
// number and a JavaScript number.
const MaxToken = 1<<53 - 1

// MaxRaiseAhead bounds a raise (FenceRaiser): the token it sets may be at
// most this far ahead of the lock authority's clock in microseconds, the
// scale every engine seeds its tokens from. 2^40 µs is about 12.7 days:
// far more than any honest clock skew between a quorum's nodes, and far
// too little for a raise to exhaust the tokens below MaxToken (the clock
// reaches 2^53 µs in the year 2255).
const MaxRaiseAhead = 1 << 40

// ErrFenceExhausted reports that a name's fencing high-water is at
// MaxToken or beyond (a value written before raises were bounded, or by
// hand): no token above it fits in 53 bits, so the engine grants nothing
// rather than wrap or repeat a token. Deleting the high-water (Redis: the
// name's :fence key) repairs it once no resource holds a token above the
// clock.
var ErrFenceExhausted = errors.New("distlock: the fencing tokens of this name are exhausted (its high-water is at 2^53-1 or above)")

// CheckRaise checks a raise of a holder's token from current to token on
// an authority whose clock reads now: a raise never lowers a token, and
// sets none above MaxToken or more than MaxRaiseAhead ahead of the clock
// (raising to the current token is always accepted: it changes nothing).
// It returns an *ArgumentError, or nil.
func CheckRaise(current, token uint64, now time.Time) error {
	switch {
	case token < current:
		return RaiseBelowError(current, token)
	case token == current:
		return nil
	case token > MaxToken:
		return RaiseAboveMaxError(token)
	}
	if limit := uint64(max(now.UnixMicro(), 0)) + MaxRaiseAhead; token > limit {
		return RaiseAheadError(token, limit)
	}
	return nil
}

// RaiseBelowError refuses a raise to token below the holder's current
// token.
func RaiseBelowError(current, token uint64) error {
	return &ArgumentError{Arg: "token", Reason: fmt.Sprintf("%d is below the holder's token %d: a raise never lowers a token", token, current)}
}

// RaiseAboveMaxError refuses a raise to token above MaxToken.
func RaiseAboveMaxError(token uint64) error {
	return &ArgumentError{Arg: "token", Reason: fmt.Sprintf("%d is above 2^53-1, the largest fencing token", token)}
}

// RaiseAheadError refuses a raise to token above limit: the authority's
// clock in microseconds plus MaxRaiseAhead.
func RaiseAheadError(token, limit uint64) error {
	return &ArgumentError{Arg: "token", Reason: fmt.Sprintf("%d is more than 2^40 µs (12.7 days) ahead of the lock authority's clock (at most %d)", token, limit)}
}

// RaiseRefusal turns the refusal a script or a database function reports
// for a raise to token, "DISTLOCK below <current>" or "DISTLOCK ahead
// <limit>", into the error CheckRaise gives. It returns nil for any other
// message.
func RaiseRefusal(msg string, token uint64) error {
	what, ok := strings.CutPrefix(msg, "DISTLOCK ")
	if !ok {
		return nil
	}
	code, arg, _ := strings.Cut(what, " ")
	n, err := strconv.ParseUint(arg, 10, 64)
	if err != nil {
		return nil
	}
	switch code {
	case "below":
		return RaiseBelowError(n, token)
	case "ahead":
		return RaiseAheadError(token, n)
	}
	return nil
}

// MaxProposalLead bounds the token a request proposes
// (AcquireRequest.TokenProposal): an engine mints a proposal at most this
// far ahead of its clock, in microseconds (one second), so that a
// proposer's clock moves tokens no further ahead of the lock authority's
// clock than that. (engine/redis/scripts/proposal.lua carries the same
// number.)
const MaxProposalLead = 1_000_000

// NextToken returns the token an engine mints after the high-water hw
// when its clock reads now: max(hw+1, now in microseconds), or the
// proposal (AcquireRequest.TokenProposal) instead of the clock when it is
// above the clock by at most MaxProposalLead; ErrFenceExhausted when the
// token would be above MaxToken.
func NextToken(hw uint64, now time.Time, proposal uint64) (uint64, error) {
	token := uint64(max(now.UnixMicro(), 0))
	if proposal > token && proposal-token <= MaxProposalLead {
		token = proposal
	}
	if hw >= token {
		if hw >= MaxToken {
			return 0, ErrFenceExhausted
		}
		token = hw + 1
	}
	if token > MaxToken {
		return 0, ErrFenceExhausted
	}
	return token, nil
}
