//go:build !full

package main

import "flag"

// The default build links the embedded engine, Redis (and Redlock) and the
// distlock server client; etcd and PostgreSQL come with -tags full (see
// backends_full.go, backend_postgres.go), so that the first build of
// distlock compiles neither gRPC and the etcd client nor pgx.

// cmdPostgres explains that this build has no PostgreSQL.
func (a *app) cmdPostgres(args []string) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		return a.flagError("postgres", flag.ErrHelp)
	}
	return a.fail("postgres", usageErr(fullBuildHint, "PostgreSQL", "postgres init"))
}

// notMigrated is false: this build has no PostgreSQL.
func notMigrated(error) bool { return false }
