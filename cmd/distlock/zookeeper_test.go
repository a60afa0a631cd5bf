//go:build unix && !lite

package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// TestZooKeeperBackend runs the CLI on a real ZooKeeper server
// (DISTLOCK_ZOOKEEPER): run holds the lock while the command runs and
// passes the token (the holder node's czxid), status sees a holder, a
// ttl above the session timeout is refused, a malformed server list and
// two backends at once are usage errors; and distlock serve --backend
// zookeeper://... serves a client of the server.
func TestZooKeeperBackend(t *testing.T) {
	t.Parallel()
	ens := zktest.Start(t, 1)
	servers := strings.Join(ens.Servers(), ",")
	c := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": servers}}
	r := c.run(t, "run", "--ttl", "2s", "jobs", "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
	expect(t, r, 0, "fence=")
	if f := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.stdout), "fence=")); f == "" || f == "0" {
		t.Errorf("no fencing token in the command's environment: %q", r.stdout)
	}
	expect(t, c.run(t, "acquire", "--ttl", "5s", "held"), 0)
	expect(t, c.run(t, "status", "held"), 0, "held")
	expect(t, c.run(t, "acquire", "--ttl", "10m", "long"), exitUsage, "session timeout")
	bad := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": "zk://" + servers}}
	expect(t, bad.run(t, "status", "held"), exitUsage, "host:2181")
	url := cli{env: map[string]string{"DISTLOCK_URL": "zookeeper://" + servers}}
	expect(t, url.run(t, "status", "held"), 0, "held")
	both := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": servers, "DISTLOCK_ETCD": "http://127.0.0.1:1"}}
	expect(t, both.run(t, "status", "held"), exitUsage, "both")

	s := serveIn(t, nil, "--backend", "zookeeper://"+servers)
	via := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	expect(t, via.run(t, "run", "--ttl", "3s", "via-server", "--", "true"), 0)
	expect(t, via.run(t, "status", "via-server"), 0, "free")
}
