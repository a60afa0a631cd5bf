package server

import (
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// waiterOf is a Client's waiter id for owner (distlock.WaiterOwner).
func waiterOf(owner string) engine.Waiter {
	return engine.Waiter{ID: "0123456789abcdef0123456789abcdef:" + owner, Waited: time.Second}
}

// held is a held mutex with its queue.
func held(name, owner string, queue ...engine.Waiter) engine.Info {
	return engine.Info{Name: name, Held: true, Owner: owner, TTL: time.Minute, Waiters: len(queue), Queue: queue}
}

// TestWaitCycles: a chain is no cycle; two and three owners waiting in a
// ring are one cycle each, reported once; an owner queued behind its own
// hold is no edge; waiters without an owner draw nothing.
func TestWaitCycles(t *testing.T) {
	for _, tc := range []struct {
		name          string
		infos         []engine.Info
		edges, cycles int
	}{
		{"chain", []engine.Info{held("x", "a", waiterOf("b")), held("y", "b", waiterOf("c"))}, 2, 0},
		{"two", []engine.Info{held("x", "a", waiterOf("b")), held("y", "b", waiterOf("a"))}, 2, 1},
		{"three", []engine.Info{held("x", "a", waiterOf("c")), held("y", "b", waiterOf("a")), held("z", "c", waiterOf("b"))}, 3, 1},
		{"two rings", []engine.Info{held("x", "a", waiterOf("b")), held("y", "b", waiterOf("a")),
			held("u", "c", waiterOf("d")), held("v", "d", waiterOf("c"))}, 4, 2},
		{"self", []engine.Info{held("x", "a", waiterOf("a"))}, 0, 0},
		{"unnamed", []engine.Info{held("x", "a", engine.Waiter{ID: "0123456789abcdef0123456789abcdef"}), held("y", "b", waiterOf("a"))}, 1, 0},
	} {
		g := waitFor(tc.infos, RoleAdmin)
		if len(g.Edges) != tc.edges || len(g.Cycles) != tc.cycles {
			t.Errorf("%s: %d edges, %d cycles; want %d, %d: %+v", tc.name, len(g.Edges), len(g.Cycles), tc.edges, tc.cycles, g.Cycles)
		}
		for _, c := range g.Cycles {
			for i, e := range c.Edges {
				if next := c.Edges[(i+1)%len(c.Edges)]; e.To.Owner != next.From.Owner {
					t.Errorf("%s: cycle %+v is not closed at %d", tc.name, c, i)
				}
			}
		}
	}
	// The read role sees fingerprints only.
	g := waitFor([]engine.Info{held("x", "a", waiterOf("b")), held("y", "b", waiterOf("a"))}, RoleRead)
	for _, e := range g.Edges {
		if e.From.Owner != "" || e.To.Owner != "" || e.From.ID == "" {
			t.Errorf("read role's edge %+v shows an owner", e)
		}
	}
}
