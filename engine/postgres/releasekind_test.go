package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
	"github.com/distlock/distlock/engine/postgres/pgfence"
)

// sharedHolds are the shared holds TestReleaseSharedOtherKind takes, and
// the other shared kind each is released as.
var sharedHolds = []struct {
	name          string
	kind, other   engine.Kind
	limit, weight int
}{
	{"permit", engine.Semaphore, engine.RWLock, 2, 1},
	{"reader", engine.RWLock, engine.Semaphore, engine.RWPermits, 1},
	{"writer", engine.RWLock, engine.Semaphore, engine.RWPermits, engine.RWPermits},
}

// wantKindRefusal checks that err is the *engine.ArgumentError an acquire
// of kind asked on name, a lock of kind is, gets from the engine.
func wantKindRefusal(t *testing.T, ctx context.Context, e *postgres.Engine, what string, err error, name string, is, asked engine.Kind) {
	t.Helper()
	limit := 1
	if asked == engine.RWLock {
		limit = engine.RWPermits
	}
	_, acqErr := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "someone else", Attempt: "x", TTL: time.Minute,
		Kind: asked, Limit: limit, Weight: 1})
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) || acqErr == nil || err.Error() != acqErr.Error() || err.Error() != engine.KindError(name, is, asked).Error() {
		t.Fatalf("%s: %v; want %v, as the acquire of a %v (%v)", what, err, engine.KindError(name, is, asked), asked, acqErr)
	}
}

// TestReleaseSharedOtherKind: a release of a shared lock asked as the
// other shared kind (a semaphore's permit as an RW lock's, a reader or a
// writer as a semaphore's) while the owner holds it is refused with the
// error an acquire of that kind gets, and changes nothing: the holds,
// token and expiry stay, and the release of the right kind then drops
// them. Another owner's such release, holding nothing, is answered not
// held. (Schema version 13 released the hold whatever kind was asked.)
func TestReleaseSharedOtherKind(t *testing.T) {
	const schema = "releasekind"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	base := uniqueName(t)
	for _, k := range sharedHolds {
		name := base + "/" + k.name
		var token uint64
		for _, attempt := range []string{"a1", "a2"} {
			g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: attempt, TTL: time.Minute,
				Kind: k.kind, Limit: k.limit, Weight: k.weight})
			if err != nil || !g.Acquired {
				t.Fatalf("%s (%s): %+v, %v", name, attempt, g, err)
			}
			token = g.Token
		}
		for _, tok := range []uint64{0, token} {
			rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.other, Token: tok})
			if rr != (engine.ReleaseResult{}) {
				t.Errorf("%s released as a %v (token %d): %+v; want no result", name, k.other, tok, rr)
			}
			wantKindRefusal(t, ctx, e, name+" released as a "+k.other.String(), err, name, k.kind, k.other)
		}
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if h := holderIn(info, "o"); h.Token != token || h.Count != 2 || h.TTL < 30*time.Second || len(info.Holders) != 1 {
			t.Fatalf("%s after the releases of the other kind: %+v; want the hold unchanged (token %d, 2 holds, about a minute)", name, info, token)
		}
		rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "nobody", Kind: k.other})
		if err != nil || rr.Status != engine.NotHeld {
			t.Errorf("%s released as a %v by an owner holding nothing: %+v, %v; want NotHeld", name, k.other, rr, err)
		}
		for left := 1; left >= 0; left-- {
			rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: token})
			if err != nil || rr.Status != engine.Released || rr.Remaining != left {
				t.Fatalf("%s released as a %v: %+v, %v; want Released, %d left", name, k.kind, rr, err, left)
			}
		}
	}
}

