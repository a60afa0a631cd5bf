package quorum

import (
	"context"
	"errors"
	"fmt"

	"github.com/distlock/distlock/engine"
)

var errNoSetMetadata = errors.New("engine cannot set metadata")

// SetMetadata implements engine.MetadataSetter: set when a majority of the
// nodes set it. A minority that missed it keeps the old value until the
// next grant; Inspect reports the value most holding nodes have.
func (e *Engine) SetMetadata(ctx context.Context, name, owner, metadata string) (engine.ExtendStatus, error) {
	for _, n := range e.nodes {
		if _, ok := n.eng.(engine.MetadataSetter); !ok {
			return 0, fmt.Errorf("%w: node %s cannot set metadata", errors.ErrUnsupported, n.name)
		}
	}
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.ExtendStatus, error) {
		ms, ok := n.eng.(engine.MetadataSetter)
		if !ok {
			return 0, errNoSetMetadata
		}
		return ms.SetMetadata(ctx, name, owner, metadata)
	}, nil, nil)
	set, other, failed := 0, 0, 0
	for _, x := range rs {
		switch {
		case x.err != nil:
			failed++
		case x.v == engine.Extended:
			set++
		case x.v == engine.HeldByOther:
			other++
		}
	}
	switch {
	case set >= e.majority:
		return engine.Extended, nil
	case failed > len(e.nodes)-e.majority:
		return 0, &NoQuorumError{Op: "set-metadata", OK: set, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	case other > 0:
		return engine.HeldByOther, nil
	}
	return engine.Missing, nil
}

// commonMetadata returns the metadata most of the given values agree on.
func commonMetadata(values map[string]int) string {
	best, n := "", -1
	for v, c := range values {
		if c > n || c == n && v < best {
			best, n = v, c
		}
	}
	return best
}

// announce signals a campaign's grant again once it is decided: the nodes
// announced their own grants (AcquireRequest.Announce) before phase 2 had
// settled the term, so an observer may have read a minority's token. The
// metadata, set again, is published by every node that holds the lock
// (best effort: an observer also re-reads at the leader's expiry).
func (e *Engine) announce(ctx context.Context, r engine.AcquireRequest) {
	each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.ExtendStatus, error) {
		if ms, ok := n.eng.(engine.MetadataSetter); ok {
			return ms.SetMetadata(ctx, r.Name, r.Owner, r.Metadata)
		}
		return 0, nil
	}, nil, nil)
}
