package enginetest

import (
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
)

// grantTokenChecked: a renewal and a release that name a freed grant's
// token (engine.ExtendRequest.Token, engine.ReleaseRequest.Token) change
// nothing when the same owner holds the lock again under a newer grant: a
// lease force-released while the owner (a shared WithOwner) was granted
// the lock anew must neither set the new grant's ttl nor drop its hold.
// Naming the new grant's token, or none, renews and releases it; a batch
// with both renewals answers each by its own token. For a mutex, a
// semaphore's holder and an RW lock's reader.
func (s *suite) grantTokenChecked(t *testing.T) {
	if s.h.UncheckedTokens {
		t.Skip("the engine does not check grant tokens (Harness.UncheckedTokens)")
	}
	for _, k := range []struct {
		name  string
		kind  engine.Kind
		limit int
	}{{"mutex", engine.Mutex, 0}, {"semaphore", engine.Semaphore, 2}, {"rwlock-reader", engine.RWLock, engine.RWPermits}} {
		t.Run(k.name, func(t *testing.T) {
			e := s.h.New(t)
			fr, ok := e.(engine.ForceReleaser)
			if !ok {
				t.Skip("the engine cannot force-release (engine.ForceReleaser)")
			}
			ctx := ctxTimeout(t, 60*time.Second)
			name := lockName(t)
			acquire := func(attempt string) engine.Grant {
				t.Helper()
				r := engine.AcquireRequest{Name: name, Owner: "owner", Attempt: attempt, TTL: directTTL, Kind: k.kind}
				if k.kind != engine.Mutex {
					r.Limit, r.Weight = k.limit, 1
				}
				g, err := e.Acquire(ctx, r)
				if err != nil || !g.Acquired || g.Token == 0 {
					t.Fatalf("acquire (attempt %s): %+v, %v", attempt, g, err)
				}
				return g
			}
			old := acquire("a1")
			if freed, err := fr.ForceRelease(ctx, name); err != nil || !freed {
				t.Fatalf("force-release: %v, %v", freed, err)
			}
			newer := acquire("a2")
			if newer.Token <= old.Token {
				t.Fatalf("the grant after the force-release has token %d, not above %d", newer.Token, old.Token)
			}

			// One batch, as a Client's watchdog sends the renewals of both
			// leases of the owner: each is answered by its own token.
			rs, err := e.Extend(ctx, []engine.ExtendRequest{
				{Name: name, Owner: "owner", TTL: time.Second, Kind: k.kind, Token: old.Token},
				{Name: name, Owner: "owner", TTL: directTTL, Kind: k.kind, Token: newer.Token},
			})
			if err != nil || len(rs) != 2 || rs[0].Err != nil || rs[1].Err != nil {
				t.Fatalf("renewals naming the freed and the newer grant's tokens: %+v, %v", rs, err)
			}
			if rs[0].Status == engine.Extended {
				t.Fatalf("renewal naming the freed grant's token %d extended the newer grant (token %d): %+v", old.Token, newer.Token, rs[0])
			}
			if rs[1].Status != engine.Extended || rs[1].Token != newer.Token {
				t.Fatalf("renewal naming the newer grant's token %d beside the freed grant's: %+v; want extended", newer.Token, rs[1])
			}
			rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "owner", Kind: k.kind, Token: old.Token})
			if err != nil {
				t.Fatalf("release naming the freed grant's token: %v", err)
			}
			if rr.Status == engine.Released {
				t.Fatalf("release naming the freed grant's token %d dropped the newer grant's hold (token %d): %+v", old.Token, newer.Token, rr)
			}
			h, ok := holderOf(t, settled(t, ctx, e, name), "owner")
			if !ok || h.Token != newer.Token {
				t.Fatalf("after the freed grant's renewal and release: holder %+v (%v), want the newer grant's token %d", h, ok, newer.Token)
			}
			if h.TTL != 0 && h.TTL < directTTL/2 {
				t.Fatalf("the freed grant's renewal (1s) set the newer grant's ttl: %v left of %v", h.TTL, directTTL)
			}

			rs, err = e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "owner", TTL: directTTL, Kind: k.kind, Token: newer.Token}})
			if err != nil || len(rs) != 1 || rs[0].Err != nil || rs[0].Status != engine.Extended || rs[0].Token != newer.Token {
				t.Fatalf("renewal naming the newer grant's token: %+v, %v; want extended with token %d", rs, err, newer.Token)
			}
			rr, err = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "owner", Kind: k.kind, Token: newer.Token})
			if err != nil || rr.Status != engine.Released || rr.Remaining != 0 {
				t.Fatalf("release naming the newer grant's token: %+v, %v; want released", rr, err)
			}
		})
	}
}

// holderOf returns owner's hold in info: a mutex's holder, or one of a
// shared lock's holders.
func holderOf(t *testing.T, info engine.Info, owner string) (engine.Holder, bool) {
	t.Helper()
	for _, h := range info.Holders {
		if h.Owner == owner {
			return h, true
		}
	}
	if info.Held && info.Owner == owner {
		return engine.Holder{Owner: owner, Count: info.Count, Token: info.Token, TTL: info.TTL}, true
	}
	return engine.Holder{}, false
}
