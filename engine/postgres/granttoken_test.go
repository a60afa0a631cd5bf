package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// tokenKinds are the holds TestGrantTokenEveryKind and
// TestGrantTokenUpgrade take: a mutex, a semaphore's permit, an RW lock's
// reader and its writer.
var tokenKinds = []struct {
	name          string
	kind          engine.Kind
	limit, weight int
}{
	{"mutex", engine.Mutex, 0, 0},
	{"semaphore", engine.Semaphore, 2, 1},
	{"reader", engine.RWLock, engine.RWPermits, 1},
	{"writer", engine.RWLock, engine.RWPermits, engine.RWPermits},
}

// grantAgain acquires name for owner "o" with attempt, force-releases it
// and acquires it again: the freed grant's token, then the newer one's.
func grantAgain(t *testing.T, ctx context.Context, e *postgres.Engine, name string, kind engine.Kind, limit, weight int) (old, newer uint64) {
	t.Helper()
	acquire := func(attempt string) uint64 {
		t.Helper()
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: attempt, TTL: time.Minute,
			Kind: kind, Limit: limit, Weight: weight})
		if err != nil || !g.Acquired {
			t.Fatalf("acquire %s (%s): %+v, %v", name, attempt, g, err)
		}
		return g.Token
	}
	old = acquire("a1")
	if ok, err := e.ForceRelease(ctx, name); err != nil || !ok {
		t.Fatalf("force-release %s: %v, %v", name, ok, err)
	}
	newer = acquire("a2")
	if newer <= old {
		t.Fatalf("%s: the newer grant's token %d is not above %d", name, newer, old)
	}
	return old, newer
}

// TestGrantTokenEveryKind: renewals of freed grants of every kind, in one
// batch (extend and extend_shared in one statement), are answered
// HeldByOther with the newer grants' tokens and renew nothing, also
// beside the newer grants' renewals in one batch; their
// releases are answered NotOwner and drop nothing; the newer grants'
// tokens, and 0, renew them; a re-entry keeps the token, and a release
// naming it drops one hold.
func TestGrantTokenEveryKind(t *testing.T) {
	const schema = "granttoken"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	base := uniqueName(t)
	var stale, fresh, zero []engine.ExtendRequest
	newer := map[string]uint64{}
	for _, k := range tokenKinds {
		name := base + "/" + k.name
		o, n := grantAgain(t, ctx, e, name, k.kind, k.limit, k.weight)
		newer[name] = n
		r := engine.ExtendRequest{Name: name, Owner: "o", TTL: time.Second, Kind: k.kind, Token: o}
		stale = append(stale, r)
		r.TTL, r.Token = time.Minute, n
		fresh = append(fresh, r)
		r.Token = 0
		zero = append(zero, r)
	}
	rs, err := e.Extend(ctx, stale)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Err != nil || r.Status != engine.HeldByOther || r.Token != newer[stale[i].Name] {
			t.Errorf("%s: the freed grant's renewal: %+v; want HeldByOther with token %d", stale[i].Name, r, newer[stale[i].Name])
		}
	}
	// The freed grant's renewal beside the newer grant's, for the same
	// owner's hold in one batch (two leases sharing an owner): each is
	// answered for its own token.
	var mixed []engine.ExtendRequest
	for i := range stale {
		mixed = append(mixed, stale[i], fresh[i])
	}
	rs, err = e.Extend(ctx, mixed)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		want := engine.HeldByOther
		if i%2 == 1 {
			want = engine.Extended
		}
		if r.Err != nil || r.Status != want || r.Token != newer[mixed[i].Name] {
			t.Errorf("%s: renewal naming token %d beside the other's: %+v; want %v with token %d", mixed[i].Name, mixed[i].Token, r, want, newer[mixed[i].Name])
		}
	}
	for i, k := range tokenKinds {
		name := stale[i].Name
		rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: stale[i].Token})
		if err != nil || rr.Status != engine.NotOwner {
			t.Errorf("%s: the freed grant's release: %+v, %v; want NotOwner", name, rr, err)
		}
		info, err := e.Inspect(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if h := holderIn(info, "o"); h.Token != newer[name] || h.Count != 1 || h.TTL < 30*time.Second {
			t.Errorf("%s: after the freed grant's renewal and release: %+v; want the newer grant (token %d, 1 hold, about a minute)", name, h, newer[name])
		}
	}
	for _, batch := range [][]engine.ExtendRequest{fresh, zero} {
		rs, err := e.Extend(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			if r.Err != nil || r.Status != engine.Extended || r.Token != newer[batch[i].Name] {
				t.Errorf("%s: renewal naming token %d: %+v; want Extended with token %d", batch[i].Name, batch[i].Token, r, newer[batch[i].Name])
			}
		}
	}
	for i, k := range tokenKinds {
		name := stale[i].Name
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "a3", TTL: time.Minute,
			Kind: k.kind, Limit: k.limit, Weight: k.weight})
		if err != nil || !g.Acquired || g.Token != newer[name] || g.Count != 2 {
			t.Fatalf("%s: re-entry: %+v, %v; want the newer grant's token %d, 2 holds", name, g, err, newer[name])
		}
		rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: newer[name]})
		if err != nil || rr.Status != engine.Released || rr.Remaining != 1 {
			t.Errorf("%s: release of one hold naming the token: %+v, %v; want Released, 1 left", name, rr, err)
		}
		rr, err = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: newer[name]})
		if err != nil || rr.Status != engine.Released || rr.Remaining != 0 {
			t.Errorf("%s: release naming the newer grant's token: %+v, %v; want Released", name, rr, err)
		}
	}
}

