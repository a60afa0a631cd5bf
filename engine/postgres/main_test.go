package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// srv is the test binary's one PostgreSQL server (TestMain).
var srv *pgtest.Server

func TestMain(m *testing.M) {
	os.Exit(pgtest.Main(m, func(s *pgtest.Server) { srv = s }))
}

// newPool returns a small pool on srv (as one process would have), closed
// when the test ends; params are added to the URL.
func newPool(t testing.TB, params ...string) *pgxpool.Pool {
	t.Helper()
	return poolOn(t, srv.URL(params...))
}

func poolOn(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.MinConns = 0
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// migrated migrates schema on srv once per test (Migrate is idempotent).
func migrated(t testing.TB, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := postgres.Migrate(ctx, newPool(t), schema); err != nil {
		t.Fatal(err)
	}
}

// newEngine returns an engine on pool in schema, closed when the test ends.
func newEngine(t testing.TB, pool *pgxpool.Pool, schema string, opts ...postgres.Option) *postgres.Engine {
	t.Helper()
	e, err := postgres.New(pool, append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// upgrade runs Migrate twice on schema (the second changes nothing) and
// checks that it is then of the current version.
func upgrade(t testing.TB, ctx context.Context, pool *pgxpool.Pool, schema string) {
	t.Helper()
	for range 2 {
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			t.Fatal(err)
		}
	}
	var version int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM `+schema+`.version`).Scan(&version); err != nil || version != postgres.SchemaVersion {
		t.Fatalf("version %d (%v), want %d", version, err, postgres.SchemaVersion)
	}
}

// oldSchema installs the schema of an earlier version, testdata/file, as
// schema on pool (dropping what was there), for a test of its upgrade.
func oldSchema(t testing.TB, ctx context.Context, pool *pgxpool.Pool, schema, file string) {
	t.Helper()
	_ = postgres.Drop(ctx, pool, schema)
	sql, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, postgres.FillSchema(schema, string(sql))); err != nil {
		t.Fatal(err)
	}
}
