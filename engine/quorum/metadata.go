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
//
// r.Token is not checked: it is stripped before the nodes are asked, as a
// renewal's is (untokened), for the nodes keep tokens of their own, which
// the quorum's token (the settled term) need not be. So a deposed leader
// whose owner was elected again (a force-release, then a campaign of the
// same WithOwner) sets the new leader's value here: the quorum checks the
// owner only (Harness.UncheckedTokens in the conformance suite).
func (e *Engine) SetMetadata(ctx context.Context, r engine.MetadataRequest) (engine.ExtendStatus, error) {
	r.Token = 0 // the nodes keep tokens of their own (untokened)
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
		return ms.SetMetadata(ctx, r)
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

// settlesValues reports whether a campaign's value can wait for its term
// to settle: phase 2 is on and every node can set metadata in place.
func (e *Engine) settlesValues() bool {
	if e.noFencing {
		return false
	}
	for _, n := range e.nodes {
		if _, ok := n.eng.(engine.MetadataSetter); !ok {
			return false
		}
	}
	return true
}

// valueTiming is when a campaign's value (the metadata of an
// AcquireRequest with Announce) reaches the nodes.
type valueTiming uint8

const (
	// valueWithGrant: phase 1 granted with the value.
	valueWithGrant valueTiming = iota
	// valueWithTerm: phase 1 granted without the value, which announce
	// sets with the settled term (settlesValues).
	valueWithTerm
)

// announce signals a campaign's grant once phase 2 has settled its term:
// the nodes announced their own grants (AcquireRequest.Announce) with the
// token each minted. With valueWithTerm, announce sets the value now, on
// each node only after raising that node to token: a node has the value
// only with the settled term, so observers (Inspect reports the value of
// the nodes with the settled token) see no leader until then, never a
// minority's token. It fails with a *NoQuorumError when the value reached
// fewer than a majority. With valueWithGrant, the metadata is set again
// (best effort) so that every holding node publishes (an observer also
// re-reads at the leader's expiry).
func (e *Engine) announce(ctx context.Context, r engine.AcquireRequest, value string, token uint64, timing valueTiming) error {
	rs := each(ctx, e, e.timeout(0), func(ctx context.Context, n node) (engine.ExtendStatus, error) {
		ms, ok := n.eng.(engine.MetadataSetter)
		if !ok {
			return 0, nil
		}
		if timing == valueWithTerm {
			ok, err := raiseFence(ctx, n.eng, engine.RaiseRequest{Name: r.Name, Owner: r.Owner, Token: token})
			var ae *engine.ArgumentError
			if errors.As(err, &ae) {
				// A late grant there kept a token of its own above the
				// term (a raise never lowers one): no value there.
				return engine.Missing, nil
			}
			if err != nil || !ok {
				return engine.Missing, err
			}
		}
		return ms.SetMetadata(ctx, engine.MetadataRequest{Name: r.Name, Owner: r.Owner, Metadata: value})
	}, nil, nil)
	if timing == valueWithGrant {
		return nil
	}
	set := 0
	for _, x := range rs {
		if x.err == nil && x.v == engine.Extended {
			set++
		}
	}
	if set < e.majority {
		return &NoQuorumError{Op: "announce", OK: set, Majority: e.majority, Nodes: len(e.nodes), Errs: nodeErrs(rs)}
	}
	return nil
}
