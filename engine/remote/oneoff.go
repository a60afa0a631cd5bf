package remote

import "sync"

// oneOffs remembers the one-off owners (engine.AcquireRequest.OneOff: the
// Client's random owner tokens) granted through the Engine and not yet
// released, with the lock each holds: a set's owner (AcquireMulti) is one
// owner for every name of the set, holding each once. A one-off owner
// holds a lock once, so a second copy of its release cannot drop another
// hold: a release of unknown outcome by one that still holds the lock is
// sent again (see release), which a re-entrant owner's is not.
type oneOffs struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// maxOneOffs bounds the owners remembered (leases never released are never
// forgotten); beyond it, releases of unknown outcome are not sent again.
const maxOneOffs = 1 << 16

// add remembers owner.
func (o *oneOffs) add(name, owner string) {
	key := oneOffKey(name, owner)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]struct{})
	}
	if len(o.m) < maxOneOffs {
		o.m[key] = struct{}{}
	}
}

// ownerHolding is how often an owner may hold a lock, which tells whether
// its release of unknown outcome may be sent again.
type ownerHolding uint8

const (
	// mayHoldMore: an owner not remembered as one-off may hold the lock
	// more than once (re-entry): a second copy of its release could drop
	// a second hold.
	mayHoldMore ownerHolding = iota
	// holdsOnce: a one-off owner holds the lock once: a second copy of
	// its release cannot drop another hold.
	holdsOnce
)

// take returns holdsOnce when owner was remembered as a one-off holder of
// name (mayHoldMore otherwise), and forgets it.
func (o *oneOffs) take(name, owner string) ownerHolding {
	key := oneOffKey(name, owner)
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.m[key]
	delete(o.m, key)
	if ok {
		return holdsOnce
	}
	return mayHoldMore
}

// oneOffKey is the key of owner's hold of name (names hold no NUL byte).
func oneOffKey(name, owner string) string { return name + "\x00" + owner }
