//go:build lite

package main

import "flag"

// The light build (-tags lite) links the embedded engine and the distlock
// server client only: the default build adds Redis (backends_redis.go), etcd,
// PostgreSQL and ZooKeeper (backends_full.go, backend_postgres.go). The light
// build compiles no backend client: neither go-redis, gRPC and the etcd
// client, pgx nor the ZooKeeper client.

// cmdPostgres explains that this build has no PostgreSQL.
func (a *app) cmdPostgres(args []string) int {
	if len(args) > 0 && isHelpFlag(args[0]) {
		return a.flagError("postgres", flag.ErrHelp)
	}
	return a.fail("postgres", usageErr(fullBuildHint, "PostgreSQL", "postgres init"))
}

// notMigrated is false: this build has no PostgreSQL.
func notMigrated(error) bool { return false }
