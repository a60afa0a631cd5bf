//go:build unix && !lite

package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/etcd/etcdtest"
)

// TestEtcdBackend runs the CLI on a real etcd member (DISTLOCK_ETCD): run
// holds the lock while the command runs and passes the token (the lock
// key's CreateRevision), status sees the holder, a --ttl etcd cannot keep
// is rounded up and said so, and both backends at once is a usage error.
func TestEtcdBackend(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	eps := strings.Join(cl.Endpoints(), ",")
	c := cli{env: map[string]string{"DISTLOCK_ETCD": eps}}
	r := c.run(t, "run", "--ttl", "500ms", "jobs", "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
	expect(t, r, 0, "fence=")
	if !strings.Contains(r.stderr, "keeps a ttl of 2s, not --ttl 500ms") {
		t.Errorf("the rounded ttl is not reported:\n%s", r.stderr)
	}
	if f := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.stdout), "fence=")); f == "" || f == "0" {
		t.Errorf("no fencing token in the command's environment: %q", r.stdout)
	}
	r = c.run(t, "acquire", "--ttl", "20s", "held")
	expect(t, r, 0, "DISTLOCK_OWNER=")
	expectState(t, c.run(t, "status", "held"), "held", parseAssignments(t, r.stdout)["DISTLOCK_OWNER"])
	both := cli{redis: "redis://127.0.0.1:1", env: map[string]string{"DISTLOCK_ETCD": eps}}
	expect(t, both.run(t, "status", "held"), exitUsage, "both")
}

// TestServeOnEtcd: distlock serve --etcd runs the server on etcd, and a
// client of the server takes a lock there.
func TestServeOnEtcd(t *testing.T) {
	t.Parallel()
	cl := etcdtest.Start(t, 1)
	s := serveIn(t, nil, "--etcd", strings.Join(cl.Endpoints(), ","))
	c := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	expect(t, c.run(t, "run", "--ttl", "3s", "via-server", "--", "true"), 0)
	expectState(t, c.run(t, "status", "via-server"), "free")
}
