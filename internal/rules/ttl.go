package rules

import (
	"time"

	"github.com/distlock/distlock/engine"
)

// Bounds of a lease's ttl.
const (
	// MinTTL is the shortest ttl that can be renewed in time.
	MinTTL = 50 * time.Millisecond
	// MaxTTL is the longest ttl accepted.
	MaxTTL = 24 * time.Hour
)

// TTL checks a lease's ttl: from MinTTL to MaxTTL.
func TTL(ttl time.Duration) error {
	reason := ""
	switch {
	case ttl <= 0:
		reason = "must be positive, got " + ttl.String()
	case ttl < MinTTL:
		reason = ttl.String() + " is too short to renew; the minimum is " + MinTTL.String()
	case ttl > MaxTTL:
		reason = ttl.String() + " is above the maximum of " + MaxTTL.String()
	default:
		return nil
	}
	return &engine.ArgumentError{Arg: "ttl", Reason: reason}
}

// FitTTL checks ttl (TTL) and fits it to what eng keeps
// (engine.Capabilities.FitTTL: etcd's whole seconds, for one), as every
// acquire and extension sends it.
func FitTTL(eng engine.Engine, ttl time.Duration) (time.Duration, error) {
	if err := TTL(ttl); err != nil {
		return 0, err
	}
	return engine.CapabilitiesOf(eng).FitTTL(ttl), nil
}
