package zookeeper_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/distlock/distlock"
)

// occupancy is what a resource guarded by one lock name sees of the
// fault tests' holders: the permits in use (a mutex's limit is 1) and the
// tokens granted. A holder counts as inside until it leaves or is told
// that its lease is lost; a holder told, it must have been told before the
// grant that finds it gone.
type occupancy struct {
	t     *testing.T
	name  string
	limit int
	// ordered: grants come one at a time (a mutex), so each token must be
	// above the one before; shared grants may be seen out of order.
	ordered bool

	mu     sync.Mutex
	in     map[*distlock.Lease]int
	last   uint64
	tokens map[uint64]bool
}

func newOccupancy(t *testing.T, name string, limit int, ordered bool) *occupancy {
	return &occupancy{t: t, name: name, limit: limit, ordered: ordered, in: map[*distlock.Lease]int{}, tokens: map[uint64]bool{}}
}

// enter records l, just granted with weight, and checks the limit and
// the tokens.
func (o *occupancy) enter(l *distlock.Lease, weight int) {
	granted := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	used := weight
	for h, w := range o.in {
		select {
		case <-h.Done():
			// Told before the grant: signalled before it, or its deadline
			// passed before it (a check after the deadline signals the
			// loss then, at the check's time, if the deadline timer has
			// not run yet).
			var lost *distlock.LostError
			if !errors.As(h.Err(), &lost) || !lost.At.Before(granted) && h.Deadline().After(granted) {
				o.t.Errorf("%s: token %d granted at %v before the holder of token %d was told of its loss (%v)", o.name, l.Token(), granted, h.Token(), h.Err())
			}
			delete(o.in, h)
		default:
			used += w
		}
	}
	if used > o.limit {
		o.t.Errorf("%s: %d permits in use with token %d's grant, limit %d", o.name, used, l.Token(), o.limit)
	}
	if o.tokens[l.Token()] {
		o.t.Errorf("%s: token %d granted twice", o.name, l.Token())
	}
	if o.ordered && l.Token() <= o.last {
		o.t.Errorf("%s: token %d granted after %d", o.name, l.Token(), o.last)
	}
	o.tokens[l.Token()] = true
	o.last = max(o.last, l.Token())
	o.in[l] = weight
}

// leave records that l's holder stops using the resource (before its
// release).
func (o *occupancy) leave(l *distlock.Lease) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.in, l)
}

// grants returns how many grants entered.
func (o *occupancy) grants() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.tokens)
}
