// Package wire converts between the engine contract's requests (package
// engine) and the server API's wire types (server/api), once, for both
// sides of the wire: the server (package server) and the remote engine
// (engine/remote). server/api itself depends on nothing.
package wire

import (
	"fmt"

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

// ReleaseBody is the body of POST /v1/locks/{name}/release for r. It
// carries the kind by name, and Shared for servers before the kind field.
func ReleaseBody(r engine.ReleaseRequest) api.ReleaseRequest {
	return api.ReleaseRequest{Owner: r.Owner, Kind: KindName(r.Kind), Shared: r.Kind.Shared()}
}

// Release is the engine request a release body of the lock name asks
// for. A body with Shared and no Kind (a client before the kind field)
// releases a shared lock's hold, which engines release alike whatever the
// shared kind (engine.ReleaseRequest.Kind): it is read as a semaphore's.
func Release(name string, b api.ReleaseRequest) (engine.ReleaseRequest, error) {
	kind, err := ParseKind(b.Kind)
	if err != nil {
		return engine.ReleaseRequest{}, err
	}
	if kind == engine.Mutex && b.Shared {
		if b.Kind != "" {
			return engine.ReleaseRequest{}, &engine.ArgumentError{Arg: "shared", Reason: "a mutex's release is not shared"}
		}
		kind = engine.Semaphore
	}
	return engine.ReleaseRequest{Name: name, Owner: b.Owner, Kind: kind}, nil
}
