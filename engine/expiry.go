package engine

import "time"

// HoldExpiry is the expiry an acquire (a re-entry) or an extension sets on
// an owner's holds of a lock that now expire at current: ttl from now
// while the owner holds the lock once (so a lone lease's Extend may
// shorten it), and never earlier than current while it holds it more
// than once (holds is the count after the acquire): each hold may be a
// lease of its own, and no lease may lose its time to another's shorter
// ttl. The authority's expiry thus never comes before the deadline of a
// live lease of the owner. Every engine applies this rule (the Redis
// scripts and the PostgreSQL functions in their own language).
func HoldExpiry(holds int, current, now time.Time, ttl time.Duration) time.Time {
	next := now.Add(ttl)
	if holds > 1 && current.After(next) {
		return current
	}
	return next
}
