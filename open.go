package distlock

import (
	"context"
	"errors"

	"github.com/distlock/distlock/engine"
)

// Open returns a Client on the backend that url names, opened by the
// engine package registered for its scheme (engine.Open): mem://,
// redis://, rediss://, redis+cluster://, redis+sentinel://, redlock://
// or a list of Redis URLs (Redlock), distlock:// and distlocks:// (a
// distlock server), etcd:// and postgres:// (each in its own module).
// A program links the backends it names only by URL with a blank import of
// their packages, as database/sql does for its drivers:
//
//	import _ "github.com/distlock/distlock/engine/redis"
//
//	c, err := distlock.Open(ctx, "redis://:secret@10.0.0.5:6379/0")
//
// docs/API.md lists every scheme and parameter. An unregistered scheme is
// an error matching engine.ErrUnknownScheme, a malformed URL or a bad
// parameter one matching engine.ErrBadURL (both *engine.URLError, and
// both ErrInvalidArgument): nothing is opened then. Open does not contact
// the backend, the first call does (Inspect of any name checks it), but for
// zookeeper:// (which waits for its session: it bounds every ttl) and
// etcd:// with a user (whose client fetches a token), within ctx's deadline
// or 5 s: a backend they cannot reach is an error matching ErrBackend, not
// ErrInvalidArgument. The Client owns the engine: Close closes it and its
// connections.
func Open(ctx context.Context, url string, opts ...ClientOption) (*Client, error) {
	eng, err := engine.Open(ctx, url)
	if err != nil {
		return nil, &openError{err}
	}
	c := New(eng, opts...)
	c.ownsEng = true
	return c, nil
}

// openError is an error of Open: a URL's (an *engine.URLError:
// engine.ErrUnknownScheme, engine.ErrBadURL) matches ErrInvalidArgument as
// well as what it wraps; a backend that could not be reached while opening
// it matches ErrBackend.
type openError struct{ err error }

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }
func (e *openError) Is(target error) bool {
	var ue *engine.URLError
	var ae *engine.ArgumentError
	bad := errors.As(e.err, &ue) || errors.As(e.err, &ae)
	return target == ErrInvalidArgument && bad || target == ErrBackend && !bad
}
