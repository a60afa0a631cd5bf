package quorum_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/internal/redistest"
)

// unproposed is a node that drops the token a quorum proposes (a node
// from before proposals): it mints from its own clock alone.
type unproposed struct{ countingRaises }

func (u unproposed) Acquire(ctx context.Context, r engine.AcquireRequest) (engine.Grant, error) {
	r.TokenProposal = 0
	return u.countingRaises.Acquire(ctx, r)
}

// TestProposedTokenSkipsPhaseTwo: on nodes with the time floor (the
// default), each of which would mint its own clock in µs, the token the
// quorum proposes makes phase 1's tokens agree, so phase 2 is skipped on
// most grants, and the tokens still strictly increase. The control, nodes
// that ignore the proposal, disagree on nearly every grant and run phase 2.
func TestProposedTokenSkipsPhaseTwo(t *testing.T) {
	const grants = 30
	for _, proposed := range []bool{true, false} {
		t.Run(map[bool]string{true: "proposed", false: "control: nodes ignore the proposal"}[proposed], func(t *testing.T) {
			srvs := redistest.StartN(t, 3)
			var raises atomic.Int64
			q := nodesQuorum(t, srvs, nil, func(_ int, e engine.Engine) engine.Engine {
				if proposed {
					return countingRaises{e, &raises}
				}
				return unproposed{countingRaises{e, &raises}}
			})
			var last uint64
			for i := range grants {
				tok := grantAndRelease(t, q, srvs, "proposal", fmt.Sprintf("o%d", i))
				if tok <= last {
					t.Fatalf("grant %d: token %d, not above %d", i, tok, last)
				}
				last = tok
			}
			// A raise is one node's phase-2 call: a grant that runs phase 2
			// sends it to each of the 3 nodes.
			phase2 := int(raises.Load()+2) / 3
			t.Logf("%d grants, %d raise calls (about %d grants ran phase 2)", grants, raises.Load(), phase2)
			switch {
			case proposed && phase2 > grants/2:
				t.Fatalf("%d of %d grants ran phase 2: the nodes did not mint the proposed token", phase2, grants)
			case !proposed && phase2 <= grants/2:
				t.Fatalf("control: only %d of %d grants ran phase 2 on nodes minting their own clocks: the test shows nothing", phase2, grants)
			}
		})
	}
}
