package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/server/api"
)

// Error is an error answer of the server. distlock.Client wraps it in a
// *distlock.BackendError; errors.As finds it there.
type Error struct {
	Op      string
	Status  int    // the HTTP status
	Code    string // the stable code: api.CodeUnauthorized, ...
	Message string
	Detail  api.ErrorDetail
}

func (e *Error) Error() string {
	return fmt.Sprintf("distlock server: %s: %s (HTTP %d): %s", e.Op, e.Code, e.Status, e.Message)
}

// Is matches the sentinel of the error's code: ErrUnauthorized,
// ErrForbidden, ErrTooManyWaiters, ErrShuttingDown, ErrUnavailable, and
// errors.ErrUnsupported for not_supported.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Code == api.CodeUnauthorized
	case ErrForbidden:
		return e.Code == api.CodeForbidden
	case ErrTooManyWaiters:
		return e.Code == api.CodeTooManyWaiters
	case ErrShuttingDown:
		return e.Code == api.CodeShuttingDown
	case ErrUnavailable:
		return e.Code == api.CodeBackendUnavailable
	case errors.ErrUnsupported:
		return e.Code == api.CodeNotSupported
	}
	return false
}

// Permanent implements engine.Permanent: no retry mends a refused token
// (unauthorized, forbidden), refused input (invalid_argument,
// upgrade_refused), a feature the server's engine lacks (not_supported) or
// an endpoint the server does not have (not_found, method_not_allowed: a
// server of another version, or a URL that is not a distlock server's).
// The server's engine failing, its waiter limits and its shutdown are
// transient. An answer that is not the server's (a proxy's 401, 403, 404
// or 405) is permanent too.
func (e *Error) Permanent() bool {
	switch e.Code {
	case api.CodeUnauthorized, api.CodeForbidden, api.CodeInvalidArgument, api.CodeUpgradeRefused,
		api.CodeNotSupported, api.CodeNotFound, api.CodeMethodNotAllowed, api.CodeForeignKey:
		return true
	}
	// An answer that is not the server's own (a proxy's): the same
	// statuses.
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed:
		return strings.HasPrefix(e.Code, "http_")
	}
	return false
}

// Unwrap makes an invalid_argument answer (bad input: the server changed
// nothing) an *engine.ArgumentError, so that distlock.Client reports it as
// bad input, not as a failed backend; other answers wrap nothing.
//
// An upgrade_refused answer wraps engine.ErrUpgrade, a fence_exhausted
// one engine.ErrFenceExhausted, a foreign_key one a *ForeignKeyError.
func (e *Error) Unwrap() error {
	switch e.Code {
	case api.CodeUpgradeRefused:
		return engine.ErrUpgrade
	case api.CodeFenceExhausted:
		return engine.ErrFenceExhausted
	case api.CodeForeignKey:
		return &ForeignKeyError{Key: e.Detail.Key, Message: e.Message}
	}
	if e.Code != api.CodeInvalidArgument {
		return nil
	}
	arg := e.Detail.Arg
	if arg == "" {
		arg = "argument"
	}
	return &engine.ArgumentError{Arg: arg, Reason: strings.TrimPrefix(e.Message, "invalid "+arg+": ")}
}

// ForeignKeyError is a server's foreign_key answer: a key distlock did not
// write is at the lock's place on the server's backend. No retry mends it
// (Permanent); ForeignKey returns the key, as the Redis and etcd engines'
// errors do, so a caller that tells those by the method tells this too.
type ForeignKeyError struct {
	Key     string // the key, as the server named it
	Message string // the server's message
}

func (e *ForeignKeyError) Error() string { return e.Message }

// ForeignKey returns Key.
func (e *ForeignKeyError) ForeignKey() string { return e.Key }

// Permanent implements engine.Permanent: no retry mends a foreign key.
func (e *ForeignKeyError) Permanent() bool { return true }

// Sentinels for errors.Is on an *Error.
var (
	// ErrUnauthorized: the server needs a token, or did not know it.
	ErrUnauthorized = errors.New("distlock server: unauthorized")
	// ErrForbidden: the token's role may not do this.
	ErrForbidden = errors.New("distlock server: forbidden")
	// ErrTooManyWaiters: the server's waiter limits were reached.
	ErrTooManyWaiters = errors.New("distlock server: too many waiters")
	// ErrShuttingDown: the server is shutting down.
	ErrShuttingDown = errors.New("distlock server: shutting down")
	// ErrUnavailable: the server's own lock engine failed.
	ErrUnavailable = errors.New("distlock server: backend unavailable")
)

// errorFrom decodes an error answer.
func errorFrom(op string, status int, body []byte) error {
	var eb api.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" {
		msg := http.StatusText(status)
		if len(body) > 0 && len(body) < 200 {
			msg = string(body)
		}
		return &Error{Op: op, Status: status, Code: "http_" + fmt.Sprint(status), Message: msg}
	}
	return &Error{Op: op, Status: status, Code: eb.Error.Code, Message: eb.Error.Message, Detail: eb.Error}
}
