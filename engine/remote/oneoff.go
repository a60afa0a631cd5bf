package remote

import "sync"

// oneOffs remembers the one-off owners (engine.AcquireRequest.OneOff: the
// Client's random owner tokens) granted through the Engine and not yet
// released. A one-off owner holds once, so a second copy of its release
// cannot drop another hold: a release of unknown outcome by one that still
// holds the lock is sent again (see release), which a re-entrant owner's is
// not.
type oneOffs struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// maxOneOffs bounds the owners remembered (leases never released are never
// forgotten); beyond it, releases of unknown outcome are not sent again.
const maxOneOffs = 1 << 16

// add remembers owner.
func (o *oneOffs) add(owner string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]struct{})
	}
	if len(o.m) < maxOneOffs {
		o.m[owner] = struct{}{}
	}
}

// take reports whether owner was remembered, and forgets it.
func (o *oneOffs) take(owner string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.m[owner]
	delete(o.m, owner)
	return ok
}
