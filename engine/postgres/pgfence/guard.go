// Package pgfence checks distlock fencing tokens inside the user's own
// PostgreSQL transaction, on the database that keeps the locks of
// engine/postgres: the check and the guarded write commit together, or
// neither does.
//
// Two modes:
//
//   - Current: the token must be the one of the name's current grant, held
//     by holder and not expired, judged by the database clock. The check
//     share-locks the lock's row until the transaction ends, so no other
//     grant, release or renewal of the name commits before the write does
//     (they wait for it). This is mutual exclusion with the data, not only
//     fencing, and it refuses a write whose lease has run out even when
//     nobody took the lock since. Keep such transactions short. For a
//     shared lock (a semaphore's permit, a reader's or a writer's lease)
//     the token must be holder's unexpired grant, and its holder row is
//     share-locked the same way: its permits cannot come back, so no
//     writer after a reader is granted, before the write commits.
//   - HighestSeen: package fence's rule. The token must be at least the
//     highest token this check accepted for the name (a tie only from the
//     same holder), and not older than the name's newest grant of any kind
//     that the schema remembers (below); it is then recorded (table
//     fence_marks of the schema, in the transaction). A write by a holder
//     whose lease expired is still accepted while nobody newer has been
//     granted the lock or written; once a newer grant exists (a mutex, a
//     writer, a permit), older tokens are refused even before its first
//     write. On a shared lock it suits exclusive holders only (a writer, a
//     permit of a semaphore of limit 1): every grant counts, so a reader's
//     or a permit's token is refused as soon as another reader or permit
//     is granted after it, even while it still holds its lease.
//     HighestSeen needs a READ COMMITTED transaction (below).
//
// Isolation levels. Current works at every level: at REPEATABLE READ or
// SERIALIZABLE a newer grant, release or renewal committed since the
// transaction's snapshot makes its share-lock fail with a serialization
// failure (SQLSTATE 40001), or the check refuses; either way the write
// does not commit. HighestSeen needs a READ COMMITTED transaction (the
// default; READ UNCOMMITTED, which PostgreSQL runs as READ COMMITTED, too):
// it judges "a newer grant exists" by reading the name's high-waters, and
// a REPEATABLE READ or SERIALIZABLE transaction reads the snapshot taken
// at its first statement, in which a grant committed since is missing (a
// holder deposed after its transaction began would write). In such a
// transaction the check is refused by the database before it changes
// anything (schema version 15; a schema before it runs the check from
// the snapshot: migrate it): Check returns an *IsolationError, which
// matches ErrInvalidArgument, and the transaction is aborted (roll it
// back). Use Current there, or run the check in a READ COMMITTED
// transaction.
//
// What HighestSeen remembers of a name's grants: the high-water of its
// row of locks and of its shared lock's row while they exist (held,
// queued, expired and not yet swept; a shared lock's for a week after its
// last use), and after their deletion the high-water they left with the
// name's mark, when the name has one (once a HighestSeen check of it has
// committed). A name without a mark forgets a newer grant once its row is
// deleted: holder A deposed, B granted and released without writing, then
// A's first guarded write passes: the gap lasts until the name's first
// HighestSeen check commits. Make that first write under Current, or use
// Current altogether, if it matters. A HighestSeen check locks only the
// name's mark until the transaction ends (not the lock's row): checks of
// the name take turns, and a release that deletes the lock's row waits
// for it.
//
// A refused check returns a *StaleError (errors.Is(err, ErrStale)), or
// for HighestSeen outside READ COMMITTED an *IsolationError
// (errors.Is(err, ErrInvalidArgument)); the caller must then roll back
// (pgx.BeginFunc does when the function returns the error). The schema
// is engine/postgres's (postgres.Migrate creates the check function and
// its table).
package pgfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Mode selects the rule of a check (see the package documentation).
type Mode int

// The modes.
const (
	// Current: the token is the name's current, unexpired grant by holder.
	Current Mode = 1
	// HighestSeen: the token is at least the highest accepted for the
	// name, and not older than its newest grant of any kind (see the
	// package documentation for how long a grant is remembered). It
	// needs a READ COMMITTED transaction (else *IsolationError).
	HighestSeen Mode = 2
)

