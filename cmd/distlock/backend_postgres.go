//go:build full

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	pgengine "github.com/distlock/distlock/engine/postgres"
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

// cmdPostgres implements distlock postgres init: it creates (or brings up
// to date) the engine's schema, tables and functions.
func (a *app) cmdPostgres(args []string) int {
	const cmd = "postgres"
	if len(args) > 0 && isHelpFlag(args[0]) {
		return a.flagError(cmd, flag.ErrHelp)
	}
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

// notMigrated reports an error of a PostgreSQL schema never migrated.
func notMigrated(err error) bool { return errors.Is(err, pgengine.ErrNotMigrated) }
