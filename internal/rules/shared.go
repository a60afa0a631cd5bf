package rules

import (
	"fmt"

	"github.com/distlock/distlock/engine"
)

// Limit checks a semaphore's limit, declared or set: 1 to
// engine.RWPermits-1 (an RW lock's RWPermits is no semaphore's).
func Limit(limit int) error {
	if limit < 1 || limit >= engine.RWPermits {
		return &engine.ArgumentError{Arg: "limit", Reason: fmt.Sprintf("%d is not between 1 and %d", limit, engine.RWPermits-1)}
	}
	return nil
}

// Weight checks the weight of a semaphore's request before the engine
// sees it: at least 1 (a grant holds at least one permit), below
// engine.RWPermits. The engine checks it against the stored limit
// (engine.CheckShared).
func Weight(weight int) error {
	if weight < 1 || weight >= engine.RWPermits {
		return &engine.ArgumentError{Arg: "weight", Reason: fmt.Sprintf("%d is not between 1 and the limit", weight)}
	}
	return nil
}
