package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
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

// wrap turns PostgreSQL's "does not exist" errors into a *SchemaError;
// other errors are returned as they are (a *pgconn.PgError stays
// reachable with errors.As).
func (e *Engine) wrap(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && missingObject[pe.Code] {
		return &SchemaError{Schema: e.schema, Err: err}
	}
	return err
}
