package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
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
		kind   engine.Kind
		limit  int
		weight int
	}{{engine.Mutex, 0, 0}, {engine.RWLock, engine.RWPermits, 1}} {
		name := uniqueName(t)
		for _, a := range []string{"a1", "a2", "a3"} {
			g, err := e.Acquire(ctx, engine.AcquireRequest{Name: name, Owner: "o", Attempt: a, TTL: time.Minute, Kind: k.kind, Limit: k.limit, Weight: k.weight})
			if err != nil || !g.Acquired {
				t.Fatalf("%s: acquire %s: %+v, %v", k.kind, a, g, err)
			}
		}
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
