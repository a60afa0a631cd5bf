// Package engine is the contract between the distlock client and the lock
// authorities it runs on, in the way database/sql/driver is the contract
// between database/sql and its drivers.
//
// An Engine is one lock authority: one Redis node (engine/redis), one
// in-process table (engine/memory), or any other store that can perform each
// operation below as one atomic step. Every method is a single round trip to
// that authority. The public package distlock adds everything else on top:
// argument checks, waiting, leases with a watchdog, loss signalling and
// typed errors. Engines may assume their inputs were validated by it.
//
// Engines must be safe for concurrent use.
package engine

import (
	"context"
	"errors"
	"time"
)

// Engine is one lock authority.
type Engine interface {
	// Acquire grants the lock to r.Owner when nobody holds it, or when
	// r.Owner holds it already (re-entry: the hold count goes up, the
	// fencing token stays, the expiry moves only later: HoldExpiry). A new grant mints a fencing token that is
	// greater than every token minted before for the same name.
	// When another owner holds the lock, Acquire returns Acquired=false
	// with that holder and its time left; that is not an error.
	//
	// r.Kind says what is asked for (CheckKind: bad kind fields are an
	// *ArgumentError and change nothing). For a shared kind (an engine
	// that implements Sharer; others answer UnsupportedKind), Acquire
	// grants r.Weight permits to r.Owner when they are free and nobody
	// waits ahead of it (r.Waiter at the head is not ahead of itself), or
	// re-enters when r.Owner holds the lock already with the same weight
	// (the hold count goes up; a replayed Attempt does not). A refusal
	// reports the soonest holder's time left (HolderTTL: when permits may
	// come back without a release) and, for a waiter, that it is queued.
	// An owner that holds another weight is refused with ErrUpgrade (a
	// reader asking to write) or an *ArgumentError; so is a name that is a
	// lock of another kind (KindError).
	Acquire(ctx context.Context, r AcquireRequest) (Grant, error)

	// Extend sets the time to live of each listed lock that is still held
	// by the given owner (by HoldExpiry's rule: never shorter while the
	// owner holds it more than once). All requests go to the authority in one round
	// trip. The results are in the order of the requests. An error means
	// the round trip as a whole failed; per-request failures are reported
	// in ExtendResult.Err.
	Extend(ctx context.Context, rs []ExtendRequest) ([]ExtendResult, error)

	// Release drops one hold of r.Owner on the lock r.Name of kind
	// r.Kind. When the last hold is dropped, the lock is freed and waiters
	// subscribed to the name are woken (at least when a Waiting acquire
	// found the lock held since its grant). For a shared kind (Sharer;
	// others answer UnsupportedKind), the owner's permits come back when
	// its last hold goes, and the head of the queue is woken if it fits.
	Release(ctx context.Context, r ReleaseRequest) (ReleaseResult, error)

	// Inspect reports the state of the lock name without changing it,
	// whatever its kind: a shared lock's (an engine that implements
	// Sharer) with Kind, Limit and Holders (owner, weight, holds, token,
	// time left, metadata; Token is the highest holder token), a mutex's
	// otherwise. An engine that keeps the two kinds' records apart reads
	// both in the call that runs anyway and picks by Describe.
	Inspect(ctx context.Context, name string) (Info, error)

	// Subscribe registers interest in releases of name. The returned
	// Subscription is ready when Subscribe returns: a release that
	// happens afterwards is signalled on its channel.
	Subscribe(ctx context.Context, name string) (Subscription, error)

	// Close stops the engine's background work (subscriptions).
	// It does not close connections the engine was given by its user.
	Close() error
}

