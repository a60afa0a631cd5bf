// Package wire converts between the engine contract's requests (package
// engine) and the server API's wire types (server/api), once, for both
// sides of the wire: the server (package server) and the remote engine
// (engine/remote). server/api itself depends on nothing.
package wire

import (
	"fmt"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// KindName is the wire name of a lock kind: api.KindSemaphore,
// api.KindRWLock, or "" for a mutex (the default the API omits).
func KindName(k engine.Kind) string {
	switch k {
	case engine.Semaphore:
		return api.KindSemaphore
	case engine.RWLock:
		return api.KindRWLock
	}
	return ""
}

// ModeOf is the wire mode of an RW lock's weight: api.ModeWrite for the
// writer's (engine.RWPermits), api.ModeRead for a reader's.
func ModeOf(weight int) string {
	if weight >= engine.RWPermits {
		return api.ModeWrite
	}
	return api.ModeRead
}

// AcquireBody is the body of POST /v1/locks/{name}/acquire for one attempt
// of r (no waiting on the server: wait_ms 0): the kind by name, a
// semaphore's limit and weight, an RW lock's mode; Announce only for a
// mutex (the server refuses an election of a shared kind).
func AcquireBody(r engine.AcquireRequest) api.AcquireRequest {
	b := api.AcquireRequest{Owner: r.Owner, TTLMs: ms(r.TTL), Metadata: r.Metadata, Attempt: r.Attempt, Waiting: r.Waiting,
		Waiter: r.Waiter, Fair: r.Order == engine.OrderFair, Behind: r.Order.Yields(), NoReserve: r.Order == engine.OrderNoReserve, OneOff: r.OneOff,
		Announce: r.Announce && !r.Kind.Shared(), Kind: KindName(r.Kind)}
	if r.Waiter != "" {
		b.WaiterTTLMs = ms(r.WaiterTTL)
	}
	switch r.Kind {
	case engine.Semaphore:
		b.Limit, b.Weight = r.Limit, r.Weight
	case engine.RWLock:
		b.Mode = ModeOf(r.Weight)
	}
	return b
}

// OrderOf reads the queue order of an acquire body from its fair, behind
// and no_reserve fields: fair (with or without behind) is OrderFair, behind
// alone OrderBehind, no_reserve alone OrderNoReserve, none of them
// OrderDefault. No_reserve with fair or behind asks for two orders at
// once: an *engine.ArgumentError, arg "no_reserve".
func OrderOf(b api.AcquireRequest) (engine.Order, error) {
	switch {
	case b.NoReserve && (b.Fair || b.Behind):
		return 0, &engine.ArgumentError{Arg: "no_reserve", Reason: "a waiter that is never reserved for cannot also be fair or stay behind the queue"}
	case b.NoReserve:
		return engine.OrderNoReserve, nil
	case b.Fair:
		return engine.OrderFair, nil
	case b.Behind:
		return engine.OrderBehind, nil
	}
	return engine.OrderDefault, nil
}

// SetLockBody is the wire form of one lock of a set (a mutex's request).
func SetLockBody(r engine.AcquireRequest) api.SetLock {
	return api.SetLock{Name: r.Name, Owner: r.Owner, Attempt: r.Attempt, OneOff: r.OneOff, TTLMs: ms(r.TTL), Metadata: r.Metadata}
}

// ms is d in whole milliseconds on the wire, at least 1.
func ms(d time.Duration) int64 { return max(1, d.Milliseconds()) }

// ParseKind reads a wire kind name ("" and api.KindMutex are a mutex). An
// unknown name is an *engine.ArgumentError.
func ParseKind(name string) (engine.Kind, error) {
	switch name {
	case "", api.KindMutex:
		return engine.Mutex, nil
	case api.KindSemaphore:
		return engine.Semaphore, nil
	case api.KindRWLock:
		return engine.RWLock, nil
	}
	return 0, &engine.ArgumentError{Arg: "kind", Reason: fmt.Sprintf("%q is not mutex, semaphore or rwlock", name)}
}

// sharedKind is the engine kind the wire's "shared": true stands for,
// where the wire names no kind (extend items, releases before the kind
// field): engines renew a semaphore's and an RW lock's holders and waiters
// alike; a release is of the kind asked (the server asks the hold's own).
const sharedKind = engine.Semaphore

// kindOf is the kind a wire item marked shared (or not) stands for.
func kindOf(shared bool) engine.Kind {
	if shared {
		return sharedKind
	}
	return engine.Mutex
}

// ExtendItem is the wire item of an extension (POST /v1/extend, and the
// fields of POST /v1/locks/{name}/extend).
func ExtendItem(r engine.ExtendRequest) api.ExtendRequest {
	return api.ExtendRequest{Name: r.Name, Owner: r.Owner, TTLMs: ms(r.TTL), Waiter: r.Waiter, Shared: r.Kind.Shared(), Token: r.Token}
}

// Extend is the engine request a wire extension item asks for, with the
// ttl the server fitted (and name, for the single-lock endpoint, whose
// item has none).
func Extend(name string, b api.ExtendRequest, ttl time.Duration) engine.ExtendRequest {
	return engine.ExtendRequest{Name: name, Owner: b.Owner, TTL: ttl, Waiter: b.Waiter, Kind: kindOf(b.Shared), Token: b.Token}
}

// ReleaseBody is the body of POST /v1/locks/{name}/release for r. It
// carries the kind by name, and Shared for servers before the kind field.
func ReleaseBody(r engine.ReleaseRequest) api.ReleaseRequest {
	return api.ReleaseRequest{Owner: r.Owner, Kind: KindName(r.Kind), Shared: r.Kind.Shared(), Undo: r.Undo, Token: r.Token}
}

// Release is the engine request a release body of the lock name asks
// for. A body with Shared and no Kind (a client before the kind field)
// asks for sharedKind, which the server replaces with the kind of the
// owner's hold (engines release only a hold of the kind asked).
func Release(name string, b api.ReleaseRequest) (engine.ReleaseRequest, error) {
	kind, err := ParseKind(b.Kind)
	if err != nil {
		return engine.ReleaseRequest{}, err
	}
	if kind == engine.Mutex && b.Shared {
		if b.Kind != "" {
			return engine.ReleaseRequest{}, &engine.ArgumentError{Arg: "shared", Reason: "a mutex's release is not shared"}
		}
		kind = sharedKind
	}
	return engine.ReleaseRequest{Name: name, Owner: b.Owner, Kind: kind, Undo: b.Undo, Token: b.Token}, nil
}

// FenceBody is the body of POST /v1/locks/{name}/fence for r: a shared
// r.Kind is marked Shared (the wire names no kind there: engines raise a
// semaphore's and an RW lock's holders alike).
func FenceBody(r engine.RaiseRequest) api.FenceRequest {
	return api.FenceRequest{Owner: r.Owner, Token: r.Token, Shared: r.Kind.Shared()}
}

// Raise is the engine request a fence body of the lock name asks for.
func Raise(name string, b api.FenceRequest) engine.RaiseRequest {
	return engine.RaiseRequest{Name: name, Owner: b.Owner, Token: b.Token, Kind: kindOf(b.Shared)}
}

// LeaveBody is the body of POST /v1/locks/{name}/leave for r: a shared
// r.Kind is marked Shared (the wire names no kind there: engines take a
// semaphore's and an RW lock's waiters out alike).
func LeaveBody(r engine.LeaveRequest) api.LeaveRequest {
	return api.LeaveRequest{Waiter: r.Waiter, Shared: r.Kind.Shared()}
}

// Leave is the engine request a leave body of the lock name asks for.
func Leave(name string, b api.LeaveRequest) engine.LeaveRequest {
	return engine.LeaveRequest{Name: name, Waiter: b.Waiter, Kind: kindOf(b.Shared)}
}
