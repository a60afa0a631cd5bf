package enginetest

import (
	"slices"
	"time"
)

// shrink removes clients, then runs of operations (halves down to single
// operations), from s while fails still finds a violation, until the
// deadline. It returns the smallest failing schedule found, its
// violations and its history. A failure that depends on timing may not come back on every
// run: shrinking then stops early, and the schedule is less small.
func shrink(s schedule, bad []string, hist *history, fails func(schedule) ([]string, *history), deadline time.Time) (schedule, []string, *history) {
	try := func(c schedule) bool {
		if time.Now().After(deadline) || c.ops() == 0 {
			return false
		}
		if b, h := fails(c); len(b) > 0 {
			s, bad, hist = c, b, h
			return true
		}
		return false
	}
	for i := len(s.Clients) - 1; i >= 0 && len(s.Clients) > 1; i-- {
		c := s
		c.Clients = slices.Delete(slices.Clone(s.Clients), i, i+1)
		try(c)
	}
	longest := 0
	for _, ops := range s.Clients {
		longest = max(longest, len(ops))
	}
	for n := longest / 2; n >= 1; n /= 2 {
		for i := range s.Clients {
			for at := 0; at < len(s.Clients[i]); {
				c := s
				c.Clients = slices.Clone(s.Clients)
				c.Clients[i] = slices.Delete(slices.Clone(s.Clients[i]), at, min(at+n, len(s.Clients[i])))
				if !try(c) {
					at += n
				}
			}
		}
	}
	return s, bad, hist
}
