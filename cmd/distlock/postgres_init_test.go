//go:build unix && !lite

package main

import (
	"testing"

	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestPostgresInitByURL: docs/CLI.md names the backend with DISTLOCK_URL
// (or --backend) and says 'distlock postgres init' makes the schema the
// other commands then use. init must take the same settings: DISTLOCK_URL,
// --backend, and the URL's ?schema=, and make the schema that run and
// status then find.
func TestPostgresInitByURL(t *testing.T) {
	t.Parallel()
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)

	byURL := cli{env: map[string]string{"DISTLOCK_URL": srv.URL("schema=by_url")}}
	expect(t, byURL.run(t, "status", "jobs"), exitUsage, "distlock postgres init")
	expect(t, byURL.run(t, "postgres", "init"), 0, `"by_url" is ready`)
	expect(t, byURL.run(t, "run", "--ttl", "5s", "jobs", "--", "true"), 0)

	byFlag := srv.URL("schema=by_flag")
	expect(t, (cli{}).run(t, "postgres", "init", "--backend", byFlag), 0, `"by_flag" is ready`)
	expect(t, (cli{}).run(t, "status", "--backend", byFlag, "jobs"), 0, "free")

	// DISTLOCK_POSTGRES with the schema in its URL, as the other commands take it.
	inURL := cli{env: map[string]string{"DISTLOCK_POSTGRES": srv.URL("schema=in_url")}}
	expect(t, inURL.run(t, "postgres", "init"), 0, `"in_url" is ready`)
	expect(t, inURL.run(t, "status", "jobs"), 0, "free")

	// Another backend is a usage error that says what init needs.
	other := cli{env: map[string]string{"DISTLOCK_URL": "mem://"}}
	expect(t, other.run(t, "postgres", "init"), exitUsage, "PostgreSQL")
}
