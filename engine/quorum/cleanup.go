package quorum

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// cleaner releases, in the background, grants whose outcome on one node is
// unknown: a command that timed out may still be queued there (a paused
// node) and land later. It retries until the node answers, then releases
// once more after a short pause, so that a grant landing after the first
// release is removed too. One goroutine per node at most, running only
// while something is pending; an entry is dropped after its ttl, when such a
// grant has expired on its own.
type cleaner struct {
	e       *Engine
	eng     engine.Engine
	mu      sync.Mutex
	pending map[grantKey]*pendingRelease
	running bool
}

type grantKey struct{ name, owner string }

type pendingRelease struct {
	req     engine.ReleaseRequest // the release: an Undo for a grant of a failed attempt
	waiter  string                // the grant's waiter id, for an Undo (cleaner.leaveAgain)
	id      string                // the release id, the same on every retry
	expires time.Time

	mu        sync.Mutex // held by the call that sends it (retry's or flush's)
	confirmed bool       // one release went through; one more to go
	settled   bool       // flushed ahead of an acquire: retry skips it
}

// settle is the pause between the confirmed release and the last one.
const settle = 10 * time.Millisecond

// maxPending bounds the memory of a node that stays down: past it, new
// entries are not kept (their grants, if any, expire with their ttl).
const maxPending = 10000

// releaseTTL bounds how long a release whose grant's ttl is unknown is
// retried.
const releaseTTL = time.Minute

// add queues r, a release of r.Owner's hold on r.Name (r.Undo for a grant
// whose attempt failed); id is the release id (the original release's, so
// that the retry cannot drop a second hold).
func (c *cleaner) add(r engine.ReleaseRequest, id string, ttl time.Duration) {
	c.put(&pendingRelease{req: r, id: id, expires: time.Now().Add(ttl)})
}

// takeBack queues the release of r's grant on the node, whose answer came
// late or not at all: an Undo when undo (the attempt failed), after which
// r's waiter leaves the node's queue again if it left meanwhile
// (leaveAgain).
func (c *cleaner) takeBack(r engine.AcquireRequest, undo bool) {
	c.put(&pendingRelease{req: engine.ReleaseRequest{Name: r.Name, Owner: r.Owner, Undo: undo},
		waiter: r.Waiter, id: newReleaseID(), expires: time.Now().Add(r.TTL)})
}

// put queues p, replacing the release pending for the same hold.
func (c *cleaner) put(p *pendingRelease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxPending {
		return
	}
	c.pending[grantKey{p.req.Name, p.req.Owner}] = p
	c.start()
}

// start starts run unless it is running; c.mu must be held.
func (c *cleaner) start() {
	if !c.running {
		c.running = true
		c.e.bg.Add(1)
		go c.run()
	}
}

// flush sends now, ahead of an acquire of name by owner on the node, the
// release still pending for them there, and forgets it. A retry sent after
// that acquire's grant would drop the new hold where the first copy of the
// release had landed: a node forgets a release id with the hold it freed.
// A release that fails stays pending (unless a newer one replaced it), and
// flush returns its error: the acquire must not reach the node before it.
func (c *cleaner) flush(ctx context.Context, name, owner string) error {
	k := grantKey{name, owner}
	c.mu.Lock()
	p := c.pending[k]
	delete(c.pending, k)
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock() // after retry's call of it, if one is out
	defer p.mu.Unlock()
	if p.settled {
		return nil
	}
	if p.confirmed {
		// The release went through: its second copy, for a grant that
		// lands late, would now drop the acquire's hold.
		p.settled = true
		return nil
	}
	if _, err := releaseOnceOf(ctx, c.eng, p.req, p.id); err != nil {
		c.mu.Lock()
		if c.pending[k] == nil {
			c.pending[k] = p
			c.start()
		}
		c.mu.Unlock()
		return err
	}
	c.leaveAgain(p)
	p.settled = true
	return nil
}

func (c *cleaner) run() {
	defer c.e.bg.Done()
	failures := 0
	for {
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		batch := make(map[grantKey]*pendingRelease, len(c.pending))
		for k, p := range c.pending {
			batch[k] = p
		}
		c.mu.Unlock()

		now, ok := time.Now(), true
		for k, p := range batch {
			if now.After(p.expires) {
				c.drop(k, p)
				continue
			}
			if ok = c.retry(k, p); !ok {
				break // the node is down or stopped: back off
			}
		}
		wait := settle
		if !ok {
			failures++
			wait = min(time.Duration(failures)*20*time.Millisecond, 500*time.Millisecond)
		} else {
			failures = 0
		}
		select {
		case <-c.e.done:
			return
		case <-time.After(wait):
		}
	}
}

// retry sends p once more, unless an acquire flushed it, and drops it after
// its second release went through. It reports whether the node answered.
func (c *cleaner) retry(k grantKey, p *pendingRelease) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.settled {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := releaseOnceOf(ctx, c.eng, p.req, p.id)
	cancel()
	if err != nil {
		return false
	}
	c.leaveAgain(p)
	if p.confirmed {
		c.drop(k, p)
	} else {
		p.confirmed = true
	}
	return true
}

// drop removes k if it is still the entry p (a newer add replaces it).
func (c *cleaner) drop(k grantKey, p *pendingRelease) {
	c.mu.Lock()
	if c.pending[k] == p {
		delete(c.pending, k)
	}
	c.mu.Unlock()
}

// releaseOnce releases with id where the engine supports idempotent
// releases, and plainly elsewhere.
func releaseOnce(ctx context.Context, eng engine.Engine, name, owner, id string) (engine.ReleaseResult, error) {
	return releaseOnceOf(ctx, eng, engine.ReleaseRequest{Name: name, Owner: owner}, id)
}

// releaseOnceOf is releaseOnce of the request r (any kind): plainly on an
// engine whose releases of r's kind cannot apply once (ErrUnsupported).
func releaseOnceOf(ctx context.Context, eng engine.Engine, r engine.ReleaseRequest, id string) (engine.ReleaseResult, error) {
	if o, ok := eng.(engine.OnceReleaser); ok {
		res, err := o.ReleaseOnce(ctx, r, id)
		if !errors.Is(err, errors.ErrUnsupported) {
			return res, err
		}
	}
	return eng.Release(ctx, r)
}

// newReleaseID returns a random release id.
func newReleaseID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// afterCleanup returns fn, run on each node only once the release of r's
// owner still pending there (cleaner.flush) went through: an explicit
// owner may acquire again before its earlier release's retry, and that
// retry must not land after the new grant. A one-off owner never comes
// back (each attempt has its own), so its acquires go straight on.
func afterCleanup(e *Engine, r engine.AcquireRequest, fn func(context.Context, node) (engine.Grant, error)) func(context.Context, node) (engine.Grant, error) {
	if r.OneOff {
		return fn
	}
	return func(ctx context.Context, n node) (engine.Grant, error) {
		if err := e.cleaners[e.index(n)].flush(ctx, r.Name, r.Owner); err != nil {
			return engine.Grant{}, err
		}
		return fn(ctx, n)
	}
}
