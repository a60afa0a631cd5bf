package api

// SetAcquireRequest is the body of POST /v1/sets/acquire: every lock of
// Locks granted in one step of the server's engine, or none
// (engine.MultiAcquirer). The names are distinct, 1 to 64 of them.
type SetAcquireRequest struct {
	Locks []SetLock `json:"locks"`
}

// SetLock is one lock of a set: a mutex.
type SetLock struct {
	Name string `json:"name"`
	// Owner is the owner token. Empty: the server generates one random
	// token for every lock of the set without one, and returns it.
	Owner string `json:"owner,omitempty"`
	// Attempt identifies the call (engine.AcquireRequest.Attempt); empty:
	// the owner when OneOff, else one the server makes.
	Attempt string `json:"attempt,omitempty"`
	// OneOff: Owner is a one-off owner that holds nothing yet and never
	// re-enters (engine.AcquireRequest.OneOff), as the Go client's owners
	// are; Attempt is then the owner. Without it, a name the owner holds
	// already refuses the set (a set takes free names only).
	OneOff bool `json:"one_off,omitempty"`
	// TTLMs is the lease's time to live (default 30000; 50 to 86400000).
	TTLMs    int64  `json:"ttl_ms,omitempty"`
	Metadata string `json:"metadata,omitempty"`
}

// SetAcquireResponse is the answer to a granted set: one grant per lock,
// in the order of the request.
type SetAcquireResponse struct {
	Locks []SetGrant `json:"locks"`
}

// SetGrant is one lock of a granted set.
type SetGrant struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	Token uint64 `json:"token"`
	TTLMs int64  `json:"ttl_ms"`
}

// SetReleaseRequest is the body of POST /v1/sets/release: each lock
// released by its owner (engine.MultiReleaser where the engine has it).
type SetReleaseRequest struct {
	Locks []SetOwner `json:"locks"`
}

// SetOwner names a lock and its owner, and the grant released.
type SetOwner struct {
	Name  string `json:"name"`
	Owner string `json:"owner"`
	// Token, when set, is the fencing token of the grant being released
	// (as a single release's): when Owner's hold has another token (a
	// newer grant of the same owner), its result is held_by_other and
	// nothing is dropped. Absent or 0: Owner's hold.
	Token uint64 `json:"token,omitempty"`
}

// SetReleaseResponse is the answer to a set's release: one result per
// lock, in the order of the request.
type SetReleaseResponse struct {
	Results []SetReleaseResult `json:"results"`
}

// SetReleaseResult is one lock's release: Status StatusReleased (one
// hold dropped; Remaining are left), StatusMissing (nobody held it),
// StatusHeldByOther, or StatusOtherKind (the owner holds the name as a
// semaphore or an RW lock, which a set does not release; Reason says which,
// and the hold is left as it was).
type SetReleaseResult struct {
	Status    string `json:"status"`
	Remaining int    `json:"remaining,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// StatusOtherKind is a SetReleaseResult's status for a name its owner
// holds as another kind of lock than a set takes (a mutex): nothing was
// released.
const StatusOtherKind = "other_kind"

// StatusReleased is a SetReleaseResult's status for a hold dropped.
const StatusReleased = "released"
