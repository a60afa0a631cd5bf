package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/wire"
	"github.com/distlock/distlock/server/api"
)

// The wait-for graph (GET /v1/waitfor and the dashboard): who holds and
// who waits for which lock, read from the engine's listing (holders and
// waiter queues, engine.Info.Queue), and the cycles in it.

const (
	// maxWaitForLocks bounds the locks one graph reads.
	maxWaitForLocks = 1000
	// maxWaitCycles bounds the cycles one graph reports.
	maxWaitCycles = 100
)

// handleWaitFor serves GET /v1/waitfor.
func (s *Server) handleWaitFor(w http.ResponseWriter, r *http.Request, role Role) {
	lister, ok := s.eng.(engine.Lister)
	if !ok {
		writeError(w, newError(http.StatusNotImplemented, api.CodeNotSupported, "this server's engine cannot list locks"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	infos, truncated, err := listSome(ctx, lister, maxWaitForLocks)
	if _, partial := engine.AsPartial(err); err != nil && !partial {
		writeError(w, engineErr("list", err))
		return
	}
	g := waitFor(infos, role)
	g.Truncated = truncated
	writeJSON(w, http.StatusOK, g)
}

// waitEdge is an edge of the graph with its owners in the clear.
type waitEdge struct {
	from, to string
	e        api.WaitForEdge
}

// waitFor builds the graph of the locks infos, owners shown as role may
// see them.
func waitFor(infos []engine.Info, role Role) api.WaitFor {
	g := api.WaitFor{Locks: []api.WaitForLock{}, Edges: []api.WaitForEdge{}, Cycles: []api.WaitCycle{}}
	party := func(owner string) api.WaitForParty {
		p := api.WaitForParty{ID: holderID(owner)}
		if role >= RoleAdmin {
			p.Owner = owner
		}
		return p
	}
	var edges []waitEdge
	for _, i := range infos {
		hs := i.Holders
		if i.Held && len(hs) == 0 {
			hs = []engine.Holder{{Owner: i.Owner, TTL: i.TTL}}
		}
		if len(hs) == 0 && i.Waiters == 0 {
			continue
		}
		l := api.WaitForLock{Name: i.Name, Holders: []api.WaitForParty{}, Waiters: []api.WaitForParty{}}
		for _, h := range hs {
			p := party(h.Owner)
			p.TTLMs = wire.HolderTTLMs(h.TTL)
			l.Holders = append(l.Holders, p)
		}
		if i.Queue == nil && i.Waiters > 0 {
			g.QueueUnknown, l.Unnamed = true, i.Waiters
		}
		for _, qw := range i.Queue {
			o := distlock.WaiterOwner(qw.ID)
			if o == "" {
				l.Unnamed++
				continue
			}
			p := party(o)
			p.WaitedMs = qw.Waited.Milliseconds()
			l.Waiters = append(l.Waiters, p)
			for _, h := range hs {
				if h.Owner == o {
					continue // an owner waiting on itself re-enters; no wait-for
				}
				e := api.WaitForEdge{From: p, Lock: i.Name, To: party(h.Owner), WaitedMs: p.WaitedMs, HolderTTL: wire.HolderTTLMs(h.TTL)}
				edges = append(edges, waitEdge{from: o, to: h.Owner, e: e})
			}
		}
		g.Locks = append(g.Locks, l)
	}
	for _, e := range edges {
		g.Edges = append(g.Edges, e.e)
	}
	for _, c := range waitCycles(edges) {
		wc := api.WaitCycle{}
		for _, i := range c {
			wc.Edges = append(wc.Edges, edges[i].e)
		}
		g.Cycles = append(g.Cycles, wc)
	}
	return g
}

// waitCycles finds the cycles of the graph by depth-first search: each
// edge back to an owner on the search's path closes one (every strongly
// connected part with a cycle yields at least one). A cycle is a list of
// edge indices, starting at its smallest; each is reported once, at most
// maxWaitCycles of them.
func waitCycles(edges []waitEdge) [][]int {
	adj := map[string][]int{}
	var owners []string
	for i, e := range edges {
		if _, ok := adj[e.from]; !ok {
			owners = append(owners, e.from)
		}
		adj[e.from] = append(adj[e.from], i)
	}
	slices.Sort(owners)
	const (
		fresh = iota
		onPath
		done
	)
	state := map[string]int{}
	at := map[string]int{} // an owner on the path: its edge's index in path
	var path []int
	seen := map[string]bool{}
	var out [][]int
	var visit func(o string)
	visit = func(o string) {
		state[o], at[o] = onPath, len(path)
		for _, ei := range adj[o] {
			to := edges[ei].to
			switch state[to] {
			case fresh:
				path = append(path, ei)
				visit(to)
				path = path[:len(path)-1]
			case onPath:
				c := append(slices.Clone(path[at[to]:]), ei)
				m := slices.Index(c, slices.Min(c))
				c = append(c[m:], c[:m]...)
				key := strings.Trim(fmt.Sprint(c), "[]")
				if !seen[key] && len(out) < maxWaitCycles {
					seen[key] = true
					out = append(out, c)
				}
			}
		}
		state[o] = done
	}
	for _, o := range owners {
		if state[o] == fresh {
			visit(o)
		}
	}
	return out
}
