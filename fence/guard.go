package fence

import (
	"sync"
	"sync/atomic"
)

// Guard checks fencing tokens in process memory, for a resource that lives
// in this process (a file, a device, an in-memory table).
//
// The zero value is ready to use. A Guard is safe for concurrent use and
// starts no goroutines. Writes to one resource run one at a time; writes to
// different resources do not wait for each other. A Guard keeps one small
// entry per resource it has seen for as long as it lives: forgetting a
// high-water mark would let a stale holder write again. A Guard must not be
// copied after first use.
type Guard struct {
	mu        sync.Mutex
	resources map[string]*highWater
}

// highWater is the state of one resource.
type highWater struct {
	mu     sync.Mutex    // held while checking and writing
	token  atomic.Uint64 // highest accepted token; written only under mu
	holder string        // holder that wrote with token; guarded by mu
}

// Do runs write while holding the resource's guard, iff token is not stale;
// it records token as the highest seen only if write returns nil.
//
// Do returns a *StaleError without running write when token is lower than the
// highest token recorded for resource, or equal to it but holder is not the
// holder that wrote with it. It returns an error wrapping ErrInvalidArgument
// for an empty resource or holder, the token 0, a token above
// engine.MaxToken (2^53-1) or a nil write (see ValidateWrite). Otherwise it
// returns what write returns. If write panics, the guard is released, nothing
// is recorded and the panic goes on.
//
// write must not call Do or Check for the same resource on the same Guard:
// that deadlocks.
func (g *Guard) Do(resource string, token uint64, holder string, write func() error) error {
	if err := ValidateWrite(resource, token, holder); err != nil {
		return err
	}
	if write == nil {
		return invalid("nil write function for %q", resource)
	}
	return g.entry(resource).do(resource, token, holder, write)
}

// Check checks token like Do and records it as the highest seen for resource
// when it is not stale, without running anything. It returns nil, a
// *StaleError or an error wrapping ErrInvalidArgument.
func (g *Guard) Check(resource string, token uint64, holder string) error {
	if err := ValidateWrite(resource, token, holder); err != nil {
		return err
	}
	return g.entry(resource).do(resource, token, holder, nil)
}

// Highest returns the highest token recorded for resource, or 0 if none was.
// It does not wait for a write in progress.
func (g *Guard) Highest(resource string) uint64 {
	g.mu.Lock()
	h := g.resources[resource]
	g.mu.Unlock()
	if h == nil {
		return 0
	}
	return h.token.Load()
}

// entry returns the state of resource, creating it if needed.
func (g *Guard) entry(resource string) *highWater {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.resources[resource]
	if h == nil {
		if g.resources == nil {
			g.resources = make(map[string]*highWater)
		}
		h = new(highWater)
		g.resources[resource] = h
	}
	return h
}

// do checks token and, when it is accepted, runs write (if not nil) and
// records token if write succeeded, all under h.mu.
func (h *highWater) do(resource string, token uint64, holder string, write func() error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	highest := h.token.Load()
	if token < highest || (token == highest && holder != h.holder) {
		return &StaleError{Resource: resource, Token: token, Highest: highest, Holder: holder}
	}
	if write != nil {
		if err := write(); err != nil {
			return err
		}
	}
	h.token.Store(token)
	h.holder = holder
	return nil
}
