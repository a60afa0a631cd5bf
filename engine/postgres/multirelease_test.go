package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/enginetest"
	"github.com/distlock/distlock/engine/postgres"
)

// setReleases are the requests of a set's release of names by owner, as a
// LeaseSet sends them without tokens (0: the owner's hold, whatever its
// token).
func setReleases(owner string, names ...string) []engine.ReleaseRequest {
	rs := make([]engine.ReleaseRequest, len(names))
	for i, n := range names {
		rs[i] = engine.ReleaseRequest{Name: n, Owner: owner}
	}
	return rs
}

// setNewerGrantKept takes the set {a, b} with a one-off owner,
// force-releases a, grants a again to the same owner (a newer token), and
// releases the set with the set's tokens: a must be answered NotOwner and
// stay held by the newer grant (its token), b released. It returns a's
// newer token; a is left held by it.
func setNewerGrantKept(t *testing.T, ctx context.Context, e *postgres.Engine, a, b string) uint64 {
	t.Helper()
	const owner = "set-owner"
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests(owner, time.Minute, a, b))
	if err != nil || !mg.Acquired {
		t.Fatalf("AcquireMulti {%s, %s}: %+v, %v", a, b, mg, err)
	}
	if ok, err := e.ForceRelease(ctx, a); err != nil || !ok {
		t.Fatalf("force-release %s: %v, %v", a, ok, err)
	}
	g, err := e.Acquire(ctx, engine.AcquireRequest{Name: a, Owner: owner, Attempt: owner, OneOff: true, TTL: time.Minute})
	if err != nil || !g.Acquired || g.Token <= mg.Tokens[0] {
		t.Fatalf("acquire %s again by %s: %+v, %v; want granted above the set's token %d", a, owner, g, err, mg.Tokens[0])
	}
	rs := setReleases(owner, a, b)
	rs[0].Token, rs[1].Token = mg.Tokens[0], mg.Tokens[1]
	res, err := e.ReleaseMulti(ctx, rs)
	if err != nil || len(res) != 2 {
		t.Fatalf("ReleaseMulti with the set's tokens %v: %+v, %v", mg.Tokens, res, err)
	}
	if res[0].Status != engine.NotOwner {
		t.Errorf("the set's release of %s (token %d, the owner's newer grant %d): %+v; want NotOwner", a, mg.Tokens[0], g.Token, res[0])
	}
	if res[1].Status != engine.Released {
		t.Errorf("the set's release of %s: %+v; want Released", b, res[1])
	}
	if info, err := e.Inspect(ctx, a); err != nil || !info.Held || info.Owner != owner || info.Token != g.Token {
		t.Errorf("%s after the set's release: %+v, %v; want held by %s's newer grant, token %d", a, info, err, owner, g.Token)
	}
	if info, err := e.Inspect(ctx, b); err != nil || info.Held {
		t.Errorf("%s after the set's release: %+v, %v; want free", b, info, err)
	}
	return g.Token
}

// releaseSet releases rs with one ReleaseMulti and checks every answer is
// want.
func releaseSet(t *testing.T, ctx context.Context, e *postgres.Engine, rs []engine.ReleaseRequest, want engine.ReleaseStatus) {
	t.Helper()
	res, err := e.ReleaseMulti(ctx, rs)
	if err != nil || len(res) != len(rs) {
		t.Fatalf("ReleaseMulti %+v: %+v, %v", rs, res, err)
	}
	for i, r := range res {
		if r.Status != want {
			t.Errorf("ReleaseMulti %+v: [%d] %+v; want %v", rs, i, r, want)
		}
	}
}

