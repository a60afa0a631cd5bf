package engine

import (
	"context"
	"time"
)

// Queuer is implemented by engines that keep each name's waiters in a queue
// inside the lock authority, so that waiting is quiet and fair across
// processes, not only inside one Client:
//
//   - A waiting acquire (AcquireRequest.Waiter set) that is refused enters
//     the name's queue with an arrival ticket and a heartbeat deadline of
//     AcquireRequest.WaiterTTL, both in the authority's time; a grant takes
//     it out. Heartbeats travel in Extend batches (ExtendRequest.Waiter),
//     with the Client's lease renewals. A waiter whose deadline passes is
//     dropped; a live one never is.
//   - When the lock is freed (release, force-release) the head of the queue,
//     and only the head, is woken: a message addressed to it, delivered on
//     its SubscribeWaiter subscription. Nobody else is sent anything.
//   - A release reserves the lock for the head, in the same atomic step,
//     when the head is fair (OrderFair) or has waited longer than
//     StarvationBound since it entered the queue: for ReserveTTL
//     of the authority's time only the head can take it, with its own
//     acquire (its lease's validity is measured from its own send time: the
//     wake-up message may come arbitrarily late and proves nothing). A head
//     that does not confirm in time is dropped from the queue and the next
//     one is tried.
//   - While the head is fair, nobody else takes a free lock (strict FIFO);
//     otherwise a newcomer may take a free, unreserved lock before the head.
//
// Every operation that reads the queue first drops expired waiters and
// lapsed reservations.
type Queuer interface {
	// SubscribeWaiter is Subscribe for one waiter: its channel receives the
	// wake-ups addressed to waiter (and every wake-up after a reconnect,
	// when messages may have been lost), never those addressed to others.
	SubscribeWaiter(ctx context.Context, name, waiter string) (Subscription, error)

	// Leave takes r.Waiter out of the queue of r.Name (a waiter that gives
	// up); r.Kind is the kind its acquire asked for (a shared lock's
	// waiters queue apart from a mutex's on some engines), dispatched once
	// (LeaveByKind). If it was the head, or the lock was reserved for it,
	// the next head is woken (and, when due, the lock reserved for it; a
	// shared lock's next head when it fits). Leaving a queue one is not in
	// is no error. Any engine of the backend can take any waiter out, not
	// only the one that queued it; a live waiter taken out learns it at
	// its next heartbeat (ExtendRequest.Waiter) and queues again.
	Leave(ctx context.Context, r LeaveRequest) error
}

// LeaveRequest asks Queuer.Leave to take a waiter out of a name's queue.
type LeaveRequest struct {
	Name string
	// Waiter is the waiter's id (AcquireRequest.Waiter).
	Waiter string
	// Kind is the kind of lock the waiter's acquire asked for
	// (AcquireRequest.Kind). A semaphore's and an RW lock's waiters leave
	// alike.
	Kind Kind
}

// Queue timing in the lock authority.
const (
	// ReserveTTL is how long a release keeps the lock for the head of the
	// queue: the wake-up's delivery plus the head's own acquire, with room
	// for a busy machine. A head that is dead or stopped costs at most this
	// (plus the time until the next operation on the name notices).
	ReserveTTL = 250 * time.Millisecond

	// StarvationBound is how long the head may wait (since it entered the
	// queue) before releases hand the lock to it instead of letting a
	// newcomer take it first: as Go's sync.Mutex, which switches to
	// hand-off once a waiter has waited 1ms. Under steady contention every
	// head has waited that long, so the lock goes round in arrival order;
	// a newcomer still takes a lock whose queue formed less than 1ms ago
	// (a burst), where a hand-off's extra round trip would cost more than
	// the wait it spares.
	StarvationBound = time.Millisecond
)

// Capabilities are what an engine declares about itself (see Describer).
type Capabilities struct {
	// Fair: WithFair (strict FIFO in the engine's queue) is supported.
	Fair bool
	// Embedded: the lock authority lives in this process (its locks go
	// with it).
	Embedded bool
	// MinTTL is the shortest lease ttl the engine can keep (0: no minimum
	// of its own), and TTLGranularity, when positive, the unit its ttls come
	// in: etcd's leases are whole seconds, at least about 2 s. distlock
	// rounds every ttl up to fit (FitTTL) before it asks the engine, and
	// Lease.TTL reports the ttl in effect; so does the server.
	MinTTL, TTLGranularity time.Duration
}

// FitTTL returns ttl rounded up to a multiple of c.TTLGranularity and
// raised to c.MinTTL: the ttl the engine will keep.
func (c Capabilities) FitTTL(ttl time.Duration) time.Duration {
	if g := c.TTLGranularity; g > 0 && ttl%g != 0 {
		ttl += g - ttl%g
	}
	return max(ttl, c.MinTTL)
}

// Describer is implemented by engines that declare their capabilities. An
// engine without it is taken as not fair and not embedded.
type Describer interface {
	Capabilities() Capabilities
}

// CapabilitiesOf returns e's declared capabilities (the zero value for an
// engine that declares none).
func CapabilitiesOf(e Engine) Capabilities {
	if d, ok := e.(Describer); ok {
		return d.Capabilities()
	}
	return Capabilities{}
}
