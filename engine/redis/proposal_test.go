package redis_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// TestTokenProposal: a proposed token (AcquireRequest.TokenProposal) is
// minted when it is above the high-water and the server clock by at most
// engine.MaxProposalLead, for a mutex and a semaphore alike; one further
// ahead, or behind the high-water, changes nothing but what the time floor
// mints; and WithoutTimeFloor ignores it.
func TestTokenProposal(t *testing.T) {
	srv := redistest.Start(t)
	ctx := listCtx(t)
	clock := func() uint64 {
		t.Helper()
		now, err := srv.Client().Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return uint64(now.UnixMicro())
	}
	kinds := map[string]func(name, owner string, proposal uint64) engine.AcquireRequest{
		"mutex": func(name, owner string, proposal uint64) engine.AcquireRequest {
			return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute, TokenProposal: proposal}
		},
		"semaphore": func(name, owner string, proposal uint64) engine.AcquireRequest {
			return engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute, TokenProposal: proposal,
				Kind: engine.Semaphore, Limit: 1, Weight: 1}
		},
	}
	for kind, req := range kinds {
		t.Run(kind, func(t *testing.T) {
			for i, c := range []struct {
				what   string
				opts   []redisengine.Option
				ahead  uint64 // the proposal, ahead of the clock read before the call
				hwNext bool   // the high-water set ahead of the proposal first
				minted bool   // the proposal is the token
			}{
				// Leads with 200ms or more to spare either way: the script
				// reads the clock after the test did, by a scheduling delay.
				{what: "first grant, within the lead", ahead: 500_000, minted: true},
				{what: "within the lead", ahead: 500_000, minted: true},
				{what: "at the lead", ahead: engine.MaxProposalLead, minted: true},
				{what: "beyond the lead", ahead: engine.MaxProposalLead + 200_000},
				{what: "behind the high-water", ahead: 500_000, hwNext: true},
				{what: "without the time floor", ahead: 500_000, opts: []redisengine.Option{redisengine.WithoutTimeFloor()}},
			} {
				e := listEngine(t, srv.Client(), c.opts...)
				name := kind + "-proposal-" + strconv.Itoa(i)
				if i > 0 { // a high-water below the clock (an earlier grant)
					if _, err := e.Acquire(ctx, req(name, "seed", 0)); err != nil {
						t.Fatal(err)
					}
					if _, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "seed", Kind: req(name, "", 0).Kind}); err != nil {
						t.Fatal(err)
					}
				}
				before := clock()
				proposal := before + c.ahead
				if c.hwNext {
					if err := srv.Client().Set(ctx, redisengine.DefaultPrefix+"{"+name+"}:fence", proposal+100, time.Hour).Err(); err != nil {
						t.Fatal(err)
					}
				}
				g, err := e.Acquire(ctx, req(name, "o", proposal))
				if err != nil || !g.Acquired {
					t.Fatalf("%s: %+v, %v", c.what, g, err)
				}
				after := clock()
				switch {
				case c.minted && g.Token != proposal:
					t.Errorf("%s: token %d, want the proposal %d", c.what, g.Token, proposal)
				case c.hwNext && g.Token != proposal+101:
					t.Errorf("%s: token %d, want the high-water + 1, %d", c.what, g.Token, proposal+101)
				case !c.minted && !c.hwNext && (g.Token == proposal || g.Token > after+1_000_000):
					t.Errorf("%s: token %d, proposal %d, clock %d: the proposal was taken", c.what, g.Token, proposal, after)
				}
			}
		})
	}
}
