// Package postgres is the distlock engine on PostgreSQL: leases in a table
// of a schema the user names, judged by the database clock, fencing tokens
// from a sequence, a waiter queue in a second table, and wake-ups for the
// head of the queue by LISTEN/NOTIFY.
//
// Every contract method is one function call, one round trip:
// acquire, extend (a whole batch of leases and waiter heartbeats),
// release, leave. The functions serialize on the lock's row (SELECT ... FOR
// UPDATE), never on advisory locks, so any pooled connection serves any
// call, PgBouncer's transaction mode included. Expiry is judged by
// clock_timestamp() read after the row was locked: one database clock, no
// client clock.
//
// Semaphores and reader-writer locks (engine.Sharer) live in tables of
// their own: a row per holder with its own expiry, the kind and limit
// stored per name, and a strict FIFO queue with weights, so a waiting
// writer is never starved by readers. Their renewals and heartbeats go in
// the same Extend statement as the mutexes'.
//
// Nothing is created implicitly: run Migrate (or `distlock postgres init`)
// once; until then every call fails with an error that matches
// ErrNotMigrated.
//
//	pool, _ := pgxpool.New(ctx, "postgres://...")
//	if err := postgres.Migrate(ctx, pool, "distlock"); err != nil { ... }
//	eng, _ := postgres.New(pool, postgres.WithSchema("distlock"))
//	client := distlock.New(eng)
//
// Package pgfence checks fencing tokens inside the user's own transaction
// on the same database. See docs/POSTGRES.md.
package postgres
