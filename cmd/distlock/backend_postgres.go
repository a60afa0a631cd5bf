//go:build !lite

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	pgengine "github.com/distlock/distlock/engine/postgres"
)

// postgresTarget splits a PostgreSQL backend URL (from setting) into the
// connection string pgx takes and the schema the engine uses there: the
// URL's schema parameter, else the engine's default, as distlock.Open
// reads it (DISTLOCK_POSTGRES_SCHEMA reaches it through postgresURL). The
// engine's own parameters (schema, listen) are not pgx's, and PostgreSQL
// would refuse them as settings.
func postgresTarget(raw, setting string) (conn, schema string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (!strings.EqualFold(u.Scheme, "postgres") && !strings.EqualFold(u.Scheme, "postgresql")) {
		scheme, _, _ := strings.Cut(raw, "://")
		return "", "", usageErr("distlock postgres init makes the schema of a PostgreSQL backend, and %s names a %s:// backend: "+
			"set %s=postgres://user:password@host:5432/db (or DISTLOCK_URL, or pass --backend postgres://...).", setting, scheme, envPostgres)
	}
	q := u.Query()
	schema = pgengine.DefaultSchema
	switch vs := q["schema"]; {
	case len(vs) > 1:
		return "", "", usageErr("the URL of %s names the schema %d times (%s): give it once (DISTLOCK_POSTGRES_SCHEMA adds it to DISTLOCK_POSTGRES).",
			setting, len(vs), strings.Join(vs, ", "))
	case len(vs) == 1 && strings.TrimSpace(vs[0]) != "":
		schema = strings.TrimSpace(vs[0])
	}
	q.Del("schema")
	q.Del("listen")
	u.RawQuery = q.Encode()
	return u.String(), schema, nil
}

// openPostgresPool connects to the database at url (from setting) and
// checks that it answers.
func (a *app) openPostgresPool(ctx context.Context, url, setting string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, usageErr("cannot use %s as a PostgreSQL URL: %v.\nUse the form postgres://user:password@host:5432/db.", setting, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	err = pool.Ping(pctx)
	cancel()
	if err != nil {
		pool.Close()
		if err := interrupted(ctx); err != nil {
			return nil, err
		}
		return nil, &cliError{code: exitBackend, msg: fmt.Sprintf("cannot reach PostgreSQL (%s): %v.\nCheck %s.", setting, err, setting)}
	}
	return pool, nil
}

// cmdPostgres implements distlock postgres init: it creates (or brings up
// to date) the engine's schema, tables and functions, on the PostgreSQL
// backend the other commands use (DISTLOCK_URL, DISTLOCK_POSTGRES with
// DISTLOCK_POSTGRES_SCHEMA, or --backend).
func (a *app) cmdPostgres(args []string) int {
	const cmd = "postgres"
	if len(args) > 0 && isHelpFlag(args[0]) {
		return a.flagError(cmd, flag.ErrHelp)
	}
	if len(args) == 0 || args[0] != "init" {
		return a.usage(cmd, "usage: distlock postgres init [--backend URL]   (with %s=postgres://... or DISTLOCK_URL=postgres://... set; %s or the URL's ?schema= names the schema, default %s)",
			envPostgres, envPostgresSchema, pgengine.DefaultSchema)
	}
	fs := flagSet(cmd)
	flagURL := stringFlag(fs, "", "backend")
	pos, err := parseInterspersed(fs, args[1:])
	if code, ok := a.positional(cmd, pos, err); !ok {
		return code
	}
	configured := strings.TrimSpace(*flagURL) != ""
	for _, env := range []string{envURL, envRedis, envServer, envEtcd, envPostgres, envZooKeeper} {
		configured = configured || strings.TrimSpace(a.getenv(env)) != ""
	}
	if !configured {
		return a.usage(cmd, "set %s=postgres://user:password@host:5432/db (or DISTLOCK_URL=postgres://...) first", envPostgres)
	}
	raw, setting, err := a.backendURL(*flagURL)
	if err != nil {
		return a.fail(cmd, err)
	}
	conn, schema, err := postgresTarget(raw, setting)
	if err != nil {
		return a.fail(cmd, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pool, err := a.openPostgresPool(ctx, conn, setting)
	if err != nil {
		return a.fail(cmd, err)
	}
	defer pool.Close()
	if err := pgengine.Migrate(ctx, pool, schema); err != nil {
		return a.fail(cmd, &cliError{code: exitFailed, msg: fmt.Sprintf("init of the schema %q failed: %v", schema, err)})
	}
	fmt.Fprintf(a.stdout, "schema %q is ready for distlock\n", schema)
	return exitOK
}

// notMigrated reports an error of a PostgreSQL schema never migrated.
func notMigrated(err error) bool { return errors.Is(err, pgengine.ErrNotMigrated) }