// AcquireRequest asks for one grant.
type AcquireRequest struct {
	Name     string
	Owner    string
	TTL      time.Duration
	Metadata string
	// Attempt identifies the Acquire call. When the current holder is
	// Owner and its last grant or re-entry carried the same Attempt, the
	// request is a retry of one already applied (a client library may
	// resend a command whose reply was lost): the engine answers as before
	// without counting up.
	//
	// A one-off owner (OneOff) sends its owner as Attempt.
	Attempt string
	// Kind is the kind of lock asked for: Mutex (the zero value), or a
	// shared lock (Semaphore, RWLock) with Limit and Weight. A shared
	// request ignores Order: a shared lock's queue is always first come,
	// first served, with weights (see Sharer; AcquireByKind clears it).
	// The rules of Kind, Limit and Weight are CheckKind's and CheckShared's.
	Kind Kind
	// Limit makes a semaphore that does not exist; once it exists, its
	// stored limit governs and a request that declares another is served
	// under it (Sharer.SetLimit changes it). An RW lock has RWPermits; a
	// mutex none (0).
	Limit int
	// Weight is the number of permits a shared request takes: 1 to the
	// stored limit (an RW lock's reader 1, its writer RWPermits). Any
	// other weight, 0 included, is refused with an *ArgumentError
	// (CheckShared). 0 for a mutex.
	Weight int
	// OneOff marks a one-off owner that never re-enters (the Client's
	// random owner tokens): releasing by that owner drops exactly this
	// grant, so a quorum may release it in the background when its outcome
	// on a node is unknown. An explicit owner may hold the lock already;
	// its unknown grants are left to expire.
	OneOff bool
	// Waiting tells the engine that, if the lock is held by another owner,
	// the caller will wait for a wake-up on a Subscription it holds (or
	// takes before its next attempt). An engine may publish wake-ups only
	// for grants that a Waiting request found held; an engine that always
	// publishes ignores it.
	Waiting bool
	// Waiter is the id of the waiting Acquire call this attempt belongs to
	// (the same on every attempt of the call), for engines that implement
	// Queuer (others ignore it): a refused attempt enters the name's
	// waiter queue under this id, and a granted one leaves it. Empty for a
	// call that does not wait (TryAcquire), which never enters the queue.
	Waiter string
	// WaiterTTL is the heartbeat ttl of the queue entry: without a heartbeat
	// (ExtendRequest.Waiter) the waiter is dropped from the queue after it.
	WaiterTTL time.Duration
	// Order is how the request stands toward the name's queued waiters:
	// the default policy, behind them, strict FIFO (fair), or never
	// reserved for (a quorum's). See Order.
	Order Order
	// Announce asks that the grant be signalled to the name's
	// subscribers (Subscribe), and its release later too, whether or not
	// anyone waits: an election's campaign sets it, so that observers learn
	// of a new leader by notification. Engines that signal every grant
	// anyway ignore it.
	Announce bool
	// Aged tells the engine that the caller counts the grant's validity
	// from the request's send time less Grant.Age. An engine may then put
	// the lock on a lease renewed shortly before the call (one request
	// fewer) and report how much of the ttl that lease had used. A caller
	// that does not set it (a server relaying the grant, a quorum) gets a
	// grant whose validity counts from its send time, Age 0. A layer that
	// passes requests on clears it unless it honours Age itself.
	Aged bool
	// TokenProposal, when not 0, is a fencing token the caller proposes
	// for the grant: a quorum proposes one to all its nodes, so that the
	// nodes that mint at about the same time agree on one token and its
	// phase 2 (raising the others to the highest) has nothing to do. An
	// engine that mints from its clock (NextToken: the Redis and embedded
	// engines) mints it when it is above both the high-water and the
	// clock, and at most MaxProposalLead ahead of the clock; otherwise, and
	// on engines that mint otherwise (etcd revisions, PostgreSQL, ZooKeeper
	// zxids), it changes nothing. It never lowers a token, and a re-entry
	// keeps its hold's token.
	TokenProposal uint64
}

