package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock"
	pgengine "github.com/distlock/distlock/engine/postgres"
)

// envPostgres names the PostgreSQL database: DISTLOCK_POSTGRES=postgres://...
// (DISTLOCK_POSTGRES_SCHEMA: the schema, default distlock).
const (
	envPostgres       = "DISTLOCK_POSTGRES"
	envPostgresSchema = "DISTLOCK_POSTGRES_SCHEMA"
)

// postgresSchema is the schema the CLI uses.
func (a *app) postgresSchema() string {
	if s := strings.TrimSpace(a.getenv(envPostgresSchema)); s != "" {
		return s
	}
	return pgengine.DefaultSchema
}

// openPostgresPool connects to the database at url and checks that it
// answers.
func (a *app) openPostgresPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, usageErr("cannot use %s as a PostgreSQL URL: %v.\nUse the form postgres://user:password@host:5432/db.", envPostgres, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach PostgreSQL (%s): %v.\nCheck %s.", envPostgres, err, envPostgres)}
	}
	return pool, nil
}

// openPostgres opens the PostgreSQL backend. Its schema must have been made
// with distlock postgres init.
func (a *app) openPostgres(ctx context.Context, url string) (*backend, error) {
	pool, err := a.openPostgresPool(ctx, url)
	if err != nil {
		return nil, err
	}
	schema := a.postgresSchema()
	eng, err := pgengine.New(pool, pgengine.WithSchema(schema))
	if err != nil {
		pool.Close()
		return nil, usageErr("%s: %v", envPostgresSchema, err)
	}
	// A first read tells a schema that was never made from a busy lock.
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	_, err = eng.Inspect(pctx, "distlock-cli-check")
	cancel()
	if err != nil {
		_ = eng.Close()
		pool.Close()
		if errors.Is(err, pgengine.ErrNotMigrated) {
			return nil, usageErr("the schema %q has no distlock tables: run 'distlock postgres init' first (%v)", schema, err)
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("PostgreSQL failed: %v", err)}
	}
	return &backend{client: distlock.New(eng), eng: eng, where: "postgres schema " + schema,
		closers: []func(){pool.Close}}, nil
}

// cmdPostgres implements distlock postgres init: it creates (or brings up
// to date) the engine's schema, tables and functions.
func (a *app) cmdPostgres(args []string) int {
	const cmd = "postgres"
	if len(args) == 0 || args[0] != "init" {
		return a.usage(cmd, "usage: distlock postgres init   (with %s=postgres://... set; %s names the schema, default %s)",
			envPostgres, envPostgresSchema, pgengine.DefaultSchema)
	}
	fs := flagSet(cmd)
	pos, err := parseInterspersed(fs, args[1:])
	if code, ok := a.positional(cmd, pos, err); !ok {
		return code
	}
	url := strings.TrimSpace(a.getenv(envPostgres))
	if url == "" {
		return a.usage(cmd, "set %s=postgres://user:password@host:5432/db first", envPostgres)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool, err := a.openPostgresPool(ctx, url)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer pool.Close()
	schema := a.postgresSchema()
	if err := pgengine.Migrate(ctx, pool, schema); err != nil {
		return a.fail(cmd, &cliError{code: exitFailed, msg: fmt.Sprintf("init of the schema %q failed: %v", schema, err)})
	}
	fmt.Fprintf(a.stdout, "schema %q is ready for distlock\n", schema)
	return exitOK
}
