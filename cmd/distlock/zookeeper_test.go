//go:build unix && !lite

package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/distlock/distlock/engine/zookeeper/zktest"
)

// TestZooKeeperBackend runs the CLI on a real ZooKeeper server
// (DISTLOCK_ZOOKEEPER): run holds the lock while the command runs and
// passes the token (the holder node's czxid); acquire's lease outlives the
// command (the holder node lives by its ttl, not by the session of the
// process that exited): status says held, another client's try is
// refused, extend and release with the printed owner succeed; a ttl above
// the session timeout is refused, a malformed server list and two
// backends at once are usage errors; and distlock serve --backend
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
	r = c.run(t, "acquire", "--ttl", "20s", "held")
	expect(t, r, 0, "DISTLOCK_OWNER=")
	owner := parseAssignments(t, r.stdout)["DISTLOCK_OWNER"]
	expectState(t, c.run(t, "status", "held"), "held", owner)
	expect(t, c.run(t, "run", "--wait", "0", "held", "--", "true"), exitBusy)
	expect(t, c.run(t, "acquire", "--ttl", "10m", "long"), exitUsage, "session timeout")
	bad := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": "zk://" + servers}}
	expect(t, bad.run(t, "status", "held"), exitUsage, "host:2181")
	url := cli{env: map[string]string{"DISTLOCK_URL": "zookeeper://" + servers}}
	expectState(t, url.run(t, "status", "held"), "held", owner)
	both := cli{env: map[string]string{"DISTLOCK_ZOOKEEPER": servers, "DISTLOCK_ETCD": "http://127.0.0.1:1"}}
	expect(t, both.run(t, "status", "held"), exitUsage, "both")
	expect(t, c.run(t, "extend", "--ttl", "20s", "held", owner), 0, "extended")
	expectState(t, c.run(t, "status", "held"), "held", owner)
	expect(t, c.run(t, "release", "held", owner), 0)
	expectState(t, c.run(t, "status", "held"), "free")

	s := serveIn(t, nil, "--backend", "zookeeper://"+servers)
	via := cli{env: map[string]string{"DISTLOCK_SERVER": s.url}}
	expect(t, via.run(t, "run", "--ttl", "3s", "via-server", "--", "true"), 0)
	expectState(t, via.run(t, "status", "via-server"), "free")
}

// expectState checks that status output r succeeded and says the lock's
// state is state ("held", "free"; the lock's name may be either word, so
// the state line itself is matched), and that it contains the strings in
// contains.
func expectState(t *testing.T, r result, state string, contains ...string) {
	t.Helper()
	expect(t, r, 0, contains...)
	if !regexp.MustCompile(`(?m)^state:\s+` + regexp.QuoteMeta(state) + `\s*$`).MatchString(r.stdout) {
		t.Errorf("status does not say the state is %q:\n%v", state, r)
	}
}
