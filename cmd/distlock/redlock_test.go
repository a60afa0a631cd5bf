package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock/engine/enginetest"
	redisengine "github.com/distlock/distlock/engine/redis"
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
	// The per-node timeout is raised from its default (at most 50ms): on a
	// machine loaded by other tests a node's answer may take longer, and
	// the test is about the quorum's answers, not their speed.
	c := cli{env: map[string]string{"DISTLOCK_REDIS": strings.Join(urls, ","), "DISTLOCK_NODE_TIMEOUT": "1s"}}

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
	// A quorum's grant returns once a majority granted; the third node's
	// answer may still be on its way (or never sent, when the acquiring
	// process exits first), so a majority is what the grant promises.
	if n := strings.Count(r.stdout, "held by"); n < 2 {
		t.Fatalf("status should show the lock held on a majority (2 of 3 nodes), shows %d:\n%s", n, r.stdout)
	}
	r = c.run(t, "list")
	expect(t, r, 0, "held")
	// --fair reaches the quorum, which refuses it.
	r = c.run(t, "run", "--fair", "--wait", "1s", "fair-job", "--", "true")
	expect(t, r, exitUsage, "WithFair is not supported")

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

// TestRedlockNodeStopped: with one of three Redlock nodes SIGSTOPped,
// status, list, leaks and run each return within a bound derived from the
// per-node timeout (DISTLOCK_NODE_TIMEOUT) beyond what a run takes with
// every node answering, answer from the two nodes that
// answer, and mark the admin answers partial, naming the stopped node (a
// "partial:" line, a partial field in JSON); after SIGCONT the answers are
// whole again.
func TestRedlockNodeStopped(t *testing.T) {
	t.Parallel()
	const nodeTimeout = 500 * time.Millisecond
	srvs := redistest.StartN(t, 3)
	urls := make([]string, len(srvs))
	for i, s := range srvs {
		urls[i] = s.URL()
	}
	c := cli{env: map[string]string{"DISTLOCK_REDIS": strings.Join(urls, ","), "DISTLOCK_NODE_TIMEOUT": nodeTimeout.String()}}
	ctx := testCtx(t)

	r := c.run(t, "acquire", "held", "--ttl", "60s")
	expect(t, r, 0, "DISTLOCK_OWNER=")
	owner := envLine(r.stdout, "DISTLOCK_OWNER")
	// What one run of the CLI costs this machine with every node
	// answering (a process started, its connections made), measured
	// under the load the runs below meet: their bound adds the stopped
	// node's timeouts to it. The scheduling delay the probe measures in
	// this process is no measure of it: a sleeping test process is woken
	// at once where a starting one waits for its share of the CPU.
	healthy := r.took
	if r := c.run(t, "status", "held"); r.code == 0 {
		healthy = max(healthy, r.took)
	}
	for _, s := range srvs {
		if err := s.Client().Set(ctx, redisengine.DefaultPrefix+"{leaked}", "1 someone", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Stop a node whose record of the lock has a token of its own, if any
	// (a node that granted after the decision may keep a higher one), so
	// that the two that answer agree on the grant's.
	si := stoppedPick(t, ctx, srvs, "held")
	stopped := srvs[si]
	if err := stopped.Pause(); err != nil {
		t.Fatal(err)
	}
	// (The harness's clean-up kills a server left paused.)
	probe := enginetest.StartProbe(t)
	bounded := func(r result) {
		t.Helper()
		enginetest.Bounded(t, "distlock with a node stopped", r.took, healthy+3*nodeTimeout+time.Second+probe.Slack(), probe.Delay(), time.Second)
	}
	noAnswer := "no answer from redis " + stopped.Addr()
	partial := "partial: " + noAnswer

	r = c.run(t, "status", "held")
	expect(t, r, 0, "state:", "held", owner, "partial:", noAnswer)
	bounded(r)
	if n := strings.Count(r.stdout, "held by "+owner); n != 2 {
		t.Errorf("status should show the lock held on the 2 nodes that answer, shows %d:\n%v", n, r)
	}

	r = c.run(t, "status", "--json", "held")
	expect(t, r, 0)
	bounded(r)
	checkPartialStatusJSON(t, r, owner, "redis "+stopped.Addr())

	r = c.run(t, "list")
	expect(t, r, 0, "held", "leaked", partial)
	bounded(r)

	r = c.run(t, "leaks")
	expect(t, r, exitFailed, "leaked", partial)
	bounded(r)
	for i, s := range srvs {
		if got := strings.Contains(r.stdout, "redis "+s.Addr()+" "); got != (i != si) {
			t.Errorf("leaks: node %s listed %v, want the leak on the nodes that answer only\n%v", s.Addr(), got, r)
		}
	}

	r = c.run(t, "run", "--wait", "0", "job", "--", "true")
	expect(t, r, 0)
	bounded(r)

	if err := stopped.Resume(); err != nil {
		t.Fatal(err)
	}
	checkWholeAgain(t, c, owner)
}

// checkPartialStatusJSON checks status --json's answer r with one node
// (node) stopped: held by owner, marked partial, naming that node.
func checkPartialStatusJSON(t *testing.T, r result, owner, node string) {
	t.Helper()
	var info infoJSON
	if err := json.Unmarshal([]byte(r.stdout), &info); err != nil || !info.Held || info.Owner != owner ||
		info.Partial == nil || len(info.Partial.Unanswered) != 1 || info.Partial.Unanswered[0] != node {
		t.Errorf("status --json: %+v (%v), want held by %s, partial naming the stopped node\n%v", info, err, owner, r)
	}
}

// checkWholeAgain checks that status and leaks answer from all 3 nodes,
// with no partial mark, once the stopped node is resumed.
func checkWholeAgain(t *testing.T, c cli, owner string) {
	t.Helper()
	r := c.run(t, "status", "held")
	expect(t, r, 0, owner)
	// Every node answers again. The grant holds on a majority; the third
	// node holds it too unless its grant missed the per-node timeout at
	// acquire (a starved machine), which leaves that node free.
	if strings.Contains(r.stdout, "partial") || strings.Contains(r.stdout, "no answer") ||
		strings.Count(r.stdout, "held by "+owner) < 2 || strings.Count(r.stdout, "  redis ") != 3 {
		t.Errorf("status after SIGCONT: want every node's answer, the lock held on a majority, no partial line\n%v", r)
	}
	r = c.run(t, "leaks")
	expect(t, r, exitFailed, "leaked")
	if strings.Contains(r.stderr, "partial") || strings.Count(r.stdout, "{leaked}") != 3 {
		t.Errorf("leaks after SIGCONT: want the leak on all 3 nodes, no partial note\n%v", r)
	}
}

// TestNodeTimeoutRefused: a DISTLOCK_NODE_TIMEOUT that is not a positive
// duration is a usage error, before anything is done.
func TestNodeTimeoutRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, v := range []string{"soon", "0", "-1s"} {
		c := cli{env: map[string]string{"DISTLOCK_REDIS": srv.URL() + "," + srv.URL() + "," + srv.URL(), "DISTLOCK_NODE_TIMEOUT": v}}
		r := c.run(t, "run", "--wait", "0", "refused", "--", "true")
		expect(t, r, exitUsage, "DISTLOCK_NODE_TIMEOUT")
		if n, err := srv.Client().Exists(testCtx(t), redisengine.DefaultPrefix+"{refused}").Result(); err != nil || n != 0 {
			t.Fatalf("DISTLOCK_NODE_TIMEOUT=%s: the lock was taken (%d, %v)", v, n, err)
		}
	}
}

// stoppedPick returns the index of the server to stop: one whose record of
// the lock name has a token the others do not share, else the last.
func stoppedPick(t *testing.T, ctx context.Context, srvs []*redistest.Server, name string) int {
	t.Helper()
	tokens := make([]uint64, len(srvs))
	for i, s := range srvs {
		eng, err := redisengine.New(s.Client())
		if err != nil {
			t.Fatal(err)
		}
		info, err := eng.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = info.Token
	}
	for i, tok := range tokens {
		same := 0
		for _, other := range tokens {
			if other == tok {
				same++
			}
		}
		if same == 1 {
			return i
		}
	}
	return len(srvs) - 1
}

// envLine returns the value of KEY=value in out.
func envLine(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v
		}
	}
	return ""
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
