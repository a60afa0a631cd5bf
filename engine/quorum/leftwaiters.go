package quorum

import (
	"context"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/expiring"
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
type leftWaiters = expiring.Map[grantKey, struct{}] // by name and waiter id

// leftMemory is how long a waiter that left is remembered: past a node's
// per-node timeout and the cleaner's retries of a lease's undo by far (an
// entry put back later lapses at its heartbeat deadline). At most
// maxPending waiters are remembered; past that, new ones are not, and an
// entry put back for one of them lapses so.
const leftMemory = time.Minute

// leftName records that waiter left name.
func (e *Engine) leftName(name, waiter string) {
	if waiter != "" {
		e.left.Put(grantKey{name, waiter}, struct{}{}, leftMemory)
	}
}

// hasLeft reports whether waiter left name (and is still remembered).
func (e *Engine) hasLeft(name, waiter string) bool {
	if waiter == "" {
		return false
	}
	_, ok := e.left.Get(grantKey{name, waiter})
	return ok
}

// leaveAgain takes p's waiter out of the cleaner's node's queue after p's
// undo went through there, when the waiter has left meanwhile (see
// leftWaiters); p.mu is held. A failure is left alone: the entry lapses at
// its heartbeat deadline.
func (c *cleaner) leaveAgain(p *pendingRelease) {
	q, ok := c.eng.(engine.Queuer)
	if !ok || !p.req.Undo || !c.e.hasLeft(p.req.Name, p.waiter) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.e.timeout(0))
	defer cancel()
	_ = q.Leave(ctx, engine.LeaveRequest{Name: p.req.Name, Waiter: p.waiter, Kind: p.req.Kind})
}
