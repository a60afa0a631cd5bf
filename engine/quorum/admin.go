package quorum

import (
	"context"
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
// the locks held by one owner on a majority, in one page (next is always
// ""). Nodes that cannot list are counted as failed; a majority must list.
func (e *Engine) List(ctx context.Context, prefix, _ string, _ int) ([]engine.Info, string, error) {
	rs := each(ctx, e, time.Minute, func(ctx context.Context, n node) ([]engine.Info, error) {
		l, ok := n.eng.(engine.Lister)
		if !ok {
			return nil, errNoList
		}
		var all []engine.Info
		cursor := ""
		for {
			infos, next, err := l.List(ctx, prefix, cursor, listPage)
			if err != nil {
				return nil, err
			}
			all = append(all, infos...)
			if next == "" {
				return all, nil
			}
			cursor = next
		}
	}, nil, nil)
	if errs := nodeErrs(rs); len(e.nodes)-len(errs) < e.majority {
		return nil, "", &NoQuorumError{Op: "list", OK: len(e.nodes) - len(errs), Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	type vote struct {
		info   engine.Info
		votes  int
		tokens map[uint64]int            // token -> nodes
		held   map[string]map[uint64]int // a shared lock's holder -> token -> nodes
	}
	byHolder := map[[2]string]*vote{}
	for _, x := range rs {
		seen := map[string]bool{} // a node may list a name twice (SCAN)
		for _, info := range x.v {
			if seen[info.Name] || !info.Held {
				continue
			}
			seen[info.Name] = true
			k := [2]string{info.Name, info.Owner}
			v := byHolder[k]
			if v == nil {
				v = &vote{info: info, tokens: map[uint64]int{}, held: map[string]map[uint64]int{}}
				byHolder[k] = v
			}
			for _, h := range info.Holders {
				if v.held[h.Owner] == nil {
					v.held[h.Owner] = map[uint64]int{}
				}
				v.held[h.Owner][h.Token]++
			}
			v.votes++
			v.info.HighWater = max(v.info.HighWater, info.HighWater)
			v.tokens[info.Token]++
			v.info.TTL = min(v.info.TTL, info.TTL)
		}
	}
	var out []engine.Info
	for _, v := range byHolder {
		if v.votes >= e.majority {
			v.info.Token = e.token(v.tokens) // the settled one, as Inspect's
			holders := make([]engine.Holder, len(v.info.Holders))
			copy(holders, v.info.Holders)
			for i := range holders {
				holders[i].Token = e.token(v.held[holders[i].Owner]) // each holder's too
			}
			v.info.Holders = holders
			out = append(out, v.info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, "", nil
}

// Leaks implements engine.LeakFinder: every node's leaks, each Key prefixed
// with the node's name, in one page.
func (e *Engine) Leaks(ctx context.Context, prefix string, maxTTL time.Duration, _ string, _ int) ([]engine.Leak, string, error) {
	rs := each(ctx, e, time.Minute, func(ctx context.Context, n node) ([]engine.Leak, error) {
		f, ok := n.eng.(engine.LeakFinder)
		if !ok {
			return nil, errNoList
		}
		var all []engine.Leak
		cursor := ""
		for {
			leaks, next, err := f.Leaks(ctx, prefix, maxTTL, cursor, listPage)
			if err != nil {
				return nil, err
			}
			for _, l := range leaks {
				l.Key = fmt.Sprintf("%s %s", n.name, l.Key)
				all = append(all, l)
			}
			if next == "" {
				return all, nil
			}
			cursor = next
		}
	}, nil, nil)
	var out []engine.Leak
	for _, x := range rs {
		out = append(out, x.v...)
	}
	if errs := nodeErrs(rs); len(errs) > 0 {
		return out, "", &NoQuorumError{Op: "leaks", OK: len(e.nodes) - len(errs), Majority: e.majority, Nodes: len(e.nodes), Errs: errs}
	}
	return out, "", nil
}