// Grant is the answer to an AcquireRequest.
type Grant struct {
	// Acquired reports whether Owner holds the lock now.
	Acquired bool
	// Token is the fencing token of the grant (when Acquired).
	Token uint64
	// Count is the number of holds Owner has after this call (when Acquired).
	Count int
	// Holder is the owner that holds the lock (when not Acquired).
	Holder string
	// HolderTTL is the holder's time left (when not Acquired); negative
	// when the lock has no expiry, which distlock never creates itself.
	HolderTTL time.Duration
	// Retry, when positive, asks a waiter to try again after this long
	// instead of waiting for a wake-up: the lock may be free, but the
	// attempt collided with others (a split vote in a quorum).
	Retry time.Duration
	// Queued reports that the request (AcquireRequest.Waiter) is in the
	// name's waiter queue; Head that it is first in it. A waiter that is not
	// the head waits for its wake-up or its heartbeat's word (see
	// ExtendResult.Wake); the head also tries again when HolderTTL runs out.
	Queued, Head bool
	// Reserved reports that the lock is free but reserved for (or, in fair
	// mode, kept for) another waiter; HolderTTL is then the reservation's
	// time left.
	Reserved bool
	// Age (only when the request was Aged and Acquired) is how much of the
	// ttl had run out before the request was sent: the lock is kept at
	// least ttl - Age from the send time, and the caller's validity counts
	// from the send time less Age.
	Age time.Duration
}

// ExtendRequest asks to set the time to live of a held lock, or, with
// Waiter, the heartbeat deadline of the waiter Owner in Name's queue.
type ExtendRequest struct {
	Name  string
	Owner string
	TTL   time.Duration
	// Waiter makes the request a heartbeat of a queue entry (Queuer): Owner
	// is the waiter's id. The result is Extended while the waiter is
	// queued, Missing when it is not (dropped or granted).
	Waiter bool
	// Kind is the kind of the lock (or of the waiter's queue), as its
	// AcquireRequest asked: a shared kind (Sharer: a semaphore or a
	// reader-writer lock, renewed alike) addresses a shared lock's holder
	// or waiter, Mutex the mutex's.
	Kind Kind
	// Token, when not 0, is the fencing token of the grant the lease being
	// renewed holds (a holder's renewal; not a Waiter's heartbeat). An
	// engine that keeps grant tokens answers HeldByOther, with the hold's
	// Token, and changes nothing, when Owner's hold on Name has another
	// token: the lease's grant was freed (force-released, expired) and
	// its owner was granted the lock again, by another call or process
	// sharing the owner (WithOwner). Re-entry keeps the grant's token, so
	// every lease of one hold renews it. 0: the hold of Owner, whatever its
	// token (a caller that knows none). A quorum, whose nodes keep tokens of
	// their own, does not check it.
	Token uint64
}

// ExtendStatus is the outcome of one extension.
type ExtendStatus int

const (
	// Extended: the owner holds the lock and its time to live was set.
	Extended ExtendStatus = iota + 1
	// Missing: nobody holds the lock (it expired or was deleted).
	Missing
	// HeldByOther: another owner holds the lock now.
	HeldByOther
)

// String returns the name of the status.
func (s ExtendStatus) String() string {
	switch s {
	case Extended:
		return "extended"
	case Missing:
		return "missing"
	case HeldByOther:
		return "held by other"
	}
	return "unknown"
}

// ExtendResult is the answer to one ExtendRequest.
type ExtendResult struct {
	Status ExtendStatus
	// Token is the fencing token of the grant (when Extended).
	Token uint64
	// Err is set when this request failed on its own (the status is then
	// unknown).
	Err error
	// Wake, for a waiter's heartbeat, reports that the waiter is the head
	// of the queue and the lock is free (or reserved for it): it should try
	// now. This is how a waiter learns that the head before it died.
	Wake bool
}

