package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestReleaseWithoutIDKeepsLastID: a release without an id (an older
// client's, a server's for a request without release_id) between a
// release with an id and a late copy of it does not clear the id the hold
// recorded: the copy still drops nothing, for a mutex and a shared holder.
func TestReleaseWithoutIDKeepsLastID(t *testing.T) {
	const schema = "keeps_id"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := newEngine(t, newPool(t), schema)
	for _, k := range []struct {
		kind          engine.Kind
		limit, weight int
	}{{engine.Mutex, 0, 0}, {engine.RWLock, engine.RWPermits, 1}} {
		name := threeHolds(t, ctx, e, k.kind, k.limit, k.weight)
		r := engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind}
		want := func(what string, res engine.ReleaseResult, err error, remaining int) {
			t.Helper()
			if err != nil || res.Status != engine.Released || res.Remaining != remaining {
				t.Fatalf("%s: %s: %+v, %v; want released with %d left", k.kind, what, res, err, remaining)
			}
		}
		res, err := e.ReleaseOnce(ctx, r, "r1")
		want("r1", res, err, 2)
		res, err = e.Release(ctx, r)
		want("a release without an id", res, err, 1)
		res, err = e.ReleaseOnce(ctx, r, "r1")
		want("a late copy of r1", res, err, 1)
	}
}

// TestReleaseIDOfVersion20Kept: the one release id a version 20 schema
// recorded (release_id) still marks its release applied after the
// upgrade, and the next count-down keeps it among the hold's ids
// (release_ids), for a mutex and a shared holder.
func TestReleaseIDOfVersion20Kept(t *testing.T) {
	const schema = "v20_id"
	migrated(t, schema)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	e := newEngine(t, pool, schema)
	for _, k := range []struct {
		kind          engine.Kind
		limit, weight int
		table         string
	}{{engine.Mutex, 0, 0, "locks"}, {engine.RWLock, engine.RWPermits, 1, "shared_holders"}} {
		name := threeHolds(t, ctx, e, k.kind, k.limit, k.weight)
		// The hold as version 20 left it: one id, no list.
		if _, err := pool.Exec(ctx, `UPDATE `+schema+`.`+k.table+` SET release_id = 'old', release_ids = NULL WHERE name = $1`, name); err != nil {
			t.Fatal(err)
		}
		r := engine.ReleaseRequest{Name: name, Owner: "o", Kind: k.kind}
		for _, step := range []struct {
			id        string
			remaining int
		}{{"old", 3}, {"n1", 2}, {"old", 2}, {"n1", 2}} {
			res, err := e.ReleaseOnce(ctx, r, step.id)
			if err != nil || res.Status != engine.Released || res.Remaining != step.remaining {
				t.Fatalf("%s: ReleaseOnce %s: %+v, %v; want released with %d left", k.kind, step.id, res, err, step.remaining)
			}
		}
		var ids []string
		var old *string
		if err := pool.QueryRow(ctx, `SELECT release_id, release_ids FROM `+schema+`.`+k.table+` WHERE name = $1`, name).Scan(&old, &ids); err != nil {
			t.Fatal(err)
		}
		if old != nil || len(ids) != 2 || ids[0] != "old" || ids[1] != "n1" {
			t.Fatalf("%s: release_id %v, release_ids %q; want none and [old n1]", k.kind, old, ids)
		}
	}
}

// threeHolds grants owner "o" three holds (attempts a1-a3) of a new name
// of kind (with limit and weight for a shared kind), and returns the name.
func threeHolds(t *testing.T, ctx context.Context, e *postgres.Engine, kind engine.Kind, limit, weight int) string {
	t.Helper()
	name := uniqueName(t)
	for _, a := range []string{"a1", "a2", "a3"} {
		g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: a, TTL: time.Minute, Kind: kind, Limit: limit, Weight: weight})
		if err != nil || !g.Acquired {
			t.Fatalf("%s: acquire %s: %+v, %v", kind, a, g, err)
		}
	}
	return name
}
