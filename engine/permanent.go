package engine

import "errors"

// Permanent is implemented by errors that say whether trying the same call
// again can ever succeed: a schema that was never migrated, a token the
// server refuses. Engines whose errors come from a client library of their
// own implement PermanentClassifier instead.
type Permanent interface {
	error
	// Permanent reports that no retry can mend the error.
	Permanent() bool
}

// PermanentClassifier is implemented by engines that can tell, of an error
// they returned, that no retry can mend it (Redis: an unknown command, an
// ACL refusal, a failed authentication).
type PermanentClassifier interface {
	Permanent(err error) bool
}

// IsPermanent reports whether err, returned by eng, is one that no retry
// can mend, so that a wait must end with it at once: input the engine
// refused (*ArgumentError, ErrUpgrade), a name whose tokens are used up
// (ErrFenceExhausted), a feature it lacks
// (errors.ErrUnsupported), a closed engine (ErrClosed), an error that says
// so itself (Permanent), or one eng classifies so (PermanentClassifier).
// eng may be nil. An error that joins several (a quorum's, one per node) is
// permanent only when each of them is: one node refusing for good does not
// keep a majority from agreeing later. Every other error (a network
// failure, a timeout, a failover in progress) is transient: a wait tries
// again, within its failure budget.
func IsPermanent(eng Engine, err error) bool {
	if err == nil {
		return false
	}
	if pc, ok := eng.(PermanentClassifier); ok && pc.Permanent(err) {
		return true
	}
	return permanent(err)
}

// permanent is IsPermanent's walk of err's chain.
func permanent(err error) bool {
	if _, ok := err.(*ArgumentError); ok {
		return true
	}
	if p, ok := err.(Permanent); ok {
		return p.Permanent()
	}
	for _, s := range []error{ErrUpgrade, ErrFenceExhausted, errors.ErrUnsupported, ErrClosed} {
		if err == s {
			return true
		}
		if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(s) {
			return true
		}
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		next := u.Unwrap()
		return next != nil && permanent(next)
	case interface{ Unwrap() []error }:
		errs := u.Unwrap()
		for _, e := range errs {
			if e == nil || !permanent(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	return false
}
