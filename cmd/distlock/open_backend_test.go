//go:build unix && !lite

package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/postgres/pgtest"
)

// TestOpenFailureExits69: a backend that Open itself reaches and finds
// unreachable (a ZooKeeper ensemble granting no session, an etcd with a
// user whose token request nobody answers) exits 69, as the check after
// Open does for the other backends, on every command and on serve; a URL
// that cannot be used (a bad port, a min_ttl etcd cannot keep) stays a
// usage error (64).
func TestOpenFailureExits69(t *testing.T) {
	t.Parallel()
	zk := cli{env: map[string]string{"DISTLOCK_URL": "zookeeper://127.0.0.1:1"}}
	for _, args := range [][]string{
		{"status", "x"},
		{"run", "--wait", "0", "x", "--", "true"},
		{"run", "--wait", "2s", "x", "--", "true"},
		{"serve", "--listen", "127.0.0.1:0", "--backend", "zookeeper://127.0.0.1:1"},
	} {
		expect(t, zk.run(t, args...), exitBackend, "127.0.0.1:1")
	}
	zkEnv := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": "127.0.0.1:1"}}
	expect(t, zkEnv.run(t, "status", "x"), exitBackend, "DISTLOCK_ZOOKEEPER")

	etcdUser := cli{env: map[string]string{"DISTLOCK_URL": "etcd://root:pw@127.0.0.1:1"}}
	r := etcdUser.run(t, "status", "x")
	expect(t, r, exitBackend, "cannot reach")
	if strings.Contains(r.stderr, ":pw@") {
		t.Errorf("the message shows the password:\n%v", r)
	}
	etcdEnv := cli{env: map[string]string{"DISTLOCK_ETCD": "http://root:pw@127.0.0.1:1"}}
	expect(t, etcdEnv.run(t, "status", "x"), exitBackend, "DISTLOCK_ETCD")

	for u, says := range map[string]string{
		"etcd://u:pw@127.0.0.1:abc":         "port",
		"etcd://127.0.0.1:1?min_ttl=25h":    "min_ttl",
		"etcd://127.0.0.1:1?min_ttl=2500ms": "min_ttl",
		"zookeeper://127.0.0.1:1?typo=1":    "typo",
		"zookeeper://127.0.0.1:1/some/path": "root",
	} {
		bad := cli{env: map[string]string{"DISTLOCK_URL": u}}
		expect(t, bad.run(t, "status", "x"), exitUsage, says)
	}
}

// TestPostgresConnectRefusedExits69: a misspelt connection parameter,
// which PostgreSQL refuses at start-up with SQLSTATE 42704, is a backend
// error carrying the server's message (exit 69), not a schema to init.
func TestPostgresConnectRefusedExits69(t *testing.T) {
	t.Parallel()
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c := cli{env: map[string]string{"DISTLOCK_POSTGRES": srv.URL(), "DISTLOCK_POSTGRES_SCHEMA": "typo"}}
	expect(t, c.run(t, "postgres", "init"), 0)
	expect(t, c.run(t, "status", "jobs"), 0)
	typo := cli{env: map[string]string{"DISTLOCK_POSTGRES": srv.URL("aplication_name=x"), "DISTLOCK_POSTGRES_SCHEMA": "typo"}}
	r := typo.run(t, "status", "jobs")
	expect(t, r, exitBackend, `unrecognized configuration parameter "aplication_name"`)
	if strings.Contains(r.stderr, "postgres init") {
		t.Errorf("a refused connection is reported as a schema to init:\n%v", r)
	}
}

// TestRunHelpLimit: run --help says what a --limit that disagrees with the
// stored limit does (served under the stored one), as docs/CLI.md does.
func TestRunHelpLimit(t *testing.T) {
	t.Parallel()
	r := cli{}.run(t, "run", "--help")
	expect(t, r, 0, "served under", "the stored limit")
	if strings.Contains(r.stdout+r.stderr, "another K is refused") {
		t.Errorf("run --help says a disagreeing --limit is refused:\n%v", r)
	}
}
