package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/distlock/distlock/engine"
	"github.com/distlock/distlock/engine/postgres"
)

// TestKindQueueUpgrade: on a version 16 schema (testdata) a semaphore is
// granted on a name free but reserved for a queued mutex head, and a mutex
// on a name whose semaphore waiter is queued (the flaw version 17 mends:
// only holders were checked); Migrate brings it to the current version with a mutex
// holder and a mutex waiter queued across it; then a semaphore request is
// refused with engine.KindError while the waiter queues, the waiter takes
// the mutex, and the other way round a mutex (and a set) is refused while
// a semaphore waiter queues, which then takes its permits. set_limit too
// is stored beside a reserved mutex head on version 16 (and 17), and
// refused from version 18.
func TestKindQueueUpgrade(t *testing.T) {
	const schema = "upgrade_v16"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := newPool(t)
	oldSchema(t, ctx, pool, schema, "schema_v16.sql")
	e := newEngine(t, newPool(t), schema)
	attempts := 0
	attempt := func(owner string) string { attempts++; return fmt.Sprintf("%s-%d", owner, attempts) }
	mutex := func(name, owner string, waiter string) engine.AcquireRequest {
		r := engine.AcquireRequest{Name: name, Owner: owner, Attempt: attempt(owner), TTL: time.Minute}
		if waiter != "" {
			r.Waiting, r.Waiter, r.WaiterTTL, r.Order = true, waiter, time.Minute, engine.OrderFair
		}
		return r
	}
	sem := func(name, owner, waiter string) engine.AcquireRequest {
		r := engine.AcquireRequest{Name: name, Owner: owner, Attempt: attempt(owner), TTL: time.Minute,
			Kind: engine.Semaphore, Limit: 3, Weight: 3}
		if waiter != "" {
			r.Waiting, r.Waiter, r.WaiterTTL = true, waiter, time.Minute
		}
		return r
	}
	acquire := func(r engine.AcquireRequest) (engine.Grant, error) {
		t.Helper()
		return e.Acquire(ctx, r)
	}
	mustGrant := func(what string, r engine.AcquireRequest) {
		t.Helper()
		if g, err := acquire(r); err != nil || !g.Acquired {
			t.Fatalf("%s: %+v, %v; want granted", what, g, err)
		}
	}
	mustQueue := func(what string, r engine.AcquireRequest) {
		t.Helper()
		if g, err := acquire(r); err != nil || g.Acquired || !g.Queued || !g.Head {
			t.Fatalf("%s: %+v, %v; want queued at the head", what, g, err)
		}
	}
	release := func(name, owner string, kind engine.Kind) {
		t.Helper()
		if r, err := e.Release(ctx, engine.ReleaseRequest{Name: name, Owner: owner, Kind: kind}); err != nil || r.Status != engine.Released {
			t.Fatalf("release %s of %s: %+v, %v", owner, name, r, err)
		}
	}
	mustRefuse := func(what string, r engine.AcquireRequest, is engine.Kind) {
		t.Helper()
		g, err := acquire(r)
		var ae *engine.ArgumentError
		want := engine.KindError(r.Name, is, r.Kind).(*engine.ArgumentError).Reason
		if g.Acquired || !errors.As(err, &ae) || ae.Reason != want {
			t.Fatalf("%s: %+v, %v; want the *ArgumentError %q", what, g, err, want)
		}
	}

	// Version 16: the flaw, both ways round.
	a := uniqueName(t) + "-a"
	mustGrant("a's holder", mutex(a, "holder", ""))
	mustQueue("a's mutex waiter", mutex(a, "head", "head"))
	release(a, "holder", engine.Mutex)
	mustGrant("version 16: a semaphore ahead of the reserved mutex head (unchecked)", sem(a, "sem", ""))
	release(a, "sem", engine.Semaphore)
	if _, err := e.SetLimit(ctx, a, 3); err != nil {
		t.Fatalf("version 16: set_limit on a name reserved for its mutex head (unchecked): %v, want it stored", err)
	}
	if err := e.Leave(ctx, engine.LeaveRequest{Name: a, Waiter: "head"}); err != nil {
		t.Fatal(err)
	}
	b := uniqueName(t) + "-b"
	mustGrant("b's semaphore holder", sem(b, "holder", ""))
	mustQueue("b's semaphore waiter", sem(b, "waiter", "waiter"))
	release(b, "holder", engine.Semaphore)
	mustGrant("version 16: a mutex ahead of the queued semaphore waiter (unchecked)", mutex(b, "m", ""))
	release(b, "m", engine.Mutex)
	if err := e.Leave(ctx, engine.LeaveRequest{Name: b, Waiter: "waiter", Kind: engine.Semaphore}); err != nil {
		t.Fatal(err)
	}

	// Migrate with a mutex held and a waiter queued across it.
	c := uniqueName(t) + "-c"
	mustGrant("c's holder", mutex(c, "holder", ""))
	mustQueue("c's mutex waiter", mutex(c, "head", "head"))
	upgrade(t, ctx, pool, schema)
	release(c, "holder", engine.Mutex)
	mustRefuse("version 17: a semaphore on a name reserved for its mutex head", sem(c, "sem", ""), engine.Mutex)
	mustRefuse("version 17: an RW read on a name reserved for its mutex head",
		engine.AcquireRequest{Name: c, Owner: "r", Attempt: "r", TTL: time.Minute, Kind: engine.RWLock, Limit: engine.RWPermits, Weight: 1}, engine.Mutex)
	_, err := e.SetLimit(ctx, c, 3)
	var ae *engine.ArgumentError
	if !errors.As(err, &ae) || ae.Reason != engine.KindError(c, engine.Mutex, engine.Semaphore).(*engine.ArgumentError).Reason {
		t.Fatalf("version 18: set_limit on a name reserved for its mutex head: %v, want the *ArgumentError", err)
	}
	mustGrant("version 17: the mutex head", mutex(c, "head", "head"))
	release(c, "head", engine.Mutex)

	d := uniqueName(t) + "-d"
	mustGrant("d's semaphore holder", sem(d, "holder", ""))
	mustQueue("d's semaphore waiter", sem(d, "waiter", "waiter"))
	release(d, "holder", engine.Semaphore)
	mustRefuse("version 17: a mutex while a semaphore waiter queues", mutex(d, "m", ""), engine.Semaphore)
	g, err := e.AcquireMulti(ctx, []engine.AcquireRequest{mutex(d+"-other", "m", ""), mutex(d, "m", "")})
	if g.Acquired || !errors.As(err, &ae) || ae.Reason != engine.KindError(d, engine.Semaphore, engine.Mutex).(*engine.ArgumentError).Reason {
		t.Fatalf("version 17: a set with a name a semaphore waiter queues for: %+v, %v", g, err)
	}
	mustGrant("version 17: the semaphore waiter", sem(d, "waiter", "waiter"))
	release(d, "waiter", engine.Semaphore)
	if err := postgres.Drop(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
}
