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
//     fence_marks of the schema, in the transaction). A token above that
//     newest grant's, which no grant of the name has had (another name's
//     lease's, a token not yet minted), is bad input, refused before
//     anything is recorded (schema version 19; below): recorded, it would
//     have made every later real grant of the name stale. A write by a
//     holder whose lease expired is still accepted while nobody newer has been
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
// committed). A name without a mark forgets its grants once its rows are
// deleted: every token is then above the newest grant remembered (none)
// and refused as not the name's (ErrInvalidArgument, below) until the
// name is granted again, so holder A deposed, B granted and released
// without writing, A's guarded write is refused (schema version 19;
// before, it passed). A HighestSeen check locks only the
// name's mark until the transaction ends (not the lock's row): checks of
// the name take turns, and a release that deletes the lock's row waits
// for it.
//
// Tokens that are not the name's. Every token is refused above
// engine.MaxToken (2^53-1, the largest an engine mints), before anything
// is sent. HighestSeen refuses a token above the name's newest grant of
// any kind that the schema remembers (the value it compares with: the
// high-waters of the rows of locks and shared, and of the mark), a token
// no grant of the name has had (another name's lease's, one not minted
// yet) or any token of a forgotten name (above): the database raises
// SQLSTATE DL003 before it records anything (schema version 19; a schema
// before it recorded the token, and every later real grant of the name
// was then refused as stale: migrate it, which resets such marks), the
// transaction is aborted, and Check returns an error that matches
// ErrInvalidArgument. Current needs no such rule: it accepts only the
// name's current grant's token.
//
// A refused check returns a *StaleError (errors.Is(err, ErrStale)), or
// for HighestSeen outside READ COMMITTED an *IsolationError, or for a
// token that is not the name's an error matching ErrInvalidArgument; the
// caller must then roll back (pgx.BeginFunc does when the function
// returns the error). The schema is engine/postgres's (postgres.Migrate
// creates the check function and its table).
package pgfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/distlock/distlock/engine"
)

// Mode selects the rule of a check (see the package documentation).
type Mode int

// The modes.
const (
	// Current: the token is the name's current, unexpired grant by holder.
	Current Mode = 1
	// HighestSeen: the token is at least the highest accepted for the
	// name, and not older than its newest grant of any kind (see the
	// package documentation for how long a grant is remembered); a token
	// above that newest grant's is refused as not the name's
	// (ErrInvalidArgument). It needs a READ COMMITTED transaction (else
	// *IsolationError).
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
// name or holder, the token 0 or one above engine.MaxToken, a NUL byte,
// an unknown mode); nothing is sent then. It is also wrapped by the error
// of a HighestSeen token above the name's newest grant (a token no grant
// of the name has had), and by an *IsolationError (a HighestSeen check in
// a transaction that is not READ COMMITTED): both refused by the database
// before it changes anything, the transaction aborted.
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

// The SQLSTATEs fence_check raises (schema.sql): isolationCode for a
// HighestSeen check outside READ COMMITTED, notGrantedCode for a
// HighestSeen token above the name's newest grant.
const (
	isolationCode  = "DL002"
	notGrantedCode = "DL003"
)

// failed is Check's error for the query's err (from any driver whose error
// reports its SQLSTATE): an *IsolationError for fence_check's refusal of
// the isolation level, ErrInvalidArgument's for its refusal of a token no
// grant of the name has had, else err wrapped.
func failed(name string, token uint64, err error) error {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) && coded.SQLState() == notGrantedCode {
		return fmt.Errorf("%w: check %q: fencing token %d is above the name's newest grant the schema remembers (not a token of the name): %w",
			ErrInvalidArgument, name, token, err)
	}
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
		return failed(name, token, err)
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
		return failed(name, token, err)
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
	case token == 0:
		return bad("fencing token 0 for %q", name)
	case token > engine.MaxToken:
		return bad("fencing token %d for %q is above 2^53-1 (engine.MaxToken), which no grant has", token, name)
	case strings.IndexByte(name, 0) >= 0 || strings.IndexByte(holder, 0) >= 0:
		return bad("a NUL byte in the name or holder")
	}
	return nil
}
