//go:build unix && !lite

package main

import (
	"testing"

	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestPostgresBackend runs the CLI on a real PostgreSQL (DISTLOCK_POSTGRES):
// before 'distlock postgres init' a command says to run it and changes
// nothing; init is idempotent; then run, status and serve --postgres work.
func TestPostgresBackend(t *testing.T) {
	t.Parallel()
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := cli{env: map[string]string{"DISTLOCK_POSTGRES": srv.URL(), "DISTLOCK_POSTGRES_SCHEMA": "cli"}}
	expect(t, c.run(t, "status", "jobs"), exitUsage, "distlock postgres init")
	expect(t, c.run(t, "postgres", "init"), 0, `"cli" is ready`)
	expect(t, c.run(t, "postgres", "init"), 0)
	r := c.run(t, "run", "--ttl", "5s", "jobs", "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
	expect(t, r, 0, "fence=")
	r = c.run(t, "acquire", "--ttl", "30s", "held")
	expect(t, r, 0, "DISTLOCK_OWNER=")
	// The lock is named "held": the state line, not the name, says it is.
	expectState(t, c.run(t, "status", "held"), "held", parseAssignments(t, r.stdout)["DISTLOCK_OWNER"])
	s := serveIn(t, map[string]string{"DISTLOCK_POSTGRES_SCHEMA": "cli"}, "--postgres", srv.URL())
	viaServer := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	expect(t, viaServer.run(t, "run", "--ttl", "3s", "via-server", "--", "true"), 0)
	both := cli{redis: "redis://127.0.0.1:1", env: map[string]string{"DISTLOCK_POSTGRES": srv.URL()}}
	expect(t, both.run(t, "status", "held"), exitUsage, "both")
}
