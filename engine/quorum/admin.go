package quorum

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/distlock/distlock/engine"
)

var (
	_ engine.Lister     = (*Engine)(nil)
	_ engine.LeakFinder = (*Engine)(nil)
)

// listPage is the page size asked of each node while listing.
const listPage = 500

// List implements engine.Lister: it lists every node completely and reports
// the locks held on a majority, in one page (next is always ""), each
// described as Inspect describes it (view) from the nodes' listings: the
// holder, token, holds, time left and metadata a majority confirms, so a
// value or a release that reached a majority shows even when the first
// node listed missed it. The nodes list in parallel, each page of each
// node within the per-node timeout (at least MinPageTimeout): a node that
// does not answer a page in time (or cannot list) counts as failed. A
// majority must list; when some nodes failed, the listing of the others
// comes with an *engine.PartialError naming them (a lock held on a
// majority that includes them may be missing).
func (e *Engine) List(ctx context.Context, prefix, _ string, _ int) ([]engine.Info, string, error) {
	rs := each(ctx, e, adminTimeout, func(ctx context.Context, n node) ([]engine.Info, error) {
		l, ok := n.eng.(engine.Lister)
		if !ok {
			return nil, errNoList
		}
		return pages(ctx, e.pageTimeout(), func(ctx context.Context, cursor string) ([]engine.Info, string, error) {
			return l.List(ctx, prefix, cursor, listPage)
		})
	}, nil, nil)
	if errs := nodeErrs(rs); len(e.nodes)-len(errs) < e.majority {
		return nil, "", &NoQuorumError{Op: "list", OK: len(e.nodes) - len(errs), Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	var out []engine.Info
	for name, described := range byName(rs) {
		info := e.view(name, described)
		if !info.Held {
			continue
		}
		info.Partial = nil // the listing's own PartialError names the nodes that failed
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if p := partial(e, rs); p != nil {
		return out, "", p
	}
	return out, "", nil
}

// byName turns the nodes' listings (rs) into each listed name's
// descriptions, node by node as Inspect's are: the node's entry for the
// name, free (an empty Info) when the node listed without it, and the
// node's failure when it did not list. A node that lists a name twice (a
// SCAN) describes it by its first entry.
func byName(rs []result[[]engine.Info]) map[string][]result[engine.Info] {
	names := map[string][]result[engine.Info]{}
	for i, x := range rs {
		seen := map[string]bool{}
		for _, info := range x.v {
			if x.err != nil || seen[info.Name] {
				continue
			}
			seen[info.Name] = true
			described := names[info.Name]
			if described == nil {
				described = make([]result[engine.Info], len(rs))
				for j, y := range rs {
					described[j] = result[engine.Info]{v: engine.Info{Name: info.Name}, err: y.err, done: y.done}
				}
				names[info.Name] = described
			}
			described[i].v = info
		}
	}
	return names
}

// Leaks implements engine.LeakFinder: every node's leaks, each Key prefixed
// with the node's name, in one page. The nodes look in parallel, each page
// of each node within the per-node timeout (at least MinPageTimeout). A
// leak is one node's fact, so the leaks of the nodes that answered are
// reported whatever their number, with an *engine.PartialError naming the
// nodes that did not (a *NoQuorumError when none answered).
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, _ string, _ int) ([]engine.Leak, string, error) {
	rs := each(ctx, e, adminTimeout, func(ctx context.Context, n node) ([]engine.Leak, error) {
		f, ok := n.eng.(engine.LeakFinder)
		if !ok {
			return nil, errNoList
		}
		all, err := pages(ctx, e.pageTimeout(), func(ctx context.Context, cursor string) ([]engine.Leak, string, error) {
			return f.Leaks(ctx, prefix, maxTTL, cursor, listPage)
		})
		for i := range all {
			all[i].Key = fmt.Sprintf("%s %s", n.name, all[i].Key)
		}
		return all, err
	}, nil, nil)
	var out []engine.Leak
	for _, x := range rs {
		out = append(out, x.v...)
	}
	if errs := nodeErrs(rs); len(errs) == len(e.nodes) {
		return nil, "", &NoQuorumError{Op: "leaks", OK: 0, Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	if p := partial(e, rs); p != nil {
		return out, "", p
	}
	return out, "", nil
}

// adminTimeout bounds a whole listing of one node (every page); each page
// has a timeout of its own (pageTimeout), so a node that stops answering
// is dropped after one.
const adminTimeout = time.Minute

// MinPageTimeout is the least time a node has for one page of a listing
// (List, Leaks): a page may take several SCAN rounds and read the state of
// every lock it found, more work than the one command the per-node
// timeout is sized for.
const MinPageTimeout = time.Second

// pageTimeout is the time a node has for one page of a listing: the
// per-node timeout, at least MinPageTimeout.
func (e *Engine) pageTimeout() time.Duration { return max(e.timeout(0), MinPageTimeout) }

// pages reads every page of one node's paged listing, each page within
// timeout.
func pages[T any](ctx context.Context, timeout time.Duration, page func(ctx context.Context, cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		items, next, err := page(pctx, cursor)
		cancel()
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// partial returns the *engine.PartialError of the nodes that failed (or
// were not waited for) in rs, or nil when every node answered.
func partial[T any](e *Engine, rs []result[T]) *engine.PartialError {
	var p *engine.PartialError
	for i, x := range rs {
		if x.done && x.err == nil {
			continue
		}
		if p == nil {
			p = &engine.PartialError{}
		}
		p.Unanswered = append(p.Unanswered, e.nodes[i].name)
	}
	if p != nil {
		p.Err = errors.Join(nodeErrs(rs)...)
	}
	return p
}

// NodeInfo is one node's own view of a lock (InspectNodes).
type NodeInfo struct {
	// Node names the node (its engine's String).
	Node string
	// Info is the node's answer to Inspect; Err its failure (the per-node
	// timeout, for a node that did not answer in time).
	Info engine.Info
	Err  error
}

// InspectNodes asks every node for its own view of the lock name, in
// parallel, each within the per-node timeout: one NodeInfo per node, in the
// order of the nodes given to New. It is for operators (distlock status
// shows it); a node's view decides nothing.
func (e *Engine) InspectNodes(ctx context.Context, name string) []NodeInfo {
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.Info, error) {
		return n.eng.Inspect(ctx, name)
	}, nil, nil)
	out := make([]NodeInfo, len(rs))
	for i, x := range rs {
		out[i] = NodeInfo{Node: e.nodes[i].name, Info: x.v, Err: x.err}
		var ne *NodeError
		if errors.As(x.err, &ne) {
			out[i].Err = ne.Err
		}
	}
	return out
}
