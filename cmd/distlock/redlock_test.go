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

// TestRedlockSemaphoreRefused: Redlock refuses a semaphore of more than one
// permit (exit 64), and the hint names the backends that keep them: every
// one but Redlock, not only a server on the embedded engine.
func TestRedlockSemaphoreRefused(t *testing.T) {
	t.Parallel()
	srvs := redistest.StartN(t, 3)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.URL()
	}
	c := cli{env: map[string]string{"DISTLOCK_REDIS": strings.Join(urls, ",")}}
	r := c.run(t, "run", "--wait", "0", "--limit", "2", "pool", "--", "true")
	expect(t, r, exitUsage, "Redis, etcd, PostgreSQL and a distlock server keep semaphores", "Redlock keeps reader-writer locks")
	if strings.Contains(r.stderr, "embedded engine") {
		t.Errorf("the hint still asks for a server on the embedded engine:\n%v", r)
	}
	r = c.run(t, "run", "-h")
	if !strings.Contains(r.stdout+r.stderr, "Every backend keeps semaphores and reader-writer locks") {
		t.Errorf("run -h does not say which backends keep shared locks:\n%v", r)
	}
}
