package distlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/distlock/distlock"
	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/memory"
	redisengine "github.com/distlock/distlock/engine/redis"
	"github.com/distlock/distlock/internal/redistest"
)

// strangerEngines runs fn on the embedded engine and on a real
// redis-server, each with two Clients (two processes) on engines of their
// own over one authority.
func strangerEngines(t *testing.T, fn func(t *testing.T, a, b *distlock.Client, eng func() engine.Engine)) {
	t.Run("memory", func(t *testing.T) {
		m := memory.New()
		a, b := distlock.New(m), distlock.New(m)
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		fn(t, a, b, func() engine.Engine { return m })
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		mk := func() engine.Engine {
			e, err := redisengine.New(srv.Client())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			return e
		}
		a, b := distlock.New(mk()), distlock.New(mk())
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		fn(t, a, b, mk)
	})
}

func strangerCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func isArgErr(err error) bool {
	var ae *distlock.ArgumentError
	return errors.As(err, &ae)
}

// wantTakenOver waits until l is lost as TakenOver.
func wantTakenOver(t *testing.T, l *distlock.Lease, who string) {
	t.Helper()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: Done not closed within 30s of the force-release", who)
	}
	var le *distlock.LostError
	if !errors.As(l.Err(), &le) || le.Cause != distlock.TakenOver {
		t.Fatalf("%s: Err %v, want a *LostError TakenOver", who, l.Err())
	}
}

// TestStrangerAdminProclaimAfterForceRelease: a leader force-released
// (the whole election, or its holder by owner) and then calling Proclaim
// before its next renewal is told what happened: taken over (a *LostError
// with cause TakenOver, as its renewal would say, and as the README
// promises every holder a force-release freed), not that its lease
// expired; its Done is closed, and its Proclaim writes nothing over the
// next leader's value. Before the fix the engines' SetMetadata answered
// "nobody holds it" (Missing) for a force-released owner, which the
// Client reports as Expired: it ignored the taken-over mark that Extend
// reads.
func TestStrangerAdminProclaimAfterForceRelease(t *testing.T) {
	strangerEngines(t, func(t *testing.T, a, b *distlock.Client, _ func() engine.Engine) {
		ctx := strangerCtx(t, 60*time.Second)
		for _, how := range []string{"ForceRelease", "ForceReleaseHolder"} {
			name := "proclaim-" + how
			// A long ttl: no renewal runs before the Proclaim.
			ld, err := a.Campaign(ctx, name, "first", distlock.WithTTL(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if how == "ForceRelease" {
				if ok, err := b.ForceRelease(ctx, name); err != nil || !ok {
					t.Fatalf("ForceRelease: %v, %v", ok, err)
				}
			} else if err := b.ForceReleaseHolder(ctx, name, ld.Lease().Owner()); err != nil {
				t.Fatalf("ForceReleaseHolder: %v", err)
			}
			err = ld.Proclaim(ctx, "after "+how)
			var le *distlock.LostError
			if !errors.As(err, &le) || le.Cause != distlock.TakenOver {
				t.Errorf("%s: Proclaim after it: %v; want a *LostError TakenOver", how, err)
			}
			wantTakenOver(t, ld.Lease(), how+": the leader")

			next, err := b.Campaign(ctx, name, "next")
			if err != nil {
				t.Fatal(err)
			}
			if next.Term() <= ld.Term() {
				t.Fatalf("%s: next term %d not above %d", how, next.Term(), ld.Term())
			}
			if err := ld.Proclaim(ctx, "stale"); err == nil {
				t.Fatalf("%s: the old leader's Proclaim succeeded under the next leader", how)
			}
			if l, err := a.Leader(ctx, name); err != nil || l.Value != "next" || l.Term != next.Term() {
				t.Fatalf("%s: Leader %+v, %v; want the next leader's value and term", how, l, err)
			}
			_ = next.Resign(ctx)
		}
	})
}