// TestReleaseMultiNewerGrant: a set's release names each grant's token
// (release_multi's p_tokens, version 19), so it does not drop the newer
// grant its owner was given after a force-release of one name (NotOwner,
// the newer grant held with its token), and releases the other names; the
// newer grant's token, or none, releases it. The function refuses arrays
// of different lengths and a NULL token (22023), releasing nothing, and
// version 18's signature still releases, unchecked, for processes of that
// version.
func TestReleaseMultiNewerGrant(t *testing.T) {
	ctx, pool, e, p := setup(t, "multi")
	a, b := p+"a", p+"b"
	newer := setNewerGrantKept(t, ctx, e, a, b)
	if e.V18() {
		t.Fatal("the engine releases sets one call each on a current schema")
	}

	schema := e.Schema()
	for _, bad := range []struct {
		what   string
		owners []string
		tokens []int64
	}{
		{"one owner for two names", []string{"set-owner"}, []int64{0, 0}},
		{"one token for two names", []string{"set-owner", "set-owner"}, []int64{0}},
		{"a NULL token", []string{"set-owner", "set-owner"}, nil},
	} {
		args := []any{[]string{a, b}, bad.owners, bad.tokens}
		if bad.tokens == nil {
			args[2] = []*int64{nil, nil}
		}
		_, err := pool.Exec(ctx, `SELECT * FROM `+schema+`.release_multi($1, $2, $3)`, args...)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "22023" {
			t.Errorf("release_multi with %s: %v; want SQLSTATE 22023", bad.what, err)
		}
	}
	if info, err := e.Inspect(ctx, a); err != nil || !info.Held || info.Token != newer {
		t.Errorf("%s after refused calls: %+v, %v; want held, token %d", a, info, err, newer)
	}

	rs := setReleases("set-owner", a)
	rs[0].Token = newer
	releaseSet(t, ctx, e, rs, engine.Released)
	assertUntouched(t, ctx, e, pool, a, b)

	// No token: the owner's hold, whatever its token.
	mg, err := e.AcquireMulti(ctx, enginetest.SetRequests("set-owner", time.Minute, a, b))
	if err != nil || !mg.Acquired {
		t.Fatalf("AcquireMulti again: %+v, %v", mg, err)
	}
	releaseSet(t, ctx, e, setReleases("set-owner", a, b), engine.Released)
	assertUntouched(t, ctx, e, pool, a, b)

	// Version 18's signature, as a process of that version calls it.
	if mg, err = e.AcquireMulti(ctx, enginetest.SetRequests("set-owner", time.Minute, a, b)); err != nil || !mg.Acquired {
		t.Fatalf("AcquireMulti again: %+v, %v", mg, err)
	}
	releaseV18(t, ctx, pool, schema, a, b)
	assertUntouched(t, ctx, e, pool, a, b)
}

// releaseV18 releases names of "set-owner" with version 18's
// release_multi (no tokens) and checks each is answered released.
func releaseV18(t *testing.T, ctx context.Context, pool *pgxpool.Pool, schema string, names ...string) {
	t.Helper()
	owners := make([]string, len(names))
	for i := range owners {
		owners[i] = "set-owner"
	}
	rows, err := pool.Query(ctx, `SELECT o_status FROM `+schema+`.release_multi($1, $2)`, names, owners)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var status int32
		if err := rows.Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status != 1 {
			t.Errorf("version 18's release_multi: status %d; want 1 (released)", status)
		}
		n++
	}
	if err := rows.Err(); err != nil || n != len(names) {
		t.Fatalf("version 18's release_multi: %d answers, %v; want %d", n, err, len(names))
	}
}

// TestReleaseMultiTokenUpgrade: on a version 18 schema (testdata), whose
// release_multi takes no tokens, the engine releases a set's names one
// call each with their tokens, and keeps the newer grant of a
// force-released name's owner too; Migrate brings it to the current
// version with that newer grant held across it; the engine, once its
// v18Recheck has passed, calls version 19's release_multi with the tokens
// (the same answers), and version 18's signature still answers for
// processes of that version.
func TestReleaseMultiTokenUpgrade(t *testing.T) {
	const schema = "upgrade_v18"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v18.sql")
	e := newEngine(t, newPool(t), schema)
	p := uniqueName(t) + "/"

	setNewerGrantKept(t, ctx, e, p+"a", p+"b")
	if !e.V18() {
		t.Fatal("the engine on a version 18 schema does not release sets one call each")
	}

	upgrade(t, ctx, pool, schema) // a's newer grant held across it

	e.EndV18() // as v18Recheck's passing
	releaseSet(t, ctx, e, setReleases("set-owner", p+"a"), engine.Released)
	setNewerGrantKept(t, ctx, e, p+"c", p+"d")
	if e.V18() {
		t.Fatal("the engine releases sets one call each after the upgrade")
	}
	releaseV18(t, ctx, pool, schema, p+"c")
	assertUntouched(t, ctx, e, pool, p+"a", p+"b", p+"c", p+"d")
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
