package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/internal/redistest"
)

// TestClusterBackend: DISTLOCK_REDIS=redis-cluster://... runs every command
// on a Redis Cluster, whichever master serves the lock: run, acquire,
// status, list, release, and a waiting run woken by the release.
func TestClusterBackend(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	url := "redis-cluster://" + cl.Nodes[0].Addr() + "?addr=" + cl.Nodes[1].Addr()
	c := cli{redis: url}

	for i := range 6 { // names on every master, most likely
		name := "cl-" + strconv.Itoa(i)
		r := c.run(t, "run", "--wait", "0", name, "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
		expect(t, r, 0, "fence=")
	}
	r := c.run(t, "acquire", "--ttl", "1m", "held")
	expect(t, r, 0, "DISTLOCK_OWNER=")
	owner := parseAssignments(t, r.stdout)["DISTLOCK_OWNER"]
	expect(t, c.run(t, "status", "held"), 0, "held", owner)
	expect(t, c.run(t, "list"), 0, "held")

	// A waiting run is woken by the release (sharded pub/sub on the slot's
	// master), not by the lease's end a minute later.
	cmd := c.command("run", "--wait", "20s", "held", "--", "true")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for waiters(c.run(t, "status", "held").stdout) != "1" {
		if time.Since(start) > patience {
			t.Fatal("the waiting run never showed as a waiter")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its success within --wait 20s, with the lease a minute long, shows
	// that the release woke it.
	expect(t, c.run(t, "release", "held", owner), 0)
	expect(t, wait(t, cmd, start, &out, &errb, patience), 0)

	bad := cli{redis: "redis-cluster://" + cl.Nodes[0].Addr() + "?bogus=1"}
	expect(t, bad.run(t, "status", "x"), exitUsage, "cannot use the backend URL of DISTLOCK_REDIS", "unexpected option: bogus")
}

// waiters returns the value of the waiters line of status output.
func waiters(status string) string {
	for _, l := range strings.Split(status, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "waiters:" {
			return f[1]
		}
	}
	return ""
}
