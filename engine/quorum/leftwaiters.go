package quorum

import (
	"context"
	"sync"
	"time"

	"github.com/distlock/distlock/engine"
)

// leftWaiters remembers for a while the waiters that left (Leave), by lock
// name and waiter id, for the answers and undos that reach a node after
// the waiter's Leave did: a failed attempt's late refusal there queues the
// waiter, and the Undo of its late grant there puts the waiter back in the
// queue (the grant had taken its entry). Either would leave the node's
// queue headed by a waiter nobody runs, woken by the node's releases
// instead of the live waiters behind it until its heartbeat deadline. So
// the waiter is taken out of that node's queue again after such a refusal
// (flight.settle) or undo (cleaner.leaveAgain). Leave records the waiter
// before it tells any node, and both checks come after the node answered,
// so a node that saw the Leave before the refusal or the undo is left
// again. A waiter id names one wait (the Client and the server mint a
// fresh one for each), so a later wait is never taken for one that left.
type leftWaiters struct {
	mu     sync.Mutex
	m      map[grantKey]time.Time // by name and waiter id: when it is forgotten
	pruned time.Time
}

// leftMemory is how long a waiter that left is remembered: past a node's
// per-node timeout and the cleaner's retries of a lease's undo by far (an
// entry put back later lapses at its heartbeat deadline).
const leftMemory = time.Minute

// add records that waiter left name. At most maxPending waiters are
// remembered; past that, new ones are not (their entries lapse at their
// heartbeat deadline).
func (l *leftWaiters) add(name, waiter string) {
	if waiter == "" {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = make(map[grantKey]time.Time)
	}
	if now.Sub(l.pruned) > leftMemory || len(l.m) >= maxPending {
		for k, until := range l.m {
			if now.After(until) {
				delete(l.m, k)
			}
		}
		l.pruned = now
	}
	if len(l.m) < maxPending {
		l.m[grantKey{name, waiter}] = now.Add(leftMemory)
	}
}

// has reports whether waiter left name (and is still remembered).
func (l *leftWaiters) has(name, waiter string) bool {
	if waiter == "" {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ok := l.m[grantKey{name, waiter}]
	return ok && time.Now().Before(until)
}

// leaveAgain takes p's waiter out of the cleaner's node's queue after p's
// undo went through there, when the waiter has left meanwhile (see
// leftWaiters); p.mu is held. A failure is left alone: the entry lapses at
// its heartbeat deadline.
func (c *cleaner) leaveAgain(p *pendingRelease) {
	q, ok := c.eng.(engine.Queuer)
	if !ok || !p.req.Undo || !c.e.left.has(p.req.Name, p.waiter) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.e.timeout(0))
	defer cancel()
	_ = q.Leave(ctx, engine.LeaveRequest{Name: p.req.Name, Waiter: p.waiter, Kind: p.req.Kind})
}
