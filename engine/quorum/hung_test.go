package quorum_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/quorum"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// hungNodeTimeout is the per-node timeout of TestHungNode: long enough for
// a healthy node of a busy machine, and the unit of its bounds.
const hungNodeTimeout = 500 * time.Millisecond

// TestHungNode: with one of three nodes SIGSTOPped, every operation of the
// quorum (the admin views, the lock path, shared locks, a fresh engine's
// first commands, which load the scripts) returns within a bound derived
// from the per-node timeout, answers from the two nodes that answer, and
// marks the admin views partial, naming the stopped node. After SIGCONT
// the answers are whole again.
func TestHungNode(t *testing.T) {
	srvs := redistest.StartN(t, 3)
	q := newQuorum(t, srvs, quorum.WithNodeTimeout(hungNodeTimeout))
	c := distlock.New(q)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()

	held, err := c.Acquire(ctx, "hung-held", distlock.WithTTL(time.Minute), distlock.WithMetadata("m"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(ctx) }()
	reader, err := c.RWMutex("hung-rw").RLock(ctx, distlock.WithTTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reader.Release(ctx) }()
	// A leaked lock (no expiry) on every node, as SETNX without EXPIRE
	// leaves one.
	for _, s := range srvs {
		if err := s.Client().Set(ctx, lockKey("hung-leak"), "1 someone", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The node to stop: one whose record of the lock has a token of its
	// own, if any (a node that granted after the decision may keep a
	// higher token), so that the two that answer agree on the grant's.
	si := 2
	for i, n := range q.InspectNodes(ctx, "hung-held") {
		if n.Err != nil || n.Info.Token != held.Token() {
			si = i
		}
	}
	stopped := srvs[si]
	stoppedName := "redis " + stopped.Addr()
	var answering []*redistest.Server
	for i, s := range srvs {
		if i != si {
			answering = append(answering, s)
		}
	}

	if err := stopped.Pause(); err != nil {
		t.Fatal(err)
	}
	// (The harness's clean-up kills a server left paused.)
	probe := enginetest.StartProbe(t)
	// bounded runs op and checks that it returned within three per-node
	// timeouts and a second (and the machine's measured slowness).
	bounded := func(what string, op func()) {
		t.Helper()
		start := time.Now()
		op()
		enginetest.Bounded(t, what+" with a node stopped", time.Since(start), 3*hungNodeTimeout+time.Second+probe.Slack(), probe.Delay(), time.Second)
	}
	wantPartial := func(what string, p *engine.PartialError) {
		t.Helper()
		if p == nil || !slices.Equal(p.Unanswered, []string{stoppedName}) {
			t.Fatalf("%s: partial %v, want one naming %q", what, p, stoppedName)
		}
	}

	bounded("Inspect", func() {
		info, err := q.Inspect(ctx, "hung-held")
		if err != nil || !info.Held || info.Owner != held.Owner() || info.Token != held.Token() || info.Metadata != "m" {
			t.Fatalf("Inspect: %+v, %v; want held by %s with token %d", info, err, held.Owner(), held.Token())
		}
		wantPartial("Inspect", info.Partial)
	})
	bounded("Inspect of a shared lock", func() {
		info, err := q.Inspect(ctx, "hung-rw")
		if err != nil || len(info.Holders) != 1 || info.Holders[0].Owner != reader.Owner() {
			t.Fatalf("Inspect: %+v, %v; want the reader %s", info, err, reader.Owner())
		}
		wantPartial("Inspect of a shared lock", info.Partial)
	})
	bounded("List", func() {
		infos, next, err := q.List(ctx, "hung-", "", 100)
		p, ok := engine.AsPartial(err)
		if !ok || next != "" {
			t.Fatalf("List: %v (next %q), want a partial listing", err, next)
		}
		wantPartial("List", p)
		var names []string
		for _, i := range infos {
			names = append(names, i.Name)
		}
		if !slices.Equal(names, []string{"hung-held", "hung-leak", "hung-rw"}) {
			t.Fatalf("List: %v, want hung-held, hung-leak and hung-rw", names)
		}
	})
	bounded("Leaks", func() {
		leaks, _, err := q.Leaks(ctx, "hung-", time.Hour, "", 100)
		p, ok := engine.AsPartial(err)
		if !ok {
			t.Fatalf("Leaks: %v, want a partial answer", err)
		}
		wantPartial("Leaks", p)
		if got := leakNodes(leaks, "hung-leak"); !slices.Equal(got, nodeNames(answering)) {
			t.Fatalf("Leaks: the leak found on %v, want the two nodes that answer (%+v)", got, leaks)
		}
	})
	bounded("InspectNodes", func() {
		nodes := q.InspectNodes(ctx, "hung-held")
		for i, n := range nodes {
			if i == si {
				if n.Err == nil || n.Node != stoppedName {
					t.Fatalf("InspectNodes: the stopped node %+v, want its error", n)
				}
				continue
			}
			if n.Err != nil || !n.Info.Held || n.Info.Owner != held.Owner() {
				t.Fatalf("InspectNodes: node %d %+v, want it held by %s", i, n, held.Owner())
			}
		}
	})
	bounded("Subscribe", func() {
		sub, err := q.Subscribe(ctx, "hung-free")
		if err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		sub.Close()
	})
	bounded("Acquire, Extend and Release", func() {
		l, err := c.Acquire(ctx, "hung-free", distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
	bounded("RLock and its release", func() {
		l, err := c.RWMutex("hung-rw").TryRLock(ctx, distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatalf("TryRLock: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release: %v", err)
		}
	})
	bounded("Leader", func() {
		if l, err := c.Leader(ctx, "hung-held"); err != nil || l.Term != held.Token() || l.Value != "m" {
			t.Fatalf("Leader: %+v, %v; want term %d, value m", l, err, held.Token())
		}
	})
	bounded("ForceRelease", func() {
		l, err := c.Acquire(ctx, "hung-force", distlock.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release(ctx) }()
		if was, err := c.ForceRelease(ctx, "hung-force"); err != nil || !was {
			t.Fatalf("ForceRelease: %v, %v; want freed on the majority that answers", was, err)
		}
		if info, err := q.Inspect(ctx, "hung-force"); err != nil || info.Held {
			t.Fatalf("after ForceRelease: %+v, %v; want free", info, err)
		}
	})
	// A fresh engine's first commands: the scripts are loaded then.
	fresh := newQuorum(t, srvs, quorum.WithNodeTimeout(hungNodeTimeout))
	fc := distlock.New(fresh)
	t.Cleanup(func() { _ = fc.Close() })
	bounded("a fresh engine's first Acquire and Release", func() {
		l, err := fc.Acquire(ctx, "hung-fresh", distlock.WithTTL(time.Minute), distlock.WithOwner("fresh-owner"))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})

	if err := stopped.Resume(); err != nil {
		t.Fatal(err)
	}
	// Whole again once the node answers.
	waitFor(t, "the resumed node to answer", func() bool {
		info, err := q.Inspect(ctx, "hung-held")
		return err == nil && info.Partial == nil
	})
	info, err := q.Inspect(ctx, "hung-held")
	if err != nil || info.Partial != nil || !info.Held || info.Owner != held.Owner() {
		t.Fatalf("Inspect after SIGCONT: %+v, %v", info, err)
	}
	if _, _, err := q.List(ctx, "hung-", "", 100); err != nil {
		t.Fatalf("List after SIGCONT: %v, want whole", err)
	}
	leaks, _, err := q.Leaks(ctx, "hung-", time.Hour, "", 100)
	if err != nil || len(leakNodes(leaks, "hung-leak")) != 3 {
		t.Fatalf("Leaks after SIGCONT: %+v, %v; want the leak on every node", leaks, err)
	}
	for i, n := range q.InspectNodes(ctx, "hung-held") {
		if n.Err != nil || !n.Info.Held {
			t.Fatalf("InspectNodes after SIGCONT: node %d %+v", i, n)
		}
	}
}

// leakNodes returns the nodes whose leaks include the lock name (a
// quorum's Leak.Key is the node's name, a space and the key).
func leakNodes(leaks []engine.Leak, name string) []string {
	var nodes []string
	for _, l := range leaks {
		if node, _, ok := strings.Cut(l.Key, " "+redisengine.DefaultPrefix); ok && l.Name == name {
			nodes = append(nodes, node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

// nodeNames names the servers' nodes as a quorum does, sorted.
func nodeNames(srvs []*redistest.Server) []string {
	var names []string
	for _, s := range srvs {
		names = append(names, "redis "+s.Addr())
	}
	slices.Sort(names)
	return names
}

// waitFor polls cond until it holds, for at most ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
