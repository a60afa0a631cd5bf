package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shared locks: semaphores and reader-writer locks. An engine that keeps
// them implements Sharer. A shared lock has a number of permits (its
// limit), stored per name; each holder takes a weight of them, with a lease
// of its own that expires on its own in the authority's time, and a fencing
// token from the name's one counter. A reader-writer lock is the same
// thing with RWPermits permits: a reader takes one, a writer all.
//
// Waiting is strictly first come, first served, with weights (the rule of
// golang.org/x/sync/semaphore.Weighted): a request is granted only when its
// weight fits in the free permits and nobody is queued ahead of it, so a
// large request at the head is never overtaken by later small ones, and a
// waiting writer is never starved by a stream of readers. The queue is the
// one of Queuer (waiter ids, heartbeats with ExtendRequest.Waiter and
// a shared Kind, head-only wake-ups on SubscribeWaiter), kept per name.

// RWPermits is the number of permits of a reader-writer lock.
const RWPermits = 1 << 30

// ErrUpgrade is returned when an owner that holds the read side of a
// reader-writer lock asks for the write side (or the other way round):
// refused, as upgrades deadlock when two readers try at once. Release the
// read lease and Lock.
var ErrUpgrade = errors.New("read-to-write upgrade refused: release the read lock, then take the write lock")

// Sharer is implemented by engines that keep shared locks: their Acquire
// and Release take every Kind (AcquireRequest.Kind, ReleaseRequest.Kind),
// Extend renews their holders and their waiters' heartbeats (a shared
// ExtendRequest.Kind), Inspect describes them, a Queuer's Leave takes
// their waiters out of the queue (a shared LeaveRequest.Kind), and a
// FenceRaiser's RaiseFence raises their holders' tokens (a shared
// RaiseRequest.Kind).
type Sharer interface {
	// SetLimit changes a semaphore's limit (creating it when it does not
	// exist). Holders above a smaller limit keep their permits; new ones
	// are granted when they fit under it; queued waiters keep their
	// places, and the head is woken if it fits. It returns the previous
	// limit (0 for a new semaphore). An engine that cannot keep the limit
	// returns an error that matches errors.ErrUnsupported.
	SetLimit(ctx context.Context, name string, limit int) (int, error)
}

// The refusals of a shared-lock request, worded alike on every engine (the
// conformance suite and the Redis tests compare them word for word).

// CheckShared refuses r for a shared lock that exists (or is made) with
// kind and limit, its stored limit: another kind, or a weight outside 1 to
// limit. A semaphore's limit that r declares is not compared: the stored
// one governs. It returns an *ArgumentError, or nil.
func CheckShared(r AcquireRequest, kind Kind, limit int) error {
	if kind != r.Kind {
		return KindError(r.Name, kind, r.Kind)
	}
	return CheckWeight(r.Weight, limit)
}

// CheckWeight refuses a weight outside 1 to limit (0 too: a request takes
// at least one permit) with an *ArgumentError, or returns nil.
func CheckWeight(weight, limit int) error {
	if weight < 1 || weight > limit {
		return &ArgumentError{Arg: "weight", Reason: fmt.Sprintf("%d is not between 1 and the limit %d", weight, limit)}
	}
	return nil
}

// KindError refuses a request of kind asked on a name that is a lock of
// kind is (Mutex: a mutex).
func KindError(name string, is, asked Kind) error {
	return &ArgumentError{Arg: "name", Reason: fmt.Sprintf("%q is a %s, not a %s", name, is, asked)}
}

// HeldWeightError refuses an owner that holds holds permits of a semaphore
// and asks for another weight (on an RW lock that is ErrUpgrade).
func HeldWeightError(name string, holds, asked int) error {
	return &ArgumentError{Arg: "weight", Reason: fmt.Sprintf("the owner holds %d permits of %q, not %d", holds, name, asked)}
}

// SharedRefusal turns the refusal a script or a database function reports
// for r, "DISTLOCK <code> <n>", into the error CheckShared, KindError,
// HeldWeightError or ErrUpgrade give: code mutex (the name is a mutex),
// kind (n: the stored kind), weight (n: the stored limit), held (n: the
// owner's weight), upgrade. It returns nil for any other message.
func SharedRefusal(msg string, r AcquireRequest) error {
	what, ok := strings.CutPrefix(msg, "DISTLOCK ")
	if !ok {
		return nil
	}
	code, arg, _ := strings.Cut(what, " ")
	n, _ := strconv.Atoi(arg)
	switch code {
	case "mutex":
		return KindError(r.Name, Mutex, r.Kind)
	case "kind":
		return KindError(r.Name, Kind(n), r.Kind)
	case "weight":
		return CheckWeight(r.Weight, n)
	case "held":
		return HeldWeightError(r.Name, n, r.Weight)
	case "upgrade":
		return ErrUpgrade
	}
	return nil
}
