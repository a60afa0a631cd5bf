package engine

import (
	"context"
	"errors"
	"fmt"
)

// MultiAcquirer is implemented by engines that can grant several mutexes
// in one atomic step and one round trip (distlock.Client.AcquireAll): the
// memory engine under its one lock, Redis in one script when every name's
// keys are on one node, etcd in one transaction, PostgreSQL in one function
// call, the remote engine in one request to a server whose engine has it.
// Engines without it are driven by the Client one
// name at a time, in sorted order, with rollback.
type MultiAcquirer interface {
	// AcquireMulti grants every request of rs, or none. The requests are
	// mutexes of distinct names with one-off owners (OneOff), no waiter,
	// and one atomic step: a name is taken only when it is free and
	// nobody queues for it (a set never takes a name ahead of its queue,
	// fair or not). Each grant mints its name's next fencing token, as
	// Acquire does.
	//
	// When a name is held by another owner, or free but kept for its
	// queue, nothing changes: MultiGrant.Blocked is that request's index
	// and MultiGrant.Grant says why (Holder, HolderTTL; Reserved for a
	// free lock kept for its queue). A name held as a shared lock is
	// refused with the error Acquire gives (KindError), changing nothing.
	// When the engine cannot grant these names in one step (Redis Cluster
	// names in different hash slots), it returns an error matching
	// ErrNotAtomic, having changed nothing; the Client then takes them
	// one by one.
	AcquireMulti(ctx context.Context, rs []AcquireRequest) (MultiGrant, error)
}

// MultiReleaser is implemented by engines that can release several locks
// in one round trip (a LeaseSet's Release): memory under its one lock,
// Redis in one pipeline (one per node on Cluster), etcd in one transaction,
// PostgreSQL in one function call.
type MultiReleaser interface {
	// ReleaseMulti is Release of each request of rs (mutexes of distinct
	// names), in one round trip; the results are in the order of the
	// requests. Each is judged as Release judges it, its grant token
	// included: a request whose Token is not 0 releases only the grant of
	// that token, so a set's release never drops a newer grant its owner
	// was given after a force-release (NotOwner, as Release answers). An
	// error means the round trip as a whole failed (some releases may have
	// been applied: each is safe to send again).
	ReleaseMulti(ctx context.Context, rs []ReleaseRequest) ([]ReleaseResult, error)
}

// MultiGrant is the answer to AcquireMulti.
type MultiGrant struct {
	// Acquired reports that every request was granted; Tokens holds the
	// fencing token of each, in the order of the requests.
	Acquired bool
	Tokens   []uint64
	// Blocked is the index of the request that was refused (when not
	// Acquired), and Grant its refusal as Acquire would answer it.
	Blocked int
	Grant   Grant
}

// ErrNotAtomic is AcquireMulti's answer for names the engine cannot grant
// in one step. Nothing was changed.
var ErrNotAtomic = errors.New("engine cannot grant these names in one step")

// CheckSet refuses a set AcquireMulti cannot take, changing nothing: a
// name given twice (an *ArgumentError), or a request with a waiter (a
// set's requests queue nowhere: ErrNotAtomic).
func CheckSet(rs []AcquireRequest) error {
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		if seen[r.Name] {
			return &ArgumentError{Arg: "names", Reason: fmt.Sprintf("%q is given twice", r.Name)}
		}
		seen[r.Name] = true
		if r.Waiter != "" {
			return fmt.Errorf("%w: a set's request queues no waiter", ErrNotAtomic)
		}
	}
	return nil
}

// CheckReleaseSet refuses a ReleaseMulti that gives a name twice, or a
// request of a shared kind (a set holds mutexes), with an *ArgumentError.
func CheckReleaseSet(rs []ReleaseRequest) error {
	seen := make(map[string]bool, len(rs))
	for _, r := range rs {
		if seen[r.Name] {
			return &ArgumentError{Arg: "names", Reason: fmt.Sprintf("%q is given twice", r.Name)}
		}
		seen[r.Name] = true
		if r.Kind != Mutex {
			return &ArgumentError{Arg: "kind", Reason: "a set releases mutexes only"}
		}
	}
	return nil
}
