package engine

import (
	"context"
	"errors"
	"fmt"
)

// Kind is the kind of a lock: what an AcquireRequest asks for, and what
// Info reports of a name.
type Kind uint8

const (
	// Mutex: one owner at a time (the zero value).
	Mutex Kind = iota
	// Semaphore: Limit permits, each holder takes Weight of them (Sharer).
	Semaphore
	// RWLock: a reader takes one of RWPermits permits, a writer all
	// (Sharer).
	RWLock
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Mutex:
		return "mutex"
	case Semaphore:
		return "semaphore"
	case RWLock:
		return "rwlock"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Shared reports whether k is a shared lock's kind (Sharer).
func (k Kind) Shared() bool { return k != Mutex }

// CheckKind refuses kind fields of r that no engine takes, with an
// *ArgumentError, before anything is changed: an unknown Kind; a mutex
// with a Limit or a Weight above 1; a semaphore's Limit outside 0 to
// RWPermits-1 (0 declares none: the stored limit governs) or Weight outside
// 1 to RWPermits-1; an RW lock's Weight other than 1 (read) or RWPermits
// (write), or a Limit other than RWPermits (0 is taken as it); an Order
// that is none of the Order constants. The weight
// is checked against the stored limit by the engine (CheckShared).
// AcquireByKind applies it, once, before it dispatches on the kind.
func CheckKind(r *AcquireRequest) error {
	if r.Kind == Mutex && r.Limit == 0 && r.Weight <= 1 && r.Weight >= 0 && r.Order <= OrderNoReserve {
		return nil // the fast path
	}
	if err := checkOrder(r.Order); err != nil {
		return err
	}
	return checkKind(r)
}

func checkKind(r *AcquireRequest) error {
	limits := func(lo, hi int) error {
		return &ArgumentError{Arg: "limit", Reason: fmt.Sprintf("%d is not between %d and %d for a %s", r.Limit, lo, hi, r.Kind)}
	}
	switch r.Kind {
	case Mutex:
		if r.Limit != 0 {
			return limits(0, 0)
		}
		return CheckWeight(r.Weight, 1)
	case Semaphore:
		if r.Limit < 0 || r.Limit >= RWPermits {
			return limits(0, RWPermits-1)
		}
		return CheckWeight(r.Weight, RWPermits-1)
	case RWLock:
		if r.Limit != 0 && r.Limit != RWPermits {
			return limits(RWPermits, RWPermits)
		}
		if r.Weight != 1 && r.Weight != RWPermits {
			return &ArgumentError{Arg: "weight", Reason: fmt.Sprintf("%d is neither 1 (read) nor %d (write)", r.Weight, RWPermits)}
		}
		return nil
	}
	return unknownKind(r.Kind)
}

// UnsupportedKind is the error of an engine asked for a kind of lock it
// does not keep (a shared kind, on an engine that is no Sharer): it matches
// errors.ErrUnsupported, and nothing was changed.
func UnsupportedKind(kind Kind) error {
	return fmt.Errorf("engine: %s locks are not kept here: %w", kind, errors.ErrUnsupported)
}

// AcquireFunc is one path of an engine's Acquire: its mutex's or its
// shared locks'.
type AcquireFunc func(ctx context.Context, r AcquireRequest) (Grant, error)

// AcquireByKind is the one dispatch of Engine.Acquire on r.Kind, which every
// engine's Acquire is: CheckKind refuses bad kind fields, then a mutex goes
// to mutex and a shared kind to shared, with Order cleared (a shared
// request ignores it: AcquireRequest.Kind). An engine
// that keeps no shared locks passes a nil shared: a shared kind is then
// refused with UnsupportedKind. The mutex path costs a branch and a call,
// no round trip and no allocation.
func AcquireByKind(ctx context.Context, r AcquireRequest, mutex, shared AcquireFunc) (Grant, error) {
	if err := CheckKind(&r); err != nil {
		return Grant{}, err
	}
	if r.Kind == Mutex {
		return mutex(ctx, r)
	}
	if shared == nil {
		return Grant{}, UnsupportedKind(r.Kind)
	}
	r.Order = OrderDefault
	return shared(ctx, r)
}

// ReleaseFunc is one path of an engine's Release: its mutex's or its
// shared locks'.
type ReleaseFunc func(ctx context.Context, r ReleaseRequest) (ReleaseResult, error)

// ReleaseOnceFunc is one path of an engine's ReleaseOnce (OnceReleaser).
type ReleaseOnceFunc func(ctx context.Context, r ReleaseRequest, id string) (ReleaseResult, error)

// ReleaseByKind is the one dispatch of Engine.Release on r.Kind: a mutex's
// hold goes to mutex, a shared lock's to shared. An unknown kind is an
// *ArgumentError; a shared kind on an engine that passes a nil shared is
// refused with UnsupportedKind.
func ReleaseByKind(ctx context.Context, r ReleaseRequest, mutex, shared ReleaseFunc) (ReleaseResult, error) {
	f, err := path(r.Kind, mutex, shared, shared != nil)
	if err != nil {
		return ReleaseResult{}, err
	}
	return f(ctx, r)
}

// ReleaseOnceByKind is ReleaseByKind for OnceReleaser.ReleaseOnce.
func ReleaseOnceByKind(ctx context.Context, r ReleaseRequest, id string, mutex, shared ReleaseOnceFunc) (ReleaseResult, error) {
	f, err := path(r.Kind, mutex, shared, shared != nil)
	if err != nil {
		return ReleaseResult{}, err
	}
	return f(ctx, r, id)
}

// LeaveFunc is one path of an engine's Leave (Queuer): its mutex's queue
// or its shared locks'.
type LeaveFunc func(ctx context.Context, r LeaveRequest) error

// LeaveByKind is the one dispatch of Queuer.Leave on r.Kind, as
// ReleaseByKind is Release's: an unknown kind is an *ArgumentError; a
// shared kind on an engine that passes a nil shared is refused with
// UnsupportedKind.
func LeaveByKind(ctx context.Context, r LeaveRequest, mutex, shared LeaveFunc) error {
	f, err := path(r.Kind, mutex, shared, shared != nil)
	if err != nil {
		return err
	}
	return f(ctx, r)
}

// RaiseFunc is one path of an engine's RaiseFence (FenceRaiser): its
// mutex's or its shared locks'.
type RaiseFunc func(ctx context.Context, r RaiseRequest) (bool, error)

// RaiseByKind is the one dispatch of FenceRaiser.RaiseFence on r.Kind, as
// ReleaseByKind is Release's.
func RaiseByKind(ctx context.Context, r RaiseRequest, mutex, shared RaiseFunc) (bool, error) {
	f, err := path(r.Kind, mutex, shared, shared != nil)
	if err != nil {
		return false, err
	}
	return f(ctx, r)
}

// path picks the path of an operation of kind k: mutex, or shared when the
// engine has one (hasShared), else an error.
func path[F any](k Kind, mutex, shared F, hasShared bool) (F, error) {
	switch {
	case k == Mutex:
		return mutex, nil
	case k > RWLock:
		var none F
		return none, unknownKind(k)
	case !hasShared:
		var none F
		return none, UnsupportedKind(k)
	}
	return shared, nil
}

// unknownKind refuses a kind that is none of Mutex, Semaphore, RWLock.
func unknownKind(k Kind) error {
	return &ArgumentError{Arg: "kind", Reason: fmt.Sprintf("%d is not a lock kind", uint8(k))}
}

// Describe is the one view Inspect gives of a name whose mutex and shared
// lock an engine keeps apart (mutex and shared, read together): the held
// one (the shared lock's holders and a mutex's exclude each other); else
// the shared lock's while its waiters wait; else the mutex's while it is
// waited for; else the shared lock's when its kind is stored (a free
// semaphore keeps its limit); else the mutex's. (Queued waiters bind a
// name to their kind, so a mutex is not granted while a shared lock's
// waiters wait; should both be found, as an older version's engine could
// leave them, the held mutex is what the name shows.)
// HighWater is the higher of the two.
func Describe(mutex, shared Info) Info {
	info := mutex
	switch {
	case shared.Kind == Mutex:
	case shared.Held:
		info = shared
	case mutex.Held:
	case shared.Waiters > 0:
		info = shared
	case mutex.Waiters > 0:
	default:
		info = shared
	}
	info.HighWater = max(mutex.HighWater, shared.HighWater)
	return info
}