// ReleaseRequest asks to drop one hold.
type ReleaseRequest struct {
	Name  string
	Owner string
	// Kind is the kind of lock the hold is of, as its AcquireRequest asked
	// (the caller knows its lease's kind): the engine dispatches on it once
	// (ReleaseByKind). A hold of the other shared kind (a semaphore's
	// permit released as an RW lock's, or the reverse) is not released:
	// the answer is the kind's *ArgumentError (KindError), and nothing
	// changes, as when an acquire asks for the wrong kind.
	Kind Kind
	// Undo marks the release of a grant that the caller takes back because
	// the attempt it was part of failed (a quorum's grant on a minority of
	// its nodes, a grant whose requester left before it was answered): when
	// it leaves a shared lock with no holder and nobody queued, the engine
	// also forgets the lock's kind and limit, as if the grant had not been
	// made, so that a refused attempt does not leave the name bound to its
	// kind; and a grant (of any kind) that took a waiter out of the queue
	// puts the waiter back in its place (its arrival ticket) when its last
	// hold goes, so that a quorum's minority grant taken back does not move
	// a queued writer behind the readers that queued after it, nor a
	// waiter behind those that queued after it. The embedded and
	// Redis engines honour it, and the remote engine passes it to its
	// server; an engine that does not leaves the kind until its lock is
	// forgotten and the waiter out of the queue, as after any release.
	Undo bool
	// Token, when not 0, is the fencing token of the grant being released
	// (ExtendRequest.Token): an engine that keeps grant tokens answers
	// NotOwner and drops nothing when Owner's hold on Name has another
	// token, so that the release of a freed grant does not drop a newer
	// grant of the same owner. 0: Owner's hold, whatever its token.
	Token uint64
}

// ReleaseResult is the answer to a release.
type ReleaseResult struct {
	// Status is Released when owner held the lock, NotHeld or NotOwner
	// when it did not.
	Status ReleaseStatus
	// Remaining is the number of holds owner still has (re-entry).
	Remaining int
}

// ReleaseStatus is the outcome of a release.
type ReleaseStatus int

const (
	// Released: one hold of the owner was dropped.
	Released ReleaseStatus = iota + 1
	// NotHeld: nobody holds the lock.
	NotHeld
	// NotOwner: another owner holds the lock, a newer grant of the owner
	// holds it (ReleaseRequest.Token), or a force-release freed the
	// owner's hold and the freed lease has not ended yet (taken over, as
	// an extension is told HeldByOther).
	NotOwner
)

// Info describes a lock.
//
// Info is not comparable with == and cannot be a map key: it holds slices
// (Queue, Holders). Compare the fields that matter, or use
// reflect.DeepEqual in tests (it also compares the PartialError that
// Partial points to, where == on the pointer would compare addresses).
type Info struct {
	Name string
	// Held reports whether anyone holds the lock.
	Held bool
	// Owner, Count, Metadata, Token and TTL describe the current grant.
	Owner    string
	Count    int
	Metadata string
	Token    uint64
	TTL      time.Duration
	// HighWater is the highest fencing token minted for the name that the
	// engine still remembers (0 when it remembers none).
	HighWater uint64
	// Waiters is the number of waiters: the live entries of the lock's
	// waiter queue (Queuer), the same count on every engine; 0 on an
	// engine without a queue. An election's observers (Subscribe) are not
	// waiters: see Subscribers.
	Waiters int
	// Subscribers counts the subscriptions to the lock's wake-ups that the
	// engine can see (Subscribe and SubscribeWaiter alike: observers and
	// waiters), for operators and tests; unlike Waiters it is not the same
	// count everywhere. The embedded engine counts every subscription; Redis
	// the client connections subscribed to the lock's channel (one per
	// engine, however many observe through it; a queued waiter's wake-ups
	// come on its engine's own channel, which is not counted); a quorum its
	// nodes' highest; engines that cannot see other processes'
	// subscriptions (etcd, PostgreSQL) and shared locks' Inspect leave it 0.
	Subscribers int
	// Queue lists the live entries of the lock's waiter queue in arrival
	// order (at most MaxQueueListed of them), for operators' wait-for
	// graphs: filled in by the memory engine, Redis, etcd, PostgreSQL,
	// ZooKeeper and the remote engine (every kind) and a quorum (a mutex's,
	// as one node lists it), nil elsewhere.
	Queue []Waiter
	// Holders lists who holds the lock: one entry for a mutex (the fields
	// above), and as many as hold it for the lock kinds that share
	// (distlock.Client.Inspect fills it in from the fields above when the
	// engine leaves it empty).
	Holders []Holder
	// Kind is the kind of the lock (a shared lock's: Sharer);
	// Mutex for a mutex. Limit is a shared lock's number of permits.
	Kind  Kind
	Limit int
	// Partial is set when the engine is made of parts (a quorum's nodes)
	// and some did not answer in time: the Info is then built from the
	// parts that answered (see PartialError). Nil when every part
	// answered.
	Partial *PartialError
}