// holderIn is owner's hold in info, of either kind (zero when none).
func holderIn(info engine.Info, owner string) engine.Holder {
	for _, h := range info.Holders {
		if h.Owner == owner {
			return h
		}
	}
	if info.Held && info.Owner == owner {
		return engine.Holder{Owner: owner, Count: info.Count, Token: info.Token, TTL: info.TTL}
	}
	return engine.Holder{}
}

// TestGrantTokenUpgrade: on a version 11 schema (testdata) the engine
// calls extend and release without the tokens, and a freed grant's
// renewal renews the owner's newer grant; Migrate brings it to version 12
// with holds of every kind across it, which their tokens then renew and
// release; version 11's signatures still answer (for processes of that
// version); and the engine, once its v11Recheck has passed, checks the
// tokens without a restart.
func TestGrantTokenUpgrade(t *testing.T) {
	const schema = "upgrade_v11"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v11.sql")
	e := newEngine(t, newPool(t), schema)
	base := uniqueName(t)

	flaw := base + "/flaw"
	old, _ := grantAgain(t, ctx, e, flaw, engine.Mutex, 0, 0)
	rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: flaw, Owner: "o", TTL: time.Minute, Token: old}})
	if err != nil || rs[0].Err != nil || rs[0].Status != engine.Extended {
		t.Fatalf("version 11: the freed grant's renewal: %+v, %v; want Extended (unchecked: the flaw version 12 mends)", rs, err)
	}
	if !e.V11() {
		t.Fatal("the engine on a version 11 schema does not call version 11's signatures")
	}

	tokens := map[string]uint64{}
	for _, k := range tokenKinds {
		name := base + "/" + k.name
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: "a", TTL: time.Minute,
			Kind: k.kind, Limit: k.limit, Weight: k.weight})
		if err != nil || !g.Acquired {
			t.Fatalf("%s on version 11: %+v, %v", name, g, err)
		}
		tokens[name] = g.Token
	}
	upgrade(t, ctx, pool, schema) // every kind held across it

	// Version 11's signatures, as a process of that version calls them.
	var status int
	if err := pool.QueryRow(ctx, `SELECT o_status FROM `+schema+`.extend(ARRAY[$1], ARRAY['o'], ARRAY[60000000::bigint], ARRAY[false])`,
		base+"/mutex").Scan(&status); err != nil || status != 1 {
		t.Fatalf("version 11's extend after the upgrade: %d, %v; want 1", status, err)
	}
	if err := pool.QueryRow(ctx, `SELECT o_status FROM `+schema+`.extend_shared(ARRAY[$1], ARRAY['o'], ARRAY[60000000::bigint], ARRAY[false])`,
		base+"/semaphore").Scan(&status); err != nil || status != 1 {
		t.Fatalf("version 11's extend_shared after the upgrade: %d, %v; want 1", status, err)
	}

	e.EndV11() // as v11Recheck's passing
	for _, k := range tokenKinds {
		name := base + "/" + k.name
		rs, err := e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "o", TTL: time.Minute, Kind: k.kind, Token: tokens[name]}})
		if err != nil || rs[0].Err != nil || rs[0].Status != engine.Extended || rs[0].Token != tokens[name] {
			t.Fatalf("%s, held across the upgrade: renewal naming its token: %+v, %v", name, rs, err)
		}
		if e.V11() {
			t.Fatalf("the engine calls version 11's signatures after the upgrade")
		}
		rr, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: tokens[name]})
		if err != nil || rr.Status != engine.Released {
			t.Fatalf("%s, held across the upgrade: release naming its token: %+v, %v", name, rr, err)
		}
		old, newer := grantAgain(t, ctx, e, name, k.kind, k.limit, k.weight)
		rs, err = e.Extend(ctx, []engine.ExtendRequest{{Name: name, Owner: "o", TTL: time.Second, Kind: k.kind, Token: old}})
		if err != nil || rs[0].Err != nil || rs[0].Status != engine.HeldByOther || rs[0].Token != newer {
			t.Fatalf("%s after the upgrade: the freed grant's renewal: %+v, %v; want HeldByOther with token %d", name, rs, err, newer)
		}
		rr, err = e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind, Token: old})
		if err != nil || rr.Status != engine.NotOwner {
			t.Fatalf("%s after the upgrade: the freed grant's release: %+v, %v; want NotOwner", name, rr, err)
		}
	}
	// Version 11's releases: the owner's hold, whatever its token.
	if err := pool.QueryRow(ctx, `SELECT o_status FROM `+schema+`.release($1, 'o', '')`, base+"/mutex").Scan(&status); err != nil || status != 1 {
		t.Fatalf("version 11's release after the upgrade: %d, %v; want 1", status, err)
	}
	if err := pool.QueryRow(ctx, `SELECT o_status FROM `+schema+`.release_shared($1, 'o')`, base+"/semaphore").Scan(&status); err != nil || status != 1 {
		t.Fatalf("version 11's release_shared after the upgrade: %d, %v; want 1", status, err)
	}
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
