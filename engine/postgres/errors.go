package postgres

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/engine"
)

// ErrNotMigrated is matched (errors.Is) by the errors of calls on a schema
// that Migrate has not installed: its tables or functions are missing.
var ErrNotMigrated = errors.New("postgres: the distlock schema is not migrated")

// ErrNoListen is the error of Subscribe and SubscribeWaiter on an engine
// built WithoutListen: distlock's waiters then poll.
var ErrNoListen = errors.New("postgres: the engine does not LISTEN (WithoutListen)")

// SchemaError reports a call on a schema that is missing its tables or
// functions. It matches ErrNotMigrated and unwraps to PostgreSQL's error.
type SchemaError struct {
	Schema string
	Err    error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("postgres: schema %q is not migrated (run postgres.Migrate or `distlock postgres init`): %v", e.Schema, e.Err)
}

// Is matches ErrNotMigrated.
func (e *SchemaError) Is(target error) bool { return target == ErrNotMigrated }

// Permanent implements engine.Permanent: waiting cannot migrate a schema,
// so a wait on it ends at once.
func (e *SchemaError) Permanent() bool { return true }

// Unwrap returns PostgreSQL's error.
func (e *SchemaError) Unwrap() error { return e.Err }

// SQLSTATEs of a schema that is not there.
var missingObject = map[string]bool{
	"3F000": true, // invalid_schema_name
	"42P01": true, // undefined_table
	"42883": true, // undefined_function
	"42704": true, // undefined_object (a composite type)
}

// undefinedFunction reports whether err is PostgreSQL's "function does
// not exist": a schema older than the call (before the version that added
// the function or its signature), where nothing ran.
func undefinedFunction(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42883"
}

// wrap turns PostgreSQL's "does not exist" errors into a *SchemaError and
// a bigint overflow (a token past a high-water at 2^63-1) into
// engine.ErrFenceExhausted; other errors are returned as they are (a *pgconn.PgError stays
// reachable with errors.As).
//
// Only a query on a live connection meets a missing schema: a connection
// the server refused at start-up (a *pgconn.ConnectError; an unknown
// parameter in the URL is SQLSTATE 42704 too, "unrecognized configuration
// parameter") is a backend error carrying the server's message.
func (e *Engine) wrap(err error) error {
	var pe *pgconn.PgError
	if connectFailed(err) {
		return err
	}
	if errors.As(err, &pe) && missingObject[pe.Code] {
		return &SchemaError{Schema: e.schema, Err: err}
	}
	if errors.As(err, &pe) && pe.Code == "22003" && strings.Contains(pe.Message, "bigint out of range") {
		// high_water + 1 past bigint (a high-water written by hand):
		// PostgreSQL refuses to wrap, and so does the grant.
		return fmt.Errorf("%w: %v", engine.ErrFenceExhausted, err)
	}
	return err
}

// connectFailed reports whether err is the failure to open a connection
// (the server refused it or did not answer), met before any query ran.
func connectFailed(err error) bool {
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// raiseError turns a raise function's refusal (SQLSTATE DL001, 'DISTLOCK
// below <token>' or 'DISTLOCK ahead <limit>') into the error
// engine.CheckRaise gives; other errors go through wrap.
func (e *Engine) raiseError(err error, token uint64) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "DL001" {
		if refusal := engine.RaiseRefusal(pe.Message, token); refusal != nil {
			return refusal
		}
	}
	return e.wrap(err)
}