// TestFenceReleaseKindUpgrade: on a version 13 schema (testdata) a
// semaphore's permit released as an RW lock's is dropped, and pgfence's
// HighestSeen accepts a deposed writer's token while a newer writer holds
// the name; Migrate brings it to version 14 with a permit and the newer
// writer held across it, and then the same check is refused (the shared
// lock's high-water counts), the engine (once its v13Recheck has passed)
// refuses the permit's release as an RW lock's, and version 13's
// release_shared still answers for processes of that version.
func TestFenceReleaseKindUpgrade(t *testing.T) {
	const schema = "upgrade_v13"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v13.sql")
	e := newEngine(t, newPool(t), schema)
	base := uniqueName(t)
	permit := func(name, owner string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: owner, Attempt: owner, TTL: time.Minute,
			Kind: engine.Semaphore, Limit: 2, Weight: 1})
		if err != nil || !g.Acquired {
			t.Fatalf("%s: %+v, %v", name, g, err)
		}
		return g.Token
	}

	flaw := base + "/flaw"
	permit(flaw, "o")
	rr, err := e.Release(ctx, engine.ReleaseRequest{Name: flaw, Owner: "o", Kind: engine.RWLock})
	if err != nil || rr.Status != engine.Released {
		t.Fatalf("version 13: a permit released as an RW lock's: %+v, %v; want Released (unchecked: the flaw version 14 mends)", rr, err)
	}
	if !e.V13() {
		t.Fatal("the engine on a version 13 schema does not call version 13's release_shared")
	}

	writers := base + "/writers"
	writer := func(owner string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: writers, Owner: owner, Attempt: owner, TTL: time.Minute,
			Kind: engine.RWLock, Limit: engine.RWPermits, Weight: engine.RWPermits})
		if err != nil || !g.Acquired {
			t.Fatalf("writer %s: %+v, %v", owner, g, err)
		}
		return g.Token
	}
	old := writer("w1")
	if ok, err := e.ForceRelease(ctx, writers); err != nil || !ok {
		t.Fatalf("force-release: %v, %v", ok, err)
	}
	newer := writer("w2")
	if err := highestSeen(ctx, pool, schema, writers, old, "w1"); err != nil {
		t.Fatalf("version 13: the deposed writer's check: %v; want accepted (the flaw version 14 mends)", err)
	}

	held := base + "/held"
	token := permit(held, "o")
	upgrade(t, ctx, pool, schema) // the permit and the newer writer held across it

	if err := highestSeen(ctx, pool, schema, writers, old, "w1"); !errors.Is(err, pgfence.ErrStale) {
		t.Fatalf("after the upgrade: the deposed writer's check: %v; want ErrStale", err)
	}
	if err := highestSeen(ctx, pool, schema, writers, newer, "w2"); err != nil {
		t.Fatalf("after the upgrade: the newer writer's check: %v", err)
	}

	e.EndV13() // as v13Recheck's passing
	_, err = e.Release(ctx, engine.ReleaseRequest{Name: held, Owner: "o", Kind: engine.RWLock, Token: token})
	wantKindRefusal(t, ctx, e, "after the upgrade: the permit held across it released as an RW lock's", err, held, engine.Semaphore, engine.RWLock)
	if e.V13() {
		t.Fatal("the engine calls version 13's release_shared after the upgrade")
	}
	// Version 13's release_shared, as a process of that version calls it:
	// the owner's hold, whatever the kind.
	var status, remaining int
	if err := pool.QueryRow(ctx, `SELECT * FROM `+schema+`.release_shared($1, 'o', $2::bigint)`, held, int64(token)).Scan(&status, &remaining); err != nil || status != 1 {
		t.Fatalf("version 13's release_shared after the upgrade: %d, %v; want 1", status, err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}

// highestSeen runs pgfence's HighestSeen check of schema in a transaction
// of its own, committed when it passes.
func highestSeen(ctx context.Context, pool *pgxpool.Pool, schema, name string, token uint64, holder string) error {
	g := pgfence.New(schema, pgfence.HighestSeen)
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return g.Check(ctx, tx, name, token, holder) })
}