// String names the mode.
func (m Mode) String() string {
	switch m {
	case Current:
		return "current"
	case HighestSeen:
		return "highest seen"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ErrStale is matched (errors.Is) by every *StaleError.
var ErrStale = errors.New("pgfence: stale fencing token")

// ErrInvalidArgument is wrapped by the errors for bad input (an empty
// name or holder, the token 0, a NUL byte, an unknown mode); nothing is
// sent then. It is also wrapped by an *IsolationError: a HighestSeen
// check in a transaction that is not READ COMMITTED, refused by the
// database before it changes anything.
var ErrInvalidArgument = errors.New("pgfence: invalid argument")

// IsolationError reports a HighestSeen check run in a transaction whose
// isolation level is not READ COMMITTED (REPEATABLE READ, SERIALIZABLE):
// such a transaction reads the snapshot taken at its first statement, in
// which a newer grant committed since is missing, so the check cannot
// tell that the token is stale. The database refuses it (SQLSTATE DL002,
// schema version 15) before it changes anything; the transaction is
// aborted and must be rolled back. Use Current, which works at every
// level, or run the check in a READ COMMITTED transaction. It matches
// ErrInvalidArgument (errors.Is), and unwraps to the database's error too.
type IsolationError struct {
	Name      string // the lock name
	Isolation string // the transaction's level as PostgreSQL names it ("repeatable read"), "" if unknown
	Err       error  // the database's error
}

func (e *IsolationError) Error() string {
	level := e.Isolation
	if level == "" {
		level = "not READ COMMITTED"
	}
	return fmt.Sprintf("pgfence: check %q: HighestSeen needs a READ COMMITTED transaction (the transaction is %s); use Current, or run the check in a READ COMMITTED transaction", e.Name, level)
}

// Unwrap returns ErrInvalidArgument and the database's error.
func (e *IsolationError) Unwrap() []error { return []error{ErrInvalidArgument, e.Err} }

// isolationCode is the SQLSTATE fence_check raises for a HighestSeen
// check outside READ COMMITTED (schema.sql).
const isolationCode = "DL002"

// failed is Check's error for the query's err: an *IsolationError for
// fence_check's refusal of the isolation level (from any driver whose
// error reports its SQLSTATE), else err wrapped.
func failed(name string, err error) error {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == isolationCode {
		msg := err.Error()
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			msg = pe.Message
		}
		level := ""
		const at = "(the transaction is "
		if i := strings.Index(msg, at); i >= 0 {
			level, _, _ = strings.Cut(msg[i+len(at):], ")")
		}
		return &IsolationError{Name: name, Isolation: level, Err: err}
	}
	return fmt.Errorf("pgfence: check %q: %w", name, err)
}

// StaleError reports a refused check: the write must not go ahead, and
// the transaction should be rolled back.
type StaleError struct {
	Name   string // the lock name
	Token  uint64 // the refused token
	Holder string
	Mode   Mode
	// Highest is the token the check compared with: the name's high-water
	// (Current), or the highest accepted or granted (HighestSeen).
	Highest uint64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("pgfence: stale fencing token %d for %q from holder %q (%s; highest %d)", e.Token, e.Name, e.Holder, e.Mode, e.Highest)
}

// Is reports whether target is ErrStale.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Guard checks tokens against the locks of one engine/postgres schema.
// It is a value without state: safe for concurrent use.
type Guard struct {
	mode  Mode
	query string
}

// New returns a Guard for the locks of schema (engine/postgres's
// DefaultSchema is "distlock") with mode.
func New(schema string, mode Mode) *Guard {
	return &Guard{mode: mode, query: "SELECT * FROM " + pgx.Identifier{schema}.Sanitize() + ".fence_check($1, $2, $3, $4)"}
}

// Check runs the check in tx (pgx, or a *pgxpool.Tx) and returns nil when
// the write may go ahead in the same transaction.
func (g *Guard) Check(ctx context.Context, tx pgx.Tx, name string, token uint64, holder string) error {
	if err := g.args(name, token, holder); err != nil {
		return err
	}
	var ok bool
	var highest int64
	if err := tx.QueryRow(ctx, g.query, name, int64(token), holder, int32(g.mode)).Scan(&ok, &highest); err != nil {
		return failed(name, err)
	}
	return g.verdict(ok, name, token, holder, highest)
}

// CheckSQL is Check for a database/sql transaction (on any PostgreSQL
// driver: pgx's stdlib, lib/pq).
func (g *Guard) CheckSQL(ctx context.Context, tx *sql.Tx, name string, token uint64, holder string) error {
	if err := g.args(name, token, holder); err != nil {
		return err
	}
	var ok bool
	var highest int64
	if err := tx.QueryRowContext(ctx, g.query, name, int64(token), holder, int32(g.mode)).Scan(&ok, &highest); err != nil {
		return failed(name, err)
	}
	return g.verdict(ok, name, token, holder, highest)
}

// verdict is Check's result for fence_check's answer: ok (the write may
// go ahead) and the highest token seen for name.
func (g *Guard) verdict(ok bool, name string, token uint64, holder string, highest int64) error {
	if ok {
		return nil
	}
	return &StaleError{Name: name, Token: token, Holder: holder, Mode: g.mode, Highest: uint64(max(highest, 0))}
}

func (g *Guard) args(name string, token uint64, holder string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, a...)...)
	}
	switch {
	case g.mode != Current && g.mode != HighestSeen:
		return bad("unknown mode %d", int(g.mode))
	case name == "":
		return bad("empty name")
	case holder == "":
		return bad("empty holder for %q", name)
	case token == 0 || token > 1<<63-1:
		return bad("fencing token %d for %q", token, name)
	case strings.IndexByte(name, 0) >= 0 || strings.IndexByte(holder, 0) >= 0:
		return bad("a NUL byte in the name or holder")
	}
	return nil
}
