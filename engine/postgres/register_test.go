package postgres_test

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// register is a shared integer in a table, read and written by separate
// statements: not atomic under concurrent read-modify-write.
type register struct {
	name string
	pool *pgxpool.Pool
}

func (r *register) Get(ctx context.Context) (int64, error) {
	var v int64
	err := r.pool.QueryRow(ctx, `SELECT v FROM registers WHERE name = $1`, r.name).Scan(&v)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return v, err
}

func (r *register) Set(ctx context.Context, v int64) error {
	_, err := r.pool.Exec(ctx, `INSERT INTO registers (name, v) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET v = EXCLUDED.v`, r.name, v)
	return err
}
