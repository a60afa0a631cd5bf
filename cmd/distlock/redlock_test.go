package main

import (
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/redistest"
)

// TestRedlockBackend: a comma-separated DISTLOCK_REDIS runs on a quorum:
// the command runs with a fencing token, status shows every node, one node
// down is tolerated, and a lost majority is a backend error (exit 69).
func TestRedlockBackend(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 3)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.URL()
	}
	c := cli{env: map[string]string{"DISTLOCK_REDIS": strings.Join(urls, ",")}}

	r := c.run(t, "run", "--wait", "0", "nightly", "--", "sh", "-c", `echo "fence=$DISTLOCK_FENCE"`)
	expect(t, r, 0, "fence=")

	r = c.run(t, "acquire", "held", "--ttl", "30s")
	expect(t, r, 0, "DISTLOCK_FENCE=")
	r = c.run(t, "status", "held")
	expect(t, r, 0, "nodes:")
	for _, s := range srvs {
		if !strings.Contains(r.stdout, s.Addr()+" ") && !strings.Contains(r.stdout, s.Addr()+"\t") && !strings.Contains(r.stdout, s.Addr()) {
			t.Fatalf("status does not show node %s:\n%s", s.Addr(), r.stdout)
		}
	}
	if strings.Count(r.stdout, "held by") != 3 {
		t.Fatalf("status should show the lock held on all 3 nodes:\n%s", r.stdout)
	}
	r = c.run(t, "list")
	expect(t, r, 0, "held")

	if err := srvs[0].Kill(); err != nil {
		t.Fatal(err)
	}
	r = c.run(t, "run", "--wait", "0", "one-down", "--", "true")
	expect(t, r, 0, "")

	if err := srvs[1].Kill(); err != nil {
		t.Fatal(err)
	}
	r = c.run(t, "run", "--wait", "0", "two-down", "--", "true")
	expect(t, r, exitBackend, "Redlock nodes answer")
}
