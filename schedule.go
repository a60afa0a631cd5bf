package distlock

import (
	"time"

	"github.com/distlock/distlock/internal/waiting"
)

// schedule is when the watchdog renews one thing it keeps alive, a lease
// or a waiter's queue entry: at next at the latest, and from from on along
// with others that are due (so that renewals share round trips).
type schedule struct {
	from, next time.Time
}

// renewAfter is the schedule after a renewal (or grant) of time to live ttl
// sent at sent: due at a third of the ttl, and coalesced with others from a
// sixth of it.
func renewAfter(sent time.Time, ttl time.Duration) schedule {
	return schedule{from: sent.Add(ttl / 6), next: sent.Add(ttl / 3)}
}

// retryAfter is the schedule after a failed renewal of time to live ttl: a
// jittered retry within a tenth of the ttl (a second at most), not
// coalesced earlier.
func retryAfter(ttl time.Duration) schedule {
	next := time.Now().Add(waiting.Jitter(min(ttl/10, time.Second)))
	return schedule{from: next, next: next}
}

// due reports whether the renewal is due at now, and when it is due at the
// latest.
func (s schedule) due(now time.Time) (bool, time.Time) {
	return !now.Before(s.from), s.next
}

// earliest is the schedule due when the first of s and o is, each bound
// taken at its earlier time (the members of a lock set renew together).
func (s schedule) earliest(o schedule) schedule {
	return schedule{from: minTime(s.from, o.from), next: minTime(s.next, o.next)}
}