// MutexView is i as the view of the name's mutex: i itself when it
// describes a mutex, else the view of a name without one: its Name,
// HighWater and Partial only.
func (i Info) MutexView() Info {
	if !i.Kind.Shared() {
		return i
	}
	return i.bare()
}

// SharedView is i as the view of the name's shared lock (a semaphore or a
// reader-writer lock): i itself when it describes one, else the view of a
// name without one, as MutexView's.
func (i Info) SharedView() Info {
	if i.Kind.Shared() {
		return i
	}
	return i.bare()
}

// bare is the view of i's name without a lock of the kind asked for.
func (i Info) bare() Info {
	return Info{Name: i.Name, HighWater: i.HighWater, Partial: i.Partial}
}

// MaxQueueListed bounds Info.Queue.
const MaxQueueListed = 100

// Waiter is one entry of a lock's waiter queue (Info.Queue).
type Waiter struct {
	// ID is the waiter's id (AcquireRequest.Waiter); distlock.WaiterOwner
	// reads the owner a Client puts in it.
	ID string
	// Waited is how long it has been in the queue; 0 where the engine
	// records no arrival time (etcd, PostgreSQL's shared locks: the order
	// is known, not the time).
	Waited time.Duration
}

// Holder is one holder of a lock.
type Holder struct {
	Owner    string
	Count    int
	Token    uint64
	TTL      time.Duration
	Metadata string
	// Weight is the number of permits the holder has of a shared lock
	// (a reader-writer lock's writer has RWPermits); 1 for a mutex.
	Weight int
}

// Subscription delivers wake-ups for one lock name.
type Subscription interface {
	// C receives a value after the lock was released, and whenever the
	// engine may have missed a release (after a reconnect): the waiter
	// must then try again. Wake-ups coalesce.
	C() <-chan struct{}
	// Close ends the subscription. It is idempotent.
	Close()
}

// ErrClosed is returned by an engine's operations after Close.
var ErrClosed = errors.New("engine closed")

// OnceReleaser is implemented by engines whose releases can be made
// idempotent: ReleaseOnce is Release, except that a second release with the
// same id (a retry, or a copy of a request whose reply was lost) does not
// drop a second hold. A quorum uses one id for a release on every node and
// for its background retries.
//
// An engine whose shared locks cannot release once answers a shared r.Kind
// with UnsupportedKind (ReleaseOnceByKind with no shared path).
type OnceReleaser interface {
	ReleaseOnce(ctx context.Context, r ReleaseRequest, id string) (ReleaseResult, error)
}

// FenceRaiser is implemented by engines that can raise a lock's fencing
// high-water for a grant: a quorum needs it of its nodes (phase 2 of a
// grant), and implements it itself.
//
// An engine whose shared locks cannot be raised answers a shared r.Kind
// with UnsupportedKind (RaiseByKind with no shared path).
type FenceRaiser interface {
	// RaiseFence raises the fencing high-water of r.Name to at least
	// r.Token and records r.Token as the fencing token of r.Owner's hold
	// (a mutex's grant, or a holder's permits of a shared lock, by
	// r.Kind), but only while r.Owner holds the lock. It reports whether
	// r.Owner held it. A raise the rule CheckRaise states refuses (below
	// the hold's token, above MaxToken, more than MaxRaiseAhead ahead of
	// the authority's clock) is an *ArgumentError and changes nothing.
	RaiseFence(ctx context.Context, r RaiseRequest) (bool, error)
}

