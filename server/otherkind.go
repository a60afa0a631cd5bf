package server

import (
	"context"
	"fmt"

	"github.com/distlock/distlock/engine"
)

// A release or an extension that the engine answers "not held" may come
// from an owner that does hold the name, as another kind than the request
// says (a semaphore's permit released as a mutex, a mutex extended as a
// shared hold): the engine looked for a hold of the kind asked and changed
// nothing. The server then refuses the request as an acquire of the wrong
// kind is refused (400), instead of telling the owner its lease is gone.

// releasedAsOther returns that refusal for a release of kind, or nil when
// owner holds nothing of name as another kind.
func (s *Server) releasedAsOther(ctx context.Context, name, owner string, kind engine.Kind) error {
	if info, ok := s.ownerHolds(ctx, name, owner); ok && info.Kind != kind {
		return engine.KindError(name, info.Kind, kind)
	}
	return nil
}

// extendedAsOther returns that refusal for an extension (of a shared hold
// when shared), or nil when owner holds nothing of name as another kind.
func (s *Server) extendedAsOther(ctx context.Context, name, owner string, shared bool) error {
	if info, ok := s.ownerHolds(ctx, name, owner); ok && info.Kind.Shared() != shared {
		return &engine.ArgumentError{Arg: "shared", Reason: fmt.Sprintf("%q is a %s the owner holds: extend it with shared %v", name, info.Kind, info.Kind.Shared())}
	}
	return nil
}

// ownerHolds inspects name and reports whether owner is among its holders
// (false when the Inspect fails: the engine's answer stands).
func (s *Server) ownerHolds(ctx context.Context, name, owner string) (engine.Info, bool) {
	info, err := s.eng.Inspect(ctx, name)
	if err != nil || !info.Held {
		return info, false
	}
	if info.Owner == owner { // a mutex's holder (its Holders may be left empty)
		return info, true
	}
	for _, h := range info.Holders {
		if h.Owner == owner {
			return info, true
		}
	}
	return info, false
}

// newerGrant reports whether a release naming token (not 0) that the
// engine refused as not the owner's found owner holding name under a newer
// grant (engine.ReleaseRequest.Token) rather than another owner holding it.
func (s *Server) newerGrant(ctx context.Context, name, owner string, token uint64) bool {
	if token == 0 {
		return false
	}
	_, held := s.ownerHolds(ctx, name, owner)
	return held
}
