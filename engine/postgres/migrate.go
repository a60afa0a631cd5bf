package postgres

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/distlock/distlock/engine"
)

//go:embed schema.sql
var schemaSQL string

// SchemaVersion is the version of the schema Migrate installs (1: mutexes
// and their queue; 2: shared locks; 3: a grant's token fixed once it holds
// the name's row, and a mutex refused while shared holders hold the name;
// 4: a semaphore's stored limit governs, a request that declares another
// is served under it; a re-entered hold's expiry never moved earlier,
// engine.HoldExpiry; a force-release marks every holder it frees taken
// over, of either kind, and frees one holder by owner; 5: sets of
// mutexes granted and released in one call, acquire_multi and
// release_multi; 6: countdown latches, the latches table with latch_set
// and latch_count_down; 7: a mutex waiter's wake-up on its engine's own
// channel, waiters.chan and acquire's p_chan, so that no other engine's
// listener receives it; the helpers of every grant and release in plpgsql,
// whose plans the session keeps; 8: a free lock's reserved head that asks
// after its reservation's end, before any other call on the name, is
// granted instead of being sent to the back of the queue; 9: a mutex's
// grant locks the shared lock's row while it checks the holders, so that
// a renewal or a raise of a shared holder in progress is waited for;
// set_limit holds the name's row of locks while it checks for a mutex; a
// deleted row of locks leaves its high-water with the shared row; 10: a
// queued head that asks for more permits than a limit set_limit shrank is
// woken, and its attempt refused, instead of waiting for good; 11: an
// election's Proclaim by a holder a force-release freed is answered taken
// over, as its renewal, not missing; 12: a renewal or a release names the
// grant's token, extend's and extend_shared's p_tokens, release's and
// release_shared's p_token, and one that names another token than the
// owner's hold's changes nothing, so a freed lease cannot renew or drop
// a newer grant of the same owner; version 11's signatures stay for
// processes of that version, and an engine on a schema before version 12
// calls them, unchecked, until it is migrated; 13: a set checks every
// name's kind before any name's holder or queue, so a name held as a
// shared lock refuses it at once, ahead of contention on another name; on
// a schema of version 12 a set judges the names in order until it is
// migrated; 14: pgfence's HighestSeen refuses a token below the name's
// newest grant of any kind, a shared lock's included, and below the
// high-water a released name left with its mark (fence_marks.granted),
// and locks only the mark, no longer the lock's row;
// a release of a shared lock asked with another kind than the lock's,
// while the owner holds it, is refused as an acquire of that kind is
// (release_shared's p_kind); an engine on a schema before version 14
// calls version 13's release_shared, unchecked, until it is migrated; 15:
// pgfence's HighestSeen (fence_check mode 2) refuses to run in a
// transaction that is not READ COMMITTED, SQLSTATE DL002, changing
// nothing: its snapshot, taken at the transaction's first statement,
// could hide a newer grant that committed since, and let a deposed
// holder's write commit; Current is unchanged, safe at every level; 16: an
// election's Proclaim names the grant's token, set_metadata's p_token, and
// one that names another token than the owner's hold's changes nothing, so
// a deposed leader whose owner was elected again cannot overwrite the new
// leader's value; version 15's signature stays for processes of that
// version, and an engine on a schema before version 16 calls it,
// unchecked, until it is migrated; 17: queued waiters bind a name to
// their kind, as holders do: acquire_shared refuses ('DISTLOCK mutex')
// while a live waiter queues for the name's mutex (not one whose
// reservation lapsed), and _mutex_check, which the mutex's acquire and
// acquire_multi call, refuses ('DISTLOCK kind <k>') while a live waiter
// queues for its shared lock; function bodies only, every signature as
// in version 16, so processes of earlier versions get the rule too once
// the schema is migrated; 18: set_limit is refused, as acquire_shared is,
// while a live waiter queues for the name's mutex; function bodies only;
// 19: a set's release names each grant's token, release_multi's p_tokens,
// and one that names another token than the owner's hold's drops nothing
// (NotOwner), so a set's release cannot drop a newer grant of the same
// owner; version 18's signature stays for processes of that version, and
// an engine on a schema before version 19 releases a set's names one call
// each, tokens checked from version 12, until it is migrated; pgfence's
// HighestSeen refuses a token above the name's newest grant of any kind
// that the schema remembers (a token no grant of the name has had, or any
// token of a name whose grants are all forgotten) with SQLSTATE DL003,
// recording nothing, and the upgrade resets the marks such tokens left);
// 20: a shared lock's release carries the call's id, release_shared's
// p_id (shared_holders.release_id), and a copy with the same id drops no
// second hold, so a Client resends a lost release of an explicit owner's
// shared hold as it does a mutex's (engine.OnceReleaser); version 19's
// signature stays for processes of that version, and an engine on a schema
// before version 20 answers a shared lock's ReleaseOnce unsupported (the
// Client then releases plainly) until it is migrated; 21: a hold keeps
// the ids of its last 8 count-downs (engine.KeptReleaseIDs; the columns
// release_ids), not only the last one's, so a late copy of a release
// drops nothing after other releases of the owner's holds came between;
// function bodies only, every signature as in version 20.
// Migrate brings a schema of any earlier version up to it: schema.sql is
// idempotent, so
// from version 6 it adds the column and the functions and keeps every
// lock held and every waiter queued across it.
const SchemaVersion = 21