// RaiseRequest asks to raise the fencing token of one hold
// (FenceRaiser).
type RaiseRequest struct {
	Name  string
	Owner string
	// Token is the token the hold's fencing token is raised to.
	Token uint64
	// Kind is the kind of lock the hold is of, as its AcquireRequest
	// asked: the engine dispatches on it once (RaiseByKind).
	Kind Kind
}

// ForceReleaser is implemented by engines that can free a lock whoever
// holds it (an administrator's repair): a mutex, or every holder of a
// shared lock (Sharer). It reports whether the lock was held and wakes the
// lock's waiters (a shared lock: the head of its queue). Every holder it
// freed, of either kind, is told HeldByOther by its next renewal (the
// Client reports the lease lost as taken over), once, until its lease
// would have ended; the mark the engine keeps for that goes by itself when
// that lease would have ended (and is no leak: LeakFinder reports none).
type ForceReleaser interface {
	ForceRelease(ctx context.Context, name string) (bool, error)
}

// HolderReleaser is implemented by ForceReleasers that can free one holder
// of a lock, by owner: that holder of a shared lock (its permits come
// back, the head of the queue is woken if it fits, the other holders keep
// theirs), or the mutex when owner holds it (its waiters are woken). The
// holder freed is told HeldByOther by its next renewal, as ForceRelease's
// are. It reports whether owner held the lock; when it did not, nothing
// changed.
type HolderReleaser interface {
	ForceReleaseHolder(ctx context.Context, name, owner string) (bool, error)
}

// NameChecker is implemented by engines with rules of their own for lock
// names, beyond the one rule of every engine (ValidateName). No engine of
// this module has any: a name one of them takes, all take. CheckName
// applies both; distlock.Client checks every name with it before any call,
// and so does the server before it answers; a name it refuses changes
// nothing.
type NameChecker interface {
	// CheckName returns an *ArgumentError when name breaks a rule of the
	// engine, nil otherwise.
	CheckName(name string) error
}

// ArgumentError reports input an engine cannot take (a name, see
// ValidateName; a kind or limit, see CheckShared). Nothing was changed.
type ArgumentError struct {
	Arg    string // the argument: "name"
	Reason string // what is wrong with it
}

func (e *ArgumentError) Error() string { return "invalid " + e.Arg + ": " + e.Reason }

// CheckName checks name with the rule of every engine (ValidateName), then
// with eng's own rules, when it has any (NameChecker). It returns an
// *ArgumentError, or nil.
func CheckName(eng Engine, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if nc, ok := eng.(NameChecker); ok {
		return nc.CheckName(name)
	}
	return nil
}

// MetadataRequest asks to set the metadata of a held lock in place (an
// election's Proclaim: the leader's new value).
type MetadataRequest struct {
	Name     string
	Owner    string
	Metadata string
	// Token, when not 0, is the fencing token of the grant whose holder
	// sets the metadata (an election's term), with ExtendRequest.Token's
	// meaning: an engine that keeps grant tokens answers HeldByOther and
	// changes nothing when Owner's hold on Name has another token (the
	// grant was freed, by a force-release or an expiry, and its owner was
	// granted the lock again: a deposed leader of the same owner). 0: the
	// hold of Owner, whatever its token (a caller that knows none). A
	// quorum, whose nodes keep tokens of their own, does not check it.
	Token uint64
}

// MetadataSetter is implemented by engines that can change the metadata of
// a held lock in place (an election's Proclaim: the leader's new value,
// without a new election).
type MetadataSetter interface {
	// SetMetadata sets the metadata of r.Name to r.Metadata while r.Owner
	// holds it (under the grant of r.Token, when not 0), without touching
	// its ttl, token or count, and signals the name's subscribers. It
	// returns Extended when it did, Missing or HeldByOther when the owner
	// does not hold the lock, or holds it under another token (and nothing
	// changed). A hold a force-release freed, whose lease has not ended, is
	// answered HeldByOther (taken over), as Extend answers it.
	SetMetadata(ctx context.Context, r MetadataRequest) (ExtendStatus, error)
}
