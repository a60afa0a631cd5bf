package distlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// minRenewTimeout is the least time a renewal round trip is given.
const minRenewTimeout = 50 * time.Millisecond

// renewerLinger is how long the watchdog stays after its last lease ends,
// so that a client that acquires and releases in a loop does not start a
// goroutine per lease.
const renewerLinger = 250 * time.Millisecond

// renewer is a Client's watchdog: one goroutine, running only while the
// Client holds auto-renewed leases or has waiters in an engine's queue, that
// renews every lease and waiter heartbeat due in one Extend call (one round
// trip per node).
type renewer struct {
	c       *Client
	mu      sync.Mutex
	leases  map[renewable]struct{}
	running bool
	closed  bool
	wakeAt  time.Time // when the sleeping loop wakes; zero while busy
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

func newRenewer(c *Client) *renewer {
	return &renewer{
		c:      c,
		leases: make(map[renewable]struct{}),
		kick:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
	}
}

// renewable is what the watchdog renews: a *Lease, or a waiter's queue
// entry (heartbeats).
type renewable interface {
	// renewDue reports whether to renew at now, and when it is due at the
	// latest (zero: not scheduled, an extension is in flight).
	renewDue(now time.Time) (bool, time.Time)
	// sending marks a renewal as in flight and returns its request; false
	// leaves it out of the batch (another extension is in flight).
	sending() (engine.ExtendRequest, bool)
	// Deadline is when the renewal is of no use any more.
	Deadline() time.Time
	// apply takes the answer to a renewal sent at sent.
	apply(r engine.ExtendResult, sent time.Time, ttl time.Duration, batchErr error)
}

func (r *renewer) add(l renewable) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.leases[l] = struct{}{}
	if !r.running {
		r.running = true
		r.wg.Add(1)
		go r.loop()
		return
	}
	// Wake the loop only if it sleeps past the new lease's renewal.
	if _, at := l.renewDue(time.Time{}); r.wakeAt.IsZero() || at.Before(r.wakeAt) {
		r.wake()
	}
}

// wake makes the loop look at its leases again (a lease's renewal time
// changed outside the loop: an Extend was answered).
func (r *renewer) wake() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// align moves the renewals of a set's members to s, all of them under the
// watchdog's lock (collect reads them under it), so that no batch renews
// some members before the others are moved: the set is renewed in one
// batch from then on. It wakes the loop when a member renews itself.
func (r *renewer) align(members []*Lease, s schedule) {
	auto := false
	r.mu.Lock()
	for _, l := range members {
		l.renewAlong(s)
		auto = auto || l.autoRenew
	}
	r.mu.Unlock()
	if auto {
		r.wake()
	}
}

func (r *renewer) remove(l renewable) {
	r.mu.Lock()
	delete(r.leases, l)
	r.mu.Unlock()
}

// close stops the watchdog and waits for it.
func (r *renewer) close() {
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.stop)
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// loop renews leases as they fall due, and exits when none have been left
// for renewerLinger.
func (r *renewer) loop() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	idle := false
	for {
		due, next, ok := r.collect(time.Now(), idle)
		if !ok {
			return
		}
		if len(due) > 0 {
			r.renew(due)
			continue
		}
		idle = next.IsZero()
		if idle {
			next = time.Now().Add(renewerLinger)
		}
		r.mu.Lock()
		r.wakeAt = next
		r.mu.Unlock()
		timer.Reset(time.Until(next))
		select {
		case <-timer.C:
		case <-r.kick:
			timer.Stop()
			idle = false
		case <-r.stop:
			return
		}
		r.mu.Lock()
		r.wakeAt = time.Time{}
		r.mu.Unlock()
	}
}

// collect returns the leases to renew now, or when to look again (zero when
// there are none); ok is false when the watchdog should exit: it is closed,
// or it has no lease after lingering idle.
func (r *renewer) collect(now time.Time, idle bool) (due []renewable, next time.Time, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || (idle && len(r.leases) == 0) {
		r.running = false
		return nil, next, false
	}
	for l := range r.leases {
		isDue, at := l.renewDue(now)
		if isDue {
			due = append(due, l)
		} else if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return due, next, true
}

// renew extends the due leases in one round trip. A lease whose Extend
// went in flight since collect is left out (sending). Each lease stays in
// flight until the whole batch is answered. The call is bounded by the
// earliest validity deadline among them (at least minRenewTimeout), so a
// hanging node cannot hold the watchdog past the point where the lease is
// lost anyway.
func (r *renewer) renew(candidates []renewable) {
	due := candidates[:0]
	var (
		reqs []engine.ExtendRequest
		ttls []time.Duration // each one's own ttl: its deadline counts from it
	)
	timeout := time.Duration(-1)
	for _, l := range candidates {
		req, ok := l.sending()
		if !ok {
			continue
		}
		due = append(due, l)
		ttls = append(ttls, req.TTL)
		if ls, ok := l.(*Lease); ok {
			req.TTL = r.c.coverTTL(ls, req.TTL)
		}
		reqs = append(reqs, req)
		if left := time.Until(l.Deadline()); timeout < 0 || left < timeout {
			timeout = left
		}
	}
	if len(due) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout, minRenewTimeout))
	defer cancel()
	go func() { // Close must not wait for a hanging round trip
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	sent := time.Now()
	res, err := r.c.eng.Extend(ctx, reqs)
	for i, l := range due {
		var one engine.ExtendResult
		if err == nil && i < len(res) {
			one = res[i]
		} else if err == nil {
			err = errShortReply
		}
		l.apply(one, sent, ttls[i], err)
	}
}

// errShortReply: an engine answered fewer (or more) extensions than were
// asked.
var errShortReply = errors.New("engine answered a different number of extensions than asked")

// extendOne extends one lock and returns its result: an error when the
// round trip failed, the request failed, or the engine's reply does not
// have exactly one result.
func (c *Client) extendOne(ctx context.Context, r engine.ExtendRequest) (engine.ExtendResult, error) {
	res, err := c.eng.Extend(ctx, []engine.ExtendRequest{r})
	switch {
	case err != nil:
		return engine.ExtendResult{}, err
	case len(res) != 1:
		return engine.ExtendResult{}, errShortReply
	}
	return res[0], res[0].Err
}