// Beginner starts a transaction: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate creates (or brings up to date) the engine's schema: its tables,
// sequences and functions, in one transaction. It is idempotent, and safe
// to run from several processes at once (they take turns on a
// transaction-scoped advisory lock: Migrate is not the lease path). The
// database's encoding must be UTF8.
func Migrate(ctx context.Context, db Beginner, schema string) error {
	if err := checkSchema(schema); err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate %q: %w", schema, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var enc string
	if err := tx.QueryRow(ctx, "SELECT pg_advisory_xact_lock(hashtext('distlock migrate')), current_setting('server_encoding')").Scan(nil, &enc); err != nil {
		return fmt.Errorf("postgres: migrate %q: %w", schema, err)
	}
	if enc != "UTF8" {
		return fmt.Errorf("postgres: migrate %q: the database's encoding is %s, not UTF8", schema, enc)
	}
	if _, err := tx.Exec(ctx, SchemaSQL(schema)); err != nil {
		return fmt.Errorf("postgres: migrate %q: %w", schema, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: migrate %q: %w", schema, err)
	}
	return nil
}

// Migrate runs Migrate for the engine's schema on its pool.
func (e *Engine) Migrate(ctx context.Context) error { return Migrate(ctx, e.pool, e.schema) }

// SchemaSQL returns the SQL that Migrate runs for schema, for those who
// apply migrations with a tool of their own.
func SchemaSQL(schema string) string { return fill(schema, schemaSQL) }

// fill fills in the placeholders of a schema's SQL (see schema.sql).
func fill(schema, sql string) string {
	return strings.NewReplacer(
		"{{S}}", quoteIdent(schema),
		"{{CHAN}}", quoteLiteral(channel(schema)),
		"{{TOKENS}}", quoteLiteral(quoteIdent(schema)+".tokens"),
		"{{TICKETS}}", quoteLiteral(quoteIdent(schema)+".tickets"),
		"{{RESERVE_US}}", strconv.FormatInt(micros(engine.ReserveTTL), 10),
		"{{STARVE_US}}", strconv.FormatInt(micros(engine.StarvationBound), 10),
		"{{RAISE_AHEAD_US}}", strconv.FormatInt(engine.MaxRaiseAhead, 10),
	).Replace(sql)
}

// Drop removes the schema and everything in it (tests, uninstalling).
func Drop(ctx context.Context, db Beginner, schema string) error {
	if err := checkSchema(schema); err != nil {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "DROP SCHEMA IF EXISTS "+quoteIdent(schema)+" CASCADE"); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
