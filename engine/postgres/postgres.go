package postgres

import (
	"crypto/fips140"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
)

// DefaultSchema is the schema of an Engine built without WithSchema.
const DefaultSchema = "distlock"

// Engine is one lock authority on a PostgreSQL database: the tables of
// one schema. It is safe for concurrent use. Build it with New.
type Engine struct {
	pool   *pgxpool.Pool
	schema string
	sql    statements
	listen *listener // nil with WithoutListen
	// v6: acquire is called without p_chan, for good, once it was missing
	// (a schema of version 6 or older).
	v6 signatures
	// v11: extend, release, extend_shared and release_shared are called
	// with version 11's signatures, without the grants' tokens, for
	// v11Recheck at a time, once the current ones were missing (a schema
	// before version 12).
	v11 signatures
	// v13: release_shared is called with version 13's signature, without
	// the kind (not checked), for v13Recheck at a time, once the current
	// one was missing (a schema before version 14).
	v13 signatures
	// v15: set_metadata is called with version 15's signature, without
	// the grant's token (not checked), for v15Recheck at a time, once the
	// current one was missing (a schema before version 16).
	v15 signatures
	// v18: a set's release is made one request at a time (releaseMutex,
	// tokens checked), for v18Recheck at a time, once version 19's
	// release_multi was missing (a schema before version 19, whose
	// release_multi takes no tokens).
	v18 signatures
	// v19: a shared lock's ReleaseOnce answers errNoSharedReleaseID, sending
	// nothing, for v19Recheck at a time, once version 20's release_shared
	// (with the call's id) was missing (a schema before version 20).
	v19    signatures
	closed atomic.Bool
	owned  bool // WithOwnedPool: Close closes pool
	// socks are the connections the engine made (its pool's when it made
	// the pool, its own listening connection's), which Close closes when
	// they do not close in closeWait.
	socks *sockets
}

var (
	_ engine.Engine         = (*Engine)(nil)
	_ engine.Queuer         = (*Engine)(nil)
	_ engine.Describer      = (*Engine)(nil)
	_ engine.ForceReleaser  = (*Engine)(nil)
	_ engine.HolderReleaser = (*Engine)(nil)
	_ engine.OnceReleaser   = (*Engine)(nil)
	_ engine.FenceRaiser    = (*Engine)(nil)
	_ engine.MetadataSetter = (*Engine)(nil)
	_ engine.Lister         = (*Engine)(nil)
	_ engine.LeakFinder     = (*Engine)(nil)
)

// Option configures an Engine.
type Option func(*config)

type config struct {
	owned      bool
	socks      *sockets // the pool's sockets, when the engine made it (open)
	schema     string
	noListen   bool
	listenConf *pgx.ConnConfig
}

// WithSchema names the schema that holds the engine's tables and
// functions (DefaultSchema without it). It must have been migrated
// (Migrate) with the same name.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithOwnedPool makes the engine own its pool: Close closes it too (an
// engine opened by URL owns the pool it made).
func WithOwnedPool() Option { return func(c *config) { c.owned = true } }

// WithoutListen makes the engine wait without LISTEN: for a pool behind
// PgBouncer in transaction mode, where no connection keeps a session.
// Subscriptions then fail with ErrNoListen, and distlock's waiters poll
// (jittered, about every 100 ms) instead of being woken.
func WithoutListen() Option { return func(c *config) { c.noListen = true } }

// WithListenConfig makes the engine's one listening connection a
// connection of its own, made with cfg (say, straight to PostgreSQL while
// the pool goes through PgBouncer), instead of one taken from the pool.
func WithListenConfig(cfg *pgx.ConnConfig) Option {
	return func(c *config) { c.listenConf = cfg }
}

// New returns an engine on pool, in the schema WithSchema names. It does
// not take ownership of pool (unless WithOwnedPool), and sends nothing until it is used. The
// schema must exist (Migrate).
func New(pool *pgxpool.Pool, opts ...Option) (*Engine, error) {
	c := config{schema: DefaultSchema}
	for _, o := range opts {
		o(&c)
	}
	if err := checkSchema(c.schema); err != nil {
		return nil, err
	}
	if c.socks == nil {
		c.socks = &sockets{}
	}
	e := &Engine{pool: pool, schema: c.schema, sql: newStatements(c.schema), owned: c.owned, socks: c.socks}
	e.v11.recheck = v11Recheck
	e.v13.recheck = v13Recheck
	e.v15.recheck = v15Recheck
	e.v18.recheck = v18Recheck
	e.v19.recheck = v19Recheck
	if !c.noListen {
		e.listen = newListener(e, c.listenConf)
	}
	return e, nil
}

// String names the engine by its schema, for messages.
func (e *Engine) String() string { return "postgres schema " + e.schema }

// Schema returns the engine's schema.
func (e *Engine) Schema() string { return e.schema }

// Capabilities implements engine.Describer: the queue can be fair.
func (e *Engine) Capabilities() engine.Capabilities { return engine.Capabilities{Fair: true} }

// Close implements engine.Engine: it closes the listening connection and
// wakes every subscription; later calls fail with engine.ErrClosed. It
// does not close the pool, unless WithOwnedPool. It returns within
// closeWait (1 s) twice even when the server stopped answering: the
// connections the engine made itself (its pool's when it was opened by
// URL, its listening connection's) that have not closed after closeWait
// are closed then, which ends every call still waiting on them. A pool
// passed to New WithOwnedPool may still be closing then, in the
// background, for as long as pgx waits on a stalled connection (15 s).
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.closeBounded(func() {
		if e.listen != nil {
			e.listen.close()
		}
		if e.owned {
			e.pool.Close()
		}
	})
	return nil
}

func (e *Engine) check() error {
	if e.closed.Load() {
		return engine.ErrClosed
	}
	return nil
}

// checkSchema refuses schema names that cannot be one identifier.
func checkSchema(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("postgres: empty schema name")
	case len(s) > 63:
		return fmt.Errorf("postgres: schema name %q longer than 63 bytes", s)
	case containsNUL(s):
		return fmt.Errorf("postgres: schema name %q contains a NUL byte", s)
	case strings.Contains(s, "$$"):
		return fmt.Errorf("postgres: schema name %q contains $$ (the functions' quotes)", s)
	}
	return nil
}

// quoteIdent quotes s as one SQL identifier.
func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// channel is the schema's notification channel: the messages for every
// subscriber of a name (released, announced, proclaimed, a latch at zero)
// and the wake-ups of shared locks' waiters travel on it, addressed by the
// hash of the name. A mutex waiter's wake-up travels on its engine's own
// channel (ownChannel) instead, on a schema of version 7.
func channel(schema string) string {
	return "distlock_" + md5Hex(schema)[:20]
}

// ownChannel is a new channel of one engine's own, beside its schema's
// (46 bytes: within PostgreSQL's 63).
func ownChannel(schema string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return channel(schema) + "_" + hex.EncodeToString(b[:])
}

// nameKey is the address of name's wake-ups: the hex MD5 of the name, as
// PostgreSQL's md5() computes it.
func nameKey(name string) string { return md5Hex(name) }

// md5Hex is the hex MD5 of s, as PostgreSQL's md5() computes it. It names
// channels and addresses wake-ups, which the functions compute with md5()
// on the server: no secret or integrity depends on it, so it is computed
// outside FIPS 140-only enforcement (GODEBUG=fips140=only makes crypto/md5
// panic).
func md5Hex(s string) string {
	var sum [md5.Size]byte
	fips140.WithoutEnforcement(func() { sum = md5.Sum([]byte(s)) })
	return hex.EncodeToString(sum[:])
}
