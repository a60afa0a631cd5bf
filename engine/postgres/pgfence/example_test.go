package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// shipOrder marks order id shipped, guarded by the lease: the token check
// and the UPDATE commit together, or neither does.
func shipOrder(ctx context.Context, pool *pgxpool.Pool, guard *pgfence.Guard, lease *distlock.Lease, id int) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := guard.Check(ctx, tx, lease.Name(), lease.Token(), lease.Owner()); err != nil {
			return err // stale: BeginFunc rolls back
		}
		_, err := tx.Exec(ctx, `UPDATE orders SET status = 'shipped', shipped_by = $2 WHERE id = $1`, id, lease.Owner())
		return err
	})
}

// An UPDATE of orders guarded by the lock's fencing token, in the same
// transaction on the lock's database. A holder whose lease was lost (here:
// an operator force-released it and another worker took the lock) is
// refused, and its UPDATE never runs.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DISTLOCK_POSTGRES")) // postgres://...
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if err := postgres.Migrate(ctx, pool, postgres.DefaultSchema); err != nil {
		panic(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (id int PRIMARY KEY, status text, shipped_by text);
		INSERT INTO orders VALUES (1, 'new', NULL) ON CONFLICT (id) DO UPDATE SET status = 'new', shipped_by = NULL`); err != nil {
		panic(err)
	}
	eng, err := postgres.New(pool)
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	client := distlock.New(eng)
	defer client.Close()
	guard := pgfence.New(postgres.DefaultSchema, pgfence.Current)

	old, err := client.Acquire(ctx, "orders", distlock.WithTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	// The old holder is deposed behind its back, and a new one takes over.
	if _, err := client.ForceRelease(ctx, "orders"); err != nil {
		panic(err)
	}
	current, err := client.Acquire(ctx, "orders", distlock.WithTTL(10*time.Second))
	if err != nil {
		panic(err)
	}
	defer current.Release(ctx)

	err = shipOrder(ctx, pool, guard, old, 1)
	fmt.Println("old holder refused:", errors.Is(err, pgfence.ErrStale))
	err = shipOrder(ctx, pool, guard, current, 1)
	fmt.Println("current holder:", err)
	var by string
	if err := pool.QueryRow(ctx, `SELECT shipped_by FROM orders WHERE id = 1`).Scan(&by); err != nil {
		panic(err)
	}
	fmt.Println("shipped by the current holder:", by == current.Owner())
	// Output:
	// old holder refused: true
	// current holder: <nil>
	// shipped by the current holder: true
}
