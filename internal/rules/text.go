package rules

import (
	"fmt"
	"unicode/utf8"

	"github.com/distlock/distlock/engine"
)

// Bounds of the strings a request carries, in bytes.
const (
	// MaxOwnerLen is the longest owner token (and waiter id) accepted.
	MaxOwnerLen = 256
	// MaxMetadataLen is the longest metadata (and election value) accepted.
	MaxMetadataLen = 4096
	// MaxAttemptLen is the longest attempt id accepted
	// (engine.AcquireRequest.Attempt): an owner token's bound, since a
	// Client's attempt ids are minted as owners are (Owners), or are the
	// call's one-off owner itself.
	MaxAttemptLen = MaxOwnerLen
)

// Owner checks an owner token: at most MaxOwnerLen bytes of UTF-8; empty
// means a fresh random one.
func Owner(owner string) error { return text("owner", owner, MaxOwnerLen) }

// Waiter checks a waiter queue entry's id, which may be empty, with an
// owner token's bounds.
func Waiter(id string) error { return text("waiter", id, MaxOwnerLen) }

// Attempt checks an acquire's attempt id, which may be empty (the server
// then makes one): at most MaxAttemptLen bytes of UTF-8.
func Attempt(a string) error {
	if text("attempt", a, MaxAttemptLen) != nil {
		return &engine.ArgumentError{Arg: "attempt", Reason: fmt.Sprintf("at most %d bytes of UTF-8", MaxAttemptLen)}
	}
	return nil
}

// Metadata checks a lease's metadata: at most MaxMetadataLen bytes of UTF-8.
func Metadata(m string) error { return text("metadata", m, MaxMetadataLen) }

// Value checks an election's value (its leader's metadata): 1 to
// MaxMetadataLen bytes of UTF-8.
func Value(v string) error {
	if v == "" {
		return &engine.ArgumentError{Arg: "value", Reason: "empty"}
	}
	return text("value", v, MaxMetadataLen)
}

// text checks the string s of the argument arg: at most limit bytes of
// UTF-8.
func text(arg, s string, limit int) error {
	switch {
	case len(s) > limit:
		return &engine.ArgumentError{Arg: arg, Reason: fmt.Sprintf("longer than %d bytes", limit)}
	case !utf8.ValidString(s):
		return &engine.ArgumentError{Arg: arg, Reason: "not valid UTF-8"}
	}
	return nil
}
