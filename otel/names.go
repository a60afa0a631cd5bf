package distlockotel

// Span names.
const (
	// SpanAcquire is an Acquire or TryAcquire call, from the call to the
	// grant or give-up (span kind client).
	SpanAcquire = "distlock.acquire"
	// SpanHold is a lease, from its grant to its release or loss: a child
	// of the acquire span.
	SpanHold = "distlock.hold"
)

// Span event names.
const (
	// EventWaiting: the acquire's first attempt was refused and it waits.
	EventWaiting = "distlock.waiting"
	// EventRenewalFailed: a renewal of the lease failed (on the hold span).
	EventRenewalFailed = "distlock.renewal.failed"
)

// Span attribute keys.
const (
	AttrLockName  = "distlock.lock.name"  // string: the lock's name
	AttrLockKind  = "distlock.lock.kind"  // string: mutex, semaphore, rwlock
	AttrLockOwner = "distlock.lock.owner" // string: the owner token (explicit, or the grant's random one)
	AttrLockToken = "distlock.lock.token" // int: the grant's fencing token
	AttrEngine    = "distlock.engine"     // string: the engine and node

	AttrAcquireWait      = "distlock.acquire.wait"      // bool: Acquire (true) or TryAcquire
	AttrAcquireWaited    = "distlock.acquire.waited"    // double, seconds: call to grant or give-up
	AttrAcquireContended = "distlock.acquire.contended" // bool: an attempt found the lock held
	AttrAcquireQueued    = "distlock.acquire.queued"    // bool: it entered the engine's waiter queue
	AttrAcquireHead      = "distlock.acquire.head"      // bool: it headed the queue at its last attempt
	AttrAcquireOutcome   = "distlock.acquire.outcome"   // string: acquired, or the failure reason
	AttrHolders          = "distlock.holders"           // int: holders seen when the wait began (EventWaiting)
	AttrLinkType         = "distlock.link.type"         // string on a link: "holder"

	AttrLeaseHeld      = "distlock.lease.held"       // double, seconds: grant to release or loss
	AttrLeaseEnd       = "distlock.lease.end"        // string: released, lost
	AttrLeaseLossCause = "distlock.lease.loss_cause" // string: expired, taken_over, unreachable, max_hold (WithMaxHold)

	AttrErrorMessage = "error.message" // string: a failed renewal's error (EventRenewalFailed)
)

// Metric attribute keys: the Prometheus series' label names.
const (
	LabelOutcome = "outcome" // acquired, failed
	LabelReason  = "reason"  // locked, timeout, canceled, refused, backend, closed, other
	LabelEnd     = "end"     // released, lost
	LabelResult  = "result"  // ok, failed
	LabelCause   = "cause"   // expired, taken_over, unreachable, max_hold (WithMaxHold)
)
